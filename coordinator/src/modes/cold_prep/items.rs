//! A team's own preparation in the main job: `--prepare 'CMD ARGS' --items
//! FILE` runs the user's per-item program, serial against N processes, in
//! place of the recipe's cache preparation.
//!
//! - The items file holds one item per line, `ID` or `ID<TAB>WEIGHT`
//!   (every line weighted, or none). Items are handed out largest weight
//!   first, or in file order, to whichever process is free. Ids never
//!   reach evidence: the declaration holds the file's SHA-256, a failure
//!   names an item by its line ("item 7 of 40").
//! - Each phase writes into an output directory of its own. When it ends,
//!   the coordinator walks that directory and seals it with a manifest
//!   (relative path, size and SHA-256 of every file) inside it; the
//!   serial and parallel manifests must be byte-identical
//!   (`outputs_identical`). The paths of files that differ go to stderr
//!   only.
//! - `--inputs DIR` (every mode's, see `crate::inputs`) is digested the
//!   same way before the first phase and after the last; a change fails
//!   the run.

use std::path::Path;

/// What `--prepare` runs over.
#[derive(Clone, Debug)]
pub(crate) struct Items {
    /// The program, run as `sh -c COMMAND` once per worker process.
    pub(crate) command: String,
    /// The ids, in the items file's order: shared by every phase's feed.
    pub(crate) ids: std::sync::Arc<[String]>,
    /// The order they are handed out in (0-based lines): [`dispatch_order`].
    pub(crate) order: std::sync::Arc<[u32]>,
    /// Whether the items carry weights.
    pub(crate) weighted: bool,
    /// SHA-256 of the items file's bytes.
    pub(crate) sha256: String,
    /// `--item-timeout`: how long one item may take before the run fails.
    pub(crate) item_timeout: Option<std::time::Duration>,
    /// `--prefetch`: items a worker holds beyond the one its program runs.
    pub(crate) prefetch: usize,
}

/// `--prefetch`'s default: one item waiting on each worker's socket hides
/// the coordinator's round trip (docs/performance.md has the measurement).
pub(crate) const PREFETCH: usize = 1;

impl Items {
    pub(crate) fn new(
        command: String,
        list: Vec<Item>,
        sha256: String,
        item_timeout: Option<std::time::Duration>,
        prefetch: usize,
    ) -> Items {
        let order = dispatch_order(&list).into_iter().map(|(line, _)| line as u32).collect();
        let weighted = list.iter().any(|i| i.weight.is_some());
        let ids = list.into_iter().map(|i| i.id).collect();
        Items { command, ids, order, weighted, sha256, item_timeout, prefetch }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Item {
    pub(crate) id: String,
    pub(crate) weight: Option<f64>,
}

/// Why an items file is refused (each names a line, never an id).
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum ItemsError {
    #[error("--items {0}: cannot be read: {1}")]
    Read(String, String),
    #[error("--items {0}: not a regular file (a pipe or device has no end to read to)")]
    NotAFile(String),
    #[error("--items {0}: over {max} MiB, the largest items file read", max = MAX_ITEMS_BYTES >> 20)]
    TooLarge(String),
    #[error(
        "--items line {0}: the id is {1} bytes as a JSON string, over the {max} an answer can carry \
         (docs/item-protocol.md)",
        max = protocol::items::MAX_ID_JSON
    )]
    IdTooLong(usize, usize),
    #[error("--items: the file is not UTF-8")]
    NotUtf8,
    #[error("--items: the file lists no item")]
    Empty,
    #[error("--items line {0}: the id is empty")]
    EmptyId(usize),
    #[error("--items line {0}: a third field; a line is ID or ID<TAB>WEIGHT")]
    ThirdField(usize),
    #[error("--items line {0}: the weight is not a positive number")]
    BadWeight(usize),
    #[error("--items line {0}: the same id as line {1}")]
    Duplicate(usize, usize),
    #[error(
        "--items line {0} has no weight but line {1} has one: give every item a weight, or none"
    )]
    MixedWeights(usize, usize),
}

/// The largest items file read: 256 MiB, a million ids of 256 bytes.
pub(crate) const MAX_ITEMS_BYTES: u64 = 256 << 20;

/// Reads and checks an items file: a regular file (or a link to one) of
/// at most [`MAX_ITEMS_BYTES`], read no further than that.
pub(crate) fn read(path: &Path) -> Result<(Vec<Item>, String), ItemsError> {
    use std::io::Read;
    let shown = || path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| ItemsError::Read(shown(), e.to_string()))?;
    let meta = file.metadata().map_err(|e| ItemsError::Read(shown(), e.to_string()))?;
    if !meta.is_file() {
        return Err(ItemsError::NotAFile(shown()));
    }
    if meta.len() > MAX_ITEMS_BYTES {
        return Err(ItemsError::TooLarge(shown()));
    }
    // No further than the limit, should the file grow while it is read.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_ITEMS_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ItemsError::Read(shown(), e.to_string()))?;
    if bytes.len() as u64 > MAX_ITEMS_BYTES {
        return Err(ItemsError::TooLarge(shown()));
    }
    let items = parse(&bytes)?;
    Ok((items, evidence::sha256_hex(&bytes)))
}

/// The items of a file's bytes, checked.
pub(crate) fn parse(bytes: &[u8]) -> Result<Vec<Item>, ItemsError> {
    let text = std::str::from_utf8(bytes).map_err(|_| ItemsError::NotUtf8)?;
    let mut items = Vec::new();
    let mut seen: std::collections::HashMap<&str, usize> = Default::default();
    let (mut weighted, mut unweighted) = (None, None);
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.strip_suffix('\r').unwrap_or(line);
        let mut fields = line.split('\t');
        let id = fields.next().unwrap_or_default();
        let weight = fields.next();
        if fields.next().is_some() {
            return Err(ItemsError::ThirdField(n));
        }
        if id.trim().is_empty() {
            return Err(ItemsError::EmptyId(n));
        }
        let json = protocol::items::id_json_len(id);
        if json > protocol::items::MAX_ID_JSON {
            return Err(ItemsError::IdTooLong(n, json));
        }
        let weight = match weight {
            None => {
                unweighted.get_or_insert(n);
                None
            }
            Some(w) => match w.trim().parse::<f64>() {
                Ok(w) if w.is_finite() && w > 0.0 => {
                    weighted.get_or_insert(n);
                    Some(w)
                }
                _ => return Err(ItemsError::BadWeight(n)),
            },
        };
        if let Some(first) = seen.insert(id, n) {
            return Err(ItemsError::Duplicate(n, first));
        }
        items.push(Item { id: id.to_string(), weight });
    }
    if let (Some(w), Some(u)) = (weighted, unweighted) {
        return Err(ItemsError::MixedWeights(u, w));
    }
    if items.is_empty() {
        return Err(ItemsError::Empty);
    }
    Ok(items)
}

/// The order items are handed out in: largest weight first (ties in file
/// order), or file order without weights; with each item's 0-based line.
pub(crate) fn dispatch_order(items: &[Item]) -> Vec<(usize, &Item)> {
    let mut order: Vec<(usize, &Item)> = items.iter().enumerate().collect();
    order.sort_by(|(i, a), (j, b)| {
        b.weight.unwrap_or(0.0).total_cmp(&a.weight.unwrap_or(0.0)).then(i.cmp(j))
    });
    order
}

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
    let (list, sha256) = read(path).map_err(|e| Refusal(e.to_string()))?;
    if shared.inputs.is_empty() && own.os_cache == Some(super::storage::OsCache::Cold) {
        return Err(Refusal("--os-cache cold with --prepare needs --inputs DIR: the files it drops from the page cache are the ones your program reads".into()));
    }
    let prefetch = own.prefetch.map_or(PREFETCH, usize::from);
    Ok(Some(Items::new(command.clone(), list, sha256, own.item_timeout, prefetch)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_items_file_is_ids_or_ids_with_positive_weights() {
        let items = parse(b"a\nb\r\nc\n").unwrap();
        assert_eq!(items.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), ["a", "b", "c"]);
        assert!(items.iter().all(|i| i.weight.is_none()));
        let items = parse(b"a\t2\nb\t10.5\nc\t2\n").unwrap();
        let order: Vec<&str> = dispatch_order(&items).iter().map(|(_, i)| i.id.as_str()).collect();
        assert_eq!(order, ["b", "a", "c"], "largest first, ties in file order");
        let plain = parse(b"z\ny\nx\n").unwrap();
        let order: Vec<usize> = dispatch_order(&plain).iter().map(|(n, _)| *n).collect();
        assert_eq!(order, [0, 1, 2], "file order without weights");
    }

    #[test]
    fn a_bad_items_file_is_refused_naming_the_line_never_the_id() {
        use ItemsError::*;
        for (text, want) in [
            (&b""[..], Empty),
            (b"\n", EmptyId(1)),
            (b"a\nsecret\nsecret\n", Duplicate(3, 2)),
            (b"a\t0\n", BadWeight(1)),
            (b"a\t-1\n", BadWeight(1)),
            (b"a\tNaN\n", BadWeight(1)),
            (b"a\tinf\n", BadWeight(1)),
            (b"a\tx\n", BadWeight(1)),
            (b"a\t1\tb\n", ThirdField(1)),
            (b"a\t1\nb\n", MixedWeights(2, 1)),
            (b"a\n\nb\n", EmptyId(2)),
            (b"\xff\n", NotUtf8),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e, want, "{:?}", String::from_utf8_lossy(text));
            assert!(!e.to_string().contains("secret"), "{e}");
        }
        // The longest id an answer carries, and one byte more.
        let fits = "s".repeat(protocol::items::MAX_ID_JSON - 2);
        assert!(parse(format!("a\n{fits}\n").as_bytes()).is_ok());
        let over = format!("a\n{fits}s\n");
        assert_eq!(
            parse(over.as_bytes()).unwrap_err(),
            IdTooLong(2, protocol::items::MAX_ID_JSON + 1)
        );
        // Escaped as Python writes it: 3 bytes of UTF-8, 6 of JSON.
        let wide = "€".repeat(protocol::items::MAX_ID_JSON / 6);
        assert!(matches!(parse(wide.as_bytes()), Err(IdTooLong(1, _))));
    }

    /// A file that never ends, or is too large, is refused before it is
    /// read into memory.
    #[test]
    fn an_items_file_is_a_regular_file_of_bounded_size() {
        let e = read(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(e, ItemsError::NotAFile("/dev/zero".into()));
        let tmp = tempfile::tempdir().unwrap();
        let big = tmp.path().join("big");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_ITEMS_BYTES + 1).unwrap();
        assert!(matches!(read(&big), Err(ItemsError::TooLarge(_))));
    }
}
