//! The kernel levels timed against each other on this CPU, so `--kernels auto` runs the level
//! that is fastest here rather than the widest CPUID reports (on cores that split 256-bit
//! operations a wider path can lose). A probe is a fixed set of matmuls on synthetic blocks, in
//! the shapes and layouts the models run (a decode row and a prefill batch; the 32-value and the
//! K-quant tile kernels, repacked and in GGUF rows), timed on one thread. The scalar level is
//! the reference, never a contender: it is not probed.

use std::time::Instant;

use super::blocks::QType;
use super::matmul::matmul_at;
use super::{Level, QMatrix};

/// Bumped when the probe set or the rule changes, so cached choices are measured again.
pub const PROBE_VERSION: u32 = 1;

/// A level is chosen over the widest one CPUID reports only when its probe time is at least
/// this much lower (run-to-run noise must not flip the choice).
pub const MARGIN: f64 = 0.05;

/// Weight rows and values per row of every probe matrix (256 KiB or less: the probe times the
/// kernels, not the memory).
const N: usize = 256;
const K: usize = 1024;
/// Samples per probe (the median is kept) and the least time one sample runs for.
const SAMPLES: usize = 5;
const SAMPLE_S: f64 = 0.002;

/// One level's probe: the median time of each probe matmul, microseconds, and their sum.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    pub level: Level,
    pub probes_us: Vec<f64>,
}

impl Timing {
    /// The probe set's time at this level, microseconds.
    pub fn total_us(&self) -> f64 {
        self.probes_us.iter().sum()
    }
}

/// The probes' names, in the order of [`Timing::probes_us`].
pub fn probe_names() -> Vec<String> {
    cases()
        .iter()
        .map(|(q, repack, t)| {
            let layout = if *repack { "tiles" } else { "rows" };
            let q = match q {
                QType::Q4K => "Q4_K".to_string(),
                q => format!("{q:?}"),
            };
            format!("{q} {layout} T={t}")
        })
        .collect()
}

fn cases() -> Vec<(QType, bool, usize)> {
    let mut v = Vec::new();
    for q in [QType::Q4_0, QType::Q4K] {
        for repack in [true, false] {
            for t in [1, 32] {
                v.push((q, repack, t));
            }
        }
    }
    v
}

/// Every SIMD level this CPU has, timed on one thread (about 0.1 s per level). The levels take
/// turns sample by sample, so a disturbance on a busy machine falls on all of them alike.
pub fn measure() -> Vec<Timing> {
    let levels: Vec<Level> = Level::ALL
        .into_iter()
        .filter(|l| *l != Level::Scalar && l.available())
        .collect();
    let mats: Vec<(QMatrix, Vec<f32>, usize)> = cases()
        .into_iter()
        .map(|(q, repack, t)| {
            let w = matrix(q);
            let w = match repack {
                true => w.repacked().unwrap_or(w),
                false => w,
            };
            (w, activations(t), t)
        })
        .collect();
    let all = || {
        let mut us = vec![vec![Vec::with_capacity(SAMPLES); mats.len()]; levels.len()];
        for round in 0..=SAMPLES {
            for (l, &level) in levels.iter().enumerate() {
                for (p, (w, x, t)) in mats.iter().enumerate() {
                    let s = sample(level, w, x, *t);
                    // The first round warms caches and pages up; it is not kept.
                    if round > 0 {
                        us[l][p].push(s);
                    }
                }
            }
        }
        us
    };
    // One worker: the matmuls run serially whatever the global pool holds.
    let us = match rayon::ThreadPoolBuilder::new().num_threads(1).build() {
        Ok(pool) => pool.install(all),
        Err(_) => all(),
    };
    levels
        .iter()
        .zip(us)
        .map(|(&level, per_probe)| Timing {
            level,
            probes_us: per_probe.into_iter().map(median).collect(),
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The level to run: the fastest probed, unless the widest CPUID reports (`widest`) is within
/// [`MARGIN`] of it; `widest` when nothing was probed.
pub fn decide(timings: &[Timing], widest: Level) -> Level {
    let Some(fastest) = timings
        .iter()
        .min_by(|a, b| a.total_us().total_cmp(&b.total_us()))
    else {
        return widest;
    };
    match timings.iter().find(|t| t.level == widest) {
        Some(w) if fastest.total_us() >= w.total_us() * (1.0 - MARGIN) => widest,
        _ => fastest.level,
    }
}

/// One sample: the mean time of a matmul over calls filling at least `SAMPLE_S`, microseconds.
fn sample(level: Level, w: &QMatrix, x: &[f32], t: usize) -> f64 {
    let mut out = vec![0f32; t * w.n()];
    let (start, mut calls) = (Instant::now(), 0u32);
    while calls == 0 || start.elapsed().as_secs_f64() < SAMPLE_S {
        matmul_at(level, w, x, t, &mut out);
        calls += 1;
    }
    start.elapsed().as_secs_f64() * 1e6 / f64::from(calls)
}

/// `N × K` blocks of `q` with varied bytes and every f16 scale a small normal number (no NaN,
/// infinity or subnormal, whose slow paths would time something else).
fn matrix(q: QType) -> QMatrix {
    let blocks = N * K / q.block_len();
    let mut bytes: Vec<u8> = (0..blocks * q.block_bytes())
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let scale = half::f16::from_f32(0.01).to_le_bytes();
    let fields: &[usize] = match q {
        QType::Q4K => &[0, 2],
        QType::Q6K => &[208],
        QType::Q4_1 => &[0, 2],
        _ => &[0],
    };
    for blk in bytes.chunks_exact_mut(q.block_bytes()) {
        for &at in fields {
            blk[at..at + 2].copy_from_slice(&scale);
        }
    }
    QMatrix::new(q, N, K, bytes).expect("whole blocks; this is a bug")
}

fn activations(t: usize) -> Vec<f32> {
    (0..t * K)
        .map(|i| ((i * 37) % 19) as f32 / 9.0 - 1.0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(level: Level, us: f64) -> Timing {
        Timing {
            level,
            probes_us: vec![us / 2.0, us / 2.0],
        }
    }

    #[test]
    fn the_widest_level_stays_unless_another_is_clearly_faster() {
        let (avx2, v512) = (Level::Avx2, Level::Avx512Vnni);
        let near = [timing(avx2, 97.0), timing(v512, 100.0)];
        assert_eq!(decide(&near, v512), v512, "3 % faster is within the margin");
        let clear = [timing(avx2, 90.0), timing(v512, 100.0)];
        assert_eq!(decide(&clear, v512), avx2, "10 % faster wins");
        let wider_wins = [timing(avx2, 130.0), timing(v512, 100.0)];
        assert_eq!(decide(&wider_wins, v512), v512);
        assert_eq!(decide(&[], Level::Scalar), Level::Scalar, "nothing probed");
    }

    #[test]
    fn every_probe_runs_and_takes_time_at_each_simd_level() {
        let t = measure();
        let simd = Level::ALL
            .iter()
            .filter(|l| **l != Level::Scalar && l.available())
            .count();
        assert_eq!(t.len(), simd);
        for level in &t {
            assert_eq!(level.probes_us.len(), probe_names().len());
            assert!(level.probes_us.iter().all(|us| *us > 0.0 && us.is_finite()));
        }
    }
}
