//! Which frozen dataset a run reads: `--data DIR`, or the built-in `small`
//! synthetic cohort, generated and frozen once into the cache directory and
//! checked by its fingerprint on every later use. Also the `dataset`
//! subcommands.

use recipe::frozen::Frozen;
use recipe::generate::{self, Scale};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// Seed of the built-in cohort.
pub const DEFAULT_SEED: u64 = 0;
pub const DEFAULT_SCALE: Scale = Scale::Small;

/// `$STAGEBENCH_CACHE`, else `$XDG_CACHE_HOME/stagebench`, else `~/.cache/stagebench`.
pub fn cache_root() -> PathBuf {
    if let Some(p) = std::env::var_os("STAGEBENCH_CACHE") {
        return PathBuf::from(p);
    }
    if let Some(p) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(p).join("stagebench");
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    home.join(".cache").join("stagebench")
}

/// Why a dataset could not be read or made.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The input is missing, is not a frozen dataset, or breaks its contract:
    /// bad input, found before anything was measured.
    #[error("{0}")]
    Input(String),
    /// The machine did not let the built-in cohort be made (a directory, a
    /// child process).
    #[error("{0}")]
    Io(String),
}

fn input(e: impl std::fmt::Display) -> DatasetError {
    DatasetError::Input(e.to_string())
}

/// The dataset a run reads, as an absolute path, with its checked frozen.json.
pub fn resolve(data: Option<&Path>, quiet: bool) -> Result<(PathBuf, Frozen), DatasetError> {
    let dir = match data {
        Some(d) => d.to_path_buf(),
        None => default_dataset(quiet)?,
    };
    // The built-in cohort is ours to remake: say how, if it was altered.
    let regenerate = |e: String| match data {
        None => format!("{e}; {}", regenerate_hint(&dir)),
        Some(_) => e,
    };
    if !dir.is_dir() {
        return Err(input(format_args!(
            "--data '{}': no such directory (a frozen dataset is a directory holding frozen.json)",
            dir.display()
        )));
    }
    if !dir.join(recipe::frozen::FILE).is_file() {
        return Err(input(format_args!(
            "'{}' is not a frozen dataset (no frozen.json); make one with `coordinator dataset freeze --series FILE --events FILE --out DIR`",
            dir.display()
        )));
    }
    let frozen = Frozen::load(&dir).map_err(|e| input(regenerate(e.to_string())))?;
    if frozen.train().next().is_none() {
        return Err(input(format_args!(
            "{}: the frozen dataset has no training series (empty cohort)",
            dir.display()
        )));
    }
    let abs =
        std::fs::canonicalize(&dir).map_err(|e| input(format_args!("{}: {e}", dir.display())))?;
    Ok((abs, frozen))
}

/// How to remake an altered built-in cohort at `dir`.
pub fn regenerate_hint(dir: &Path) -> String {
    format!(
        "the built-in cohort at '{}' was altered: remove that directory and run again to regenerate it",
        dir.display()
    )
}

/// Whether the built-in cohort exists and a source or the events file no
/// longer has the SHA-256 frozen.json gives it (or is gone).
pub fn builtin_altered() -> bool {
    use recipe::frozen::FrozenError;
    let dir = builtin_dir();
    let Ok(frozen) = Frozen::load(&dir) else { return false };
    matches!(
        recipe::frozen::verify_sources(&dir, &frozen),
        Err(FrozenError::Changed { .. } | FrozenError::Missing { .. })
    )
}

/// Where the built-in cohort lives (made or not).
pub fn builtin_dir() -> PathBuf {
    cache_root().join("datasets").join(format!("{}-seed{DEFAULT_SEED}", DEFAULT_SCALE.as_str()))
}

/// The built-in cohort, made on first use.
fn default_dataset(quiet: bool) -> Result<PathBuf, DatasetError> {
    let dir = builtin_dir();
    let root = dir.parent().expect("below the cache root").to_path_buf();
    if dir.join(recipe::frozen::FILE).is_file() {
        return Ok(dir);
    }
    std::fs::create_dir_all(&root).map_err(|e| {
        DatasetError::Io(format!("cannot create the cache directory {}: {e}", root.display()))
    })?;
    if !quiet {
        eprintln!(
            "preparing the built-in {} synthetic cohort in {} (once; later runs reuse it)",
            DEFAULT_SCALE.as_str(),
            dir.display()
        );
    }
    let scratch = tempfile::Builder::new().prefix(".raw-").tempdir_in(&root).map_err(|e| {
        DatasetError::Io(format!("cannot create a scratch directory in {}: {e}", root.display()))
    })?;
    let raw = scratch.path().join("raw");
    // Generate and freeze in child processes: the coordinator must stay small,
    // because Linux carries a spawner's peak RSS into every worker it spawns.
    let (series, events) = (raw.join(generate::SERIES_FILE), raw.join(generate::EVENTS_FILE));
    let (scale, seed) = (DEFAULT_SCALE.as_str().to_string(), DEFAULT_SEED.to_string());
    run_self(&["dataset", "generate", "--scale", &scale, "--seed", &seed], &[("--out", &raw)])?;
    let frozen = run_self(
        &["dataset", "freeze"],
        &[("--series", &series), ("--events", &events), ("--out", &dir)],
    );
    match frozen {
        Ok(()) => Ok(dir),
        // Another run froze it at the same time: use theirs (its fingerprint is checked).
        Err(_) if dir.join(recipe::frozen::FILE).is_file() => Ok(dir),
        Err(e) => Err(e),
    }
}

/// Runs this coordinator binary with `args` then `--flag path` pairs; its
/// error line becomes ours, of the kind its exit code says.
fn run_self(args: &[&str], paths: &[(&str, &Path)]) -> Result<(), DatasetError> {
    let me = std::env::current_exe()
        .map_err(|e| DatasetError::Io(format!("cannot locate this program: {e}")))?;
    let mut cmd = std::process::Command::new(&me);
    cmd.args(args).stdin(std::process::Stdio::null());
    for (flag, path) in paths {
        cmd.arg(flag).arg(path);
    }
    let out =
        cmd.output().map_err(|e| DatasetError::Io(format!("cannot run {}: {e}", me.display())))?;
    if out.status.success() {
        return Ok(());
    }
    let line =
        String::from_utf8_lossy(&out.stderr).trim().trim_start_matches("error: ").to_string();
    Err(match out.status.code() {
        Some(c) if c == protocol::exit::coordinator::USAGE as i32 => DatasetError::Input(line),
        _ => DatasetError::Io(line),
    })
}

/// `coordinator dataset generate`.
pub fn generate_cmd(out: &Path, scale: Scale, seed: u64) -> Result<String, DatasetError> {
    let terminal = std::io::stderr().is_terminal();
    let g = generate::generate(out, scale, seed, &mut |done, total| {
        if terminal {
            eprint!("\r\x1b[2K  generating series {done}/{total}");
        }
    })
    .map_err(input)?;
    if terminal {
        eprint!("\r\x1b[2K");
    }
    Ok(format!(
        "wrote {} series, {} rows, {} events ({} missing), {} series crossing a daylight-saving change, to {}",
        g.series,
        g.rows,
        g.events,
        g.missing_events,
        g.dst_series,
        out.display()
    ))
}

/// `coordinator dataset freeze`.
pub fn freeze_cmd(series: &Path, events: &Path, out: &Path) -> Result<String, DatasetError> {
    let terminal = std::io::stderr().is_terminal();
    let f = recipe::freeze::freeze(series, events, out, &mut |rows| {
        if terminal && rows % (1 << 20) < (64 << 10) {
            eprint!("\r\x1b[2K  {rows} rows read");
        }
    })
    .map_err(input)?;
    if terminal {
        eprint!("\r\x1b[2K");
    }
    Ok(format!(
        "froze {} series ({} train, {} validation, {} test), {} samples, into {}; fingerprint {}",
        f.series.len(),
        f.split.train,
        f.split.validation,
        f.split.test,
        f.series.iter().map(|s| s.samples).sum::<u64>(),
        out.display(),
        f.fingerprint
    ))
}

/// `coordinator dataset scan`: map and decode every training series, serially.
pub fn scan_cmd(data: Option<&Path>) -> Result<String, DatasetError> {
    let (dir, frozen) = resolve(data, false)?;
    let (mut read_s, mut decode_s, mut rows, mut bytes, mut series) = (0.0, 0.0, 0u64, 0u64, 0u64);
    let mut checked_s = 0.0;
    for s in frozen.train() {
        let t = std::time::Instant::now();
        // Mapped, as the preparation maps it (recipe::source::map).
        let b = recipe::source::map(&dir.join(&s.file))
            .map_err(|e| input(format_args!("{}: {e}", s.file)))?;
        read_s += t.elapsed().as_secs_f64();
        bytes += b.len() as u64;
        let t = std::time::Instant::now();
        let b = bytes::Bytes::from_owner(b);
        rows += recipe::source::decode_only(b.clone(), &s.file).map_err(input)?;
        decode_s += t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        recipe::source::read_series_chunks(b, &s.file, &s.id, |ts, e, a| {
            std::hint::black_box((ts, e, a));
        })
        .map_err(input)?;
        checked_s += t.elapsed().as_secs_f64();
        series += 1;
    }
    Ok(format!(
        "scanned {series} training series, {rows} rows, {bytes} bytes: read {read_s:.3} s + decode {decode_s:.3} s = {:.3} s (decode with row checks: {checked_s:.3} s)",
        read_s + decode_s
    ))
}
