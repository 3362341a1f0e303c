//! A one-line progress display on stderr (level, round, tasks done), shown only when stderr is
//! a terminal so logs and pipes stay clean.

use std::io::{IsTerminal, Write};

/// Where a run is.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Position {
    pub level: usize,
    pub levels: usize,
    pub jobs: usize,
    pub round: usize,
    pub rounds: usize,
    pub warmup: bool,
}

/// Redraws one status line.
pub struct Progress {
    enabled: bool,
    drawn: bool,
}

impl Progress {
    /// Enabled when stderr is a terminal.
    pub(crate) fn stderr() -> Self {
        Self {
            enabled: std::io::stderr().is_terminal(),
            drawn: false,
        }
    }

    pub(crate) fn update(&mut self, at: Position, done: usize, total: usize) {
        if !self.enabled {
            return;
        }
        let round = if at.warmup {
            "warm-up".to_string()
        } else {
            format!("round {}/{}", at.round, at.rounds)
        };
        let width = 20;
        let filled = (done * width).checked_div(total).unwrap_or(0);
        let bar = format!(
            "{}{}",
            "#".repeat(filled),
            "-".repeat(width - filled.min(width))
        );
        eprint!(
            "\r\x1b[2Klevel {}/{} ({}) · {round} · [{bar}] {done}/{total} tasks",
            at.level,
            at.levels,
            crate::fmt::plural(at.jobs, "job")
        );
        let _ = std::io::stderr().flush();
        self.drawn = true;
    }

    /// Clears the line.
    pub(crate) fn finish(&mut self) {
        if self.drawn {
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
            self.drawn = false;
        }
    }
}
