//! When each job's next task is due: the first after its stagger, the rest a think time after
//! the previous answer ([`ThinkConfig`]). Pure bookkeeping over `Instant`s; the round driver
//! asks which jobs are due and how long it may sleep when the engine has nothing to do.

use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::config::think::ThinkConfig;

/// Jobs waiting to start their next task, each with its due time.
pub(crate) struct Pacer {
    cfg: ThinkConfig,
    rng: StdRng,
    due: Vec<(Instant, usize)>,
}

impl Pacer {
    pub(crate) fn new(cfg: ThinkConfig) -> Self {
        Self {
            cfg,
            rng: StdRng::seed_from_u64(cfg.seed),
            due: Vec::new(),
        }
    }

    /// When job `job`'s first task is due, for a round started at `start` (`None`: now).
    pub(crate) fn first_start(&mut self, job: usize, start: Instant) -> Option<Instant> {
        let at = start + secs(self.cfg.stagger_s * job as f64);
        (self.cfg.stagger_s > 0.0 && job > 0).then(|| {
            self.due.push((at, job));
            at
        })
    }

    /// Schedules `job`'s next task a think time after `now`; false when there is no think
    /// time (the caller starts the task at once).
    pub(crate) fn after_answer(&mut self, job: usize, now: Instant) -> bool {
        if self.cfg.think_s == 0.0 {
            return false;
        }
        let pause = self.pause();
        self.due.push((now + secs(pause), job));
        true
    }

    /// One think time, seconds: uniform in `think ± jitter`, never below 0.
    fn pause(&mut self) -> f64 {
        let (t, j) = (self.cfg.think_s, self.cfg.jitter_s);
        if j == 0.0 {
            return t;
        }
        (t + self.rng.random_range(-j..=j)).max(0.0)
    }

    /// Jobs due by `now`, earliest first, removed from the waiting list.
    pub(crate) fn take_due(&mut self, now: Instant) -> Vec<usize> {
        self.due.sort_by_key(|&(at, job)| (at, job));
        let n = self.due.iter().take_while(|(at, _)| *at <= now).count();
        self.due.drain(..n).map(|(_, job)| job).collect()
    }

    /// How long until the next job is due (`None` when none waits).
    pub(crate) fn wait(&self, now: Instant) -> Option<Duration> {
        self.due
            .iter()
            .map(|(at, _)| at.saturating_duration_since(now))
            .min()
    }
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.max(0.0))
}

#[cfg(test)]
#[path = "think_tests.rs"]
mod tests;
