//! The Python programs the tests run as commands, written to a temporary
//! directory, and the command line that runs one.

use super::*;

/// N children that each hold MIB MiB for HOLD seconds, all at once
/// (`together`) or one after another (`sequence`).
const TREE_PY: &str = r#"
import os, sys, time
mode, n, mib, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
def child():
    b = bytearray(mib * 1024 * 1024)
    for i in range(0, len(b), 4096):
        b[i] = 1
    time.sleep(hold)
    os._exit(0)
pids = []
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        child()
    if mode == "sequence":
        os.waitpid(pid, 0)
    else:
        pids.append(pid)
for p in pids:
    os.waitpid(p, 0)
"#;

/// A double-forked grandchild spins 0.3 s of CPU after its parent exited;
/// the top process outlives it without ever being its parent.
const ORPHAN_PY: &str = r#"
import os, time
pid = os.fork()
if pid == 0:
    if os.fork() == 0:
        time.sleep(0.05)
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
        os._exit(0)
    os._exit(0)
os.waitpid(pid, 0)
time.sleep(1.0)
"#;

/// A double-forked daemon, in its own session, that outlives the stage.
const DAEMON_PY: &str = r#"
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", sys.argv[1]])
    os._exit(0)
time.sleep(0.2)
"#;

/// MIB MiB touched and freed at once, by the command's own process (`own`)
/// or by a grandchild whose parent exited first (`orphan`): a peak that
/// lasts a moment, between two samples.
const SPIKE_PY: &str = r#"
import os, sys, time
mode, mib = sys.argv[1], int(sys.argv[2])
def spike():
    b = b"\x01" * (mib << 20)
    del b
if mode == "own":
    spike()
else:
    pid = os.fork()
    if pid == 0:
        if os.fork() == 0:
            time.sleep(0.05)
            spike()
            os._exit(0)
        os._exit(0)
    os.waitpid(pid, 0)
    time.sleep(1.0)
"#;

/// A daemon in a session of its own that outlives its stage. `polite`: on
/// SIGTERM it takes 20 ms to shut down, writes "terminated" into FILE and
/// exits; `deaf`: it ignores SIGTERM. The command returns once it is ready.
const GRACE_PY: &str = r#"
import os, signal, sys, time
mode, file = sys.argv[1], sys.argv[2]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        def polite(signo, frame):
            time.sleep(0.02)
            with open(file, "w") as f:
                f.write("terminated")
            os._exit(0)
        signal.signal(signal.SIGTERM, polite if mode == "polite" else signal.SIG_IGN)
        open(file + ".ready", "w").close()
        while True:
            time.sleep(1)
    os._exit(0)
deadline = time.time() + 20
while not os.path.exists(file + ".ready") and time.time() < deadline:
    time.sleep(0.005)
"#;

pub(crate) struct Scripts {
    _dir: tempfile::TempDir,
    pub(crate) dir: PathBuf,
}

pub(crate) fn scripts() -> Scripts {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("tree.py", TREE_PY),
        ("orphan.py", ORPHAN_PY),
        ("daemon.py", DAEMON_PY),
        ("spike.py", SPIKE_PY),
        ("grace.py", GRACE_PY),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    Scripts { dir: dir.path().to_path_buf(), _dir: dir }
}

pub(crate) fn py(s: &Scripts, script: &str, args: &str) -> String {
    format!("python3 {} {args}", s.dir.join(script).display())
}
