//! Chat templates: the model's Jinja template (GGUF `tokenizer.chat_template` or
//! `tokenizer_config.json`) rendered with minijinja and the helpers Hugging Face templates use
//! (`raise_exception`, `bos_token`, `eos_token`, `add_generation_prompt`).
//!
//! A template is code from a file, so it is bounded: its source size, its nesting (minijinja's
//! parser and runtime recursion limits), and each render's work and memory (minijinja's fuel) and
//! output size. A template that exhausts a bound on a one-message conversation is refused when it
//! is loaded, so `inspect` names it and no verb starts; one that exhausts it later fails that
//! render with the reason. A render is short by construction (its fuel), so a stop request waits
//! for at most one.

use minijinja::{context, Environment, Error, ErrorKind};
use serde::{Deserialize, Serialize};

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn new(role: &str, content: &str) -> Self {
        Self {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// Largest template source accepted, bytes (the templates in common use are under 20 kB).
pub(crate) const MAX_SOURCE_BYTES: usize = 256 << 10;
/// One render's budget in minijinja fuel: about one unit per instruction and per 64 bytes
/// allocated, so at most about 64 MB and well under a second. Rendering a real template for a
/// conversation of a hundred long turns takes a few tens of thousands.
const RENDER_FUEL: u64 = 1_000_000;
/// Longest rendered prompt accepted, bytes.
const MAX_PROMPT_BYTES: usize = 16 << 20;

/// A compiled chat template with the model's special-token strings.
pub struct ChatTemplate {
    env: Environment<'static>,
    /// The template source.
    pub source: String,
    pub bos_token: String,
    pub eos_token: String,
}

impl ChatTemplate {
    /// Compiles `source`; the error says where the template is broken.
    pub(crate) fn new(source: &str, bos_token: &str, eos_token: &str) -> Result<Self, String> {
        if source.len() > MAX_SOURCE_BYTES {
            return Err(format!(
                "chat template of {} bytes, more than the {MAX_SOURCE_BYTES} accepted; is it a \
                 chat template?",
                source.len()
            ));
        }
        let mut env = Environment::new();
        env.set_fuel(Some(RENDER_FUEL));
        // Python's str, dict and list methods (`.startswith`, `.split`, `.strip`, `.items`, …)
        // as real templates call them; `namespace`, `loop.previtem` and `tojson` are built in.
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", |msg: String| -> Result<String, Error> {
            Err(Error::new(ErrorKind::InvalidOperation, msg))
        });
        env.add_template_owned("chat", source.to_string())
            .map_err(|e| format!("chat template does not compile: {e:#}"))?;
        let t = Self {
            env,
            source: source.to_string(),
            bos_token: bos_token.into(),
            eos_token: eos_token.into(),
        };
        t.trial()?;
        Ok(t)
    }

    /// Renders a one-message conversation: a template that exhausts a bound on it (loops without
    /// end, doubles a string, recurses too deep) is refused now. Other errors (a template that
    /// raises for this conversation) are left to the real render, which reports them.
    fn trial(&self) -> Result<(), String> {
        match self.render_raw(&[Message::new("user", "Hello")], true) {
            Err(e) if is_bound(&e) => Err(format!(
                "chat template exceeds its bounds on a one-message conversation: {e:#}"
            )),
            Err(_) => Ok(()),
            Ok(out) => check_size(&out),
        }
    }

    /// Renders the conversation; with `add_generation_prompt` the assistant's turn is opened.
    pub fn render(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
    ) -> Result<String, String> {
        let out = self
            .render_raw(messages, add_generation_prompt)
            .map_err(|e| format!("rendering the chat template: {e:#}"))?;
        check_size(&out)?;
        Ok(out)
    }

    fn render_raw(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
    ) -> Result<String, Error> {
        let tmpl = self
            .env
            .get_template("chat")
            .expect("template was added in new(); this is a bug");
        tmpl.render(context! {
            messages => minijinja::value::Serde(messages),
            add_generation_prompt => add_generation_prompt,
            bos_token => &self.bos_token,
            eos_token => &self.eos_token,
        })
    }
}

/// Whether `e` is a bound running out (fuel or recursion), not the template's own error.
fn is_bound(e: &Error) -> bool {
    e.kind() == ErrorKind::OutOfFuel || e.to_string().contains("recursion")
}

fn check_size(out: &str) -> Result<(), String> {
    match out.len() > MAX_PROMPT_BYTES {
        true => Err(format!(
            "the chat template rendered {} bytes, more than the {MAX_PROMPT_BYTES} a prompt may be",
            out.len()
        )),
        false => Ok(()),
    }
}

#[cfg(test)]
#[path = "chat_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "chat_hostile_tests.rs"]
mod hostile_tests;
