//! The "comfortable" verdict: does a concurrency level meet the workload's acceptance criteria
//! (the user's own targets, declared in the workload before any run)? Speed and quality are
//! judged apart, every criterion with its measured value, target and margin, so a user sees what
//! passed as well as what failed. Pure, unit-tested.
//!
//! Speed: median TTFT ≤ `ttft_max_s`; the slowest job's tok/s (its median over rounds) ≥
//! `per_job_tok_s_min`; the completion tail (p95 or slowest) ≤ `completion_max_s`.
//! Quality: passed ÷ attempted ≥ `pass_rate_min`. A missing measurement fails its check.
//! Margin (headroom): how far the value is inside its target, as a fraction of the target
//! (`(target − v) ÷ target` for a maximum, `(v − target) ÷ target` for a minimum); the seeds'
//! "leave headroom on purpose" flags a comfortable level whose tightest margin is below
//! `--headroom` (default 20 %).

use serde::{Deserialize, Serialize};

use super::summary::LevelSummary;
use crate::workload::Criteria;

/// What a criterion judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Aspect {
    Speed,
    Quality,
}

/// One criterion on one level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// What is measured, e.g. "median TTFT".
    pub name: String,
    pub aspect: Aspect,
    /// The measured value in `unit` (none when it could not be measured).
    pub value: Option<f64>,
    /// The target in `unit`.
    pub target: f64,
    /// `s`, `tok/s` or `%`.
    pub unit: String,
    /// True when the value must stay at or below the target.
    pub at_most: bool,
    pub pass: bool,
    /// Fraction of the target the value is inside it (negative when outside); none unmeasured.
    pub margin: Option<f64>,
}

impl Check {
    fn new(name: &str, aspect: Aspect, value: Option<f64>, target: f64, unit: &str) -> Self {
        Self::build(name, aspect, value, target, unit, true)
    }

    fn at_least(name: &str, aspect: Aspect, value: Option<f64>, target: f64, unit: &str) -> Self {
        Self::build(name, aspect, value, target, unit, false)
    }

    fn build(
        name: &str,
        aspect: Aspect,
        value: Option<f64>,
        target: f64,
        unit: &str,
        at_most: bool,
    ) -> Self {
        let value = value.filter(|v| v.is_finite());
        let pass = value.is_some_and(|v| if at_most { v <= target } else { v >= target });
        let margin = value.filter(|_| target > 0.0).map(|v| {
            if at_most {
                (target - v) / target
            } else {
                (v - target) / target
            }
        });
        Self {
            name: name.into(),
            aspect,
            value,
            target,
            unit: unit.into(),
            at_most,
            pass,
            margin,
        }
    }

    /// E.g. `median TTFT 0.14 s ≤ 1 s, 86 % headroom` or `pass rate 50 % < 80 %`.
    pub(crate) fn describe(&self) -> String {
        let num = |v: f64| match self.unit.as_str() {
            "%" => format!("{v:.0} %"),
            u => format!("{} {u}", trim(v)),
        };
        let Some(v) = self.value else {
            return format!("{} n/a (target {})", self.name, num(self.target));
        };
        let op = match (self.at_most, self.pass) {
            (true, true) => "≤",
            (true, false) => ">",
            (false, true) => "≥",
            (false, false) => "<",
        };
        let head = format!("{} {} {op} {}", self.name, num(v), num(self.target));
        match self.margin.filter(|_| self.pass) {
            Some(m) => format!("{head}, {:.0} % headroom", m * 100.0),
            None => head,
        }
    }
}

/// A figure with at most 3 significant decimals, no trailing zeros (`1`, `0.14`, `12.5`).
fn trim(v: f64) -> String {
    let digits = if v.abs() >= 100.0 {
        0
    } else if v.abs() >= 10.0 {
        1
    } else {
        2
    };
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The verdict on one level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelVerdict {
    pub jobs: usize,
    /// Every speed check passed.
    pub speed_ok: bool,
    /// Every quality check passed.
    pub quality_ok: bool,
    /// Speed and quality both.
    pub comfortable: bool,
    /// Comfortable and the tightest margin is at least the headroom asked for.
    pub headroom_ok: bool,
    /// Smallest margin over the checks (none without checks or measurements).
    pub tightest_margin: Option<f64>,
    pub checks: Vec<Check>,
    /// Why the level's speed cannot be judged: most of its rounds were disturbed (the
    /// sentinel's rule, [`super::quiet`]). Speed then neither passes nor fails: retest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retest: Option<String>,
}

impl LevelVerdict {
    /// The checks of `aspect` that failed, described.
    pub(crate) fn failures(&self, aspect: Aspect) -> Vec<String> {
        self.checks
            .iter()
            .filter(|c| c.aspect == aspect && !c.pass)
            .map(Check::describe)
            .collect()
    }

    /// `comfortable`, `comfortable, no headroom (…)`, `not comfortable: …` or `retest: …`.
    pub(crate) fn label(&self) -> String {
        if let Some(why) = &self.retest {
            let quality = self.failures(Aspect::Quality);
            let q = if quality.is_empty() {
                String::new()
            } else {
                format!("; {}", quality.join("; "))
            };
            return format!("retest: {why}; run again on a quiet machine{q}");
        }
        if !self.comfortable {
            let mut bad = self.failures(Aspect::Speed);
            bad.extend(self.failures(Aspect::Quality));
            return format!("not comfortable: {}", bad.join("; "));
        }
        match (self.headroom_ok, self.tightest()) {
            (false, Some(c)) => format!("comfortable, no headroom ({})", c.describe()),
            _ => "comfortable".into(),
        }
    }

    fn tightest(&self) -> Option<&Check> {
        self.checks
            .iter()
            .filter(|c| c.margin.is_some())
            .min_by(|a, b| a.margin.unwrap_or(0.0).total_cmp(&b.margin.unwrap_or(0.0)))
    }
}

/// Checks one level against the criteria; `headroom` is the margin a level should keep.
pub(crate) fn judge(s: &LevelSummary, c: &Criteria, headroom: f64) -> LevelVerdict {
    let mut checks = Vec::new();
    if let Some(max) = c.ttft_max_s {
        checks.push(Check::new(
            "median TTFT",
            Aspect::Speed,
            s.ttft_median_s,
            max,
            "s",
        ));
    }
    if let Some(min) = c.per_job_tok_s_min {
        checks.push(Check::at_least(
            "slowest job",
            Aspect::Speed,
            s.job_tok_s_slowest,
            min,
            "tok/s",
        ));
    }
    if let Some(max) = c.completion_max_s {
        let name = format!("{} completion", s.tail_kind);
        checks.push(Check::new(
            &name,
            Aspect::Speed,
            s.completion_tail_s,
            max,
            "s",
        ));
    }
    if let Some(min) = c.pass_rate_min {
        let rate = (s.attempted > 0).then(|| 100.0 * s.passed as f64 / s.attempted as f64);
        checks.push(Check::at_least(
            "pass rate",
            Aspect::Quality,
            rate,
            min * 100.0,
            "%",
        ));
    }
    let ok = |a: Aspect| checks.iter().filter(|c| c.aspect == a).all(|c| c.pass);
    let retest = s
        .quiet
        .mostly_disturbed()
        .then(|| s.quiet.disturbed_line())
        .flatten();
    let (speed_ok, quality_ok) = (ok(Aspect::Speed) && retest.is_none(), ok(Aspect::Quality));
    let tightest_margin = checks
        .iter()
        .filter_map(|c| c.margin)
        .min_by(f64::total_cmp);
    let comfortable = speed_ok && quality_ok;
    LevelVerdict {
        jobs: s.jobs,
        speed_ok,
        quality_ok,
        comfortable,
        headroom_ok: comfortable && tightest_margin.is_none_or(|m| m >= headroom),
        tightest_margin,
        checks,
        retest,
    }
}

/// The verdict of a whole run: the highest comfortable level on each aspect and one line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunVerdict {
    /// Highest level whose speed checks all passed (none when none did).
    pub speed_up_to_jobs: Option<usize>,
    /// Highest level whose quality checks all passed.
    pub quality_up_to_jobs: Option<usize>,
    /// Highest level comfortable on both.
    pub comfortable_up_to_jobs: Option<usize>,
    /// The level with the most jobs is comfortable (what `--exit-code` gates on).
    pub comfortable_at_highest: bool,
    /// Greedy outputs were identical at every level, so quality cannot differ between levels.
    pub outputs_identical: bool,
    /// The one-line summary.
    pub line: String,
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Judges the whole run from its level verdicts; `outputs_identical` says whether every task's
/// output was the same at every level.
pub(crate) fn overall(verdicts: &[LevelVerdict], outputs_identical: bool) -> RunVerdict {
    let mut sorted: Vec<&LevelVerdict> = verdicts.iter().collect();
    sorted.sort_by_key(|v| v.jobs);
    let highest =
        |f: fn(&LevelVerdict) -> bool| sorted.iter().filter(|v| f(v)).map(|v| v.jobs).max();
    let speed = highest(|v| v.speed_ok);
    let quality = highest(|v| v.quality_ok);
    let comfortable = highest(|v| v.comfortable);
    let top = sorted.last();
    let line = match top {
        None => "no levels measured".to_string(),
        Some(_) => {
            let s = aspect_line("speed", &sorted, Aspect::Speed, |v| v.speed_ok);
            let mut q = aspect_line("quality", &sorted, Aspect::Quality, |v| v.quality_ok);
            if outputs_identical && sorted.len() > 1 {
                q += " (outputs identical at every level: the model's limit, not the load's)";
            }
            let thin: Vec<String> = sorted
                .iter()
                .filter(|v| v.comfortable && !v.headroom_ok)
                .map(|v| format!("{} job{}", v.jobs, plural(v.jobs)))
                .collect();
            let mut line = format!("{s}; {q}");
            if !thin.is_empty() {
                line += &format!("; no headroom at {}", thin.join(", "));
            }
            line
        }
    };
    RunVerdict {
        speed_up_to_jobs: speed,
        quality_up_to_jobs: quality,
        comfortable_up_to_jobs: comfortable,
        comfortable_at_highest: top.is_some_and(|v| v.comfortable),
        outputs_identical,
        line,
    }
}

/// `speed comfortable at every level (up to 3 jobs)`, `speed comfortable at 1 and 2 jobs; at
/// 3 jobs: …` or `speed not comfortable at any level: …`.
fn aspect_line(
    name: &str,
    sorted: &[&LevelVerdict],
    aspect: Aspect,
    ok: fn(&LevelVerdict) -> bool,
) -> String {
    let retest = |v: &LevelVerdict| aspect == Aspect::Speed && v.retest.is_some();
    let good: Vec<usize> = sorted.iter().filter(|v| ok(v)).map(|v| v.jobs).collect();
    let bad: Vec<&&LevelVerdict> = sorted.iter().filter(|v| !ok(v) && !retest(v)).collect();
    let again: Vec<usize> = sorted
        .iter()
        .filter(|v| retest(v))
        .map(|v| v.jobs)
        .collect();
    let list = |jobs: &[usize]| {
        let parts: Vec<String> = jobs.iter().map(|j| j.to_string()).collect();
        let n = jobs.last().copied().unwrap_or(0);
        match parts.len() {
            0 => String::new(),
            1 => format!("{} job{}", parts[0], plural(n)),
            _ => format!(
                "{} and {} jobs",
                parts[..parts.len() - 1].join(", "),
                parts[parts.len() - 1]
            ),
        }
    };
    let first_bad = bad.first().map(|v| {
        format!(
            "at {} job{}: {}",
            v.jobs,
            plural(v.jobs),
            v.failures(aspect).join("; ")
        )
    });
    let judged = sorted
        .iter()
        .any(|v| v.checks.iter().any(|c| c.aspect == aspect));
    if !judged {
        return format!("{name}: no criterion declared");
    }
    let retest_part = (!again.is_empty()).then(|| {
        format!(
            "retest at {} (most rounds disturbed by other work)",
            list(&again)
        )
    });
    let line = match (good.is_empty(), first_bad) {
        (true, None) => None,
        (_, None) if again.is_empty() => Some(format!(
            "{name} comfortable at every level (up to {} job{})",
            good[good.len() - 1],
            plural(good[good.len() - 1])
        )),
        (_, None) => Some(format!("{name} comfortable at {}", list(&good))),
        (true, Some(b)) if again.is_empty() => {
            Some(format!("{name} not comfortable at any level; {b}"))
        }
        (true, Some(b)) => Some(format!("{name} not comfortable; {b}")),
        (false, Some(b)) => Some(format!("{name} comfortable at {}; {b}", list(&good))),
    };
    match (line, retest_part) {
        (Some(l), None) => l,
        (Some(l), Some(r)) => format!("{l}; {r}"),
        (None, Some(r)) => format!("{name}: {r}"),
        (None, None) => format!("{name}: no levels measured"),
    }
}

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod tests;
