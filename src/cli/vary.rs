//! What `ab --vary KEY=A,B` takes, derived from the flags themselves: every flag of `ab` that
//! takes a value, except those that set up the A/B or where its results go ([`NOT_VARIED`], each
//! with the reason). A key's name, values, parsing, errors and help are its flag's; `cmd::ab`
//! builds each arm by re-parsing the user's own command line with `--KEY=VALUE` added.

use clap::{Arg, ArgAction, Args, Command};

use super::AbArgs;

/// Flags of `ab` that are not variables of an A/B, and why.
pub const NOT_VARIED: &[(&str, &str)] = &[
    ("vary", "it names the variable"),
    (
        "expect",
        "it is the verdict's metric, not a setting of the run",
    ),
    (
        "min-effect",
        "it is the verdict's threshold, not a setting of the run",
    ),
    ("until-decided", "it sets how long the A/B runs"),
    ("rounds", "both arms run the same rounds"),
    ("warmup", "both arms run the same warm-up"),
    (
        "jobs",
        "an A/B runs one level; `tokfire sweep` compares levels",
    ),
    (
        "workload",
        "an A/B compares one workload; run one ab per workload",
    ),
    ("out", "both arms go to one record"),
    ("out-dir", "both arms go to one record"),
    ("format", "it changes the screen, not the run"),
    ("trace", "ab refuses a trace (it would mix the arms)"),
    ("note", "it labels the record, not the run"),
    (
        "headroom",
        "it judges the levels, not the run; compare with --headroom",
    ),
    ("quiet-wait", "it is the instrument's, for both arms alike"),
    (
        "cache-dir",
        "it says where models are kept, not how they run",
    ),
];

/// Every key `--vary` takes: the value-taking flags of `ab`, in their definition order.
pub fn keys() -> Vec<Arg> {
    let cmd = AbArgs::augment_args(Command::new("ab"));
    cmd.get_arguments().filter(|a| is_key(a)).cloned().collect()
}

/// The key named `name`, or why there is none.
pub fn key(name: &str) -> Result<Arg, String> {
    if let Some((_, why)) = NOT_VARIED.iter().find(|(n, _)| *n == name) {
        return Err(format!("--{name} is not a variable of an A/B: {why}"));
    }
    keys()
        .into_iter()
        .find(|a| a.get_long() == Some(name))
        .ok_or_else(|| {
            let names: Vec<String> = keys().iter().filter_map(long).collect();
            format!("unknown key '{name}'; keys: {}", names.join(", "))
        })
}

fn is_key(a: &Arg) -> bool {
    let takes_value = matches!(a.get_action(), ArgAction::Set | ArgAction::Append);
    let excluded = |l: &str| NOT_VARIED.iter().any(|(n, _)| *n == l);
    takes_value && !a.is_hide_set() && a.get_long().is_some_and(|l| !excluded(l))
}

fn long(a: &Arg) -> Option<String> {
    a.get_long().map(str::to_string)
}

/// `ab --help`'s key list: each key with its flag's own help and possible values, wrapped to
/// 100 columns.
pub fn help() -> String {
    const NAME: usize = 23;
    let mut out = String::from("Keys (--vary KEY=A,B; each is the flag of that name):\n");
    for a in keys() {
        let name = long(&a).expect("keys have long names; this is a bug");
        let mut text = first_sentence(&a.get_help().map(|h| h.to_string()).unwrap_or_default());
        let possible = a.get_possible_values();
        let values: Vec<&str> = possible
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| v.get_name())
            .collect();
        if !values.is_empty() {
            text.push_str(&format!(" [values: {}]", values.join(", ")));
        }
        let mut line = format!("  {name:<w$}", w = NAME - 2);
        for word in text.split_whitespace() {
            if line.len() + 1 + word.len() > 100 && line.trim().len() > name.len() {
                out.push_str(line.trim_end());
                out.push('\n');
                line = " ".repeat(NAME);
            } else if !line.ends_with(' ') {
                line.push(' ');
            }
            line.push_str(word);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A flag's help up to its first sentence's end (the full text is in `ab --help`'s options).
fn first_sentence(help: &str) -> String {
    let bytes = help.as_bytes();
    let end = help
        .match_indices(". ")
        .map(|(i, _)| i)
        .find(|&i| bytes.get(i + 2).is_some_and(u8::is_ascii_uppercase));
    match end {
        Some(i) => help[..=i].to_string(),
        None => help.to_string(),
    }
}

#[cfg(test)]
#[path = "vary_tests.rs"]
mod tests;
