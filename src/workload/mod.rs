//! Workloads: fixed, named, versioned task sets for one use case, with the user's acceptance
//! criteria declared before any run (`workloads/*.toml`, embedded as builtins), validators that
//! judge each answer (pass, fail, abstain), simulated tools for agent tasks, the driver that
//! runs one task through its turns, and the version lock that catches edits without a bump.
//!
//! Pure: nothing here runs a model. The caller generates from [`TaskRun::prompt`] and feeds the
//! output back with [`TaskRun::feed`] until it returns [`Next::Done`].

pub mod agent;
pub mod error;
pub mod load;
pub mod lock;
pub mod spec;
pub mod tools;
pub mod validate;

#[cfg(test)]
mod agent_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod validate_tests;

pub use agent::{Next, TaskResult, TaskRun};
pub use error::WorkloadError;
pub use load::{builtin_names, load, lock_line, parse};
pub use spec::{Criteria, Prompt, RequiredCall, Task, Workload};
pub use tools::{Simulation, ToolCall, ToolSpec};
pub use validate::{AbstainRule, Check, Outcome};
