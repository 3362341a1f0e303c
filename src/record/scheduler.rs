//! The scheduler's settings as a results file stores them: a type of the record's own, filled
//! from the engine's [`SchedulerConfig`], so an engine field can be renamed or added without
//! changing the file format, and the constants a presenter needs (the prefix cache's block size)
//! travel with the run instead of being read from whatever binary renders it.

use serde::{Deserialize, Serialize};

use crate::config::schedule::Schedule;
use crate::engine::scheduler::SchedulerConfig;

/// Budgets and policy the run's scheduler used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SchedulerRecord {
    /// Most sequences in one step (slots).
    pub max_seqs: usize,
    /// Most tokens (decode + prefill) in one step.
    pub max_batch_tokens: usize,
    /// Longest prefill chunk of one sequence in one step.
    pub prefill_chunk: usize,
    /// Most tokens held in KV caches across running sequences.
    pub kv_budget_tokens: usize,
    /// How a step is shared between decodes and prefill (`fifo` in older records).
    #[serde(default)]
    pub schedule: Schedule,
    /// Tokens of `kv_budget_tokens` held back for the prefix cache (0: no prefix cache).
    #[serde(default)]
    pub prefix_cache_tokens: usize,
    /// Tokens per prefix-cache block (absent in records written before it was stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_block_tokens: Option<usize>,
}

impl From<&SchedulerConfig> for SchedulerRecord {
    fn from(c: &SchedulerConfig) -> Self {
        Self {
            max_seqs: c.max_seqs,
            max_batch_tokens: c.max_batch_tokens,
            prefill_chunk: c.prefill_chunk,
            kv_budget_tokens: c.kv_budget_tokens,
            schedule: c.schedule,
            prefix_cache_tokens: c.prefix_cache_tokens,
            prefix_block_tokens: Some(crate::model::prefix::BLOCK_TOKENS),
        }
    }
}

impl SchedulerRecord {
    /// The engine settings the run was made with (what `ab`'s and a sweep's rounds run under).
    pub fn config(&self) -> SchedulerConfig {
        SchedulerConfig {
            max_seqs: self.max_seqs,
            max_batch_tokens: self.max_batch_tokens,
            prefill_chunk: self.prefill_chunk,
            kv_budget_tokens: self.kv_budget_tokens,
            schedule: self.schedule,
            prefix_cache_tokens: self.prefix_cache_tokens,
        }
    }
}
