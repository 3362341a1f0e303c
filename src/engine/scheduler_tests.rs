//! Scheduler tests: budgets, completion, preemption by recompute, FIFO fairness. A toy
//! deterministic "model" (next token = hash of all previous tokens) stands in for the network.

use std::collections::HashMap;

use super::*;

fn cfg(
    max_seqs: usize,
    max_batch_tokens: usize,
    prefill_chunk: usize,
    kv: usize,
) -> SchedulerConfig {
    SchedulerConfig {
        max_seqs,
        max_batch_tokens,
        prefill_chunk,
        kv_budget_tokens: kv,
        schedule: Default::default(),
        prefix_cache_tokens: 0,
    }
}

/// Next token of a sequence whose cache holds `ctx`: depends on every token, like a real model.
fn toy_next(ctx: &[u64]) -> u64 {
    ctx.iter().fold(1469598103934665603u64, |h, &t| {
        (h ^ t).wrapping_mul(1099511628211)
    }) % 1000
}

struct Outcome {
    outputs: HashMap<RequestId, Vec<u64>>,
    finish_order: Vec<RequestId>,
    admit_order: Vec<RequestId>,
    preemptions: usize,
    steps: usize,
}

/// Drives the scheduler to completion, checking every budget on every step.
fn simulate(c: SchedulerConfig, reqs: &[(usize, usize)]) -> Outcome {
    simulate_with_state(c, reqs, 0)
}

/// [`simulate`] with each running sequence charged `state` KV tokens for its recurrent state.
fn simulate_with_state(c: SchedulerConfig, reqs: &[(usize, usize)], state: usize) -> Outcome {
    let mut s = Scheduler::new(c);
    s.set_state_tokens(state);
    let mut tokens: HashMap<RequestId, Vec<u64>> = HashMap::new();
    let mut cache: HashMap<RequestId, usize> = HashMap::new();
    for (i, &(prompt, max_new)) in reqs.iter().enumerate() {
        let id = i as RequestId;
        s.submit(id, prompt, max_new).unwrap();
        tokens.insert(id, (0..prompt as u64).map(|t| t * 7 + id).collect());
    }
    let mut out = Outcome {
        outputs: HashMap::new(),
        finish_order: vec![],
        admit_order: vec![],
        preemptions: 0,
        steps: 0,
    };
    while s.pending() > 0 {
        let plan = s.schedule();
        assert!(
            !plan.items.is_empty(),
            "stalled with {} pending",
            s.pending()
        );
        out.steps += 1;
        assert!(out.steps < 100_000, "no progress");
        for id in &plan.preempted {
            cache.insert(*id, 0);
            out.preemptions += 1;
        }
        out.admit_order.extend(&plan.admitted);
        assert!(plan.items.len() <= c.max_seqs, "slots exceeded");
        assert!(plan.tokens() <= c.max_batch_tokens, "token budget exceeded");
        for item in &plan.items {
            assert_eq!(
                cache.get(&item.id).copied().unwrap_or(0),
                item.start,
                "plan starts where the cache ends"
            );
            assert!(item.len <= c.prefill_chunk);
            cache.insert(item.id, item.start + item.len);
        }
        let held: usize = cache.values().filter(|&&n| n > 0).map(|n| n + state).sum();
        assert!(held <= c.kv_budget_tokens, "KV budget exceeded");
        for item in &plan.items {
            let stop = if item.samples {
                let seq = tokens.get_mut(&item.id).unwrap();
                let next = toy_next(&seq[..item.start + item.len]);
                seq.push(next);
                next == 0
            } else {
                false
            };
            if s.complete(item, stop) {
                let prompt = reqs[item.id as usize].0;
                out.outputs
                    .insert(item.id, tokens[&item.id][prompt..].to_vec());
                out.finish_order.push(item.id);
                cache.remove(&item.id);
            }
        }
    }
    out
}

fn workload() -> Vec<(usize, usize)> {
    (0..12)
        .map(|i| (3 + (i * 37) % 29, 2 + (i * 13) % 11))
        .collect()
}

#[test]
fn budgets_hold_and_every_request_finishes() {
    for c in [
        cfg(3, 16, 8, 200),
        cfg(1, 4, 4, 64),
        cfg(8, 64, 64, 1000),
        cfg(3, 5, 2, 60),
    ] {
        let o = simulate(c, &workload());
        assert_eq!(o.outputs.len(), 12, "{c:?}");
        for (id, out) in &o.outputs {
            let limit = workload()[*id as usize].1;
            let stopped = out.last() == Some(&0);
            assert!(
                out.len() == limit || (stopped && out.len() < limit),
                "{c:?}: request {id} made {} of {limit}",
                out.len()
            );
        }
    }
}

#[test]
fn preemption_by_recompute_gives_the_same_tokens() {
    let ample = simulate(cfg(4, 64, 16, 10_000), &workload());
    let tight = simulate(cfg(4, 64, 16, 48), &workload());
    assert_eq!(ample.preemptions, 0);
    assert!(
        tight.preemptions > 0,
        "the tight budget should force preemption"
    );
    assert_eq!(ample.outputs, tight.outputs);
}

#[test]
fn admission_is_fifo_and_one_slot_finishes_in_order() {
    let o = simulate(cfg(1, 32, 32, 1000), &workload());
    assert_eq!(o.finish_order, (0..12).collect::<Vec<_>>());
    let o = simulate(cfg(3, 8, 4, 1000), &workload());
    assert_eq!(o.admit_order, (0..12).collect::<Vec<_>>());
}

#[test]
fn decode_tokens_of_running_sequences_ride_every_step() {
    let mut s = Scheduler::new(cfg(3, 6, 4, 1000));
    s.submit(0, 2, 5).unwrap();
    let p = s.schedule();
    assert_eq!(
        p.items,
        vec![PlanItem {
            id: 0,
            start: 0,
            len: 2,
            samples: true,
            decode: false,
            draft: 0
        }]
    );
    s.complete(&p.items[0], false);
    s.submit(1, 10, 5).unwrap();
    let p = s.schedule();
    assert_eq!(
        p.items[0],
        PlanItem {
            id: 0,
            start: 2,
            len: 1,
            samples: true,
            decode: true,
            draft: 0
        }
    );
    assert_eq!(
        p.items[1],
        PlanItem {
            id: 1,
            start: 0,
            len: 4,
            samples: false,
            decode: false,
            draft: 0
        }
    );
    assert_eq!(p.admitted, vec![1]);
}

#[test]
fn a_request_larger_than_the_kv_budget_is_refused() {
    let mut s = Scheduler::new(cfg(2, 8, 8, 20));
    let e = s.submit(0, 15, 10).unwrap_err();
    assert!(e.contains("--kv-budget"), "{e}");
}

#[test]
fn recurrent_state_is_charged_to_the_kv_budget_and_changes_no_output() {
    let reqs = workload();
    let c = cfg(3, 24, 8, 90);
    let plain = simulate(c, &reqs);
    let charged = simulate_with_state(c, &reqs, 30);
    assert_eq!(charged.outputs, plain.outputs);
    assert!(charged.steps > plain.steps, "fewer sequences fit at once");
    let mut s = Scheduler::new(c);
    s.set_state_tokens(30);
    let err = s.submit(0, 50, 20).unwrap_err();
    assert!(err.contains("+ 30 for its recurrent state"), "{err}");
}
