//! The one column table: every figure of the results sheet defined once — its key (the name in
//! JSON and CSV, unit included), its short header, its definition and its formatter. Text,
//! Markdown, CSV, the JSON summary's keys and `--help` are all generated from [`COLUMNS`] (the
//! pattern of llama-bench's `get_fields`). Identity columns ([`IDENTITY`]) tell rows of
//! different runs apart once pasted together.

use crate::fmt::hash_prefix as short;
use crate::record::summary::LevelSummary;
use crate::record::RunRecord;

/// A cell's raw value, before formatting.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Count(u64),
    /// A measured figure in the column's unit (none when it could not be measured).
    Num(Option<f64>),
    Text(String),
}

/// One figure of the sheet.
pub(crate) struct Column {
    /// Name in JSON and CSV (the [`LevelSummary`] field), unit included.
    pub key: &'static str,
    /// Header in text and Markdown.
    pub header: &'static str,
    /// What it measures, for `--help`.
    pub definition: &'static str,
    /// Shown in the text sheet (CSV and JSON carry every column).
    pub in_sheet: bool,
    /// The raw value.
    pub value: fn(&LevelSummary) -> Value,
    /// The text cell.
    pub text: fn(&LevelSummary) -> String,
}

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.digits$}"))
}

fn pct(v: Option<f64>) -> String {
    super::percent(v, 0)
}

fn bytes(v: Option<u64>) -> String {
    v.map_or("n/a".into(), super::bytes)
}

macro_rules! count {
    ($key:literal, $header:literal, $sheet:expr, $def:literal, $field:ident) => {
        Column {
            key: $key,
            header: $header,
            definition: $def,
            in_sheet: $sheet,
            value: |s| Value::Count(s.$field as u64),
            text: |s| s.$field.to_string(),
        }
    };
}

macro_rules! figure {
    ($key:literal, $header:literal, $sheet:expr, $def:literal, $field:ident, $text:expr) => {
        Column {
            key: $key,
            header: $header,
            definition: $def,
            in_sheet: $sheet,
            value: |s| Value::Num(s.$field),
            text: |s| ($text)(s.$field),
        }
    };
}

macro_rules! profile {
    ($key:literal, $header:literal, $sheet:expr, $def:literal, $field:ident, $text:expr) => {
        Column {
            key: $key,
            header: $header,
            definition: $def,
            in_sheet: $sheet,
            value: |s| Value::Num(s.profile.$field),
            text: |s| ($text)(s.profile.$field),
        }
    };
}

/// Every per-level figure, in sheet order.
pub(crate) const COLUMNS: &[Column] = &[
    count!("jobs", "jobs", true, "concurrent jobs (independent clients of the one engine)", jobs),
    count!("completed", "done", true, "tasks that ended with an answer (pass or fail), abstentions excluded", completed),
    count!("attempted", "tried", true, "tasks started in the measured rounds", attempted),
    figure!("ttft_median_s", "TTFT med s", true, "time to first token: submission of a task -> its first output token (queue + prefill), median over every measured task", ttft_median_s, |v| num(v, 3)),
    figure!("ttft_tail_s", "TTFT tail s", false, "TTFT tail: p95 with >= 20 samples, else the slowest", ttft_tail_s, |v| num(v, 3)),
    figure!("completion_median_s", "compl med s", true, "completion: submission -> last token of the task (all turns for tool agents), median", completion_median_s, |v| num(v, 2)),
    Column {
        key: "completion_tail_s",
        header: "compl tail s",
        definition: "completion tail: p95 with >= 20 samples, else the slowest (tail_kind says which)",
        in_sheet: true,
        value: |s| Value::Num(s.completion_tail_s),
        text: |s| format!("{} ({})", num(s.completion_tail_s, 2), s.tail_kind),
    },
    Column {
        key: "tail_kind",
        header: "tail",
        definition: "p95 or slowest: which tail the tail columns show",
        in_sheet: false,
        value: |s| Value::Text(s.tail_kind.clone()),
        text: |s| s.tail_kind.clone(),
    },
    figure!("job_tok_s_median", "job tok/s med", true, "per-job tok/s: a job's output tokens / (its last finish - its first submission), per round; median over (job, round)", job_tok_s_median, |v| num(v, 1)),
    figure!("job_tok_s_slowest", "slowest job tok/s", true, "the slowest job: smallest per-job median over rounds", job_tok_s_slowest, |v| num(v, 1)),
    figure!("job_busy_tok_s_median", "busy tok/s med", true, "per-job busy speed: a job's output tokens / the time its tasks were in flight (submission -> last token, summed), per round; median over (job, round); equals per-job tok/s in lockstep, higher when jobs think", job_busy_tok_s_median, |v| num(v, 1)),
    figure!("aggregate_tok_s", "agg tok/s", true, "aggregate: all output tokens of a round / the round's wall window, median over rounds", aggregate_tok_s, |v| num(v, 1)),
    figure!("prompt_tok_s", "prefill tok/s", false, "prefill clock: first-turn prompt tokens computed (those copied from the prefix cache excluded) / (first token - admission), median over tasks", prompt_tok_s, |v| num(v, 0)),
    figure!("tpot_median_s", "TPOT med ms", false, "decode clock, time per output token: (completion - TTFT) / (output tokens - 1), median over tasks", tpot_median_s, |v: Option<f64>| num(v.map(|t| t * 1e3), 1)),
    Column {
        key: "peak_rss_bytes",
        header: "peak mem",
        definition: "peak resident memory over the level (VmHWM, reset at its start), bytes",
        in_sheet: true,
        value: |s| Value::Num(s.peak_rss_bytes.map(|b| b as f64)),
        text: |s| bytes(s.peak_rss_bytes),
    },
    Column {
        key: "peak_device_bytes",
        header: "GPU mem",
        definition: "peak GPU memory of this process over the level's measured rounds, from the driver (NVML, polled every 10 ms), bytes; n/a on the CPU",
        in_sheet: false,
        value: |s| Value::Num(s.peak_device_bytes.map(|b| b as f64)),
        text: |s| bytes(s.peak_device_bytes),
    },
    Column {
        key: "peak_kv_bytes",
        header: "KV peak",
        definition: "KV peak: largest KV-cache bytes held at once in the level",
        in_sheet: false,
        value: |s| Value::Count(s.peak_kv_bytes),
        text: |s| bytes(Some(s.peak_kv_bytes)),
    },
    Column {
        key: "peak_state_bytes",
        header: "recurrent peak",
        definition: "hybrid models: largest recurrent-layer state held at once in the level (conv windows, state matrices, their rollback and prefix-cache copies), bytes; KV peak + this = state peak; n/a on attention-only models",
        in_sheet: false,
        value: |s| Value::Num((s.peak_state_bytes > 0).then_some(s.peak_state_bytes as f64)),
        text: |s| bytes((s.peak_state_bytes > 0).then_some(s.peak_state_bytes)),
    },
    count!("failed", "fails", true, "validation failures: answers that failed their checks (a fast failure is still a failure)", failed),
    count!("abstained", "abstain", true, "abstain: the model declined or ran out of tokens where the task allows it; neither pass nor fail", abstained),
    count!("passed", "passed", false, "answers that passed every check", passed),
    count!("rounds", "rounds", false, "measured rounds (warm-up excluded)", rounds),
    figure!("full_step_fraction", "full steps", false, "fraction of decode steps that carried every job's sequence (proof of batching)", full_step_fraction, pct),
    figure!("decode_step_ms_median", "decode step ms", false, "median forward time of steps without prompt tokens, ms", decode_step_ms_median, |v| num(v, 1)),
    figure!("prefill_step_fraction", "prefill steps", false, "wall share of steps that carried prompt tokens (each stalls every running job's next token)", prefill_step_fraction, pct),
    figure!("harness_fraction", "harness", false, "wall time outside forward passes and the drafter / wall time", harness_fraction, pct),
    figure!("drafter_fraction", "drafter", false, "speculation: the drafter's own time / wall time (n/a without --spec)", drafter_fraction, pct),
    figure!("joules_per_token", "J/token", false, "energy per output token of the device the model runs on (CPU package by RAPL, GPU board by NVML), joules (n/a without a counter)", joules_per_token, |v| num(v, 3)),
    Column {
        key: "spec_proposed",
        header: "drafted",
        definition: "speculation: draft tokens proposed (0 without --spec)",
        in_sheet: false,
        value: |s| Value::Count(s.spec.spec_proposed),
        text: |s| s.spec.spec_proposed.to_string(),
    },
    Column {
        key: "spec_accepted",
        header: "accepted",
        definition: "speculation: draft tokens the target accepted",
        in_sheet: false,
        value: |s| Value::Count(s.spec.spec_accepted),
        text: |s| s.spec.spec_accepted.to_string(),
    },
    Column {
        key: "spec_acceptance",
        header: "accept",
        definition: "speculation: acceptance rate = accepted / proposed (n/a without --spec)",
        in_sheet: false,
        value: |s| Value::Num(s.spec.spec_acceptance),
        text: |s| pct(s.spec.spec_acceptance),
    },
    Column {
        key: "spec_accepted_len",
        header: "tok/verify",
        definition: "speculation: mean tokens gained per verified sequence = 1 + accepted / verifies",
        in_sheet: false,
        value: |s| Value::Num(s.spec.spec_accepted_len),
        text: |s| num(s.spec.spec_accepted_len, 2),
    },
    Column {
        key: "spec_acceptance_request_median",
        header: "accept/req",
        definition: "speculation: each request's accepted / proposed, median over the requests that drafted (long answers weigh no more than short ones)",
        in_sheet: false,
        value: |s| Value::Num(s.spec.spec_acceptance_request_median),
        text: |s| pct(s.spec.spec_acceptance_request_median),
    },
    Column {
        key: "spec_acceptance_request_lowest",
        header: "accept/req low",
        definition: "speculation: the lowest request's accepted / proposed",
        in_sheet: false,
        value: |s| Value::Num(s.spec.spec_acceptance_request_lowest),
        text: |s| pct(s.spec.spec_acceptance_request_lowest),
    },
    Column {
        key: "spec_accepted_len_request_median",
        header: "tok/verify/req",
        definition: "speculation: each request's 1 + accepted / verifies, median over the requests that drafted",
        in_sheet: false,
        value: |s| Value::Num(s.spec.spec_accepted_len_request_median),
        text: |s| num(s.spec.spec_accepted_len_request_median, 2),
    },
    Column {
        key: "spec_draft_ms_per_token",
        header: "draft ms/tok",
        definition: "speculation: the drafter's own time per output token, ms (its clock apart from the target's)",
        in_sheet: false,
        value: |s| Value::Num(s.spec.spec_draft_ms_per_token),
        text: |s| num(s.spec.spec_draft_ms_per_token, 3),
    },
    Column {
        key: "spec_verify_ms_per_token",
        header: "verify ms/tok",
        definition: "speculation: forward time of the steps that verified drafts (with the other sequences' work they carried) per output token, ms",
        in_sheet: false,
        value: |s| Value::Num(s.spec.spec_verify_ms_per_token),
        text: |s| num(s.spec.spec_verify_ms_per_token, 2),
    },
    profile!("worst_gap_ms", "worst gap ms", true, "the longest gap between two tokens of one answer over the measured rounds (the stall a person notices), ms", worst_gap_ms, |v| num(v, 0)),
    Column {
        key: "disturbed_rounds",
        header: "disturbed",
        definition: "measured rounds the noise sentinel flagged: other processes kept more than 0.25 of a core busy, or steal took more than 5 % of the wall time (OS counters, not flags); a level with most rounds disturbed gets the verdict retest",
        in_sheet: true,
        value: |s| Value::Num(s.quiet.disturbed_rounds.map(|d| d as f64)),
        text: |s| {
            s.quiet
                .disturbed_rounds
                .map_or("n/a".into(), |d| format!("{d}/{}", s.quiet.sentinel_rounds))
        },
    },
    Column {
        key: "steady_shape",
        header: "steady",
        definition: "whether the decode steps reached a steady state: each decode-only step's time / the median of the same step in every measured round, rounds in order, split where its mean shifts (penalised binary segmentation, lone outliers clipped); flat, warmup (slower first), slowdown (faster first) or no-steady-state (steady too late, or a third or more in bursts)",
        in_sheet: false,
        value: |s| Value::Text(s.steady.steady_shape.clone()),
        text: |s| match s.steady.steady_shape.as_str() {
            "" => "n/a".into(),
            shape => shape.into(),
        },
    },
    Column {
        key: "steady_burst_share",
        header: "steady bursts",
        definition: "share of the steady part's decode steps in short bursts away from its level (machine noise)",
        in_sheet: false,
        value: |s| Value::Num(s.steady.steady_burst_share),
        text: |s| super::percent(s.steady.steady_burst_share, 0),
    },
    Column {
        key: "steady_from_step",
        header: "steady from",
        definition: "the first decode step of the steady part, 0-based over the analysed steps; earlier steps are left out of the steady step time",
        in_sheet: false,
        value: |s| Value::Num(s.steady.steady_from_step.map(|v| v as f64)),
        text: |s| s.steady.steady_from_step.map_or("n/a".into(), |v| v.to_string()),
    },
    Column {
        key: "steady_shift",
        header: "steady shift",
        definition: "mean step time of the steady part / before it, minus 1 (negative: it got faster)",
        in_sheet: false,
        value: |s| Value::Num(s.steady.steady_shift),
        text: |s| super::percent(s.steady.steady_shift, 0),
    },
    Column {
        key: "steady_step_ms",
        header: "steady step ms",
        definition: "median forward time of the steady part's decode steps, ms",
        in_sheet: false,
        value: |s| Value::Num(s.steady.steady_step_ms),
        text: |s| num(s.steady.steady_step_ms, 2),
    },
    Column {
        key: "other_cores",
        header: "other cores",
        definition: "cores other processes kept busy during a round (CPU time / wall time, /proc/stat), median over rounds",
        in_sheet: false,
        value: |s| Value::Num(s.quiet.other_cores),
        text: |s| num(s.quiet.other_cores, 2),
    },
    Column {
        key: "own_cores",
        header: "own cores",
        definition: "cores this process kept busy during a round (its threads' CPU time / wall time), median over rounds",
        in_sheet: false,
        value: |s| Value::Num(s.quiet.own_cores),
        text: |s| num(s.quiet.own_cores, 2),
    },
    profile!("stall_ms_per_token", "stall ms/token", false, "decode stall time per decoded token (every token after an answer's first): what steps with prompt tokens added to each token of the answers, ms; lower is less waiting", stall_ms_per_token, |v| num(v, 2)),
    Column {
        key: "stalls",
        header: "stalls",
        definition: "decode stalls: (answer, step) pairs where a step with prompt tokens delayed a running answer's next token",
        in_sheet: false,
        value: |s| Value::Count(s.profile.stalls),
        text: |s| s.profile.stalls.to_string(),
    },
    profile!("stall_ms_median", "stall med ms", false, "a stall: a step's time beyond the median decode-only step of the same decode count (the whole step for a ready answer it skipped), median, ms", stall_ms_median, |v| num(v, 1)),
    profile!("stall_ms_worst", "stall worst ms", false, "the worst stall, ms", stall_ms_worst, |v| num(v, 1)),
    profile!("plan_us_median", "plan us med", false, "planner clock: time in the scheduler's planning per step, median, microseconds", plan_us_median, |v| num(v, 1)),
    profile!("plan_us_max", "plan us max", false, "planner clock, slowest step, microseconds", plan_us_max, |v| num(v, 1)),
    profile!("plan_fraction", "plan share", false, "planner time / wall time", plan_fraction, |v: Option<f64>| super::percent(v, 3)),
    profile!("queue_mean", "queue mean", false, "requests waiting for admission per step, mean", queue_mean, |v| num(v, 2)),
    profile!("queue_max", "queue max", false, "requests waiting for admission per step, most", queue_max, |v| num(v, 0)),
    profile!("kv_peak_fraction", "KV peak %", false, "most KV tokens held in one step / the KV budget", kv_peak_fraction, pct),
    profile!("budget_fill", "budget fill", false, "tokens per step / --max-batch-tokens, mean over steps", budget_fill, pct),
    Column {
        key: "preemptions",
        header: "preempt",
        definition: "sequences preempted (cache dropped, recomputed later) over the measured rounds",
        in_sheet: false,
        value: |s| Value::Count(s.profile.preemptions),
        text: |s| s.profile.preemptions.to_string(),
    },
    Column {
        key: "spec_decode_speedup",
        header: "spec decode x",
        definition: "speculation: decode tok/s (1 / median TPOT per round) with --spec / with --spec none, medians over the interleaved rounds on the same model (n/a without a baseline)",
        in_sheet: false,
        value: |s| Value::Num(s.spec.baseline.spec_decode_speedup),
        text: |s| num(s.spec.baseline.spec_decode_speedup, 2),
    },
    Column {
        key: "spec_decode_speedup_min",
        header: "spec decode x min",
        definition: "speculation: smallest per-round decode speedup (round i with --spec / round i without)",
        in_sheet: false,
        value: |s| Value::Num(s.spec.baseline.spec_decode_speedup_min),
        text: |s| num(s.spec.baseline.spec_decode_speedup_min, 2),
    },
    Column {
        key: "spec_decode_speedup_max",
        header: "spec decode x max",
        definition: "speculation: largest per-round decode speedup (round i with --spec / round i without)",
        in_sheet: false,
        value: |s| Value::Num(s.spec.baseline.spec_decode_speedup_max),
        text: |s| num(s.spec.baseline.spec_decode_speedup_max, 2),
    },
    Column {
        key: "spec_decode_speedup_mad",
        header: "spec decode x MAD",
        definition: "speculation: median absolute deviation of the per-round decode speedups from their median (round i with --spec / round i without)",
        in_sheet: false,
        value: |s| Value::Num(s.spec.baseline.spec_decode_speedup_mad),
        text: |s| num(s.spec.baseline.spec_decode_speedup_mad, 2),
    },
    Column {
        key: "spec_decode_speedup_pairs",
        header: "spec decode pairs",
        definition: "speculation: round pairs behind the per-round decode speedups (the sample count of their min, max and MAD)",
        in_sheet: false,
        value: |s| Value::Count(s.spec.baseline.spec_decode_speedup_pairs as u64),
        text: |s| s.spec.baseline.spec_decode_speedup_pairs.to_string(),
    },
    Column {
        key: "spec_ttft_speedup",
        header: "spec TTFT x",
        definition: "speculation: median TTFT with --spec none / with --spec, medians over rounds (above 1 is faster)",
        in_sheet: false,
        value: |s| Value::Num(s.spec.baseline.spec_ttft_speedup),
        text: |s| num(s.spec.baseline.spec_ttft_speedup, 2),
    },
    Column {
        key: "spec_completion_speedup",
        header: "spec compl x",
        definition: "speculation: median completion with --spec none / with --spec, medians over rounds (above 1 is faster)",
        in_sheet: false,
        value: |s| Value::Num(s.spec.baseline.spec_completion_speedup),
        text: |s| num(s.spec.baseline.spec_completion_speedup, 2),
    },
    Column {
        key: "spec_outputs_identical",
        header: "spec same text",
        definition: "speculation: every task's output text identical with and without --spec (yes, no; empty without a baseline)",
        in_sheet: false,
        value: |s| Value::Text(s.spec.baseline.spec_outputs_identical.clone()),
        text: |s| match s.spec.baseline.spec_outputs_identical.as_str() {
            "" => "n/a".into(),
            v => v.into(),
        },
    },
    Column {
        key: "spec_baseline_rounds",
        header: "base rounds",
        definition: "speculation: measured --spec none baseline rounds compared (0: no baseline)",
        in_sheet: false,
        value: |s| Value::Count(s.spec.baseline.spec_baseline_rounds as u64),
        text: |s| s.spec.baseline.spec_baseline_rounds.to_string(),
    },
];

macro_rules! prefix_count {
    ($key:literal, $header:literal, $def:literal, $field:ident) => {
        Column {
            key: $key,
            header: $header,
            definition: $def,
            in_sheet: false,
            value: |s| Value::Count(s.prefix.$field),
            text: |s| s.prefix.$field.to_string(),
        }
    };
}

macro_rules! prefix_figure {
    ($key:literal, $header:literal, $def:literal, $field:ident, $text:expr) => {
        Column {
            key: $key,
            header: $header,
            definition: $def,
            in_sheet: false,
            value: |s| Value::Num(s.prefix.$field),
            text: |s| ($text)(s.prefix.$field),
        }
    };
}

/// The prefix cache's columns (CSV, JSON and the prefix-cache block of the text report).
pub(crate) const PREFIX_COLUMNS: &[Column] = &[
    prefix_count!("prefix_cold_prompts", "cold prompts", "prefix cache: tasks whose first prompt reused nothing (every task without --prefix-cache on)", prefix_cold_prompts),
    prefix_count!("prefix_cached_prompts", "cached prompts", "prefix cache: tasks whose first prompt copied a cached prefix instead of prefilling it", prefix_cached_prompts),
    prefix_figure!("prefix_ttft_cold_s", "TTFT cold s", "prefix cache: median TTFT of cold prompts, s", prefix_ttft_cold_s, |v| num(v, 3)),
    prefix_figure!("prefix_ttft_cached_s", "TTFT cached s", "prefix cache: median TTFT of cached prompts, s", prefix_ttft_cached_s, |v| num(v, 3)),
    prefix_count!("prefix_tokens_computed", "prompt tok computed", "prefix cache: prompt tokens prefilled, all turns", prefix_tokens_computed),
    prefix_count!("prefix_tokens_reused", "prompt tok reused", "prefix cache: prompt tokens copied from the cache, all turns", prefix_tokens_reused),
    prefix_figure!("prefix_hit_rate", "hit rate", "prefix cache: reused / all prompt tokens", prefix_hit_rate, pct),
];

/// Every column: the sheet's, then the prefix cache's.
/// Sheet columns only shown when some level has a value: records written before the figure
/// existed render as they did.
const SHOWN_WHEN_MEASURED: &[&str] = &["disturbed_rounds"];

/// The columns of the text, Markdown and HTML sheet for `levels`.
pub(crate) fn sheet(levels: &[LevelSummary]) -> Vec<&'static Column> {
    COLUMNS
        .iter()
        .filter(|c| c.in_sheet)
        .filter(|c| {
            !SHOWN_WHEN_MEASURED.contains(&c.key)
                || levels
                    .iter()
                    .any(|l| !matches!((c.value)(l), Value::Num(None)))
        })
        .collect()
}

pub(crate) fn all() -> impl Iterator<Item = &'static Column> {
    COLUMNS.iter().chain(PREFIX_COLUMNS)
}

/// Columns that identify the run a row comes from.
pub(crate) const IDENTITY: &[(&str, &str)] = &[
    ("run_id", "the run's id in its results file"),
    ("model", "what --model named"),
    ("model_sha256", "first 12 hex digits of the weights' sha256"),
    ("workload", "workload name@version"),
    (
        "workload_sha256",
        "first 12 hex digits of the workload's content hash",
    ),
    ("git_commit", "commit of the tokfire build"),
    ("device", "compute device"),
    ("kernels", "quantized-matmul kernels that ran"),
    ("threads", "compute threads"),
    (
        "status",
        "complete, or how the run ended (its figures then cover only the rounds it finished)",
    ),
];

/// The identity values of a run, in [`IDENTITY`] order.
pub(crate) fn identity(run: &RunRecord) -> Vec<String> {
    vec![
        run.id.clone(),
        run.config.model.model.clone(),
        short(&run.model.sha256),
        format!("{}@{}", run.workload.name, run.workload.version),
        short(&run.workload.hash),
        run.build.git_commit.clone(),
        run.runtime.device.clone(),
        run.runtime.kernels.clone(),
        run.runtime.threads.to_string(),
        run.status.short().to_string(),
    ]
}

/// A value as CSV wants it: plain numbers (full precision), empty when unmeasured.
pub(crate) fn csv_value(v: &Value) -> String {
    match v {
        Value::Count(n) => n.to_string(),
        // `+ 0.0` turns a negative zero into zero (IEEE 754: -0 + 0 = +0).
        Value::Num(x) => x.map_or(String::new(), |x| format!("{}", x + 0.0)),
        Value::Text(t) => csv_escape(t),
    }
}

/// Quotes a CSV field when it holds a comma, quote or newline.
pub(crate) fn csv_escape(t: &str) -> String {
    if t.contains([',', '"', '\n']) {
        format!("\"{}\"", t.replace('"', "\"\""))
    } else {
        t.to_string()
    }
}

/// The definitions of every column, for `--help`.
pub(crate) fn help() -> String {
    let width = all().map(|c| c.header.len()).max().unwrap_or(0);
    let mut out = String::from("Sheet columns (CSV/JSON key in brackets):\n");
    for c in all() {
        out += &format!("  {:<width$}  {} [{}]\n", c.header, c.definition, c.key);
    }
    out
}

#[cfg(test)]
#[path = "columns_tests.rs"]
mod tests;
