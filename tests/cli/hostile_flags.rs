//! Numbers and lists on the command line are hostile input: a seeded campaign gives the numeric
//! flags of every measuring verb edge values (zero, negative, NaN, infinities, 2^32, 2^64, one
//! past each, the smallest subnormal, empty list items, non-numbers), one to three flags at a
//! time, on the tiny model. Every case ends within its timeout with exit 0, or 1 or 2 and a
//! message naming one of the flags it was given; never a panic, an abort or a hang
//! (`HOSTILE_FLAGS` cases, default 120; `HOSTILE_FLAGS_SEED`; `HOSTILE_FLAGS_SHOW=1` prints
//! every case).

use std::path::Path;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};

use crate::support;
use support::{tiny, tokfire, workload, WORKLOAD};

const EDGES: &[&str] = &[
    "0",
    "-1",
    "1",
    "NaN",
    "inf",
    "-inf",
    "1e300",
    "1e20",
    "5e-324",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775808",
    "",
    "1,",
    ",",
    "1,,2",
    "0x10",
    " 3",
    "3 ",
    "1e9",
    "99999999",
    "2.5",
    "-0",
    "abc",
];

/// Values that parse as counts (or as floats), so that a case gets past parsing and the
/// verb's own bounds are what is tested.
const COUNTS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "7",
    "64",
    "65536",
    "1000000",
    "99999999",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "1..1",
    "5..2",
    "0..0",
    "1KB",
    "0.5",
    "1e9",
];

/// Flags whose valid values include long work (100 000 rounds, a day of think time): they
/// get the edge values only, which are refused or short, so that a timeout means a hang.
const WORK: &[&str] = &[
    "--rounds",
    "--warmup",
    "--repeat",
    "--samples",
    "--steps",
    "--think",
    "--think-jitter",
    "--stagger",
    "--quiet-wait",
    "--timeout",
];

/// A verb: its fixed arguments, settings that keep a case short (replaced when a case picks
/// the flag), and the flags a case picks from.
struct Verb {
    args: Vec<String>,
    defaults: &'static [(&'static str, &'static str)],
    flags: &'static [&'static str],
}

fn verbs(dir: &Path) -> Vec<Verb> {
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (m, wl) = (tiny(dir), workload(dir, WORKLOAD));
    let out = s(&dir.join("r.json"));
    let session = dir.join("s.toml");
    std::fs::write(
        &session,
        format!(
            "name = \"s\"\n[[step]]\nload = \"{}\"\n[[step]]\nidle = \"1s\"\n",
            s(&m)
        ),
    )
    .unwrap();
    let model = ["--model".to_string(), s(&m)];
    let to_out = ["--out".to_string(), out.clone()];
    let v = |verb: &str, rest: &[&[String]]| {
        let mut a = vec![verb.to_string()];
        rest.iter().for_each(|r| a.extend(r.iter().cloned()));
        a
    };
    vec![
        Verb {
            args: v(
                "run",
                &[
                    &model,
                    &to_out,
                    &["--workload".into(), s(&wl)],
                    &["--allow-few-rounds".into()],
                ],
            ),
            defaults: &[
                ("--jobs", "1"),
                ("--rounds", "1"),
                ("--warmup", "0"),
                ("-n", "4"),
                ("--spec", "lookup"),
                ("--prefix-cache", "on"),
            ],
            flags: &[
                "--jobs",
                "--rounds",
                "--warmup",
                "--max-seqs",
                "--max-batch-tokens",
                "--prefill-chunk",
                "--kv-budget",
                "--threads",
                "-n",
                "--temperature",
                "--top-k",
                "--top-p",
                "--seed",
                "--headroom",
                "--quiet-wait",
                "--spec-k",
                "--lookup-ngram",
                "--prefix-cache-budget",
                "--think",
                "--think-jitter",
                "--stagger",
            ],
        },
        Verb {
            args: v("generate", &[&model, &["--prompt".into(), "once".into()]]),
            defaults: &[("-n", "4")],
            flags: &[
                "-n",
                "--temperature",
                "--top-k",
                "--top-p",
                "--seed",
                "--threads",
            ],
        },
        Verb {
            args: v(
                "cold",
                &[&model, &to_out, &["--prompt".into(), "once".into()]],
            ),
            defaults: &[("--repeat", "1"), ("-n", "2"), ("--threads", "1")],
            flags: &["--repeat", "--timeout", "-n", "--threads"],
        },
        Verb {
            args: v("prefill", &[&model, &to_out]),
            defaults: &[
                ("--lengths", "8"),
                ("--depths", "0"),
                ("--samples", "1"),
                ("--threads", "1"),
            ],
            flags: &[
                "--lengths",
                "--depths",
                "--cached",
                "--chunks",
                "--samples",
                "--warmup",
                "--seed",
            ],
        },
        Verb {
            args: v("spec-cost", &[&model, &to_out]),
            defaults: &[
                ("--jobs", "1"),
                ("--k", "0,1"),
                ("--context", "16"),
                ("--steps", "2"),
                ("--threads", "1"),
            ],
            flags: &["--jobs", "--k", "--context", "--steps", "--warmup"],
        },
        Verb {
            args: v("session", &[&[s(&session)], &to_out]),
            defaults: &[],
            flags: &["--time-scale"],
        },
    ]
}

/// One case: `verb` with `picked` flags set to edge values.
fn case(verb: &Verb, rng: &mut StdRng) -> (Vec<String>, Vec<&'static str>) {
    let n = rng.random_range(1..=3.min(verb.flags.len()));
    let picked: Vec<&'static str> = verb.flags.choose_multiple(rng, n).copied().collect();
    let mut a = verb.args.clone();
    for (flag, value) in verb.defaults {
        if !picked.contains(flag) {
            a.extend([flag.to_string(), value.to_string()]);
        }
    }
    for flag in &picked {
        // `--flag=VALUE`, so that a value starting with '-' is a value.
        let counts = !WORK.contains(flag) && rng.random_bool(0.6);
        let values = if counts { COUNTS } else { EDGES };
        a.push(format!("{flag}={}", values.choose(rng).unwrap()));
    }
    (a, picked)
}

#[test]
fn edge_numbers_in_flags_are_run_or_refused_naming_the_flag() {
    let n: usize = std::env::var("HOSTILE_FLAGS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120);
    // On a disk file system: cold's eviction cannot take on a tmpfs.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let verbs = verbs(dir.path());
    let seed = std::env::var("HOSTILE_FLAGS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x0f1a_9500);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut refused = 0;
    for i in 0..n {
        let verb = &verbs[i % verbs.len()];
        let (a, picked) = case(verb, &mut rng);
        let out = tokfire()
            .args(&a)
            .timeout(Duration::from_secs(30))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let shown = format!("case {i}: {a:?}: {:?}\n{stderr}", out.status);
        assert!(matches!(out.status.code(), Some(0..=2)), "{shown}");
        assert!(!support::has(&stderr, "panicked"), "{shown}");
        if std::env::var_os("HOSTILE_FLAGS_SHOW").is_some() {
            eprintln!("{shown}");
        }
        if !out.status.success() {
            refused += 1;
            let named = picked
                .iter()
                .any(|f| stderr.contains(f.trim_start_matches('-')));
            assert!(named, "the message names none of {picked:?}: {shown}");
        }
    }
    assert!(refused > 0 && refused < n, "{refused} of {n} refused");
}
