//! Helpers for tests that run the real binaries: build them once, run the
//! coordinator with a timeout, watch its stderr for events, and check that no
//! worker process outlived it.

pub mod children;
pub mod data;
pub mod reports;
pub mod schema;
pub mod slurm;
pub mod trace;

pub use children::{interrupt_within, lines_until, spawn_reading_stderr};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Every wait in these tests is bounded by this unless a test says otherwise.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// Paths of the built binaries.
pub struct Bins {
    pub coordinator: PathBuf,
    pub worker: PathBuf,
    pub fake_worker: PathBuf,
    /// Runs a command and prints its own peak RSS (`src/bin/rss_peak.rs`).
    pub rss_peak: PathBuf,
}

/// Builds every binary of the workspace (a no-op when fresh) and returns their
/// paths. Cargo does not hold its lock while tests run, so this is safe.
pub fn bins() -> &'static Bins {
    static BINS: OnceLock<Bins> = OnceLock::new();
    BINS.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
        let status = Command::new(cargo)
            .args(["build", "--workspace", "--bins", "--quiet"])
            .current_dir(&root)
            .status()
            .expect("run cargo build");
        assert!(status.success(), "cargo build --workspace --bins failed");
        // target/<profile>/deps/<this test> → target/<profile>/
        let exe = std::env::current_exe().unwrap();
        let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
        let bins = Bins {
            coordinator: dir.join("coordinator"),
            worker: dir.join("worker"),
            fake_worker: dir.join("fake-worker"),
            rss_peak: dir.join("rss-peak"),
        };
        for b in [&bins.coordinator, &bins.worker, &bins.fake_worker, &bins.rss_peak] {
            assert!(b.is_file(), "{} was not built", b.display());
        }
        bins
    })
}

/// Says on the real stderr (past the test harness's capture, so CI's log
/// shows it) that `test` was skipped, and why.
pub fn skip(test: &str, reason: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
}

/// The Python with torch that `STAGEBENCH_TORCH_PYTHON` names, for a test
/// of the torch preset; None (the test says SKIPPED) where none is named,
/// unless `STAGEBENCH_TORCH_REQUIRED=1` (`.ci/run` sets it once it has
/// installed torch), where a missing or torch-less Python fails the test.
pub fn torch_python(test: &str) -> Option<String> {
    let required = std::env::var("STAGEBENCH_TORCH_REQUIRED").is_ok_and(|v| v == "1");
    let py = std::env::var("STAGEBENCH_TORCH_PYTHON").ok().filter(|p| !p.is_empty());
    let Some(py) = py else {
        assert!(
            !required,
            "STAGEBENCH_TORCH_REQUIRED=1 but STAGEBENCH_TORCH_PYTHON names no Python"
        );
        skip(test, "STAGEBENCH_TORCH_PYTHON names no Python with torch");
        return None;
    };
    let imports = Command::new(&py)
        .args(["-c", "import torch"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !imports {
        assert!(!required, "STAGEBENCH_TORCH_REQUIRED=1 but {py} cannot import torch");
        skip(test, &format!("{py} cannot import torch"));
        return None;
    }
    Some(py)
}

/// A Python with py-spy beside it (`bin/py-spy`, where `pip install
/// py-spy` puts it) that `STAGEBENCH_PYSPY_PYTHON` names, for a test of
/// `--sample`; None (the test says SKIPPED) where none is named, unless
/// `STAGEBENCH_PYSPY_REQUIRED=1` (`.ci/run` sets it once it has installed
/// py-spy), where a missing one fails the test.
pub fn py_spy_python(test: &str) -> Option<String> {
    let required = std::env::var("STAGEBENCH_PYSPY_REQUIRED").is_ok_and(|v| v == "1");
    let py = std::env::var("STAGEBENCH_PYSPY_PYTHON").ok().filter(|p| !p.is_empty());
    let found = py.filter(|p| Path::new(p).with_file_name("py-spy").is_file());
    if found.is_none() {
        assert!(
            !required,
            "STAGEBENCH_PYSPY_REQUIRED=1 but STAGEBENCH_PYSPY_PYTHON names no Python with py-spy beside it"
        );
        skip(test, "STAGEBENCH_PYSPY_PYTHON names no Python with py-spy beside it");
    }
    found
}

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The Python that runs the `stagebench` helper in `c`'s commands:
/// `STAGEBENCH_PYTHON` (CI points it at a virtualenv with `pip install
/// ./python` done, so the installed package is what runs), else python3
/// with the checkout's package put on `c`'s `PYTHONPATH`.
pub fn python(c: &mut Command) -> String {
    match std::env::var("STAGEBENCH_PYTHON") {
        Ok(p) if !p.is_empty() => p,
        _ => {
            c.env("PYTHONPATH", repo().join("python"));
            "python3".into()
        }
    }
}

/// [`python`], and that Python first on `c`'s `PATH`, for a command whose
/// argv says `python3` (a campaign file's, say).
pub fn python_on_path(c: &mut Command) {
    let py = python(c);
    if py != "python3" {
        let bin = Path::new(&py).parent().unwrap().display().to_string();
        c.env("PATH", format!("{bin}:{}", std::env::var("PATH").unwrap_or_default()));
    }
}

/// A coordinator command with debug events on stderr (the tests read them).
pub fn coordinator() -> Command {
    let mut c = Command::new(&bins().coordinator);
    c.env("STAGEBENCH_LOG", "debug").env_remove("STAGEBENCH_WORKER_BIN");
    c
}

/// A scratch directory, a run path inside it that does not exist yet, and a
/// coordinator command already pointed at that path with `--output`.
pub fn coordinator_with_output() -> (tempfile::TempDir, PathBuf, Command) {
    let tmp = tempfile::tempdir().expect("scratch directory");
    let out = tmp.path().join("run");
    let mut c = coordinator();
    c.arg("--output").arg(&out);
    (tmp, out, c)
}

/// The outcome of a finished coordinator.
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Finished {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Pids of every worker the coordinator spawned, from its debug events.
    pub fn worker_pids(&self) -> Vec<i32> {
        worker_pids(&self.stderr)
    }

    /// Asserts that no spawned worker is still alive.
    pub fn assert_no_worker_left(&self) {
        let pids = self.worker_pids();
        assert!(!pids.is_empty(), "no worker spawn events in stderr:\n{}", self.stderr);
        for pid in pids {
            assert!(!alive(pid), "worker pid {pid} outlived the coordinator\n{}", self.stderr);
        }
    }
}

/// Runs a blocking wait on a thread, failing the test after `limit`.
fn within_timeout<T: Send + 'static>(
    what: &str,
    limit: Duration,
    wait: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(wait());
    });
    match rx.recv_timeout(limit) {
        Ok(r) => r.unwrap_or_else(|e| panic!("waiting for {what}: {e}")),
        Err(_) => panic!("{what} did not finish within {limit:?}"),
    }
}

/// Runs a command to completion, failing the test after `TIMEOUT`.
pub fn run(cmd: Command) -> Finished {
    run_within(cmd, TIMEOUT)
}

/// Runs a command to completion, failing the test after `limit`: for a
/// real library's work, whose time varies with the machine (see
/// `tests/tests/campaign/autofit.rs`).
///
/// A coordinator's new `--output` directory is then held to the published
/// JSON Schema (see [`schema`]); one that existed before the run is the
/// test's, not the run's, and is left alone.
pub fn run_within(mut cmd: Command, limit: Duration) -> Finished {
    let made = (Path::new(cmd.get_program()).file_name() == Some("coordinator".as_ref()))
        .then(|| schema::output_of(&cmd))
        .flatten()
        .map(|dir| match cmd.get_current_dir() {
            Some(cwd) => cwd.join(dir),
            None => dir,
        })
        .filter(|dir| !dir.exists());
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let out = within_timeout("the command", limit, move || child.wait_with_output());
    if let Some(dir) = made.filter(|d| d.is_dir()) {
        schema::assert_valid(&dir);
    }
    Finished {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs a command to completion (see [`run`]) with a terminal for its
/// stdin, stdout and stderr: a pseudo-terminal Python's `pty` opens. What
/// the terminal showed is `stdout`; `stderr` is empty.
pub fn run_on_a_terminal(cmd: &Command) -> Finished {
    const ON_A_PTY: &str = "import os, pty, sys\n\
pid, fd = pty.fork()\n\
if pid == 0:\n    os.execvp(sys.argv[1], sys.argv[1:])\n\
shown = b''\n\
while True:\n    try:\n        chunk = os.read(fd, 65536)\n    except OSError:\n        break\n    if not chunk:\n        break\n    shown += chunk\n\
sys.stdout.buffer.write(shown)\n\
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n";
    let mut py = Command::new("python3");
    py.arg("-c").arg(ON_A_PTY).arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => py.env(k, v),
            None => py.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        py.current_dir(dir);
    }
    run(py)
}

/// `coordinator campaign FILE --output OUT`, run to its end (see [`run`]).
pub fn run_campaign(file: &Path, out: &Path) -> Finished {
    let mut c = coordinator();
    c.arg("campaign").arg(file).arg("--output").arg(out);
    run(c)
}

/// A coordinator still running, with its stderr lines arriving on a channel.
pub struct Running {
    child: Option<Child>,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    pub fn spawn(mut cmd: Command) -> Running {
        let mut child =
            cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("spawn coordinator");
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Running { child: Some(child), lines, seen: Vec::new() }
    }

    /// The coordinator's pid.
    pub fn pid(&self) -> i32 {
        self.child.as_ref().expect("running").id() as i32
    }

    /// Waits for a stderr line containing `needle`; returns it.
    pub fn wait_for(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no line with '{needle}' within {TIMEOUT:?}; saw:\n{}",
                        self.seen.join("\n")
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("stderr closed before '{needle}'; saw:\n{}", self.seen.join("\n"))
                }
            }
        }
    }

    /// Waits for the process to exit (bounded), collecting the rest of stderr.
    pub fn finish(mut self) -> (ExitStatus, String) {
        let mut child = self.child.take().expect("running");
        let status = within_timeout("the coordinator", TIMEOUT, move || child.wait());
        // The coordinator has exited, so its stderr pipe is closed or closing.
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(l);
        }
        (status, self.seen.join("\n"))
    }
}

impl Drop for Running {
    /// A test that panicked must not leave its coordinator (or, through the
    /// workers' parent-death signal, any worker) behind.
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Pids from `worker spawned rank=N pid=P` events.
pub fn worker_pids(stderr: &str) -> Vec<i32> {
    stderr
        .lines()
        .filter(|l| l.contains("worker spawned"))
        .filter_map(|l| field(l, "pid"))
        .collect()
}

/// The integer value of `name=` in a log line.
pub fn field(line: &str, name: &str) -> Option<i32> {
    let at = line.find(&format!("{name}="))? + name.len() + 1;
    let digits: String = line[at..].chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// Whether a process with this pid exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    stat(pid).is_some_and(|(state, _)| state != 'Z')
}

/// A process's state letter and process group, from /proc/PID/stat.
fn stat(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the parenthesised command name: state, ppid, pgrp, …
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let pgrp = fields.nth(1)?.parse().ok()?;
    Some((state, pgrp))
}

/// Whether workers here can make a memory cgroup per stage (as root with a
/// writable v1 memory hierarchy), so a tree's default method is `cgroup`.
pub fn cgroups_here() -> bool {
    let Ok(text) = std::fs::read_to_string("/proc/self/cgroup") else { return false };
    let v1 = text.lines().find_map(|l| l.split_once(":memory:").map(|(_, p)| p.to_string()));
    let dir = match v1 {
        Some(p) => Path::new("/sys/fs/cgroup/memory").join(p.trim_start_matches('/')),
        None => return false,
    };
    let probe = dir.join(format!("stagebench-probe-{}", std::process::id()));
    let made = std::fs::create_dir(&probe).is_ok();
    let _ = std::fs::remove_dir(&probe);
    made
}

/// Reads and parses a JSON file.
pub fn json(path: &Path) -> serde_json::Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

/// Every line of a run directory's jobs.jsonl.gz (each job of a
/// cold-prep's worker processes), parsed; empty when there is no such file.
pub fn jobs(run: &Path) -> Vec<serde_json::Value> {
    use std::io::BufRead;
    let path = run.join("jobs.jsonl.gz");
    let Ok(file) = std::fs::File::open(&path) else { return Vec::new() };
    std::io::BufReader::new(flate2::read::GzDecoder::new(file))
        .lines()
        .map(|l| {
            let l = l.unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
            serde_json::from_str(&l)
                .unwrap_or_else(|e| panic!("parse a line of {}: {e}", path.display()))
        })
        .collect()
}

/// Every file below `dir`, relative, sorted.
pub fn files_below(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, d: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    if dir.is_dir() {
        walk(dir, dir, &mut out);
    }
    out.sort();
    out
}

/// Waits until process `pid` has exited (or `timeout` passes), on a pidfd
/// event rather than by polling. Returns whether it is gone.
pub fn wait_gone(pid: i32, timeout: Duration) -> bool {
    // SAFETY: plain syscalls on integers we own; the fd is closed below.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if fd < 0 {
        return !alive(pid); // already gone (ESRCH)
    }
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    let r = unsafe { libc::poll(&mut pfd, 1, ms) };
    unsafe { libc::close(fd) };
    r == 1 || !alive(pid)
}

/// Live (non-zombie) processes whose process group is `pgid`, from /proc.
/// Zombies are dead, only waiting to be reaped by their new parent.
pub fn live_group_members(pgid: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|&pid| stat(pid).is_some_and(|(state, pgrp)| pgrp == pgid && state != 'Z'))
        .collect()
}

/// Whether headless Chromium is here for the report.html tests (Debian's
/// `chromium`, or `STAGEBENCH_CHROMIUM`); where it is not, the test says
/// SKIPPED, unless `STAGEBENCH_BROWSER_REQUIRED=1` (`.ci/run` installs it
/// and sets that), where its absence fails the test.
pub fn chromium(test: &str) -> bool {
    let required = std::env::var("STAGEBENCH_BROWSER_REQUIRED").is_ok_and(|v| v == "1");
    let named = std::env::var("STAGEBENCH_CHROMIUM").ok().filter(|p| !p.is_empty());
    let found = named.map(PathBuf::from).or_else(|| {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path).map(|d| d.join("chromium")).find(|p| p.is_file())
        })
    });
    if found.is_none() {
        assert!(!required, "STAGEBENCH_BROWSER_REQUIRED=1 but there is no chromium");
        skip(test, "no chromium here (apt-get install chromium)");
    }
    found.is_some()
}

/// What headless Chromium did with `page` opened offline
/// (`tests/browser/check_page.py`): its title, requests, errors, the values
/// of `expressions` evaluated after the load, and the screenshot's share of
/// non-white pixels; the 1280×800 screenshot is written to `shot`.
pub fn check_page(page: &Path, shot: &Path, expressions: &[&str]) -> serde_json::Value {
    let mut c = Command::new("python3");
    c.arg(repo().join("tests/browser/check_page.py")).arg(page).arg(shot).args(expressions);
    let f = run_within(c, Duration::from_secs(120));
    assert_eq!(f.code(), Some(0), "check_page.py: {}", f.stderr);
    serde_json::from_str(&f.stdout).unwrap_or_else(|e| panic!("{e}: {}", f.stdout))
}
