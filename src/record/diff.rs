//! What differs between two serialisable values (configs, provenance), as dotted paths with both
//! sides: the comparability check of `ab` and `compare`. Pure.

use serde::Serialize;
use serde_json::Value;

/// One differing leaf: `engine.prefill_chunk: 256 → 32`.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    pub path: String,
    pub a: String,
    pub b: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} \u{2192} {}", self.path, self.a, self.b)
    }
}

/// Every leaf of `a` and `b` (as JSON) whose value differs, in path order.
pub fn differences<T: Serialize>(a: &T, b: &T) -> Vec<Difference> {
    let va = serde_json::to_value(a).expect("configs serialize; this is a bug");
    let vb = serde_json::to_value(b).expect("configs serialize; this is a bug");
    let mut out = Vec::new();
    walk("", &va, &vb, &mut out);
    out
}

fn walk(path: &str, a: &Value, b: &Value, out: &mut Vec<Difference>) {
    match (a, b) {
        (Value::Object(ma), Value::Object(mb)) => {
            let mut keys: Vec<&String> = ma.keys().chain(mb.keys()).collect();
            keys.sort();
            keys.dedup();
            let null = Value::Null;
            for k in keys {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                walk(
                    &p,
                    ma.get(k).unwrap_or(&null),
                    mb.get(k).unwrap_or(&null),
                    out,
                );
            }
        }
        _ if a != b => out.push(Difference {
            path: path.to_string(),
            a: short(a),
            b: short(b),
        }),
        _ => {}
    }
}

fn short(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    if s.chars().count() > 60 {
        s.chars().take(57).collect::<String>() + "..."
    } else {
        s
    }
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
