//! The in-process engine: per-sequence KV caches, the prefix cache, the sampler, and the
//! generation loops that drive the model's batched forward and time each step.

pub mod batching;
pub mod generate;
pub mod prefix;
pub mod sampler;
pub mod scheduler;
