//! Anyone's command as a stage: `sh -c LINE`, measured with its whole
//! process tree (see `measure::self_usage`), its exit status checked.
//!
//! The command inherits the worker's working directory and stderr; its stdout
//! is discarded (so a chatty command's terminal does not enter its timing).
//! It gets none of stagebench's launch variables, and it dies with the
//! worker: it stays in the worker's process group (which the coordinator
//! signals) and has a parent-death signal of its own.

use super::{StageError, figure};
use protocol::Figure;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};

pub(super) fn run(line: &str) -> Result<Vec<Figure>, StageError> {
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(line).stdin(Stdio::null()).stdout(Stdio::null());
    for var in [
        protocol::env::SOCKET,
        protocol::env::TOKEN,
        protocol::env::RANK,
        protocol::env::PARENT_PID,
    ] {
        cmd.env_remove(var);
    }
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)
        });
    }
    let status = cmd
        .status()
        .map_err(|e| StageError::Failed(format!("cannot start /bin/sh for the command: {e}")))?;
    match (status.code(), status.signal()) {
        (Some(0), _) => Ok(vec![figure("exit_code", 0.0)]),
        (Some(code), _) => {
            Err(StageError::Failed(format!("the command exited with status {code}")))
        }
        (None, Some(sig)) => {
            Err(StageError::Failed(format!("the command was killed by signal {sig}")))
        }
        _ => Err(StageError::Failed("the command ended abnormally".into())),
    }
}
