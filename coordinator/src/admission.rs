//! Admits connections: reads each one's handshake, checks it, and hands the
//! connection to the supervisor of the worker it belongs to.
//!
//! A connection that fails any check is refused (a `Refused` frame naming the
//! reason, then closed), logged, counted, and never handed to a supervisor.
//! Under a flood (descriptors exhausted, or many bad connections) admission
//! backs off and logs at most one line per kind a second, with a count.

use protocol::frame::{self, FrameError};
use protocol::handshake::{self, Refused};
use protocol::{FromWorker, Hello, ToWorker, Token, WorkerId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::oneshot;

/// The reading half of a worker connection, whatever the transport.
pub(crate) type ReadHalf = Box<dyn tokio::io::AsyncRead + Send + Unpin>;
/// The writing half of a worker connection, whatever the transport.
pub(crate) type WriteHalf = Box<dyn tokio::io::AsyncWrite + Send + Unpin>;

/// Where workers connect: a Unix socket in a private directory (local
/// workers), or TCP (workers launched through a cluster scheduler). The same
/// frames, handshake, limits and timeouts hold on both.
pub(crate) enum Listener {
    Unix(UnixListener),
    Tcp(TcpListener),
}

impl Listener {
    async fn accept(&self) -> std::io::Result<(ReadHalf, WriteHalf)> {
        Ok(match self {
            Listener::Unix(l) => {
                let (s, _) = l.accept().await?;
                let (r, w) = s.into_split();
                (Box::new(r), Box::new(w))
            }
            Listener::Tcp(l) => {
                let (s, peer) = l.accept().await?;
                tracing::debug!(%peer, "tcp connection");
                s.set_nodelay(true)?;
                let (r, w) = s.into_split();
                (Box::new(r), Box::new(w))
            }
        })
    }
}

/// An admitted connection.
pub(crate) struct Connection {
    pub(crate) hello: Hello,
    pub(crate) reader: ReadHalf,
    pub(crate) writer: WriteHalf,
}

struct Pending {
    expected_pid: Option<u32>,
    tx: oneshot::Sender<Connection>,
}

pub(crate) struct Admission {
    token: Token,
    run_dir: String,
    hello_timeout: Duration,
    pending: Mutex<HashMap<WorkerId, Pending>>,
    refused: AtomicU64,
    refusals_logged: Throttle,
    /// Failed accepts so far, the back-off waited after them, and the last
    /// error (see [`Admission::accept_trouble`]).
    accept_failures: AtomicU64,
    accept_waited_us: AtomicU64,
    accept_error: Mutex<String>,
}

/// Accepts that failed (descriptors ran out) between two readings of
/// [`Admission::accept_trouble`]: how many, how long admission waited after
/// them, and the last error.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct AcceptTrouble {
    pub(crate) failures: u64,
    pub(crate) waited: Duration,
    pub(crate) error: String,
}

impl AcceptTrouble {
    /// What changed since `before` (None: nothing failed).
    pub(crate) fn since(&self, before: &AcceptTrouble) -> Option<AcceptTrouble> {
        let failures = self.failures - before.failures;
        (failures > 0).then(|| AcceptTrouble {
            failures,
            waited: self.waited.saturating_sub(before.waited),
            error: self.error.clone(),
        })
    }

    /// For a person: where it happened and what it cost.
    pub(crate) fn sentence(&self, phase: &str) -> String {
        format!(
            "accepting workers' connections failed {} time(s) during phase {phase} ({}), and the coordinator waited {} ms in all between tries: that phase's workers' start-up includes the wait; raise the open-files limit (ulimit -n)",
            self.failures,
            self.error,
            self.waited.as_millis()
        )
    }
}

/// At most one log line a second: what it lets through says how many
/// were held back since the last.
#[derive(Default)]
struct Throttle {
    state: Mutex<(Option<Instant>, u64)>,
}

impl Throttle {
    /// Some(held back since the last line) when a line may be logged now.
    fn admit(&self, now: Instant) -> Option<u64> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match s.0 {
            Some(last) if now.duration_since(last) < Duration::from_secs(1) => {
                s.1 += 1;
                None
            }
            _ => {
                let held = s.1;
                *s = (Some(now), 0);
                Some(held)
            }
        }
    }
}

/// " (N more like it in the last second)" for a line that held N back.
fn and_more(held: u64) -> String {
    match held {
        0 => String::new(),
        n => format!(" ({n} more like it in the last second)"),
    }
}

/// How long accept waits after a failure, doubling from 1 ms to 100 ms while
/// failures repeat (descriptors run out: EMFILE, ENFILE), back to none after a
/// success.
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_millis(100);

fn next_backoff(now: Duration) -> Duration {
    (now * 2).clamp(Duration::from_millis(1), ACCEPT_BACKOFF_MAX)
}

impl Admission {
    pub(crate) fn new(token: Token, run_dir: String, hello_timeout: Duration) -> Arc<Admission> {
        Arc::new(Admission {
            token,
            run_dir,
            hello_timeout,
            pending: Mutex::new(HashMap::new()),
            refused: AtomicU64::new(0),
            refusals_logged: Throttle::default(),
            accept_failures: AtomicU64::new(0),
            accept_waited_us: AtomicU64::new(0),
            accept_error: Mutex::new(String::new()),
        })
    }

    /// Registers a worker about to be launched; its connection arrives on the receiver.
    pub(crate) fn register(&self, rank: WorkerId) -> oneshot::Receiver<Connection> {
        let (tx, rx) = oneshot::channel();
        self.lock().insert(rank, Pending { expected_pid: None, tx });
        rx
    }

    /// Records the pid a locally launched worker must present.
    pub(crate) fn set_pid(&self, rank: WorkerId, pid: u32) {
        if let Some(p) = self.lock().get_mut(&rank) {
            p.expected_pid = Some(pid);
        }
    }

    /// Stops expecting a worker (it ended, or was admitted).
    pub(crate) fn forget(&self, rank: WorkerId) {
        self.lock().remove(&rank);
    }

    /// How many connections were refused so far.
    pub(crate) fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// The accepts that failed so far (take two readings and
    /// [`AcceptTrouble::since`] for a phase's).
    pub(crate) fn accept_trouble(&self) -> AcceptTrouble {
        AcceptTrouble {
            failures: self.accept_failures.load(Ordering::Relaxed),
            waited: Duration::from_micros(self.accept_waited_us.load(Ordering::Relaxed)),
            error: self.accept_error.lock().map(|e| e.clone()).unwrap_or_default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<WorkerId, Pending>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Accepts connections until the task is aborted. A failed accept
    /// (descriptors exhausted) waits before the next, longer each time it
    /// repeats, so a flood cannot spin the loop or fill stderr.
    pub(crate) async fn serve(self: Arc<Self>, listener: Listener) {
        let failures_logged = Throttle::default();
        let mut backoff = Duration::ZERO;
        loop {
            match listener.accept().await {
                Ok((reader, writer)) => {
                    backoff = Duration::ZERO;
                    let admission = self.clone();
                    tokio::spawn(async move { admission.admit(reader, writer).await });
                }
                Err(e) => {
                    backoff = next_backoff(backoff);
                    if let Ok(mut last) = self.accept_error.lock() {
                        *last = e.to_string();
                    }
                    self.accept_waited_us.fetch_add(backoff.as_micros() as u64, Ordering::Relaxed);
                    self.accept_failures.fetch_add(1, Ordering::Relaxed);
                    if let Some(held) = failures_logged.admit(Instant::now()) {
                        tracing::warn!(
                            "accept failed: {e}{}; waiting up to {} ms between tries",
                            and_more(held),
                            ACCEPT_BACKOFF_MAX.as_millis()
                        );
                    }
                    tokio::time::sleep(backoff).await;
                }
            }
        }
    }

    async fn admit(&self, mut reader: ReadHalf, mut writer: WriteHalf) {
        let first = tokio::time::timeout(self.hello_timeout, async {
            frame::nonblocking::read::<_, FromWorker>(&mut reader).await
        })
        .await;
        let hello = match first {
            Err(_) => {
                return self.refuse(&mut writer, "no handshake within the connect timeout").await;
            }
            Ok(Err(FrameError::Closed)) => {
                return self.refuse(&mut writer, "connection closed before the handshake").await;
            }
            Ok(Err(e)) => {
                return self.refuse(&mut writer, &format!("bad handshake frame: {e}")).await;
            }
            Ok(Ok(FromWorker::Hello(h))) => h,
            Ok(Ok(other)) => {
                let what = format!("first frame must be a handshake, got {}", kind(&other));
                return self.refuse(&mut writer, &what).await;
            }
        };
        let rank = hello.rank;
        let check = self.check(&hello);
        let pending = match check {
            Err(reason) => {
                return self
                    .refuse(&mut writer, &format!("{rank} (pid {}): {reason}", hello.pid))
                    .await;
            }
            Ok(()) => self.lock().remove(&rank),
        };
        let Some(pending) = pending else {
            let reason = format!("{rank} is not expected (unknown rank, or already connected)");
            return self.refuse(&mut writer, &reason).await;
        };
        let welcome = ToWorker::Welcome { run_dir: self.run_dir.clone() };
        if let Err(e) = frame::nonblocking::write(&mut writer, &welcome).await {
            tracing::warn!("{rank}: could not send welcome: {e}");
        }
        tracing::debug!(rank = rank.0, pid = hello.pid, "admitted");
        let _ = pending.tx.send(Connection { hello, reader, writer });
    }

    fn check(&self, hello: &Hello) -> Result<(), Refused> {
        let expected_pid = self.lock().get(&hello.rank).and_then(|p| p.expected_pid);
        handshake::check(hello, &self.token, protocol::program::SOURCE_SHA256, expected_pid)
    }

    async fn refuse(&self, writer: &mut WriteHalf, reason: &str) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        if let Some(held) = self.refusals_logged.admit(Instant::now()) {
            tracing::warn!("refused a connection: {reason}{}", and_more(held));
        }
        let _ =
            frame::nonblocking::write(writer, &ToWorker::Refused { reason: reason.into() }).await;
    }
}

/// A message's kind, for error text (never its contents).
pub(crate) fn kind(msg: &FromWorker) -> &'static str {
    match msg {
        FromWorker::Hello(_) => "Hello",
        FromWorker::Progress { .. } => "Progress",
        FromWorker::Artifact { .. } => "Artifact",
        FromWorker::Measurement { .. } => "Measurement",
        FromWorker::StageFailed { .. } => "StageFailed",
        FromWorker::KilledAtPoint { .. } => "KilledAtPoint",
        FromWorker::Finished { .. } => "Finished",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throttle_lets_one_line_a_second_through_and_counts_the_rest() {
        let t = Throttle::default();
        let t0 = Instant::now();
        assert_eq!(t.admit(t0), Some(0));
        for ms in [1, 10, 500, 999] {
            assert_eq!(t.admit(t0 + Duration::from_millis(ms)), None);
        }
        assert_eq!(t.admit(t0 + Duration::from_millis(1000)), Some(4));
        assert_eq!(t.admit(t0 + Duration::from_millis(1001)), None);
        assert_eq!(and_more(0), "");
        assert_eq!(and_more(4), " (4 more like it in the last second)");
    }

    #[test]
    fn accept_backs_off_doubling_to_its_ceiling() {
        let mut b = Duration::ZERO;
        let mut seen = Vec::new();
        for _ in 0..10 {
            b = next_backoff(b);
            seen.push(b.as_millis());
        }
        assert_eq!(seen, [1, 2, 4, 8, 16, 32, 64, 100, 100, 100]);
    }
}
