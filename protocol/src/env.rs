//! Environment variables through which the coordinator hands a worker its
//! connection. The token travels here (or in a 0600 file), never in argv.

/// Path of the coordinator's Unix socket.
pub const SOCKET: &str = "STAGEBENCH_SOCKET";
/// The per-run secret, 64 hex digits.
pub const TOKEN: &str = "STAGEBENCH_TOKEN";
/// The worker's rank within the run.
pub const RANK: &str = "STAGEBENCH_RANK";
/// The coordinator's pid: a worker whose parent is gone exits at once.
pub const PARENT_PID: &str = "STAGEBENCH_PARENT_PID";
/// `HOST:PORT` of the coordinator's TCP listener, instead of [`SOCKET`]
/// (workers launched through a cluster scheduler, possibly on other hosts).
pub const ADDR: &str = "STAGEBENCH_ADDR";
/// A file (mode 0600) holding the token, instead of [`TOKEN`].
pub const TOKEN_FILE: &str = "STAGEBENCH_TOKEN_FILE";
/// For the tasks of a Slurm job step: the rank of task 0. A task's rank is
/// this plus `SLURM_PROCID`, used when [`RANK`] is not set.
pub const RANK_BASE: &str = "STAGEBENCH_RANK_BASE";
/// Milliseconds between two samples of a stage's process tree (`--sample-ms`).
pub const SAMPLE_MS: &str = "STAGEBENCH_SAMPLE_MS";
/// The interval when `--sample-ms` is not given (the coordinator's default,
/// and the worker's when the variable is absent): one value for both.
pub const DEFAULT_SAMPLE_MS: u32 = 10;
/// `sampled` makes workers measure a tree's peak by sampling even where
/// they could create a memory cgroup for each stage.
pub const TREE_METHOD: &str = "STAGEBENCH_TREE_METHOD";
/// The signal state the user started the coordinator with, which a
/// command a worker runs starts with too: `BLOCKED:IGNORED`, each a hex
/// bit set (`1 << (signo - 1)`), less the SIGPIPE Rust's runtime ignores.
pub const SIGNALS: &str = "STAGEBENCH_SIGNALS";
/// `--keras-resident N`: after a command's last Keras `fit`, `preset:keras`
/// times N `train_on_batch` steps on one batch in memory (then restores
/// every variable). Set by the coordinator for its workers, who leave it to
/// their commands.
pub const KERAS_RESIDENT: &str = "STAGEBENCH_KERAS_RESIDENT";
/// `--no-provenance`: set to `1`, a worker gives a command no helper unless
/// it has `--span` targets, so Python commands report no runtime.
pub const NO_PROVENANCE: &str = "STAGEBENCH_NO_PROVENANCE";
/// Every variable that carries a worker's launch (connection, secret,
/// rank, sampling, signals): a command a worker runs gets none of them.
pub const LAUNCH: [&str; 9] =
    [SOCKET, TOKEN, RANK, PARENT_PID, ADDR, TOKEN_FILE, RANK_BASE, SAMPLE_MS, SIGNALS];
/// Given to a command stage's process: a file to which it may append its
/// own inner spans, one JSON object per line (`{"name": …, "seconds": …}`).
pub const SPANS: &str = "STAGEBENCH_SPANS";
/// Set by Slurm in every task: the task's index in its job step.
pub const SLURM_PROCID: &str = "SLURM_PROCID";
/// Set by Slurm in every task: how many tasks the job step has.
pub const SLURM_NTASKS: &str = "SLURM_NTASKS";
/// Given to a preparation program (`--prepare`): the descriptor it reads
/// items from, one JSON object per line (see docs/item-protocol.md).
pub const ITEMS_FD: &str = "STAGEBENCH_ITEMS_FD";
/// Given to a preparation program: the descriptor it writes its answers
/// to (`{"ready": true}`, then `{"done": ID}` or `{"error": MESSAGE}`).
pub const ANSWERS_FD: &str = "STAGEBENCH_ANSWERS_FD";
