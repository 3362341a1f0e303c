//! Driving one task through its generations without a model: [`TaskRun`] hands out the prompt,
//! takes the model's output, runs simulated tool calls and appends the assistant and
//! tool-result turns, and finally judges the answer. Single-generation tasks finish on the
//! first output; agent tasks loop until a final answer or `max_turns`.

use super::schema::{Prompt, RequiredCall, Task};
use super::tools::{self, ToolCall};
use super::validate::{json_matches, judge, Outcome};
use crate::model::chat::Message;
use serde::{Deserialize, Serialize};

/// The role of the turn that carries tool results back, as `<tool_response>[…]</tool_response>`.
/// With a `tool` turn the default model (SmolLM2-135M-Instruct) answers from the result; inside
/// a `user` turn it only echoes the response block back.
pub(crate) const TOOL_RESULT_ROLE: &str = "tool";

/// What the caller does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Generate again from [`TaskRun::prompt`].
    Continue,
    /// The task is finished.
    Done(TaskResult),
}

/// How one task ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// Pass, fail (with the reason) or abstain (with the reason).
    pub outcome: Outcome,
    /// Generations used (1 for a plain task).
    pub turns: usize,
    /// Every tool call the model made, in order, with its simulated result.
    pub tool_calls: Vec<ToolCall>,
    /// The output that was judged (the last generation's text).
    pub final_text: String,
}

/// One task in progress.
#[derive(Debug, Clone)]
pub struct TaskRun {
    task: Task,
    prompt: Prompt,
    turns: usize,
    calls: Vec<ToolCall>,
}

impl TaskRun {
    /// Starts `task` at its first prompt.
    pub fn new(task: &Task) -> TaskRun {
        TaskRun {
            prompt: task.prompt.clone(),
            task: task.clone(),
            turns: 0,
            calls: Vec::new(),
        }
    }

    /// What to generate from now.
    pub fn prompt(&self) -> &Prompt {
        &self.prompt
    }

    /// Output limit for this generation, tokens.
    pub fn max_tokens(&self) -> usize {
        self.task.max_tokens
    }

    /// The task being run.
    pub fn task(&self) -> &Task {
        &self.task
    }

    /// Feeds the model's output for the current prompt; `hit_limit` = stopped by the token
    /// limit rather than end-of-sequence.
    pub fn feed(&mut self, output: &str, hit_limit: bool) -> Next {
        self.turns += 1;
        if !self.task.is_agent() {
            return self.finish(output, hit_limit);
        }
        match tools::parse_calls(output) {
            Ok(None) => self.finish(output, hit_limit),
            Ok(Some(calls)) if calls.is_empty() => self.finish(output, hit_limit),
            Ok(Some(calls)) => self.run_calls(output, calls),
            Err(reason) if hit_limit => self.done(
                Outcome::Abstain {
                    reason: format!("hit the token limit inside a tool call ({reason})"),
                },
                output,
            ),
            Err(reason) => self.done(
                Outcome::Fail {
                    reason: format!("malformed tool call: {reason}"),
                },
                output,
            ),
        }
    }

    fn run_calls(&mut self, output: &str, calls: Vec<tools::ParsedCall>) -> Next {
        let mut results = Vec::with_capacity(calls.len());
        for call in calls {
            let result = tools::execute(&self.task.tools, &call);
            results.push(serde_json::json!({"name": call.name, "content": result}));
            self.calls.push(ToolCall {
                name: call.name,
                arguments: call.arguments,
                result,
            });
        }
        if self.turns >= self.task.max_turns {
            let reason = format!(
                "no final answer within {} turns (the model was still calling tools)",
                self.task.max_turns
            );
            return self.done(Outcome::Fail { reason }, output);
        }
        let response = format!(
            "<tool_response>\n{}\n</tool_response>",
            serde_json::to_string(&results).expect("JSON values serialize; this is a bug")
        );
        if let Prompt::Chat(messages) = &mut self.prompt {
            messages.push(Message::new("assistant", output.trim()));
            messages.push(Message::new(TOOL_RESULT_ROLE, &response));
        }
        Next::Continue
    }

    fn finish(&mut self, output: &str, hit_limit: bool) -> Next {
        if let Some(missing) = self
            .task
            .required_calls
            .iter()
            .find(|r| !self.calls.iter().any(|c| call_matches(c, r)))
        {
            let reason = if self.calls.is_empty() {
                format!("no tool was called; required {}", describe(missing))
            } else {
                let made: Vec<String> = self
                    .calls
                    .iter()
                    .map(|c| format!("{}({})", c.name, c.arguments))
                    .collect();
                format!(
                    "required call {} was not made; calls made: {}",
                    describe(missing),
                    made.join(", ")
                )
            };
            return self.done(Outcome::Fail { reason }, output);
        }
        let outcome = judge(&self.task.checks, &self.task.abstain, output, hit_limit);
        self.done(outcome, output)
    }

    fn done(&self, outcome: Outcome, output: &str) -> Next {
        Next::Done(TaskResult {
            outcome,
            turns: self.turns,
            tool_calls: self.calls.clone(),
            final_text: output.to_string(),
        })
    }
}

/// Whether a made call satisfies a required one (same tool, each required argument matching).
pub(crate) fn call_matches(call: &ToolCall, req: &RequiredCall) -> bool {
    call.name == req.tool
        && req.arguments.iter().all(|(k, want)| {
            call.arguments
                .get(k)
                .is_some_and(|got| argument_matches(got, want))
        })
}

/// Argument equality for required calls: strings ignore case and all whitespace (so
/// `"234*17"` matches `"234 * 17"`), other values as in [`json_matches`].
fn argument_matches(got: &serde_json::Value, want: &serde_json::Value) -> bool {
    use serde_json::Value;
    let squash = |s: &str| -> String { s.split_whitespace().collect::<String>().to_lowercase() };
    match (got, want) {
        (Value::String(g), Value::String(w)) => squash(g) == squash(w),
        _ => json_matches(got, want, false),
    }
}

fn describe(r: &RequiredCall) -> String {
    let args: Vec<String> = r
        .arguments
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!("{}({})", r.tool, args.join(", "))
}
