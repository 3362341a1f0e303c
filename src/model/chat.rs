//! Chat templates: the model's Jinja template (GGUF `tokenizer.chat_template` or
//! `tokenizer_config.json`) rendered with minijinja and the helpers Hugging Face templates use
//! (`raise_exception`, `bos_token`, `eos_token`, `add_generation_prompt`).

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
        let mut env = Environment::new();
        env.add_function("raise_exception", |msg: String| -> Result<String, Error> {
            Err(Error::new(ErrorKind::InvalidOperation, msg))
        });
        env.add_template_owned("chat", source.to_string())
            .map_err(|e| format!("chat template does not compile: {e:#}"))?;
        Ok(Self {
            env,
            source: source.to_string(),
            bos_token: bos_token.into(),
            eos_token: eos_token.into(),
        })
    }

    /// Renders the conversation; with `add_generation_prompt` the assistant's turn is opened.
    pub fn render(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
    ) -> Result<String, String> {
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
        .map_err(|e| format!("rendering the chat template: {e:#}"))
    }
}

#[cfg(test)]
#[path = "chat_tests.rs"]
mod tests;
