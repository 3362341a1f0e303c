//! Policy tests on random workloads driven to completion: every budget holds at every step,
//! first admissions keep submission order, every request finishes, and under `decode-first` no
//! ready decode misses a step while prefill never takes more than one chunk of it.

use std::collections::HashMap;

use super::super::{Plan, RequestId, Scheduler, SchedulerConfig};
use crate::config::schedule::Schedule;

const POLICIES: [Schedule; 3] = [
    Schedule::Fifo,
    Schedule::DecodeFirst,
    Schedule::PrefillFirst,
];

/// A small deterministic generator (xorshift64*), so failures replay.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
    }
}

/// What a run of the scheduler did, step by step.
#[derive(Default)]
struct Trace {
    plans: Vec<Plan>,
    /// Running sequences ready to decode before each step (after its preemptions).
    ready: Vec<Vec<RequestId>>,
    finished: usize,
}

/// Drives `reqs` (prompt, max new) to completion; a sampled token stops a sequence when
/// `stop(id, generated)` says so. Checks every budget on every step.
fn drive(c: SchedulerConfig, reqs: &[(usize, usize)], rng: &mut Rng) -> Trace {
    let mut s = Scheduler::new(c);
    for (i, &(p, n)) in reqs.iter().enumerate() {
        s.submit(i as RequestId, p, n).expect("fits the KV budget");
    }
    let mut cache: HashMap<RequestId, usize> = HashMap::new();
    let mut t = Trace::default();
    while s.pending() > 0 {
        assert!(t.plans.len() < 50_000, "{c:?}: no progress (livelock)");
        let plan = s.schedule();
        assert!(!plan.items.is_empty(), "{c:?}: stalled with work pending");
        let ready = s
            .running
            .iter()
            .filter(|q| q.decoding() && !plan.admitted.contains(&q.id))
            .map(|q| q.id)
            .collect();
        for id in &plan.preempted {
            cache.insert(*id, 0);
        }
        assert!(plan.items.len() <= c.max_seqs, "{c:?}: slots exceeded");
        assert!(
            plan.tokens() <= c.max_batch_tokens,
            "{c:?}: step tokens exceeded"
        );
        for it in &plan.items {
            assert_eq!(cache.get(&it.id).copied().unwrap_or(0), it.start, "{c:?}");
            assert!(it.len <= c.prefill_chunk, "{c:?}: chunk exceeded");
            cache.insert(it.id, it.start + it.len + it.draft);
        }
        let kv: usize = cache.values().sum();
        assert!(kv <= c.kv_budget_tokens, "{c:?}: KV {kv} over budget");
        for it in &plan.items {
            // Drafts are rejected: the cache keeps only the fed tokens.
            cache.insert(it.id, it.start + it.len);
            let stop = it.samples && rng.below(40) == 0;
            if s.complete(it, stop) {
                cache.remove(&it.id);
                t.finished += 1;
            }
        }
        t.ready.push(ready);
        t.plans.push(plan);
    }
    t
}

fn random_case(rng: &mut Rng, schedule: Schedule) -> (SchedulerConfig, Vec<(usize, usize)>) {
    let reqs: Vec<(usize, usize)> = (0..1 + rng.below(20))
        .map(|_| (1 + rng.below(60), 1 + rng.below(30)))
        .collect();
    let longest = reqs.iter().map(|(p, n)| p + n).max().unwrap_or(1);
    let c = SchedulerConfig {
        max_seqs: 1 + rng.below(6),
        max_batch_tokens: 1 + rng.below(96),
        prefill_chunk: 1 + rng.below(48),
        kv_budget_tokens: longest + rng.below(300),
        schedule,
        prefix_cache_tokens: 0,
    };
    (c, reqs)
}

#[test]
fn every_policy_keeps_the_budgets_and_finishes_every_request() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for policy in POLICIES {
        for _ in 0..300 {
            let (c, reqs) = random_case(&mut rng, policy);
            let t = drive(c, &reqs, &mut rng);
            assert_eq!(t.finished, reqs.len(), "{c:?}");
        }
    }
}

#[test]
fn first_admissions_keep_submission_order() {
    let mut rng = Rng(7);
    for policy in POLICIES {
        for _ in 0..100 {
            let (c, reqs) = random_case(&mut rng, policy);
            let t = drive(c, &reqs, &mut rng);
            let mut first: Vec<RequestId> = Vec::new();
            for id in t.plans.iter().flat_map(|p| &p.admitted) {
                if !first.contains(id) {
                    first.push(*id);
                }
            }
            assert_eq!(
                first,
                (0..reqs.len() as RequestId).collect::<Vec<_>>(),
                "{c:?}"
            );
        }
    }
}

#[test]
fn decode_first_never_skips_a_ready_decode_and_prefills_one_chunk_at_most() {
    let mut rng = Rng(42);
    for _ in 0..300 {
        let (mut c, reqs) = random_case(&mut rng, Schedule::DecodeFirst);
        c.max_batch_tokens = c.max_batch_tokens.max(c.max_seqs);
        let t = drive(c, &reqs, &mut rng);
        for (plan, ready) in t.plans.iter().zip(&t.ready) {
            for id in ready.iter().filter(|id| !plan.preempted.contains(id)) {
                assert!(
                    plan.items.iter().any(|i| i.id == *id && i.decode),
                    "{c:?}: ready decode {id} skipped"
                );
            }
            let prefill: usize = plan.items.iter().filter(|i| !i.decode).map(|i| i.len).sum();
            assert!(
                prefill <= c.prefill_chunk,
                "{c:?}: {prefill} prefill tokens"
            );
        }
    }
}

#[test]
fn decode_first_caps_the_prefill_that_fifo_lets_lengthen_a_decode_step() {
    // A decoding sequence beside two long prompts: fifo packs a chunk of each, decode-first
    // one chunk in all, prefill-first no decode at all.
    let run = |schedule| {
        let c = SchedulerConfig {
            max_seqs: 3,
            max_batch_tokens: 8,
            prefill_chunk: 4,
            kv_budget_tokens: 1000,
            schedule,
            prefix_cache_tokens: 0,
        };
        let mut s = Scheduler::new(c);
        s.submit(0, 2, 10).expect("fits");
        let p = s.schedule();
        s.complete(&p.items[0], false);
        s.submit(1, 40, 10).expect("fits");
        s.submit(2, 40, 10).expect("fits");
        let p = s.schedule();
        for it in &p.items {
            s.complete(it, false);
        }
        s.schedule()
    };
    let prefill = |p: &Plan| {
        p.items
            .iter()
            .filter(|i| !i.decode)
            .map(|i| i.len)
            .sum::<usize>()
    };
    let fifo = run(Schedule::Fifo);
    assert!(fifo.items[0].decode && fifo.items[0].id == 0);
    assert_eq!(prefill(&fifo), 4 + 3, "a chunk of each prompt");
    let df = run(Schedule::DecodeFirst);
    assert!(df.items[0].decode && df.items[0].id == 0);
    assert_eq!(df.tokens(), 1 + 4, "one decode and one chunk");
    let pf = run(Schedule::PrefillFirst);
    assert!(
        pf.items.iter().all(|i| !i.decode),
        "prefill-first defers the decode"
    );
}

#[test]
fn prefill_first_admission_never_forces_a_preemption() {
    let mut rng = Rng(3);
    for _ in 0..200 {
        let (c, reqs) = random_case(&mut rng, Schedule::PrefillFirst);
        let t = drive(c, &reqs, &mut rng);
        for w in t.plans.windows(2) {
            for id in &w[1].preempted {
                assert!(
                    !w[0].admitted.contains(id),
                    "{c:?}: {id} admitted then preempted"
                );
            }
        }
    }
}

#[test]
fn an_admission_starts_at_its_reused_prefix_and_holds_it_as_kv() {
    for policy in POLICIES {
        let c = SchedulerConfig {
            max_seqs: 4,
            max_batch_tokens: 64,
            prefill_chunk: 64,
            kv_budget_tokens: 1000,
            schedule: policy,
            prefix_cache_tokens: 200,
        };
        let mut s = Scheduler::new(c);
        s.submit(1, 100, 10).unwrap();
        s.submit(2, 100, 10).unwrap();
        // Request 1 finds 96 tokens cached; request 2 finds the whole prompt, so keeps one.
        let plan = s.schedule_reusing(&|id| if id == 1 { 96 } else { 100 });
        let starts: Vec<(usize, usize)> = plan.items.iter().map(|i| (i.start, i.len)).collect();
        assert_eq!(starts, [(96, 4), (99, 1)], "{policy:?}");
        assert!(plan.items.iter().all(|i| i.samples), "{policy:?}");
        assert_eq!(s.kv_tokens(), 96 + 99, "{policy:?}: reused tokens are held");
        // The prefix cache's 200 tokens are not the sequences': 810 fit 1000 but not 800.
        assert!(s.submit(3, 800, 10).is_err(), "{policy:?}");
        assert!(s.submit(4, 790, 10).is_ok(), "{policy:?}");
    }
}
