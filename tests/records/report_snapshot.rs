//! The report is snapshot-tested: a stored record (two levels, warm-up + 3 rounds each) renders
//! to exactly the stored text and CSV. A change to the sheet, verdict or summary shows up here as
//! a diff to review; regenerate with `TOKFIRE_BLESS=1 cargo test --release --test records
//! report_snapshot`.

use std::path::Path;

use tokfire::config::run::Format;
use tokfire::record::ResultsFile;
use tokfire::report::text::render;

fn check(format: Format, expected: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let file: ResultsFile =
        serde_json::from_str(&std::fs::read_to_string(dir.join("sweep-record.json")).unwrap())
            .unwrap();
    let got = render(&file.runs[0], format);
    let path = dir.join(expected);
    if std::env::var_os("TOKFIRE_BLESS").is_some() {
        std::fs::write(&path, &got).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        got, want,
        "rendering changed; review and bless (see the module doc)"
    );
}

#[test]
fn text_sheet_and_summary() {
    check(Format::Text, "sweep-record.txt");
}

#[test]
fn csv_sheet() {
    check(Format::Csv, "sweep-record.csv");
}

#[test]
fn every_text_rendering_of_every_fixture_fits_100_columns() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for name in ["sweep-record.json", "record-v1.json"] {
        let file: ResultsFile =
            serde_json::from_str(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap();
        for run in &file.runs {
            for format in [Format::Text, Format::Md] {
                let text = render(run, format);
                for l in text.lines().filter(|l| !l.starts_with('|')) {
                    assert!(l.chars().count() <= 100, "{name} {format:?}: {l}");
                }
            }
        }
    }
}

#[test]
fn a_converted_dtype_is_named_beside_the_model() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let file: ResultsFile =
        serde_json::from_str(&std::fs::read_to_string(dir.join("sweep-record.json")).unwrap())
            .unwrap();
    let mut run = file.runs[0].clone();
    let model = run.config.model.model.clone();
    let text = render(&run, Format::Text);
    assert!(text.contains(&format!("model {model} · ")), "{text}");
    assert!(
        !text.contains("(dtype "),
        "a kept quantization is not named: {text}"
    );
    run.config.model.dtype = tokfire::config::WeightDType::F16;
    let text = render(&run, Format::Text);
    assert!(
        text.contains(&format!("model {model} (dtype f16) · ")),
        "{text}"
    );
}
