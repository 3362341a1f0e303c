//! Unit tests of `crate::model::chat`.

use super::*;

const CHATML: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are helpful.<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

#[test]
fn renders_chatml_with_generation_prompt() {
    let t = ChatTemplate::new(CHATML, "<|im_start|>", "<|im_end|>").unwrap();
    let out = t.render(&[Message::new("user", "Hi")], true).unwrap();
    assert_eq!(out, "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    let out = t.render(&[Message::new("user", "Hi")], false).unwrap();
    assert!(out.ends_with("Hi<|im_end|>\n"));
}

#[test]
fn raise_exception_becomes_an_error() {
    let t = ChatTemplate::new("{{ raise_exception('roles must alternate') }}", "", "").unwrap();
    let err = t.render(&[], true).unwrap_err();
    assert!(err.contains("roles must alternate"), "{err}");
}

#[test]
fn broken_template_is_an_error() {
    assert!(ChatTemplate::new("{% for %}", "", "").is_err());
}

#[test]
fn bos_and_eos_are_available() {
    let t = ChatTemplate::new("{{ bos_token }}|{{ eos_token }}", "<s>", "</s>").unwrap();
    assert_eq!(t.render(&[], false).unwrap(), "<s>|</s>");
}
