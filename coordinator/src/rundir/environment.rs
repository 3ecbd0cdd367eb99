//! environment.json: the machine and software the run measured on.
//! Records no host name, user name or path.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub(crate) const SCHEMA: &str = "stagebench.environment";
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// Environment variables that change how many threads the measured code uses.
pub(crate) const THREAD_VARIABLES: &[&str] = &[
    "RAYON_NUM_THREADS",
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "TOKIO_WORKER_THREADS",
    "STAGEBENCH_THREADS",
];

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Environment {
    pub(crate) schema: String,
    pub(crate) schema_version: u32,
    pub(crate) captured_utc: String,
    pub(crate) cpu: Cpu,
    pub(crate) memory_bytes: Option<u64>,
    pub(crate) os: Os,
    pub(crate) toolchain: Toolchain,
    /// Thread settings from the environment (null where unset).
    pub(crate) threads: BTreeMap<String, Option<String>>,
    /// 1, 5 and 15 minute load averages when the run started.
    pub(crate) load_average: Option<[f64; 3]>,
    pub(crate) launcher: String,
    /// Transparent huge pages: the mode in force (`always`, `madvise`,
    /// `never`) and the defrag policy, where the kernel exposes them. A
    /// short-lived process's fresh memory may fault in as 2 MiB pages the
    /// kernel must zero, which can dominate its CPU time.
    #[serde(default)]
    pub(crate) transparent_hugepages: Thp,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Thp {
    pub(crate) enabled: Option<String>,
    pub(crate) defrag: Option<String>,
}

/// The bracketed choice of a sysfs multiple-choice file (`always [madvise] never`).
fn chosen(path: &str) -> Option<String> {
    let text = read_trimmed(path)?;
    let start = text.find('[')? + 1;
    let end = start + text[start..].find(']')?;
    Some(text[start..end].to_string())
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Cpu {
    pub(crate) model: Option<String>,
    pub(crate) logical_cores: usize,
    /// The cpufreq governor of cpu0, where readable.
    pub(crate) governor: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Os {
    pub(crate) name: Option<String>,
    pub(crate) kernel: Option<String>,
    pub(crate) arch: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Toolchain {
    pub(crate) rustc: String,
    pub(crate) profile: String,
    pub(crate) crates: BTreeMap<String, String>,
}

/// Reads the environment of this machine now.
pub(crate) fn capture(launcher: &str) -> Environment {
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
    Environment {
        schema: SCHEMA.into(),
        schema_version: SCHEMA_VERSION,
        captured_utc: crate::timestamp::rfc3339_utc_now(),
        cpu: Cpu {
            model,
            logical_cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            governor: read_trimmed("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
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
    }
}

/// The 1, 5 and 15 minute load averages.
pub(crate) fn load_average() -> Option<[f64; 3]> {
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
        let env = super::capture("local");
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
}
