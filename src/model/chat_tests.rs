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

#[test]
fn a_template_nested_fifty_thousand_deep_is_refused_without_overflowing() {
    // On a worker of a runtime, as a load runs in `run`.
    let rt = crate::kernels::Runtime::new(1, crate::kernels::detect()).unwrap();
    let deep = |n: usize| "{% if true %}".repeat(n) + &"{% endif %}".repeat(n);
    let err = rt
        .install(|| ChatTemplate::new(&deep(50_000), "", ""))
        .err()
        .unwrap();
    assert!(err.contains("bytes, more than"), "{err}");
    let err = rt
        .install(|| ChatTemplate::new(&deep(10_000), "", ""))
        .err()
        .unwrap();
    assert!(err.contains("does not compile"), "{err}");
    assert!(rt.install(|| ChatTemplate::new(&deep(100), "", "")).is_ok());
}

#[test]
fn a_render_that_never_ends_or_grows_without_end_is_refused_at_load() {
    let forever =
        "{% for i in range(100000) %}{% for j in range(100000) %}{{ i }}{% endfor %}{% endfor %}";
    let doubling = "{% set s = namespace(v='xx') %}{% for i in range(64) %}{% set s.v = s.v ~ s.v %}{% endfor %}{{ s.v }}";
    let recursive = "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}";
    for (name, src) in [
        ("loop", forever),
        ("doubling", doubling),
        ("recursion", recursive),
    ] {
        let t0 = std::time::Instant::now();
        let err = ChatTemplate::new(src, "", "")
            .err()
            .unwrap_or_else(|| panic!("{name} loaded"));
        assert!(err.contains("exceeds its bounds"), "{name}: {err}");
        assert!(
            t0.elapsed().as_secs_f64() < 10.0,
            "{name} took {:?}",
            t0.elapsed()
        );
    }
}

#[test]
fn a_real_template_renders_a_long_conversation_within_its_budget() {
    let t = ChatTemplate::new(CHATML, "<|im_start|>", "<|im_end|>").unwrap();
    let turn = "a sentence of a long answer, ".repeat(40);
    let msgs: Vec<Message> = (0..200)
        .map(|i| Message::new(if i % 2 == 0 { "user" } else { "assistant" }, &turn))
        .collect();
    let out = t.render(&msgs, true).unwrap();
    assert!(out.len() > 200 * turn.len());
}

#[test]
fn a_huge_template_source_is_refused_by_size() {
    let big = "x".repeat(MAX_SOURCE_BYTES + 1);
    let err = ChatTemplate::new(&big, "", "").err().unwrap();
    assert!(err.contains("bytes, more than"), "{err}");
}

/// A template of our own that uses what model templates use: Python string methods, a
/// `namespace` carried out of a loop, `loop.previtem`, `tojson`, dict methods and
/// `raise_exception`.
const PYTHONIC: &str = "{%- set ns = namespace(system='', turns=0) -%}
{%- for m in messages -%}
  {%- if m['role'] == 'system' -%}{%- set ns.system = m['content'].strip() -%}
  {%- else -%}{%- set ns.turns = ns.turns + 1 -%}{%- endif -%}
  {%- if loop.previtem is defined and loop.previtem['role'] == m['role'] -%}
    {{- raise_exception('roles must alternate') -}}
  {%- endif -%}
{%- endfor -%}
[{{ ns.system.upper() }}|{{ ns.turns }}]
{%- for m in messages if m['role'] != 'system' -%}
  {%- set text = m['content'] -%}
  {%- if text.startswith('/think') -%}{%- set text = text.split(' ', 1)[1] -%}{%- endif -%}
  {{ '\n' ~ m['role'] ~ ':' ~ text.replace('  ', ' ').rstrip('!') ~ ';' ~ (m | tojson) }}
{%- endfor -%}
{%- for k, v in {'a': 1}.items() -%}{{ '\n' ~ k ~ '=' ~ v }}{%- endfor -%}";

#[test]
fn python_methods_namespace_previtem_and_tojson_render() {
    let t = ChatTemplate::new(PYTHONIC, "", "").unwrap();
    let out = t
        .render(
            &[
                Message::new("system", "  Be brief. "),
                Message::new("user", "/think hi  there!"),
                Message::new("assistant", "ok"),
            ],
            false,
        )
        .unwrap();
    assert_eq!(
        out,
        "[BE BRIEF.|2]\nuser:hi there;{\"role\": \"user\", \"content\": \"/think hi  there!\"}\n\
         assistant:ok;{\"role\": \"assistant\", \"content\": \"ok\"}\na=1"
    );
    let err = t
        .render(
            &[Message::new("user", "a"), Message::new("user", "b")],
            false,
        )
        .unwrap_err();
    assert!(err.contains("roles must alternate"), "{err}");
}
