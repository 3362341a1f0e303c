//! Chat templates are hostile input: a seeded campaign of mutated templates — hostile snippets
//! (unbounded loops, string doubling, self-recursion through macros, `include`/`extends` of
//! itself, out-of-range indexing, division by zero, broken syntax) spliced in at random places,
//! spans deleted or duplicated, the source cut, bytes flipped — each compiled and, when it
//! compiles, rendered on a three-message conversation. Every case must end `Ok` or `Err`:
//! never a panic or a stack overflow (which would abort the test binary), each within a bound
//! of time, its output within the prompt bound.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;

const BASES: [&str; 2] = [
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ \
     '<|im_start|>system\\nYou are helpful.<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + \
     message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if \
     add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
    "{{ bos_token }}{%- set ns = namespace(sys='') -%}{%- for m in messages -%}{%- if m['role'] \
     == 'system' -%}{%- set ns.sys = m['content'] | trim -%}{%- elif loop.previtem is defined \
     and loop.previtem['role'] == m['role'] -%}{{ raise_exception('roles must alternate') }}\
     {%- else -%}{{ '<start_of_turn>' ~ m['role'] ~ '\\n' ~ ns.sys ~ m['content'].strip() ~ \
     '<end_of_turn>\\n' }}{%- endif -%}{%- endfor -%}{%- if add_generation_prompt -%}{{ \
     '<start_of_turn>model\\n' }}{%- endif -%}{{ eos_token }}",
];

const SNIPPETS: [&str; 16] = [
    "{% for i in range(100000000) %}x{% endfor %}",
    "{% for a in range(99999) %}{% for b in range(99999) %}{{ a }}{% endfor %}{% endfor %}",
    "{{ 'x' * 100000000 }}",
    "{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}",
    "{% set s = 'ab' %}{% for i in range(64) %}{% set s = s ~ s %}{% endfor %}{{ s }}",
    "{{ messages[99999]['content'] }}",
    "{{ raise_exception('hostile') }}",
    "{% if %}",
    "{{",
    "{% for m in messages %}{{ m['content'] * 99999999 }}{% endfor %}",
    "{{ (messages | tojson) * 1000000 }}",
    "{{ 1 / 0 }}{{ 1 // 0 }}",
    "{% include 'chat' %}",
    "{% extends 'chat' %}",
    "{{ namespace(a=1).b.c.d }}",
    "{{ range(99999999) | list | length }}",
];

/// One mutation of `src`, at a char boundary.
fn mutate(src: &str, rng: &mut StdRng) -> String {
    let bounds: Vec<usize> = (0..=src.len())
        .filter(|&i| src.is_char_boundary(i))
        .collect();
    let at = |rng: &mut StdRng| bounds[rng.random_range(0..bounds.len())];
    let (a, b) = {
        let (x, y) = (at(rng), at(rng));
        (x.min(y), x.max(y))
    };
    // Between two tags (after `}}` or `%}`), where a snippet keeps the template parseable.
    let mut tags: Vec<usize> = vec![0, src.len()];
    tags.extend(src.match_indices("}}").map(|(i, _)| i + 2));
    tags.extend(src.match_indices("%}").map(|(i, _)| i + 2));
    match rng.random_range(0..10) {
        0..=5 => {
            let s = SNIPPETS[rng.random_range(0..SNIPPETS.len())];
            let t = tags[rng.random_range(0..tags.len())];
            format!("{}{s}{}", &src[..t], &src[t..])
        }
        6 => format!("{}{}", &src[..a], &src[b..]),
        7 => format!("{}{}{}", &src[..b], &src[a..b], &src[b..]),
        8 => src[..a].to_string(),
        _ => {
            let mut bytes = src.as_bytes().to_vec();
            if let Some(c) = bytes.get_mut(rng.random_range(0..src.len().max(1))) {
                // Stay ASCII, so the source stays text.
                *c = b"{}%#()[]'\"|~-+*/\\ \n".as_slice()[rng.random_range(0..19)];
            }
            String::from_utf8(bytes).unwrap_or_default()
        }
    }
}

#[test]
fn mutated_templates_compile_and_render_or_are_refused_never_a_panic() {
    let n: usize = std::env::var("HOSTILE_TEMPLATES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let chat = [
        Message::new("system", "Be brief."),
        Message::new("user", "Hello {{ 7 * 7 }} {% raw %}"),
        Message::new("assistant", "Hi."),
    ];
    let (mut compiled, mut rendered) = (0, 0);
    for i in 0..n {
        let mut rng = StdRng::seed_from_u64(0x7E4D ^ i as u64);
        let mut src = BASES[i % BASES.len()].to_string();
        for _ in 0..rng.random_range(1..=2) {
            src = mutate(&src, &mut rng);
        }
        let t0 = Instant::now();
        let result = catch_unwind(AssertUnwindSafe(|| {
            let t = ChatTemplate::new(&src, "<s>", "</s>").ok()?;
            Some(t.render(&chat, true))
        }));
        let took = t0.elapsed();
        let Ok(outcome) = result else {
            panic!("case {i} panicked on template:\n{src}");
        };
        assert!(
            took < Duration::from_secs(5),
            "case {i} took {took:?}:\n{src}"
        );
        if let Some(r) = outcome {
            compiled += 1;
            if let Ok(out) = r {
                rendered += 1;
                assert!(out.len() <= MAX_PROMPT_BYTES, "case {i}");
            }
        }
    }
    // The campaign must reach the renderer, not only the parser.
    eprintln!("{n} templates: {compiled} compiled, {rendered} rendered");
    assert!(
        compiled * 4 >= n && rendered > 0,
        "{compiled} compiled, {rendered} rendered"
    );
}
