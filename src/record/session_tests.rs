//! Unit tests of `crate::record::session`.

use super::*;

#[test]
fn totals_split_waiting_generating_and_idle() {
    let mut load = StepRecord::new(0, 3, StepKindTag::Load, "load m".into(), 0.0);
    load.load_s = Some(1.0);
    load.warmup_s = Some(0.25);
    load.cold = Some(true);
    let mut req = StepRecord::new(1, 6, StepKindTag::Request, "chat".into(), 1.25);
    req.ttft_s = Some(0.5);
    req.completion_s = Some(2.0);
    let mut idle = StepRecord::new(2, 9, StepKindTag::Idle, "idle".into(), 3.25);
    idle.idle_script_s = Some(90.0);
    idle.idle_s = Some(0.9);
    let r = SessionRecord {
        session: crate::workload::session::parse("name = \"t\"\n[[step]]\nload = \"m\"\n", "t")
            .unwrap(),
        time_scale: 0.01,
        steps: vec![load, req, idle],
    };
    let t = totals(&r);
    assert_eq!(t.waiting_s, 1.75);
    assert_eq!(t.loading_s, 1.25);
    assert_eq!(t.ttft_s, 0.5);
    assert_eq!(t.generating_s, 1.5);
    assert_eq!(t.idle_s, 0.9);
    assert_eq!(t.idle_script_s, 90.0);
    assert!((t.wall_s - 4.15).abs() < 1e-9);
    assert_eq!((t.requests, t.loads, t.cold_loads), (1, 1, 1));
}
