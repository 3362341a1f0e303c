//! Unit tests of `crate::config::run`.

use super::*;

#[test]
fn kv_budget_parses_tokens_and_bytes() {
    assert_eq!(KvBudget::parse("4096").ok(), Some(KvBudget::Tokens(4096)));
    assert_eq!(
        KvBudget::parse("64MiB").ok(),
        Some(KvBudget::Bytes(64 << 20))
    );
    assert_eq!(
        KvBudget::parse("1GB").ok(),
        Some(KvBudget::Bytes(1_000_000_000))
    );
    assert!(KvBudget::parse("lots").is_err());
    assert!(KvBudget::parse("12 parsecs").is_err());
    assert_eq!(KvBudget::Bytes(1000).tokens(10), 100);
}
