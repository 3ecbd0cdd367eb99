//! A team's own preparation in the main job: `--prepare 'CMD ARGS' --items
//! FILE` runs the user's per-item program, serial against N processes, in
//! place of the recipe's cache preparation.
//!
//! - The items file holds one item per line, `ID` or `ID<TAB>WEIGHT`
//!   (every line weighted, or none; `host::items_file` checks it and reads
//!   it again as items are handed out). Items go largest weight first, or
//!   in file order, to whichever process is free. Ids never reach evidence:
//!   the declaration holds the file's SHA-256, a failure names an item by
//!   its line ("item 7 of 40").
//! - Each phase writes into an output directory of its own. When it ends,
//!   the coordinator walks that directory and seals it with a manifest
//!   (relative path, size and SHA-256 of every file) inside it; the
//!   serial and parallel manifests must be byte-identical
//!   (`outputs_identical`). The paths of files that differ go to stderr
//!   only.
//! - `--inputs DIR` (every mode's, see `crate::inputs`) is digested the
//!   same way before the first phase and after the last; a change fails
//!   the run.

use host::items_file::Source;
use std::sync::Arc;

/// What `--prepare` runs over.
#[derive(Clone, Debug)]
pub(crate) struct Items {
    /// The program, run as `sh -c COMMAND` once per worker process.
    pub(crate) command: String,
    /// The items file, checked: every phase's feed reads its items from it.
    pub(crate) source: Arc<Source>,
    /// `--item-timeout`: how long one item may take before the run fails.
    pub(crate) item_timeout: Option<std::time::Duration>,
    /// `--prefetch`: items a worker holds beyond the one its program runs.
    pub(crate) prefetch: usize,
}

/// `--prefetch`'s default: one item waiting on each worker's socket hides
/// the coordinator's round trip (docs/performance.md has the measurement).
pub(crate) const PREFETCH: usize = 1;

/// `--prepare CMD --items FILE [--inputs DIR]`: read and checked now,
/// before anything is created.
pub(super) fn resolve(
    own: &super::Args,
    shared: &crate::modes::SharedArgs,
) -> Result<Option<Items>, crate::error::Refusal> {
    use crate::error::Refusal;
    if own.item_timeout.is_some() && own.prepare.is_none() {
        return Err(Refusal(
            "--item-timeout applies to --prepare (your own per-item program)".into(),
        ));
    }
    if own.prefetch.is_some() && own.prepare.is_none() {
        return Err(Refusal("--prefetch applies to --prepare (your own per-item program)".into()));
    }
    let (command, path) = match (&own.prepare, &own.items) {
        (None, None) if !shared.inputs.is_empty() => {
            return Err(Refusal("--inputs applies to --prepare (your own preparation)".into()));
        }
        (None, None) => return Ok(None),
        (Some(_), None) => {
            return Err(Refusal("--prepare needs --items FILE (one item per line)".into()));
        }
        (None, Some(_)) => {
            return Err(Refusal(
                "--items needs --prepare 'CMD ARGS' (the program that prepares an item)".into(),
            ));
        }
        (Some(c), Some(p)) => (c, p),
    };
    if command.trim().is_empty() {
        return Err(Refusal("--prepare needs a command line".into()));
    }
    if shared.data.is_some() {
        return Err(Refusal("--data is the recipe's dataset; with --prepare your program reads its own inputs (give --inputs DIR to have them checked)".into()));
    }
    let source = host::items_file::check(path).map_err(|e| Refusal(e.to_string()))?;
    if shared.inputs.is_empty() && own.os_cache == Some(super::storage::OsCache::Cold) {
        return Err(Refusal("--os-cache cold with --prepare needs --inputs DIR: the files it drops from the page cache are the ones your program reads".into()));
    }
    let prefetch = own.prefetch.map_or(PREFETCH, usize::from);
    Ok(Some(Items {
        command: command.clone(),
        source: Arc::new(source),
        item_timeout: own.item_timeout,
        prefetch,
    }))
}
