//! The "comfortable" verdict: does a concurrency level meet the workload's acceptance criteria
//! (the user's own targets, declared in the workload before any run), and which criterion failed.
//! Pure, unit-tested.
//!
//! Checks: median TTFT ≤ `ttft_max_s`; the slowest job's tok/s (its median over rounds) ≥
//! `per_job_tok_s_min`; the completion tail (p95 or slowest) ≤ `completion_max_s`; passed ÷
//! attempted ≥ `pass_rate_min`. A missing measurement fails the check it is needed for.

use serde::Serialize;

use super::summary::LevelSummary;
use crate::workload::Criteria;

/// The verdict on one level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelVerdict {
    pub jobs: usize,
    pub comfortable: bool,
    /// Each criterion that failed, with the measured value.
    pub failed: Vec<String>,
}

/// Checks one level against the criteria.
pub fn judge(s: &LevelSummary, c: &Criteria) -> LevelVerdict {
    let mut failed = Vec::new();
    let fmt = |v: Option<f64>, unit: &str| v.map_or("n/a".to_string(), |v| format!("{v:.2}{unit}"));
    if let Some(max) = c.ttft_max_s {
        if !s.ttft_median_s.is_some_and(|v| v <= max) {
            failed.push(format!(
                "median TTFT {} > {max} s",
                fmt(s.ttft_median_s, " s")
            ));
        }
    }
    if let Some(min) = c.per_job_tok_s_min {
        if !s.job_tok_s_slowest.is_some_and(|v| v >= min) {
            failed.push(format!(
                "slowest job {} < {min} tok/s",
                fmt(s.job_tok_s_slowest, " tok/s")
            ));
        }
    }
    if let Some(max) = c.completion_max_s {
        if !s.completion_tail_s.is_some_and(|v| v <= max) {
            failed.push(format!(
                "{} completion {} > {max} s",
                s.tail_kind,
                fmt(s.completion_tail_s, " s")
            ));
        }
    }
    if let Some(min) = c.pass_rate_min {
        let rate = (s.attempted > 0).then(|| s.passed as f64 / s.attempted as f64);
        if !rate.is_some_and(|r| r >= min) {
            let shown = rate.map_or("n/a".into(), |r| format!("{:.0} %", r * 100.0));
            failed.push(format!("pass rate {shown} < {:.0} %", min * 100.0));
        }
    }
    LevelVerdict {
        jobs: s.jobs,
        comfortable: failed.is_empty(),
        failed,
    }
}

/// One line for the whole sweep: the most jobs up to which every level is comfortable.
pub fn overall(verdicts: &[LevelVerdict]) -> String {
    let mut sorted: Vec<&LevelVerdict> = verdicts.iter().collect();
    sorted.sort_by_key(|v| v.jobs);
    let ok_up_to = sorted
        .iter()
        .take_while(|v| v.comfortable)
        .last()
        .map(|v| v.jobs);
    let first_bad = sorted.iter().find(|v| !v.comfortable);
    match (ok_up_to, first_bad) {
        (Some(n), None) => format!("comfortable at every level tested (up to {n} jobs)"),
        (Some(n), Some(b)) => format!(
            "comfortable up to {n} job{}; at {} jobs: {}",
            if n == 1 { "" } else { "s" },
            b.jobs,
            b.failed.join("; ")
        ),
        (None, Some(b)) => format!(
            "not comfortable even at {} job{}: {}",
            b.jobs,
            if b.jobs == 1 { "" } else { "s" },
            b.failed.join("; ")
        ),
        (None, None) => "no levels measured".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(jobs: usize) -> LevelSummary {
        LevelSummary {
            jobs,
            rounds: 3,
            attempted: 10,
            completed: 10,
            passed: 9,
            failed: 1,
            abstained: 0,
            ttft_median_s: Some(0.4),
            ttft_tail_s: Some(0.9),
            completion_median_s: Some(2.0),
            completion_tail_s: Some(3.0),
            tail_kind: "slowest".into(),
            job_tok_s_median: Some(30.0),
            job_tok_s_slowest: Some(25.0),
            aggregate_tok_s: Some(60.0),
            prompt_tok_s: Some(200.0),
            tpot_median_s: Some(0.03),
            peak_rss_bytes: None,
            peak_kv_bytes: 0,
            decode_steps_by_seqs: Default::default(),
            full_step_fraction: None,
            harness_fraction: None,
            decode_step_ms_median: None,
            prefill_step_fraction: None,
            joules_per_token: None,
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

    #[test]
    fn comfortable_when_every_check_holds() {
        let v = judge(&summary(1), &criteria());
        assert!(v.comfortable, "{:?}", v.failed);
    }

    #[test]
    fn names_each_failed_criterion() {
        let mut s = summary(3);
        s.ttft_median_s = Some(1.5);
        s.job_tok_s_slowest = Some(8.0);
        s.passed = 5;
        let v = judge(&s, &criteria());
        assert!(!v.comfortable);
        assert_eq!(v.failed.len(), 3, "{:?}", v.failed);
        assert!(v.failed[0].contains("TTFT 1.50 s > 1 s"));
        assert!(v.failed[1].contains("8.00 tok/s < 10"));
        assert!(v.failed[2].contains("pass rate 50 % < 80 %"));
    }

    #[test]
    fn missing_measurement_fails_and_absent_criteria_pass() {
        let mut s = summary(2);
        s.ttft_median_s = None;
        assert!(!judge(&s, &criteria()).comfortable);
        let none = Criteria {
            label: String::new(),
            ttft_max_s: None,
            per_job_tok_s_min: None,
            completion_max_s: None,
            pass_rate_min: None,
        };
        assert!(judge(&s, &none).comfortable);
    }

    #[test]
    fn overall_names_the_first_uncomfortable_level() {
        let ok = |jobs| LevelVerdict {
            jobs,
            comfortable: true,
            failed: vec![],
        };
        let bad = LevelVerdict {
            jobs: 3,
            comfortable: false,
            failed: vec!["median TTFT 1.2 s > 1 s".into()],
        };
        assert_eq!(
            overall(&[ok(1), ok(2), bad.clone()]),
            "comfortable up to 2 jobs; at 3 jobs: median TTFT 1.2 s > 1 s"
        );
        assert!(overall(std::slice::from_ref(&bad)).starts_with("not comfortable even at 3 jobs"));
        assert!(overall(&[ok(1)]).starts_with("comfortable at every level"));
    }
}
