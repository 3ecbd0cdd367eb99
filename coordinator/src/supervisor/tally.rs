//! What a preparation phase keeps of its jobs: each job's result folded in
//! as it arrives and dropped, so a worker's memory for a phase of 10⁶ items
//! is what it is for 10 (the jobs themselves go to jobs.jsonl.gz as they
//! arrive, [`super::jobs_file`]). A phase of a user's items is folded by
//! its supervisors; the recipe's series are kept and folded the same way
//! when the phase is summed up, so both are summed by one piece of code.

use super::JobResult;
use report::rundir::spans::Pooled;
use report::rundir::stragglers::{Fold, ItemRun};
use std::collections::{BTreeMap, BTreeSet};

/// The leaked process names a tally keeps (it counts them all).
pub(crate) const LEAKED_NAMES: usize = 64;

/// One worker's jobs of a phase, folded.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tally {
    /// Sum of the jobs' walls, seconds.
    pub(crate) busy_s: f64,
    pub(crate) user_ns: u64,
    pub(crate) sys_ns: u64,
    /// The jobs' faults and switches, summed.
    pub(crate) faults: protocol::Faults,
    /// The largest VmHWM a job's measurement gave; None for no job.
    pub(crate) peak_rss_bytes: Option<u64>,
    /// The first job's figures (a preparation program's first item carries
    /// its start-up, `setup_s`).
    pub(crate) first_figures: Vec<protocol::Figure>,
    /// Every figure, summed over the jobs.
    pub(crate) figures: BTreeMap<String, f64>,
    /// The largest tree a job saw, and the largest sum of peaks.
    pub(crate) tree_peak_bytes: u64,
    pub(crate) sum_of_peaks_bytes: u64,
    /// Whether every job's tree was measured by a cgroup.
    pub(crate) cgroup: bool,
    /// Processes the jobs left behind: how many, and the first names.
    pub(crate) leaked: u64,
    pub(crate) leaked_names: Vec<String>,
    pub(crate) spans_not_found: BTreeSet<String>,
    pub(crate) spans: Pooled,
    /// The jobs' times for the stragglers and the tail: counts them too.
    pub(crate) runs: Fold,
    /// The last job, whole: its stage and sampling, for what follows it.
    pub(crate) last: Option<JobResult>,
}

impl Tally {
    /// A tally of `jobs`, in the order they ran, on a phase that started at `t0`.
    pub(crate) fn of<'a>(
        jobs: impl IntoIterator<Item = &'a JobResult>,
        t0: std::time::Instant,
    ) -> Tally {
        let mut t = Tally::default();
        for j in jobs {
            t.add(j.clone(), t0);
        }
        t
    }

    /// How many jobs it holds.
    pub(crate) fn jobs(&self) -> u64 {
        self.runs.items()
    }

    /// One more job, of a phase that started at `t0`.
    pub(crate) fn add(&mut self, r: JobResult, t0: std::time::Instant) {
        let m = &r.measurement;
        if self.jobs() == 0 {
            self.first_figures = m.figures.clone();
            self.cgroup = true;
        }
        self.busy_s += m.wall_ns as f64 / 1e9;
        self.user_ns += m.user_ns;
        self.sys_ns += m.sys_ns;
        self.faults = add(self.faults, m.faults);
        self.peak_rss_bytes = self.peak_rss_bytes.max(Some(m.peak_rss_bytes));
        for f in &m.figures {
            // A name is copied once, at its first job, not at every one.
            match self.figures.get_mut(f.name.as_str()) {
                Some(sum) => *sum += f.value,
                None => {
                    self.figures.insert(f.name.clone(), f.value);
                }
            }
        }
        self.tree_peak_bytes = self.tree_peak_bytes.max(m.tree.peak_bytes);
        self.sum_of_peaks_bytes = self.sum_of_peaks_bytes.max(m.tree.sum_of_peaks_bytes);
        self.cgroup &= m.tree.method == "cgroup";
        self.leaked += m.tree.leaked.len() as u64;
        let room = LEAKED_NAMES.saturating_sub(self.leaked_names.len());
        self.leaked_names.extend(m.tree.leaked.iter().take(room).cloned());
        self.spans_not_found.extend(m.spans_not_found.iter().cloned());
        self.spans.add(m.wall_ns as f64 / 1e9, &m.spans);
        let (start_s, end_s) = r.interval_since(t0);
        // A job that is no item (the recipe's series) is named by its place.
        let line = r.job.item.map_or(self.jobs() + 1, |i| i.n);
        self.runs.add(ItemRun { line, rank: r.worker.0, start_s, end_s });
        self.last = Some(r);
    }

    /// A figure of the first job; 0 where it has none.
    pub(crate) fn first_figure(&self, name: &str) -> f64 {
        self.first_figures.iter().find(|f| f.name == name).map_or(0.0, |f| f.value)
    }

    /// A figure summed over the jobs; 0 where none has it.
    pub(crate) fn sum(&self, name: &str) -> f64 {
        self.figures.get(name).copied().unwrap_or(0.0)
    }
}

/// Two counts of faults and switches, added.
pub(crate) fn add(a: protocol::Faults, b: protocol::Faults) -> protocol::Faults {
    protocol::Faults {
        minor: a.minor + b.minor,
        major: a.major + b.major,
        voluntary_switches: a.voluntary_switches + b.voluntary_switches,
        involuntary_switches: a.involuntary_switches + b.involuntary_switches,
    }
}

/// A task's own figures, summed over its jobs (kept or folded) and its
/// preparation program's close (whose CPU is reaped then).
pub(super) struct Cpu {
    pub(super) user_ns: u64,
    pub(super) sys_ns: u64,
    pub(super) peak_rss_bytes: u64,
}

impl Cpu {
    pub(super) fn of(
        jobs: &[JobResult],
        tally: Option<&Tally>,
        close: Option<&protocol::Measurement>,
    ) -> Cpu {
        let measured = || jobs.iter().map(|j| &j.measurement).chain(close);
        let (user, sys) = tally.map_or((0, 0), |t| (t.user_ns, t.sys_ns));
        Cpu {
            user_ns: user + measured().map(|m| m.user_ns).sum::<u64>(),
            sys_ns: sys + measured().map(|m| m.sys_ns).sum::<u64>(),
            peak_rss_bytes: measured()
                .map(|m| m.peak_rss_bytes)
                .chain(tally.and_then(|t| t.peak_rss_bytes))
                .max()
                .unwrap_or(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::{Item, Job};
    use protocol::{Figure, JobId, Measurement, Stage, WorkerId};

    fn result(n: u64, wall_ms: u64, leaked: &[&str], t0: std::time::Instant) -> JobResult {
        let mut measurement = Measurement { wall_ns: wall_ms * 1_000_000, ..Default::default() };
        measurement.figures = vec![Figure { name: "setup_s".into(), value: n as f64 }];
        measurement.tree.leaked = leaked.iter().map(|s| s.to_string()).collect();
        measurement.peak_rss_bytes = n * 10;
        let job = Job {
            id: JobId(n as u32),
            order: n as usize,
            key: "p".into(),
            stage: Stage::Sleep { ms: 0 },
            item: Some(Item { noun: "item", n, of: 100 }),
            spans: Vec::new(),
            sample: None,
        };
        let received = t0 + std::time::Duration::from_millis(n * 100 + wall_ms);
        JobResult { job, worker: WorkerId(3), measurement, artifacts: Vec::new(), received }
    }

    /// A tally keeps sums, the first job's figures, the largest peak, the
    /// slowest item by its line, and at most LEAKED_NAMES names while it
    /// counts every leaked process.
    #[test]
    fn a_tally_sums_keeps_the_first_and_the_largest_and_bounds_its_names() {
        let t0 = std::time::Instant::now();
        let mut t = Tally::default();
        for n in 1..=100u64 {
            let wall = if n == 37 { 500 } else { 10 };
            t.add(result(n, wall, &["sleep", "sleep"], t0), t0);
        }
        assert_eq!(t.jobs(), 100);
        assert!((t.busy_s - (99.0 * 0.01 + 0.5)).abs() < 1e-9, "{}", t.busy_s);
        assert_eq!(t.first_figure("setup_s"), 1.0);
        assert_eq!(t.sum("setup_s"), (1..=100).sum::<u64>() as f64);
        assert_eq!(t.peak_rss_bytes, Some(1000));
        assert_eq!((t.leaked, t.leaked_names.len()), (200, LEAKED_NAMES));
        let s = t.runs.finish(1).unwrap();
        assert_eq!(s.slowest[0].line, 37);
        assert_eq!(t.last.as_ref().map(|r| r.job.id.0), Some(100));
        assert_eq!(Tally::default().peak_rss_bytes, None);
    }
}
