//! How workers are started: `local` (each worker a child process of the
//! coordinator) or `slurm` (workers as the tasks of one `srun` job step,
//! which stays the coordinator's child so that stopping it cancels every
//! task). Either way a worker gets where to connect, its rank and the run's
//! token through its environment, never argv (argv is visible in `ps`);
//! `srun` passes the environment on to its tasks.

use crate::process::{WorkerProcess, spawn_in_group};
use protocol::stream::Endpoint;
use protocol::{Token, WorkerId, env};
use std::io;
use std::path::PathBuf;
use std::process::Command;

/// `--launcher slurm` settings.
#[derive(Clone, Debug, Default)]
pub(crate) struct SlurmOptions {
    pub(crate) partition: Option<String>,
    /// `srun --time`, e.g. `10` (minutes) or `1:00:00`.
    pub(crate) time_limit: Option<String>,
    /// Further `srun` arguments, passed through as given.
    pub(crate) extra: Vec<String>,
}

#[derive(Clone, Debug)]
pub(crate) enum Kind {
    Local,
    Slurm(SlurmOptions),
}

impl Kind {
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            Kind::Local => "local",
            Kind::Slurm(_) => "slurm",
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Launcher {
    pub(crate) worker_bin: PathBuf,
    pub(crate) endpoint: Endpoint,
    pub(crate) token: Token,
    pub(crate) kind: Kind,
    /// Milliseconds between two samples of a stage's process tree.
    pub(crate) sample_ms: u32,
    /// `--keras-resident` (0: none), passed on to the workers' commands.
    pub(crate) keras_resident: u32,
    /// `--no-provenance`, passed on to the workers.
    pub(crate) no_provenance: bool,
}

impl Launcher {
    /// Whether several workers start together as one job step.
    pub(crate) fn starts_steps(&self) -> bool {
        matches!(self.kind, Kind::Slurm(_))
    }

    /// Starts `n` workers with ranks `first`, `first + 1`, …: locally one
    /// process each; through Slurm one job step of `n` tasks, whose task i
    /// takes rank `first + SLURM_PROCID`.
    pub(crate) fn launch(&self, first: WorkerId, n: u32) -> io::Result<Vec<WorkerProcess>> {
        match &self.kind {
            Kind::Local => (0..n)
                .map(|i| {
                    let rank = WorkerId(first.0 + i);
                    let mut cmd = Command::new(&self.worker_bin);
                    self.connection_env(&mut cmd);
                    cmd.env(env::RANK, rank.0.to_string())
                        .env(env::PARENT_PID, std::process::id().to_string());
                    Ok(spawn_in_group(&mut cmd)?.worker(rank))
                })
                .collect(),
            Kind::Slurm(opts) => {
                let mut cmd = Command::new("srun");
                cmd.arg(format!("--ntasks={n}"))
                    // One task dying ends the step, so no task waits alone.
                    .arg("--kill-on-bad-exit=1")
                    .arg("--job-name=stagebench")
                    .arg("--quiet");
                if let Some(p) = &opts.partition {
                    cmd.arg(format!("--partition={p}"));
                }
                if let Some(t) = &opts.time_limit {
                    cmd.arg(format!("--time={t}"));
                }
                cmd.args(&opts.extra).arg(&self.worker_bin);
                self.connection_env(&mut cmd);
                cmd.env_remove(env::RANK)
                    .env_remove(env::PARENT_PID)
                    .env(env::RANK_BASE, first.0.to_string());
                let step = spawn_in_group(&mut cmd)?;
                tracing::debug!(pid = step.pid, tasks = n, first = first.0, "srun started");
                Ok((0..n).map(|i| step.task(WorkerId(first.0 + i))).collect())
            }
        }
    }

    fn connection_env(&self, cmd: &mut Command) {
        match &self.endpoint {
            Endpoint::Unix(path) => cmd.env(env::SOCKET, path).env_remove(env::ADDR),
            Endpoint::Tcp(addr) => cmd.env(env::ADDR, addr).env_remove(env::SOCKET),
        };
        cmd.env(env::TOKEN, self.token.to_hex()).env_remove(env::TOKEN_FILE);
        cmd.env(env::SAMPLE_MS, self.sample_ms.to_string());
        match self.no_provenance {
            true => cmd.env(env::NO_PROVENANCE, "1"),
            false => cmd.env_remove(env::NO_PROVENANCE),
        };
        match self.keras_resident {
            0 => cmd.env_remove(env::KERAS_RESIDENT),
            n => cmd.env(env::KERAS_RESIDENT, n.to_string()),
        };
        cmd.env(env::SIGNALS, users_signals());
    }
}

/// A listener bound before the run's runtime starts, and the endpoint
/// workers are told to connect to.
pub(crate) struct Bound {
    pub(crate) listener: BoundListener,
    pub(crate) endpoint: Endpoint,
    /// Holds the private socket directory (0700) while the run lasts.
    pub(crate) socket_dir: Option<tempfile::TempDir>,
}

pub(crate) enum BoundListener {
    Unix(std::os::unix::net::UnixListener),
    Tcp(std::net::TcpListener),
}

impl BoundListener {
    /// The tokio listener; call inside the runtime.
    pub(crate) fn into_tokio(self) -> io::Result<crate::admission::Listener> {
        Ok(match self {
            BoundListener::Unix(l) => {
                l.set_nonblocking(true)?;
                crate::admission::Listener::Unix(tokio::net::UnixListener::from_std(l)?)
            }
            BoundListener::Tcp(l) => {
                l.set_nonblocking(true)?;
                crate::admission::Listener::Tcp(tokio::net::TcpListener::from_std(l)?)
            }
        })
    }
}

/// Binds where workers will connect: TCP on `listen` when given, else a Unix
/// socket in a new private directory. A TCP listener on an unspecified
/// address (0.0.0.0) is advertised under this host's name.
/// A coordinator's private socket directory is `stagebench-PID-RANDOM` in
/// the temp directory, so a later coordinator can tell whose it was.
const SOCKET_DIR_PREFIX: &str = "stagebench-";
/// The one file a socket directory holds.
const SOCKET_FILE: &str = "coordinator.sock";

/// Removes the socket directories that coordinators killed before they
/// could clean up (SIGKILL) left in `tmp`: only names this code gives
/// (`stagebench-PID-RANDOM`), only this user's, only when no process PID
/// exists, and only when they hold nothing but the socket. Returns how many.
fn sweep_stale_socket_dirs(tmp: &std::path::Path) -> usize {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid cannot fail and touches no memory.
    let me = unsafe { libc::geteuid() };
    let mut removed = 0;
    for e in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(SOCKET_DIR_PREFIX)
            .and_then(|rest| rest.split_once('-'))
            .filter(|(_, random)| !random.is_empty())
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
            .filter(|pid| *pid > 0)
        else {
            continue;
        };
        let Ok(meta) = e.path().symlink_metadata() else { continue };
        if !meta.is_dir() || meta.uid() != me || pid_exists(pid) {
            continue;
        }
        let entries: Vec<String> = std::fs::read_dir(e.path())
            .into_iter()
            .flatten()
            .flatten()
            .map(|f| f.file_name().to_string_lossy().into_owned())
            .collect();
        if entries.iter().any(|f| f != SOCKET_FILE) {
            continue;
        }
        let gone = entries.iter().all(|f| std::fs::remove_file(e.path().join(f)).is_ok())
            && std::fs::remove_dir(e.path()).is_ok();
        removed += gone as usize;
    }
    removed
}

/// Whether a process `pid` exists (anyone's: a pid we may not signal exists).
fn pid_exists(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

pub(crate) fn bind(listen: Option<&str>) -> io::Result<Bound> {
    match listen {
        Some(addr) => {
            let l = std::net::TcpListener::bind(addr)?;
            let local = l.local_addr()?;
            let advertised = if local.ip().is_unspecified() {
                let host = nix::unistd::gethostname()
                    .map_err(io::Error::from)?
                    .to_string_lossy()
                    .into_owned();
                format!("{host}:{}", local.port())
            } else {
                local.to_string()
            };
            tracing::debug!(%local, %advertised, "tcp listener bound");
            Ok(Bound {
                listener: BoundListener::Tcp(l),
                endpoint: Endpoint::Tcp(advertised),
                socket_dir: None,
            })
        }
        None => {
            use std::os::unix::fs::PermissionsExt;
            let removed = sweep_stale_socket_dirs(&std::env::temp_dir());
            if removed > 0 {
                tracing::debug!(
                    removed,
                    "removed socket directories of coordinators that are gone"
                );
            }
            let prefix = format!("{SOCKET_DIR_PREFIX}{}-", std::process::id());
            let dir = tempfile::Builder::new().prefix(&prefix).tempdir()?;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
            let socket = dir.path().join(SOCKET_FILE);
            tracing::debug!(socket_dir = %dir.path().display(), "socket directory created");
            let l = std::os::unix::net::UnixListener::bind(&socket)?;
            Ok(Bound {
                listener: BoundListener::Unix(l),
                endpoint: Endpoint::Unix(socket),
                socket_dir: Some(dir),
            })
        }
    }
}

/// Whether the workers' socket directory can be made where [`bind`] will
/// make it (the temporary directory, `TMPDIR`): checked before the run
/// directory exists, so a bad `TMPDIR` is a refusal (exit 2) that leaves
/// nothing behind, not a failed run.
pub(crate) fn socket_home_usable() -> Result<(), SocketHomeError> {
    let home = std::env::temp_dir();
    let probe = tempfile::Builder::new().prefix(".stagebench-probe-").tempdir_in(&home);
    probe.map(drop).map_err(|source| {
        let named = match std::env::var_os("TMPDIR") {
            Some(v) => format!("TMPDIR={}", std::path::Path::new(&v).display()),
            None => home.display().to_string(),
        };
        SocketHomeError { named, source }
    })
}

/// The temporary directory (`named`: `TMPDIR=…`, or its path) refused the
/// workers' socket directory.
#[derive(Debug, thiserror::Error)]
#[error(
    "{named}: cannot make the workers' socket directory there ({source}); set TMPDIR to a writable directory, or give --listen"
)]
pub(crate) struct SocketHomeError {
    named: String,
    #[source]
    source: std::io::Error,
}

/// The signal state the user gave this process (`env::SIGNALS`): its
/// blocked and ignored signals as the kernel shows them, read once, less
/// the SIGPIPE Rust's runtime ignores before `main`.
fn users_signals() -> &'static str {
    static STATE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    STATE.get_or_init(|| {
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
        let field = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
                .unwrap_or(0)
        };
        let sigpipe = 1u64 << (13 - 1);
        format!("{:x}:{:x}", field("SigBlk:"), field("SigIgn:") & !sigpipe)
    })
}
