//! Unit tests of `crate::report::summary`.

use super::*;

#[test]
fn quotes_only_what_needs_it() {
    let args = ["tokfire", "sweep", "--workload", "my tasks.toml", "it's"].map(String::from);
    assert_eq!(
        command_line(&args),
        r"tokfire sweep --workload 'my tasks.toml' 'it'\''s'"
    );
}
