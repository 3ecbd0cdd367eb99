//! This machine's record, read now: `environment.json`'s CPU, memory, OS,
//! toolchain, thread variables, load, cgroup limits and the outputs' file
//! system, from /proc, /sys, /etc/os-release and uname. The record's type
//! and the warnings it gives are `report`'s; reading the machine is the
//! coordinator's, so that `report` knows nothing of how figures were taken.

use report::rundir::environment::{
    self, Cpu, Environment, Filesystem, Limits, Os, THREAD_VARIABLES, Thp, Toolchain,
};
use std::collections::BTreeMap;

/// Reads the environment of this machine now, with the file system that
/// holds `output` (the run directory or its parent).
pub fn capture(launcher: &str, output: &std::path::Path) -> Environment {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')))
        .map(|(_, v)| v.trim().to_string());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory_bytes = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024);
    let os_release = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let os_name = os_release
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string());
    let kernel =
        nix::sys::utsname::uname().ok().map(|u| u.release().to_string_lossy().into_owned());
    let mut env = Environment {
        schema: environment::SCHEMA.into(),
        schema_version: environment::SCHEMA_VERSION,
        captured_utc: evidence::timestamp::rfc3339_utc_now(),
        cpu: Cpu {
            model,
            logical_cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            governor: read_trimmed("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            physical_cores: physical_cores(&cpuinfo),
            smt: read_trimmed("/sys/devices/system/cpu/smt/active").map(|v| v == "1"),
            boost: read_trimmed("/sys/devices/system/cpu/cpufreq/boost").map(|v| v == "1").or_else(
                || read_trimmed("/sys/devices/system/cpu/intel_pstate/no_turbo").map(|v| v == "0"),
            ),
        },
        memory_bytes,
        os: Os { name: os_name, kernel, arch: std::env::consts::ARCH.into() },
        toolchain: Toolchain {
            rustc: protocol::program::RUSTC_VERSION.into(),
            profile: protocol::program::PROFILE.into(),
            crates: protocol::program::key_crates()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        },
        threads: THREAD_VARIABLES.iter().map(|v| (v.to_string(), std::env::var(v).ok())).collect(),
        load_average: load_average(),
        launcher: launcher.into(),
        transparent_hugepages: Thp {
            enabled: chosen("/sys/kernel/mm/transparent_hugepage/enabled"),
            defrag: chosen("/sys/kernel/mm/transparent_hugepage/defrag"),
        },
        aslr: read_trimmed("/proc/sys/kernel/randomize_va_space").and_then(|v| v.parse().ok()),
        limits: limits(),
        output_filesystem: filesystem(output),
        unknown: BTreeMap::new(),
    };
    let why = [
        (
            "governor",
            env.cpu.governor.is_none(),
            "no cpufreq governor exposed (common in virtual machines)",
        ),
        (
            "boost",
            env.cpu.boost.is_none(),
            "neither cpufreq/boost nor intel_pstate/no_turbo is exposed",
        ),
        ("smt", env.cpu.smt.is_none(), "no /sys/devices/system/cpu/smt/active"),
        (
            "transparent_hugepages",
            env.transparent_hugepages.enabled.is_none(),
            "no /sys/kernel/mm/transparent_hugepage",
        ),
    ];
    for (what, missing, reason) in why {
        if missing {
            env.unknown.insert(what.into(), reason.into());
        }
    }
    env
}

/// Distinct (physical id, core id) pairs; None where cpuinfo has neither.
fn physical_cores(cpuinfo: &str) -> Option<usize> {
    let mut cores = std::collections::BTreeSet::new();
    let (mut package, mut core) = (None, None);
    for line in cpuinfo.lines().chain([""]) {
        let value = |l: &str| l.split_once(':').map(|(_, v)| v.trim().to_string());
        if line.starts_with("physical id") {
            package = value(line);
        } else if line.starts_with("core id") {
            core = value(line);
        } else if line.trim().is_empty() {
            if let (Some(p), Some(c)) = (package.take(), core.take()) {
                cores.insert((p, c));
            }
        }
    }
    (!cores.is_empty()).then_some(cores.len())
}

/// The CPU quota and memory limit of this process's cgroup (v2, else v1).
fn limits() -> Limits {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let path_of = |controller: &str| {
        cgroups.lines().find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
            (names.split(',').any(|n| n == controller)).then(|| path.to_string())
        })
    };
    let v2 = cgroups.lines().find_map(|l| l.strip_prefix("0::")).map(str::to_string);
    let at = |base: &str, path: &str, file: &str| {
        read_trimmed(&format!("{base}{}/{file}", path.trim_end_matches('/')))
    };
    let mut out = Limits::default();
    if let Some(p) = &v2 {
        if let Some(max) = at("/sys/fs/cgroup", p, "cpu.max") {
            let mut it = max.split_whitespace();
            if let (Some(q), Some(period)) = (it.next(), it.next()) {
                if let (Ok(q), Ok(period)) = (q.parse::<f64>(), period.parse::<f64>()) {
                    out.cpu_quota_cores = Some(q / period);
                }
            }
        }
        out.memory_limit_bytes = at("/sys/fs/cgroup", p, "memory.max").and_then(|v| v.parse().ok());
    }
    if out.cpu_quota_cores.is_none() {
        if let Some(p) = path_of("cpu") {
            let q = at("/sys/fs/cgroup/cpu", &p, "cpu.cfs_quota_us")
                .and_then(|v| v.parse::<f64>().ok());
            let period = at("/sys/fs/cgroup/cpu", &p, "cpu.cfs_period_us")
                .and_then(|v| v.parse::<f64>().ok());
            if let (Some(q), Some(period)) = (q, period) {
                out.cpu_quota_cores = (q > 0.0).then_some(q / period);
            }
        }
    }
    if out.memory_limit_bytes.is_none() {
        if let Some(p) = path_of("memory") {
            // v1 says "no limit" with a huge number.
            out.memory_limit_bytes = at("/sys/fs/cgroup/memory", &p, "memory.limit_in_bytes")
                .and_then(|v| v.parse::<u64>().ok())
                .filter(|b| *b < 1 << 60);
        }
    }
    out
}

/// The file system that holds `dir`: its mount table entry found by the
/// device number, and for ext4 its journal task in sysfs (`<none>`
/// without a journal).
pub fn filesystem(dir: &std::path::Path) -> Option<Filesystem> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    let (major, minor) = (nix::sys::stat::major(dev), nix::sys::stat::minor(dev));
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let kind = mountinfo.lines().rev().find_map(|line| {
        let mut fields = line.split(' ');
        (fields.nth(2)? == format!("{major}:{minor}"))
            .then(|| line.split_once(" - ")?.1.split(' ').next().map(str::to_string))?
    })?;
    let journal = (kind == "ext4")
        .then(|| {
            let device = std::fs::read_link(format!("/sys/dev/block/{major}:{minor}")).ok()?;
            let name = device.file_name()?.to_string_lossy().into_owned();
            read_trimmed(&format!("/sys/fs/ext4/{name}/journal_task")).map(|t| t != "<none>")
        })
        .flatten();
    Some(Filesystem { kind, journal })
}

/// The bracketed choice of a sysfs multiple-choice file (`always [madvise] never`).
fn chosen(path: &str) -> Option<String> {
    let text = read_trimmed(path)?;
    let start = text.find('[')? + 1;
    let end = start + text[start..].find(']')?;
    Some(text[start..end].to_string())
}

/// The 1, 5 and 15 minute load averages.
pub fn load_average() -> Option<[f64; 3]> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut it = s.split_whitespace().map(|x| x.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn captures_this_machine_without_naming_it() {
        let env = super::capture("local", std::path::Path::new("."));
        assert!(env.cpu.logical_cores >= 1);
        let json = serde_json::to_string(&env).unwrap();
        if let Ok(host) = nix::unistd::gethostname() {
            let host = host.to_string_lossy();
            if host.len() > 3 {
                assert!(!json.contains(host.as_ref()), "environment names the host");
            }
        }
        if let Ok(user) = std::env::var("USER") {
            if user.len() > 3 {
                assert!(!json.contains(&format!("\"{user}\"")), "environment names the user");
            }
        }
    }

    #[test]
    fn the_outputs_file_system_is_named_by_kind_and_an_unjournaled_ext4_warned_of() {
        use super::{capture, filesystem};
        use report::rundir::environment::{Filesystem, warnings};
        let here = filesystem(std::path::Path::new(".")).expect("a mounted file system");
        assert!(!here.kind.is_empty() && !here.kind.contains('/'), "{here:?}");
        if here.kind != "ext4" {
            assert_eq!(here.journal, None, "only ext4's journal is looked up");
        }
        assert!(filesystem(std::path::Path::new("/no/such/dir")).is_none());
        let mut env = capture("local", std::path::Path::new("."));
        let warned = |env: &report::rundir::environment::Environment| {
            warnings(env, 1, None, false).iter().any(|w| w.contains("without a journal"))
        };
        env.output_filesystem = Some(Filesystem { kind: "ext4".into(), journal: Some(false) });
        assert!(warned(&env));
        env.output_filesystem = Some(Filesystem { kind: "ext4".into(), journal: Some(true) });
        assert!(!warned(&env));
        env.output_filesystem = Some(Filesystem { kind: "tmpfs".into(), journal: None });
        assert!(!warned(&env));
    }
}
