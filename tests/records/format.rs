//! The results format is pinned: every key path a record is written with (read from the stored
//! sweep fixture and written again by this build) is listed in `tests/fixtures/format-keys.txt`.
//! Renaming a field of the record, of its configuration or of any type it embeds changes the
//! list and fails here, so a format change is always a decision (bump `FORMAT`, keep old files
//! loading, then bless with `TOKFIRE_BLESS=1 cargo test --release --test records format`).

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;
use tokfire::record::ResultsFile;

/// Every key path in `v`: objects as `a.b`, array elements as `a[]`.
fn paths(v: &Value, at: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                out.insert(p.clone());
                paths(x, &p, out);
            }
        }
        Value::Array(a) => {
            for x in a {
                paths(x, &format!("{at}[]"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn the_written_format_is_the_pinned_one() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let text = std::fs::read_to_string(dir.join("sweep-record.json")).unwrap();
    let mut file: ResultsFile = serde_json::from_str(&text).unwrap();
    // As a writer stores it: with the summary derived from the samples.
    for run in &mut file.runs {
        run.summary = Some(tokfire::record::summary::summarize_run(run));
    }
    let written = serde_json::to_value(&file).unwrap();
    let mut keys = BTreeSet::new();
    paths(&written, "", &mut keys);
    let got: String = keys.iter().map(|k| format!("{k}\n")).collect();
    let path = dir.join("format-keys.txt");
    if std::env::var_os("TOKFIRE_BLESS").is_some() {
        std::fs::write(&path, &got).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        got, want,
        "the results format changed; see this module's doc before blessing"
    );
    assert!(got.contains("runs[].kind\n"), "every run says its kind");
}
