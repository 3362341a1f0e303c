//! The in-process engine: the scheduler, the sampler, and the generation loops that drive the
//! model's batched forward (with its per-sequence KV caches and prefix cache) and time each step.

pub mod batching;
pub mod generate;
pub mod sampler;
pub mod scheduler;
