//! The recipe's warm stages over a prepared feature cache: fit the
//! normalizer, count the eligible contexts (rebuilding targets from the
//! events and recounting validity from the sources, independently of the
//! cache), and run one loader epoch. Every cache file is read through
//! [`CacheView`], which checks it against the cache's manifest by SHA-256,
//! so a file altered between stages fails the stage.

use crate::contract::{FRAME_SAMPLES, FRAME_STRIDE, N_FEATURES, frame_count};
use crate::frozen::{self, Frozen};
use crate::loader::{self, Batch, Context};
use crate::normalizer::{Moments, Normalizer};
use crate::targets::{self, CONTEXT_FRAMES};
use crate::{cache, events, npy, source};
use ndarray::{Array1, Array2, CowArray, Ix1, Ix2};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

pub const MANIFEST: &str = "manifest.json";
/// The context index, inside the (private) cache: it names series.
pub const CONTEXTS: &str = "contexts.json";

#[derive(Debug, thiserror::Error)]
pub enum WarmError {
    #[error("{0}")]
    Integrity(String),
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{0}")]
    Input(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WarmError + '_ {
    move |source| WarmError::Io { path: path.display().to_string(), source }
}

/// A cache whose every read is checked against its manifest.
pub struct CacheView {
    dir: PathBuf,
    files: HashMap<String, String>,
}

#[derive(Deserialize)]
struct ManifestFile {
    files: BTreeMap<String, ManifestEntry>,
}

#[derive(Deserialize)]
struct ManifestEntry {
    sha256: String,
}

impl CacheView {
    pub fn open(dir: &Path) -> Result<CacheView, WarmError> {
        let path = dir.join(MANIFEST);
        let bytes = std::fs::read(&path).map_err(io(&path))?;
        let m: ManifestFile = serde_json::from_slice(&bytes).map_err(|e| {
            WarmError::Integrity(format!("{MANIFEST} is not a cache manifest: {e}"))
        })?;
        let files = m.files.into_iter().map(|(k, v)| (k, v.sha256)).collect();
        Ok(CacheView { dir: dir.to_path_buf(), files })
    }

    /// A view of `dir` whose files (relative to it) must hash as given:
    /// for a cache whose hashes come from completion records, not a manifest.
    pub fn from_files(dir: &Path, files: HashMap<String, String>) -> CacheView {
        CacheView { dir: dir.to_path_buf(), files }
    }

    /// The bytes of `rel`, after checking them against the manifest.
    pub fn read(&self, rel: &str) -> Result<Vec<u8>, WarmError> {
        let expected = self
            .files
            .get(rel)
            .ok_or_else(|| WarmError::Integrity(format!("{rel} is not in the cache manifest")))?;
        let path = self.dir.join(rel);
        let bytes = std::fs::read(&path).map_err(io(&path))?;
        if evidence::sha256_hex(&bytes) != *expected {
            return Err(WarmError::Integrity(format!(
                "cache file {rel} has changed since it was prepared (its SHA-256 differs from the manifest)"
            )));
        }
        Ok(bytes)
    }

    /// A series' two cache files, read and checked against the manifest,
    /// and their shapes against each other and the contract.
    pub fn series(&self, id: &str) -> Result<SeriesArrays, WarmError> {
        let [values, valid] = cache::files(id);
        let s = SeriesArrays { values: self.read(&values)?, valid: self.read(&valid)? };
        let bad = |f: &str, e: std::io::Error| WarmError::Integrity(format!("{f}: {e}"));
        let v = npy::view_f32_2d(&s.values).map_err(|e| bad(&values, e))?;
        let ok = npy::view_bool_1d(&s.valid).map_err(|e| bad(&valid, e))?;
        if v.dim() != (ok.len(), N_FEATURES) || !v.is_standard_layout() {
            return Err(WarmError::Integrity(format!(
                "{values} is {:?}, {valid} [{}]: expected [frames, {N_FEATURES}] and [frames]",
                v.shape(),
                ok.len()
            )));
        }
        Ok(s)
    }
}

/// A series' cache files, checked, whose arrays are viewed in place: the
/// features `[frames, 5]` and validity `[frames]` are never copied out of
/// the bytes read (unless the data lies unaligned).
#[derive(Debug)]
pub struct SeriesArrays {
    values: Vec<u8>,
    valid: Vec<u8>,
}

impl SeriesArrays {
    /// `[frames, 5]`, standard layout.
    pub fn values(&self) -> CowArray<'_, f32, Ix2> {
        npy::view_f32_2d(&self.values).expect("checked when read")
    }

    /// `[frames]`.
    pub fn valid(&self) -> CowArray<'_, bool, Ix1> {
        npy::view_bool_1d(&self.valid).expect("checked when read")
    }
}

/// Fits the normalizer over the training series, in series-id order.
/// Series are read in parallel; their moments are merged in id order, so the
/// result does not depend on which finished first.
pub fn fit_normalizer(frozen: &Frozen, cache: &CacheView) -> Result<Normalizer, WarmError> {
    use rayon::prelude::*;
    let mut train: Vec<_> = frozen.train().collect();
    train.sort_by(|a, b| a.id.cmp(&b.id));
    let parts = train
        .par_iter()
        .map(|s| {
            cache.series(&s.id).map(|a| Moments::of_series(a.values().view(), a.valid().view()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Normalizer::fit(&parts))
}

/// The eligible contexts of every training series, in canonical order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContextIndex {
    pub contract: String,
    pub series: Vec<SeriesContexts>,
    /// Series whose events hold a step outside the contract (all targets unknown).
    pub invalid_event_series: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesContexts {
    pub id: String,
    pub frames: u64,
    pub blocks: Vec<u32>,
}

impl ContextIndex {
    pub fn eligible(&self) -> u64 {
        self.series.iter().map(|s| s.blocks.len() as u64).sum()
    }
}

/// Per training series, frame targets from the events (all unknown for a
/// series whose events break the contract), and the count of such series.
fn frame_targets_by_series(
    dataset: &Path,
    frozen: &Frozen,
) -> Result<(BTreeMap<String, Vec<i8>>, u64), WarmError> {
    let path = dataset.join(frozen::EVENTS_FILE);
    let bytes = std::fs::read(&path).map_err(io(&path))?;
    let known = frozen.series.iter().map(|s| s.id.clone()).collect();
    let all = events::parse(&bytes, frozen::EVENTS_FILE, Some(&known))
        .map_err(|e| WarmError::Input(e.to_string()))?;
    let mut by_series: HashMap<&str, Vec<&events::Event>> = HashMap::new();
    for e in &all {
        by_series.entry(e.series_id.as_str()).or_default().push(e);
    }
    let mut out = BTreeMap::new();
    let mut invalid = 0;
    for s in frozen.train() {
        let samples = s.samples as usize;
        let evs = by_series.get(s.id.as_str()).map(Vec::as_slice).unwrap_or(&[]);
        let labels = match targets::sample_labels(evs, samples) {
            Ok(l) => l,
            Err(_) => {
                invalid += 1;
                vec![targets::UNKNOWN; samples]
            }
        };
        out.insert(s.id.clone(), targets::frame_targets(&labels, frame_count(samples)));
    }
    Ok((out, invalid))
}

/// Frame validity recounted from the source rows, independently of the
/// feature extraction: all 12 `enmo` and `anglez` values finite.
fn valid_from_source(enmo: &[f32], anglez: &[f32]) -> Vec<bool> {
    (0..frame_count(enmo.len()))
        .map(|f| {
            let r = f * FRAME_STRIDE..f * FRAME_STRIDE + FRAME_SAMPLES;
            enmo[r.clone()].iter().chain(&anglez[r]).all(|x| x.is_finite())
        })
        .collect()
}

/// Builds the context index: targets from the events, validity from the
/// cache, cross-checked against validity recounted from the sources (their
/// `enmo` and `anglez` columns only). Series are read in parallel; the index
/// is in series-id order whatever finished first.
pub fn count_contexts(
    dataset: &Path,
    frozen: &Frozen,
    cache: &CacheView,
) -> Result<ContextIndex, WarmError> {
    use rayon::prelude::*;
    let (targets, invalid_event_series) = frame_targets_by_series(dataset, frozen)?;
    let work: Vec<(&String, &Vec<i8>)> = targets.iter().collect();
    let series = work
        .par_iter()
        .map(|(id, frame_targets)| {
            let entry = frozen.series.iter().find(|s| &s.id == *id).expect("a training series");
            let arrays = cache.series(id)?;
            let valid = arrays.valid();
            let path = dataset.join(&entry.file);
            let bytes = std::fs::read(&path).map_err(io(&path))?;
            if evidence::sha256_hex(&bytes) != entry.sha256 {
                return Err(WarmError::Integrity(format!(
                    "{} has changed since freezing (its SHA-256 differs from frozen.json)",
                    entry.file
                )));
            }
            let (enmo, anglez) = source::read_motion(bytes.into(), &entry.file)
                .map_err(|e| WarmError::Input(e.to_string()))?;
            let valid = valid.as_slice().expect("read as a standard-layout array");
            if valid_from_source(&enmo, &anglez) != valid {
                return Err(WarmError::Integrity(format!(
                    "the cache's validity of a series disagrees with its source ({})",
                    cache::files(id)[1]
                )));
            }
            let blocks = targets::eligible_contexts(valid, frame_targets);
            Ok(SeriesContexts { id: (*id).clone(), frames: valid.len() as u64, blocks })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ContextIndex { contract: crate::contract::VERSION.into(), series, invalid_event_series })
}

/// Threads reading series ahead of the loader's shuffle.
pub const READERS: usize = 2;

/// What one loader epoch measured.
#[derive(Clone, Debug, Default)]
pub struct EpochStats {
    pub batches: u64,
    pub contexts: u64,
    pub final_batch: u64,
    /// Seconds the consumer waited for each next batch, in order.
    pub waits_s: Vec<f64>,
    /// When each of those waits began.
    pub waits_from: Vec<std::time::Instant>,
    /// SHA-256 over the canonical positions (series index, block) of every
    /// context in delivery order: equal for equal seeds.
    pub order_sha256: String,
}

/// One epoch through the loader: every eligible context once, shuffled,
/// batched, normalised, prefetched on a background thread. `consume` sees
/// each batch as the model would; it may end the epoch early with `Break`
/// (the background threads then stop at their next hand-over).
pub fn loader_epoch(
    dataset_targets: (&Path, &Frozen),
    cache: CacheView,
    index: &ContextIndex,
    normalizer: &Normalizer,
    seed: u64,
    mut consume: impl FnMut(&Batch) -> std::ops::ControlFlow<()>,
) -> Result<EpochStats, WarmError> {
    let (dataset, frozen) = dataset_targets;
    let (targets, _) = frame_targets_by_series(dataset, frozen)?;
    let (err_tx, err_rx) = std::sync::mpsc::channel();
    let err_tx = std::sync::Mutex::new(err_tx);
    // Series are read, hash-checked and cut into contexts on reader threads
    // of their own, ahead of the thread that shuffles and batches them, so a
    // series load does not stall a batch; they arrive in canonical order.
    let series: Vec<(usize, SeriesContexts)> = index.series.iter().cloned().enumerate().collect();
    let read = move |(si, s): (usize, SeriesContexts)| {
        // A series that fails its check yields no context; the error ends the epoch.
        let (arrays, blocks) = match cache.series(&s.id) {
            Ok(arrays) => (Some(arrays), s.blocks),
            Err(e) => {
                let _ = err_tx.lock().map(|tx| tx.send(e));
                (None, Vec::new())
            }
        };
        let values = match &arrays {
            Some(a) => a.values(),
            None => Array2::zeros((0, N_FEATURES)).into(),
        };
        let t = targets.get(&s.id).map(Vec::as_slice).unwrap_or_default();
        blocks
            .into_iter()
            .map(|b| {
                let r = b as usize * CONTEXT_FRAMES..(b as usize + 1) * CONTEXT_FRAMES;
                let x = values.slice(ndarray::s![r.clone(), ..]).to_owned();
                (si as u32, b, Context { x, y: Array1::from(t[r].to_vec()) })
            })
            .collect::<Vec<_>>()
    };
    let contexts = loader::read_ahead(series, READERS, 2, read).flatten();
    let tagged = loader::Shuffle::new(contexts, loader::SHUFFLE_BUFFER, seed);
    // Positions travel beside the batches through the same shuffle.
    let (pos_tx, pos_rx) = std::sync::mpsc::channel();
    let batches = loader::batched(
        tagged.map(move |(si, b, c)| {
            let _ = pos_tx.send((si, b));
            c
        }),
        normalizer,
    );
    let mut stats = EpochStats::default();
    let mut it = loader::prefetched(batches, 2);
    loop {
        let t = std::time::Instant::now();
        let Some(batch) = it.next() else { break };
        stats.waits_s.push(t.elapsed().as_secs_f64());
        stats.waits_from.push(t);
        let flow = consume(&batch);
        stats.batches += 1;
        stats.contexts += batch.len() as u64;
        stats.final_batch = batch.len() as u64;
        if flow.is_break() {
            break;
        }
    }
    if let Ok(e) = err_rx.try_recv() {
        return Err(e);
    }
    let mut order = Sha256::new();
    for (si, b) in pos_rx.try_iter() {
        order.update(si.to_le_bytes());
        order.update(b.to_le_bytes());
    }
    stats.order_sha256 = hex::encode(order.finalize());
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::valid_from_source;

    #[test]
    fn validity_recount_needs_all_twelve_values_finite() {
        let mut enmo = vec![0.0f32; 30];
        let anglez = vec![0.0f32; 30];
        // 30 samples: frames start at 0, 6, 12 and 18.
        assert_eq!(valid_from_source(&enmo, &anglez), [true; 4]);
        enmo[13] = f32::NAN; // in frames 1 (6..18) and 2 (12..24)
        assert_eq!(valid_from_source(&enmo, &anglez), [true, false, false, true]);
    }
}

#[cfg(test)]
mod cache_view_tests {
    use super::*;

    #[test]
    fn a_cache_file_changed_after_its_manifest_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let [values, valid] = cache::files("s1");
        std::fs::create_dir_all(dir.path().join("s1")).unwrap();
        let v = npy::f32_2d(Array2::from_elem((2, N_FEATURES), 0.5).view());
        let ok = npy::bool_1d(ndarray::arr1(&[true, false]).view());
        std::fs::write(dir.path().join(&values), &v).unwrap();
        std::fs::write(dir.path().join(&valid), &ok).unwrap();
        let manifest = serde_json::json!({ "files": {
            values.clone(): { "sha256": evidence::sha256_hex(&v) },
            valid.clone(): { "sha256": evidence::sha256_hex(&ok) },
        }});
        std::fs::write(dir.path().join(MANIFEST), manifest.to_string()).unwrap();
        let view = CacheView::open(dir.path()).unwrap();
        let s = view.series("s1").unwrap();
        assert_eq!((s.values().dim(), s.valid().to_vec()), ((2, N_FEATURES), vec![true, false]));

        let mut changed = v.clone();
        *changed.last_mut().unwrap() ^= 1;
        std::fs::write(dir.path().join(&values), &changed).unwrap();
        let e = view.series("s1").unwrap_err().to_string();
        assert!(e.contains("s1/values.npy has changed since it was prepared"), "{e}");
        assert!(
            view.read("s2/values.npy")
                .unwrap_err()
                .to_string()
                .contains("not in the cache manifest")
        );
    }
}
