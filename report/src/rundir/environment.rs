//! environment.json: the machine and software the run measured on.
//! Records no host name, user name or path.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const SCHEMA: &str = "stagebench.environment";
pub const SCHEMA_VERSION: u32 = 1;

/// environment.json's `schema_version`: this one's only (see
/// [`super::report::expect_version`]).
fn this_version<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    super::report::expect_version(d, SCHEMA, SCHEMA_VERSION)
}

/// Environment variables that change how many threads the measured code uses.
pub const THREAD_VARIABLES: &[&str] = &[
    "RAYON_NUM_THREADS",
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "TOKIO_WORKER_THREADS",
    "STAGEBENCH_THREADS",
];

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Environment {
    pub schema: String,
    #[serde(deserialize_with = "this_version")]
    pub schema_version: u32,
    pub captured_utc: String,
    pub cpu: Cpu,
    pub memory_bytes: Option<u64>,
    pub os: Os,
    pub toolchain: Toolchain,
    /// Thread settings from the environment (null where unset).
    pub threads: BTreeMap<String, Option<String>>,
    /// 1, 5 and 15 minute load averages when the run started.
    pub load_average: Option<[f64; 3]>,
    pub launcher: String,
    /// Transparent huge pages: the mode in force (`always`, `madvise`,
    /// `never`) and the defrag policy, where the kernel exposes them. A
    /// short-lived process's fresh memory may fault in as 2 MiB pages the
    /// kernel must zero, which can dominate its CPU time.
    #[serde(default)]
    pub transparent_hugepages: Thp,
    /// Address-space layout randomisation (`randomize_va_space`: 0 off, 2 full).
    #[serde(default)]
    pub aslr: Option<u8>,
    #[serde(default)]
    pub limits: Limits,
    /// The file system the run's outputs are written to (its kind, never
    /// its path or device).
    #[serde(default)]
    pub output_filesystem: Option<Filesystem>,
    /// What could not be read, and why (a virtual machine often exposes no
    /// cpufreq): a null above is explained here.
    #[serde(default)]
    pub unknown: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Thp {
    pub enabled: Option<String>,
    pub defrag: Option<String>,
}

/// A file system's kind (`ext4`, `xfs`, `tmpfs`, … from the mount table)
/// and, for ext4, whether it keeps a journal. Without one, ext4 will not
/// reuse an inode freed in the last 5 s (5 min while its inode table block
/// is dirty) and scans past each such inode when it creates a file, so
/// creating files after deleting many costs far more than before.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Filesystem {
    pub kind: String,
    pub journal: Option<bool>,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Cpu {
    pub model: Option<String>,
    pub logical_cores: usize,
    /// The cpufreq governor of cpu0, where readable.
    pub governor: Option<String>,
    /// Distinct (package, core) pairs in /proc/cpuinfo.
    #[serde(default)]
    pub physical_cores: Option<usize>,
    /// Simultaneous multithreading active (`/sys/devices/system/cpu/smt/active`).
    #[serde(default)]
    pub smt: Option<bool>,
    /// Turbo or boost enabled (`cpufreq/boost`, or `intel_pstate/no_turbo`).
    #[serde(default)]
    pub boost: Option<bool>,
}

/// What limits the run's processes beyond the machine: the cgroup's CPU
/// quota in cores (`cpu.max`, or `cpu.cfs_quota_us` / `cpu.cfs_period_us`)
/// and memory limit (`memory.max`, or `memory.limit_in_bytes`); null for none.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Limits {
    pub cpu_quota_cores: Option<f64>,
    pub memory_limit_bytes: Option<u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Os {
    pub name: Option<String>,
    pub kernel: Option<String>,
    pub arch: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Toolchain {
    pub rustc: String,
    pub profile: String,
    pub crates: BTreeMap<String, String>,
}

/// Above this 1-minute load per core, the machine was busy with other work.
pub const BUSY_LOAD_PER_CORE: f64 = 0.5;

/// The load warnings, for the start and the end of a run (the one rule
/// trials and every other mode share).
pub fn load_warnings(start: Option<[f64; 3]>, end: Option<[f64; 3]>, cores: f64) -> Vec<String> {
    [("start", start), ("end", end)]
        .into_iter()
        .filter_map(|(when, load)| {
            let l = load.map(|l| l[0]).filter(|l| *l > BUSY_LOAD_PER_CORE * cores)?;
            Some(format!(
                "load average {l:.2} at the {when} of the run on {cores} cores: the machine was not idle"
            ))
        })
        .collect()
}

/// What makes this machine's measurements hard to trust, as pyperf says it:
/// load above half the cores (at the start, and at the end when given), a
/// governor that is not `performance`, a CPU quota below the workers, more
/// workers than cores.
pub fn warnings(
    env: &Environment,
    workers: u32,
    load_end: Option<[f64; 3]>,
    with_load: bool,
) -> Vec<String> {
    let cores = env.cpu.logical_cores as f64;
    let mut out = match with_load {
        true => load_warnings(env.load_average, load_end, cores),
        false => Vec::new(),
    };
    if let Some(g) = env.cpu.governor.as_deref().filter(|g| *g != "performance") {
        out.push(format!(
            "the CPU frequency governor is '{g}', not 'performance': clock speed may change under the measurement"
        ));
    }
    if let Some(q) = env.limits.cpu_quota_cores.filter(|q| *q < f64::from(workers)) {
        out.push(format!(
            "a CPU quota of {q:.2} cores applies to this run, below the {workers} workers asked for: they take turns"
        ));
    }
    if let Some(Filesystem { kind, journal: Some(false) }) = &env.output_filesystem {
        out.push(format!(
            "the outputs' file system is {kind} without a journal: creating a file scans past every inode deleted in the last 5 s to 5 min, so file writes after deletions (an earlier run's or round's) cost more and vary"
        ));
    }
    if f64::from(workers) > cores {
        out.push(format!(
            "{workers} workers on {cores} cores: parallel figures measure the processes sharing cores (contention) as much as the work"
        ));
    }
    out
}

/// The record for a person, a line a part (`coordinator doctor`): CPU,
/// memory and limits, kernel and its settings, the file system, the load,
/// and what could not be read.
pub fn described(env: &Environment) -> Vec<String> {
    let or = |v: Option<String>| v.unwrap_or_else(|| "unknown".into());
    let on_off = |b: Option<bool>| or(b.map(|b| if b { "on" } else { "off" }.to_string()));
    let c = &env.cpu;
    let mut out = vec![
        format!("cpu: {}", or(c.model.clone())),
        format!(
            "  cores: {} logical, {} physical; SMT {}",
            c.logical_cores,
            or(c.physical_cores.map(|n| n.to_string())),
            on_off(c.smt)
        ),
        format!("  governor {}; boost {}", or(c.governor.clone()), on_off(c.boost)),
        format!(
            "memory: {} total; cgroup limit {}; cgroup CPU quota {}",
            or(env.memory_bytes.map(crate::fmt::mib)),
            env.limits.memory_limit_bytes.map_or("none".into(), crate::fmt::mib),
            env.limits.cpu_quota_cores.map_or("none".into(), |q| format!("{q:.2} cores"))
        ),
        format!(
            "kernel {}; transparent huge pages {} (defrag {}); ASLR {}",
            or(env.os.kernel.clone()),
            or(env.transparent_hugepages.enabled.clone()),
            or(env.transparent_hugepages.defrag.clone()),
            or(env.aslr.map(|a| a.to_string()))
        ),
    ];
    if let Some(fs) = &env.output_filesystem {
        let journal = match fs.journal {
            Some(true) => ", with a journal",
            Some(false) => ", without a journal",
            None => "",
        };
        out.push(format!("this directory's file system: {}{journal}", fs.kind));
    }
    if let Some([one, five, fifteen]) = env.load_average {
        out.push(format!("load average {one:.2} {five:.2} {fifteen:.2}"));
    }
    out.extend(env.unknown.iter().map(|(what, why)| format!("unknown {what}: {why}")));
    out
}

/// The warnings for `workers` workers on this machine now: its load now
/// (a run says start and end), then every other of [`warnings`].
pub fn warnings_now(env: &Environment, workers: u32) -> Vec<String> {
    let cores = env.cpu.logical_cores;
    let mut out: Vec<String> = env
        .load_average
        .map(|l| l[0])
        .filter(|l| *l > BUSY_LOAD_PER_CORE * cores as f64)
        .map(|l| format!("load average {l:.2} now on {cores} cores: the machine is not idle"))
        .into_iter()
        .collect();
    out.extend(warnings(env, workers, None, false));
    out
}

/// The machine of an environment.json in a line (CPU, cores, kernel,
/// architecture), never a host or user name; "unknown" when it cannot be
/// read.
pub fn one_line(path: &std::path::Path) -> String {
    let env: Option<Environment> =
        std::fs::read(path).ok().and_then(|b| serde_json::from_slice(&b).ok());
    match env {
        Some(e) => format!(
            "{}, {} logical core(s), {} {}",
            e.cpu.model.as_deref().unwrap_or("unknown CPU"),
            e.cpu.logical_cores,
            e.os.kernel.as_deref().unwrap_or("unknown kernel"),
            e.os.arch
        ),
        None => "unknown".into(),
    }
}
