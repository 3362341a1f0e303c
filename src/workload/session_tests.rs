//! Unit tests of `crate::workload::session`.

use super::*;

const OK: &str = r#"
name = "t"
[[step]]
load = "m.gguf"
evict = true

[[step]]
chat = "hi"
system = "be brief"
repeat = 2

[[step]]
idle = "1.5m"

[[step]]
load = "m.gguf"
dtype = "f16"

[[step]]
raw = "def f():"
max_tokens = 8
"#;

#[test]
fn a_session_parses_with_lines() {
    let s = parse(OK, "t.toml").unwrap();
    let lines: Vec<usize> = s.steps.iter().map(|s| s.line).collect();
    assert_eq!(lines, [3, 7, 12, 15, 19], "each step's [[step]] line");
    assert!(matches!(
        s.steps[0].kind,
        StepKind::Load {
            evict: true,
            dtype: WeightDType::Q,
            ..
        }
    ));
    assert!(matches!(
        s.steps[1].kind,
        StepKind::Request {
            repeat: 2,
            max_tokens: 32,
            ..
        }
    ));
    assert_eq!(s.idle_s(), 90.0);
    assert!(matches!(
        s.steps[3].kind,
        StepKind::Load {
            dtype: WeightDType::F16,
            ..
        }
    ));
}

fn err(text: &str) -> String {
    parse(text, "bad.toml").unwrap_err().to_string()
}

#[test]
fn bad_steps_name_their_line() {
    let head = "name = \"t\"\n[[step]]\nload = \"m\"\n";
    let e = err(&format!("{head}[[step]]\nidle = \"-5s\"\n"));
    assert!(
        e.contains("bad.toml") && e.contains("line 4") && e.contains("negative"),
        "{e}"
    );
    let e = err(&format!("{head}[[step]]\nchat = \"x\"\ncolour = 1\n"));
    assert!(e.contains("line 6") && e.contains("colour"), "{e}");
    let e = err(&format!("{head}[[step]]\nchat = \"x\"\nraw = \"y\"\n"));
    assert!(e.contains("line 4") && e.contains("chat and raw"), "{e}");
    let e = err(&format!("{head}[[step]]\ntask = \"chat/nope\"\n"));
    assert!(e.contains("line 4") && e.contains("no task"), "{e}");
    let e = err("name = \"t\"\n[[step]]\nchat = \"x\"\n");
    assert!(e.contains("must load"), "{e}");
    assert!(err("name = \"t\"\n").contains("no steps"));
}

#[test]
fn durations() {
    assert_eq!(parse_duration("90s"), Ok(90.0));
    assert_eq!(parse_duration("500ms"), Ok(0.5));
    assert_eq!(parse_duration("2"), Ok(2.0));
    assert_eq!(parse_duration("1h"), Ok(3600.0));
    assert!(parse_duration("-1s").is_err());
    assert!(parse_duration("soon").is_err());
    assert!(parse_duration("inf").is_err());
    // Not a number is said as such, not called negative.
    for bad in ["NaNs", "nan", "infm"] {
        let e = parse_duration(bad).unwrap_err();
        assert!(
            e.contains("NaN or infinite") && !e.contains("negative"),
            "{bad}: {e}"
        );
    }
}
