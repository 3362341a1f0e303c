//! Unit tests of the verdict: speed-only and quality-only failures, mixed level patterns, the
//! headroom flag and the wording of each check.

use super::*;
use crate::config::run::DEFAULT_HEADROOM;

fn summary(jobs: usize) -> LevelSummary {
    LevelSummary {
        jobs,
        rounds: 3,
        attempted: 10,
        completed: 10,
        passed: 10,
        failed: 0,
        abstained: 0,
        ttft_median_s: Some(0.14),
        ttft_tail_s: Some(0.9),
        completion_median_s: Some(2.0),
        completion_tail_s: Some(3.0),
        tail_kind: "slowest".into(),
        job_tok_s_median: Some(30.0),
        job_tok_s_slowest: Some(25.0),
        aggregate_tok_s: Some(60.0),
        prompt_tok_s: Some(200.0),
        tpot_median_s: Some(0.03),
        ..LevelSummary::empty(jobs)
    }
}

fn criteria() -> Criteria {
    Criteria {
        label: "my targets".into(),
        ttft_max_s: Some(1.0),
        per_job_tok_s_min: Some(10.0),
        completion_max_s: Some(5.0),
        pass_rate_min: Some(0.8),
    }
}

fn judge0(s: &LevelSummary) -> LevelVerdict {
    judge(s, &criteria(), DEFAULT_HEADROOM)
}

#[test]
fn every_check_shows_value_target_and_margin() {
    let v = judge0(&summary(1));
    assert!(v.comfortable && v.speed_ok && v.quality_ok && v.headroom_ok);
    assert_eq!(v.checks.len(), 4);
    assert_eq!(
        v.checks[0].describe(),
        "median TTFT 0.14 s ≤ 1 s, 86 % headroom"
    );
    assert_eq!(
        v.checks[1].describe(),
        "slowest job 25 tok/s ≥ 10 tok/s, 150 % headroom"
    );
    assert_eq!(
        v.checks[3].describe(),
        "pass rate 100 % ≥ 80 %, 25 % headroom"
    );
    assert!((v.tightest_margin.unwrap() - 0.25).abs() < 1e-9);
}

#[test]
fn speed_only_failure() {
    let mut s = summary(3);
    s.ttft_median_s = Some(1.5);
    s.job_tok_s_slowest = Some(8.0);
    let v = judge0(&s);
    assert!(!v.speed_ok && v.quality_ok && !v.comfortable);
    let bad = v.failures(Aspect::Speed);
    assert_eq!(
        bad,
        ["median TTFT 1.5 s > 1 s", "slowest job 8 tok/s < 10 tok/s"]
    );
    assert!(v.failures(Aspect::Quality).is_empty());
}

#[test]
fn quality_only_failure() {
    let mut s = summary(1);
    s.passed = 5;
    let v = judge0(&s);
    assert!(v.speed_ok && !v.quality_ok && !v.comfortable);
    assert_eq!(v.failures(Aspect::Quality), ["pass rate 50 % < 80 %"]);
    assert_eq!(v.label(), "not comfortable: pass rate 50 % < 80 %");
}

#[test]
fn missing_measurement_fails_and_absent_criteria_pass() {
    let mut s = summary(2);
    s.ttft_median_s = None;
    let v = judge0(&s);
    assert!(!v.speed_ok);
    assert_eq!(v.checks[0].describe(), "median TTFT n/a (target 1 s)");
    let none = Criteria {
        label: String::new(),
        ttft_max_s: None,
        per_job_tok_s_min: None,
        completion_max_s: None,
        pass_rate_min: None,
    };
    assert!(judge(&s, &none, DEFAULT_HEADROOM).comfortable);
}

#[test]
fn headroom_flag() {
    let mut s = summary(2);
    s.ttft_median_s = Some(0.9);
    let v = judge0(&s);
    assert!(v.comfortable && !v.headroom_ok);
    assert_eq!(
        v.label(),
        "comfortable, no headroom (median TTFT 0.9 s ≤ 1 s, 10 % headroom)"
    );
    assert!(judge(&s, &criteria(), 0.05).headroom_ok);
}

#[test]
fn a_mixed_pattern_names_the_highest_level_per_aspect() {
    let mut one = summary(1);
    one.ttft_median_s = Some(1.2); // a cold first level can be slower
    let two = summary(2);
    let mut three = summary(3);
    three.job_tok_s_slowest = Some(7.0);
    let vs: Vec<LevelVerdict> = [one, two, three].iter().map(judge0).collect();
    let r = overall(&vs, false);
    assert_eq!(r.speed_up_to_jobs, Some(2));
    assert_eq!(r.comfortable_up_to_jobs, Some(2));
    assert!(!r.comfortable_at_highest);
    assert_eq!(
        r.line,
        "speed comfortable at 2 jobs; at 1 job: median TTFT 1.2 s > 1 s; \
         quality comfortable at every level (up to 3 jobs)"
    );
}

#[test]
fn identical_outputs_say_quality_is_the_models_limit() {
    let vs: Vec<LevelVerdict> = [1, 2, 3]
        .map(|j| {
            let mut s = summary(j);
            s.passed = 5;
            s
        })
        .iter()
        .map(judge0)
        .collect();
    let r = overall(&vs, true);
    assert_eq!(r.quality_up_to_jobs, None);
    assert_eq!(r.speed_up_to_jobs, Some(3));
    assert!(r.line.starts_with("speed comfortable at every level (up to 3 jobs); quality not comfortable at any level; at 1 job: pass rate 50 % < 80 %"), "{}", r.line);
    assert!(r
        .line
        .ends_with("(outputs identical at every level: the model's limit, not the load's)"));
}

#[test]
fn all_comfortable_and_the_highest_gates() {
    let vs: Vec<LevelVerdict> = [1, 2].map(summary).iter().map(judge0).collect();
    let r = overall(&vs, false);
    assert!(r.comfortable_at_highest);
    assert_eq!(overall(&[], false).line, "no levels measured");
}

#[test]
fn a_mostly_disturbed_level_is_retest_not_comfortable_and_quiet_ones_are_judged() {
    use crate::record::quiet::QuietFigures;
    let quiet = |d: u64| QuietFigures {
        disturbed_rounds: Some(d),
        sentinel_rounds: 3,
        other_cores: Some(if d > 0 { 1.3 } else { 0.01 }),
        ..Default::default()
    };
    let calm = LevelSummary {
        quiet: quiet(1),
        ..summary(1)
    };
    let busy = LevelSummary {
        quiet: quiet(2),
        ..summary(2)
    };
    let (a, b) = (judge0(&calm), judge0(&busy));
    assert!(
        a.comfortable && a.retest.is_none(),
        "1 of 3 disturbed is judged"
    );
    assert!(!b.comfortable && !b.speed_ok && b.quality_ok, "{b:?}");
    assert!(
        b.label()
            .starts_with("retest: 2 of 3 rounds disturbed: other processes kept 1.30"),
        "{}",
        b.label()
    );
    let run = overall(&[a, b], false);
    assert!(
        !run.comfortable_at_highest,
        "--exit-code must not pass a retest"
    );
    assert_eq!(run.comfortable_up_to_jobs, Some(1));
    assert!(
        run.line.starts_with(
            "speed comfortable at 1 job; retest at 2 jobs (most rounds disturbed by other work)"
        ),
        "{}",
        run.line
    );
}
