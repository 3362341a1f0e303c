//! Unit tests of the workload layer: shipped files against the lock, loading errors, validators,
//! the arithmetic evaluator, tool-call parsing and the agent loop with scripted model outputs.

use super::*;

#[test]
fn every_builtin_loads() {
    for name in builtin_names() {
        let w = load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        println!("{}", lock_line(&w));
    }
}
