//! Workloads: fixed, named, versioned task sets for one use case, with the user's acceptance
//! criteria declared before any run (`workloads/*.toml`, embedded as builtins), validators that
//! judge each answer (pass, fail, abstain), simulated tools for agent tasks, the driver that
//! runs one task through its turns, and the version lock that catches edits without a bump.
//!
//! Pure: nothing here runs a model. The caller generates from [`TaskRun::prompt`] and feeds the
//! output back with [`TaskRun::feed`] until it returns [`Next::Done`].
//!
//! # File schema
//! ```toml
//! name = "chat"                 # letters, digits, - or _
//! version = 1                   # bump on any change to criteria or tasks
//! use_case = "interactive chat"
//! description = "…"
//! system = "…"                  # optional, above [criteria]: the system message of every user
//!                               # task without its own (e.g. one long shared briefing)
//!
//! [criteria]                    # the user's own targets; leave a key out to not judge it
//! label = "your own targets for an interactive chat assistant"
//! ttft_max_s = 1.0              # median time to first token, seconds
//! per_job_tok_s_min = 10.0      # generation speed one job sees, tokens/s
//! completion_max_s = 5.0        # one request's completion time, seconds
//! pass_rate_min = 0.8           # fraction of tasks passed, 0 to 1
//!
//! [[tasks]]
//! id = "capital-of-france"
//! user = "What is the capital of France?"   # or system + user, or messages = [{role, content}], or raw = "…"
//! max_tokens = 32
//! checks = [                    # all must hold; text kinds are case-insensitive unless case_sensitive = true
//!     { kind = "contains", value = ["Paris"], require = "any" },
//!     { kind = "not_contains", value = "Lyon" },
//!     { kind = "regex", pattern = '\bParis\b' },
//!     # { kind = "equals", value = "Paris" }                       (after trimming)
//!     # { kind = "json", required = ["a.b"], values = { city = "Paris", n = 3 } }
//! ]
//! abstain = { phrases = ["I don't know"], on_limit = true }     # when a failed answer is an abstention
//!
//! # Agent tasks add tools (results simulated in-process), required calls and max_turns (default 4):
//! # required_calls = [{ tool = "get_temperature", arguments = { city = "Oslo" } }]
//! # [[tasks.tools]]
//! # name = "get_temperature"
//! # description = "…"
//! # parameters = { type = "object", properties = { city = { type = "string" } }, required = ["city"] }
//! # result = { kind = "lookup", argument = "city", table = { Oslo = "-3" }, missing = "error: …" }
//! # (or result = { kind = "arithmetic", argument = "expression" })
//! ```

pub(crate) mod agent;
pub(crate) mod error;
pub mod load;
pub(crate) mod lock;
pub(crate) mod schema;
pub mod session;
pub(crate) mod tools;
pub(crate) mod validate;

#[cfg(test)]
mod agent_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod validate_tests;

pub use agent::{Next, TaskResult, TaskRun};
pub use error::WorkloadError;
pub use load::{builtin_names, load, lock_line, parse};
pub use schema::{Criteria, Prompt, RequiredCall, Task, Workload};
pub(crate) use tools::ToolCall;
pub use validate::{AbstainRule, Check, Outcome};
