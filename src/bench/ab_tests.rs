use std::path::Path;

use super::*;

fn stored_config() -> RunConfig {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep-record.json");
    let text = std::fs::read_to_string(path).unwrap();
    let file = crate::record::io::parse(Path::new("r.json"), &text).unwrap();
    file.runs[0].config.clone()
}

#[test]
fn arms_on_other_kernels_or_storage_load_their_own_model_and_others_share_one() {
    let a = stored_config();
    let mut b = a.clone();
    b.runtime.threads = Some(1);
    assert!(!reload(&a, &b), "threads run on the same weights");
    b.runtime.candle = true;
    assert!(reload(&a, &b), "candle's kernels need their own weights");
    assert_eq!(
        drift(&a, &b),
        Some("candle's kernels quantize activations and sum in their own way")
    );
    let mut c = a.clone();
    c.model.dtype = crate::config::WeightDType::F16;
    assert!(reload(&a, &c));
}
