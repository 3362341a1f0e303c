//! Records are hostile input: a seeded campaign of mutated results files — numbers set to edge
//! values (0, −1, ±1e308, subnormal; counts to 2^32 − 1, 2^64 − 1, 2^53 + 1), strings to escapes, huge or path-like
//! text, arrays emptied or tripled, keys removed or nulled, types swapped — each read back by
//! `report` (text, Markdown, CSV, HTML) and `compare` against itself. Every case must end
//! within its timeout with success or a clear error (exit 1): never a panic (exit 101), an
//! abort or a hang. Bases: the stored sweep and version-1 fixtures, and fresh prefill,
//! spec-cost, ab (with a synthetic drafter arm) and cold records of the tiny model. A failing case leaves its file in
//! `target/tmp/hostile-records/` and prints its seed; `HOSTILE_RECORDS` sets the count per base (default 40).

use std::path::Path;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use crate::support;
use support::{tiny, tokfire};

/// Edge values for a field stored as a float …
const FLOATS: [f64; 8] = [0.0, -1.0, 1e308, -1e308, 5e-324, 0.5, -1e-9, 1e-300];
/// … and as an integer (counts, sizes, ids).
const INTEGERS: [u64; 6] = [0, 1, 2, u32::MAX as u64, u64::MAX, (1 << 53) + 1];

fn edge_number(rng: &mut StdRng, integer: bool) -> Value {
    match integer {
        true => json!(INTEGERS[rng.random_range(0..INTEGERS.len())]),
        false => json!(FLOATS[rng.random_range(0..FLOATS.len())]),
    }
}

fn hostile_string(rng: &mut StdRng) -> Value {
    let s = match rng.random_range(0..6) {
        0 => String::new(),
        1 => "\u{1b}[2J\u{1b}]0;owned\u{7}\u{1b}[31mred".into(),
        2 => "x".repeat(200_000),
        3 => "../../../../tmp/owned".into(),
        4 => "NaN".into(),
        _ => "é\u{0}\u{202e}ꙮ".into(),
    };
    Value::String(s)
}

/// Every path to a value in `v` (object keys and array indices).
fn paths(v: &Value, at: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                at.push(json!(k));
                paths(x, at, out);
                at.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                at.push(json!(i));
                paths(x, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

fn at_mut<'a>(v: &'a mut Value, path: &[Value]) -> &'a mut Value {
    path.iter().fold(v, |v, k| match k {
        Value::String(k) => &mut v[k.as_str()],
        k => &mut v[k.as_u64().unwrap() as usize],
    })
}

/// One mutation at a random place of `doc`: mostly one that keeps the value's JSON type (so
/// the record still parses and the renderers meet the value), now and then a type swap.
fn mutate(doc: &mut Value, rng: &mut StdRng) {
    let mut all = Vec::new();
    paths(doc, &mut Vec::new(), &mut all);
    let path = &all[rng.random_range(1..all.len())];
    let v = at_mut(doc, path);
    *v = match (v.clone(), rng.random_range(0..10)) {
        (Value::Number(n), 0..=8) => edge_number(rng, n.is_u64()),
        (Value::String(_), 0..=8) => hostile_string(rng),
        (Value::Bool(b), 0..=8) => json!(!b),
        (Value::Array(_), 0..=2) => json!([]),
        (Value::Array(a), 3..=5) => Value::Array(a.iter().chain(&a).chain(&a).cloned().collect()),
        (Value::Array(a), 6..=8) => Value::Array(a.into_iter().take(1).collect()),
        (Value::Object(mut m), 0..=8) if !m.is_empty() => {
            let key = m.keys().nth(rng.random_range(0..m.len())).unwrap().clone();
            match rng.random_bool(0.5) {
                true => m.remove(&key),
                false => m.insert(key, Value::Null),
            };
            Value::Object(m)
        }
        (_, _) => match rng.random_range(0..4) {
            0 => Value::Null,
            1 => edge_number(rng, false),
            2 => hostile_string(rng),
            _ => json!({}),
        },
    };
}

/// Runs one verb on a mutant: it must exit 0 or 1 within the timeout; whether it read it.
fn survives(args: &[&str], case: &str) -> bool {
    let out = tokfire()
        .args(args)
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{case}: {args:?} ended with {:?} (timeout, panic or abort): {}",
        out.status,
        stderr.chars().take(2000).collect::<String>()
    );
    assert!(!support::has(&stderr, "panicked"), "{case}: {stderr}");
    out.status.success()
}

/// The document `doc` in the lines layout: its (mutated) version in the header line, then each
/// of its runs on a line (what is not a list of runs, whole on one line).
fn as_lines(doc: &Value) -> String {
    let header = json!({"tokfire_results": doc["tokfire_results"], "layout": "lines"});
    let mut out = format!("{header}\n");
    match doc["runs"].as_array() {
        Some(runs) => runs.iter().for_each(|r| out.push_str(&format!("{r}\n"))),
        None => out.push_str(&format!("{}\n", doc["runs"])),
    }
    out
}

/// `n` mutants of the results file `base`, each through every reading verb; how many mutants
/// `report` read (the rest it refused).
fn campaign(base: &Path, dir: &Path, n: usize, seed: u64) -> usize {
    let mut read = 0;
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(base).unwrap())
        .unwrap_or_else(|_| support::doc(base));
    for i in 0..n {
        let mut rng = StdRng::seed_from_u64(seed ^ (i as u64) << 16);
        let mut m = doc.clone();
        for _ in 0..rng.random_range(1..=3) {
            mutate(&mut m, &mut rng);
        }
        // Outside the temp dir, so that a failing case stays for a look.
        let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-records");
        std::fs::create_dir_all(&kept).unwrap();
        let file = kept.join(format!("mutant-{seed}-{i}.json"));
        // Every other mutant in the lines layout (header, a run per line), the rest as one
        // document: both readers get hostile input.
        std::fs::write(
            &file,
            if i % 2 == 0 {
                as_lines(&m)
            } else {
                m.to_string()
            },
        )
        .unwrap();
        let f = file.to_str().unwrap();
        let html = dir.join("page.html");
        let case = format!("{} seed {seed} case {i} ({f})", base.display());
        read += usize::from(survives(&["report", f, "--all"], &case));
        for format in ["md", "csv"] {
            survives(&["report", f, "--all", "--format", format], &case);
        }
        survives(
            &["report", f, "--all", "--html", html.to_str().unwrap()],
            &case,
        );
        survives(&["compare", f, f, "--force"], &case);
        std::fs::remove_file(&file).unwrap();
    }
    read
}

#[test]
fn mutated_records_are_read_or_refused_never_a_panic_or_hang() {
    let n: usize = std::env::var("HOSTILE_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let m = tiny(dir.path());
    let m = m.to_str().unwrap();
    let prefill = dir.path().join("prefill.json");
    support::ok(
        &[
            "prefill",
            "--model",
            m,
            "--threads",
            "1",
            "--lengths",
            "16,32,48",
        ]
        .iter()
        .copied()
        .chain(["--cached", "0,50", "--samples", "2", "--warmup", "0"])
        .chain(["--out", prefill.to_str().unwrap()])
        .collect::<Vec<_>>(),
    );
    let cost = dir.path().join("cost.json");
    support::ok(
        &[
            "spec-cost",
            "--model",
            m,
            "--threads",
            "1",
            "--jobs",
            "1,2",
            "--k",
            "0,2",
        ]
        .iter()
        .copied()
        .chain([
            "--context",
            "16",
            "--steps",
            "3",
            "--out",
            cost.to_str().unwrap(),
        ])
        .collect::<Vec<_>>(),
    );
    let ab = dir.path().join("ab.json");
    let wl = support::workload(dir.path(), support::WORKLOAD);
    let mut a = vec!["ab", "--vary", "spec=none,synthetic:0.7", "--spec-k", "2"];
    a.extend([
        "--rounds",
        "2",
        "--warmup",
        "0",
        "--allow-few-rounds",
        "--threads",
        "1",
    ]);
    a.extend(support::args(m, wl.to_str().unwrap(), ab.to_str().unwrap()));
    support::ok(&a);
    let cold = dir.path().join("cold.json");
    let mut a = vec![
        "cold",
        "--model",
        m,
        "--prompt",
        "once upon",
        "-n",
        "2",
        "--repeat",
        "1",
    ];
    a.extend(["--threads", "1", "--out", cold.to_str().unwrap()]);
    support::ok(&a);
    let bases = [
        fixtures.join("sweep-record.json"),
        fixtures.join("record-v1.json"),
        prefill,
        cost,
        ab,
        cold,
    ];
    for (seed, base) in bases.iter().enumerate() {
        let read = campaign(base, dir.path(), n, seed as u64 + 1);
        eprintln!(
            "{}: {read} of {n} mutants read, the rest refused",
            base.display()
        );
        // Mutations that leave a readable record must exist, or the renderers go untested.
        assert!(
            read * 4 >= n,
            "{}: only {read} of {n} mutants were read",
            base.display()
        );
    }
}

#[test]
fn a_stored_step_count_never_sizes_an_allocation() {
    // Found by the campaign: a step that "decoded" 2^32 − 1 sequences made the stall figures
    // repeat one value per sequence (a 34 GB allocation, an abort).
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let text = std::fs::read_to_string(fixtures.join("sweep-record.json")).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    doc["runs"][0]["levels"][0]["rounds"][2]["steps"][12]["decode_tokens"] = json!(u32::MAX);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("big.json");
    std::fs::write(&f, serde_json::to_string(&doc).unwrap()).unwrap();
    survives(
        &["report", f.to_str().unwrap(), "--all"],
        "decode_tokens 2^32 - 1",
    );
}
