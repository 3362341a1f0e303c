//! `tokfire kernels`: the CPU kernel levels this machine has, each one's probe times, and the
//! level `--kernels auto` runs ([`crate::bench::kernel_choice`]), read from where it is kept or
//! measured (`--recalibrate` always measures).

use std::fmt::Write;

use crate::bench::kernel_choice::{self, Choice, Source};
use crate::cli::KernelsArgs;
use crate::kernels::{probe, Level};

pub fn run(args: KernelsArgs) -> anyhow::Result<()> {
    let (choice, source) = kernel_choice::load_or_measure(&kernel_choice::path(), args.recalibrate);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&choice)?);
    } else {
        print!("{}", render(&choice, &source));
    }
    Ok(())
}

/// The text screen.
pub(crate) fn render(c: &Choice, source: &Source) -> String {
    let mut out = format!("CPU: {}\n", c.cpu_model);
    let has: Vec<String> = Level::ALL
        .iter()
        .filter(|l| l.available())
        .map(|l| match l {
            Level::Scalar => "scalar (the reference, not probed)".to_string(),
            l if *l == c.widest => format!("{l} (the widest CPUID reports)"),
            l => l.to_string(),
        })
        .collect();
    let _ = writeln!(out, "levels: {}", has.join(", "));
    if !c.levels.is_empty() {
        out += &table(c);
    }
    let why = match (c.levels.is_empty(), c.chosen == c.widest) {
        (true, _) => "the only level this CPU has".to_string(),
        (false, true) => format!("no level beat it by {:.0} % or more", probe::MARGIN * 100.0),
        (false, false) => format!(
            "faster than {} by {:.0} % or more",
            c.widest,
            probe::MARGIN * 100.0
        ),
    };
    let _ = writeln!(out, "--kernels auto runs: {} ({why})", c.chosen);
    let _ = writeln!(out, "{}", kept(c, source));
    out
}

/// Probe by probe, each level's median time (the widest first) and the totals.
fn table(c: &Choice) -> String {
    let levels: Vec<_> = c.levels.iter().rev().collect();
    let best = levels
        .iter()
        .map(|l| l.total_us)
        .fold(f64::INFINITY, f64::min);
    let mut out = format!(
        "\nprobe (256 × 1024 matmul, one thread, median) {}\n",
        levels
            .iter()
            .map(|l| format!("{:>14}", l.level.to_string()))
            .collect::<String>()
    );
    for (i, name) in c.probes.iter().enumerate() {
        let cells: String = levels
            .iter()
            .map(|l| format!("{:>11.1} µs", l.probes_us[i]))
            .collect();
        let _ = writeln!(out, "  {name:<44}{cells}");
    }
    let totals: String = levels
        .iter()
        .map(|l| format!("{:>11.0} µs", l.total_us))
        .collect();
    let ratios: String = levels
        .iter()
        .map(|l| format!("{:>13.2}×", l.total_us / best))
        .collect();
    let _ = writeln!(out, "  {:<44}{totals}", "total");
    let _ = writeln!(out, "  {:<44}{ratios}\n", "against the fastest");
    out
}

fn kept(c: &Choice, source: &Source) -> String {
    match source {
        Source::Cached(p) => format!(
            "measured {} by an earlier run (--recalibrate measures again),\nkept in {}",
            c.measured_utc,
            p.display()
        ),
        Source::Measured(p) => format!("measured now, kept in {}", p.display()),
        Source::NotSaved(why) => format!("measured now; not kept, so runs measure again:\n  {why}"),
    }
}
