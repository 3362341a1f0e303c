//! The benchmark on real weights (the default model): every task's output at 3 concurrent jobs
//! equals its output at 1 job (greedy), and the engine really carried 3 sequences per decode step.

use crate::common;

use std::collections::BTreeMap;

use tokfire::bench::round::{run_round, RoundSetup};
use tokfire::config::{SamplingConfig, WeightDType};
use tokfire::engine::scheduler::SchedulerConfig;

#[test]
fn three_jobs_give_the_same_outputs_as_one_and_really_batch() {
    let loaded = common::load(&common::default_model_path(), WeightDType::Q);
    let workload = tokfire::workload::load("chat").unwrap();
    let setup = RoundSetup {
        runtime: &tokfire::kernels::Runtime::new(2, tokfire::kernels::detect()).unwrap(),
        loaded: &loaded,
        workload: &workload,
        scheduler: SchedulerConfig {
            max_seqs: 8,
            max_batch_tokens: 512,
            prefill_chunk: 256,
            kv_budget_tokens: 16384,
            schedule: Default::default(),
            prefix_cache_tokens: 0,
        },
        sampling: SamplingConfig::default(),
        max_tokens: Some(12),
        stop: None,
        spec: Default::default(),
        draft: None,
        reference: None,
        think: Default::default(),
    };
    let one = run_round(&setup, 1, |_, _| {}).unwrap().record;
    let three = run_round(&setup, 3, |_, _| {}).unwrap().record;
    let alone: BTreeMap<&str, &str> = one
        .tasks
        .iter()
        .map(|t| (t.task.as_str(), t.output.as_str()))
        .collect();
    assert_eq!(alone.len(), workload.tasks.len());
    assert_eq!(three.tasks.len(), 3 * workload.tasks.len());
    for t in &three.tasks {
        assert_eq!(
            t.output,
            alone[t.task.as_str()],
            "task {} of job {}",
            t.task,
            t.job
        );
        assert!(t.output_tokens > 0);
    }
    let full = three.steps.iter().filter(|s| s.decode_tokens == 3).count();
    assert!(
        full > 0,
        "no decode step carried all 3 jobs: {:?}",
        three.steps.iter().map(|s| s.seqs).collect::<Vec<_>>()
    );
    assert!(one.steps.iter().all(|s| s.seqs == 1));
}
