//! One finite epoch over the eligible training contexts, as the recipe's
//! loader delivers it: contexts in canonical order (series by id, then
//! block) pass through a bounded shuffle buffer of [`SHUFFLE_BUFFER`] with a
//! seeded generator, are grouped into batches of [`BATCH`] (the last partial
//! batch kept), and each batch is materialised as contiguous `x` float32
//! `[B, 240, 5]`, normalised, and `y` int32 `[B, 240]`. A background thread
//! prepares batches ahead of the consumer ([`prefetched`]).
//!
//! The shuffle is deterministic for a seed and is not a uniform global
//! permutation: like tf.data's `shuffle(256)`, an element can only move so
//! far from its canonical position.

use crate::contract::N_FEATURES;
use crate::normalizer::Normalizer;
use crate::targets::CONTEXT_FRAMES;
use evidence::rng::Rng;
use ndarray::{Array1, Array2, Array3};
use std::sync::mpsc;

pub const BATCH: usize = 32;
pub const SHUFFLE_BUFFER: usize = 256;

/// One context's raw features and frame targets.
#[derive(Clone, Debug, PartialEq)]
pub struct Context {
    /// `[240, 5]`.
    pub x: Array2<f32>,
    /// `[240]`.
    pub y: Array1<i8>,
}

/// A batch of contexts, normalised, in standard (row-major) layout.
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    /// `[len, 240, 5]`.
    pub x: Array3<f32>,
    /// `[len, 240]`.
    pub y: Array2<i32>,
}

impl Batch {
    /// How many contexts the batch holds.
    pub fn len(&self) -> usize {
        self.x.dim().0
    }

    /// Whether the batch holds none (the loader never makes one).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A bounded shuffle buffer: fills with the first `capacity` elements, then
/// each output is a uniformly drawn element of the buffer, whose slot the
/// next source element takes.
pub struct Shuffle<I: Iterator> {
    source: I,
    buf: Vec<I::Item>,
    rng: Rng,
    capacity: usize,
}

impl<I: Iterator> Shuffle<I> {
    pub fn new(source: I, capacity: usize, seed: u64) -> Self {
        Shuffle { source, buf: Vec::with_capacity(capacity), rng: Rng::new(seed), capacity }
    }
}

impl<I: Iterator> Iterator for Shuffle<I> {
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        while self.buf.len() < self.capacity {
            match self.source.next() {
                Some(x) => self.buf.push(x),
                None => break,
            }
        }
        if self.buf.is_empty() {
            return None;
        }
        let j = self.rng.range(0, self.buf.len() as u64) as usize;
        Some(match self.source.next() {
            Some(x) => std::mem::replace(&mut self.buf[j], x),
            None => self.buf.swap_remove(j),
        })
    }
}

/// Shuffled, normalised batches of one epoch over `contexts`.
pub fn batches<I: Iterator<Item = Context>>(
    contexts: I,
    normalizer: &Normalizer,
    seed: u64,
) -> impl Iterator<Item = Batch> + use<I> {
    batched(Shuffle::new(contexts, SHUFFLE_BUFFER, seed), normalizer)
}

/// Normalised batches of [`BATCH`] of an already shuffled stream, the last
/// partial batch kept.
pub fn batched<I: Iterator<Item = Context>>(
    mut shuffled: I,
    normalizer: &Normalizer,
) -> impl Iterator<Item = Batch> + use<I> {
    let normalizer = normalizer.clone();
    std::iter::from_fn(move || {
        let first = shuffled.next()?;
        // Filled flat, row by row, then shaped once: the normalising loop
        // runs over plain slices (it is per element of every batch).
        let mut x = Vec::with_capacity(BATCH * CONTEXT_FRAMES * N_FEATURES);
        let mut y = Vec::with_capacity(BATCH * CONTEXT_FRAMES);
        let mut add = |c: Context| {
            assert_eq!(c.x.dim(), (CONTEXT_FRAMES, N_FEATURES), "a context is [240, 5]");
            let raw = c.x.as_standard_layout();
            for row in raw.as_slice().expect("standard layout").chunks_exact(N_FEATURES) {
                for (k, v) in row.iter().enumerate() {
                    x.push(normalizer.apply(k, *v));
                }
            }
            y.extend(c.y.iter().map(|t| *t as i32));
        };
        add(first);
        let mut len = 1;
        while len < BATCH {
            match shuffled.next() {
                Some(c) => add(c),
                None => break,
            }
            len += 1;
        }
        Some(Batch {
            x: Array3::from_shape_vec((len, CONTEXT_FRAMES, N_FEATURES), x)
                .expect("len contexts of [240, 5]"),
            y: Array2::from_shape_vec((len, CONTEXT_FRAMES), y).expect("len contexts of [240]"),
        })
    })
}

/// Runs `items` on a background thread, at most `depth` items ahead of the
/// consumer. The thread stops when the iterator is dropped, and the drop
/// waits for it.
pub fn prefetched<T: Send + 'static>(
    items: impl Iterator<Item = T> + Send + 'static,
    depth: usize,
) -> Background<T> {
    let (tx, rx) = mpsc::sync_channel(depth.max(1));
    let handle = std::thread::Builder::new()
        .name("loader-prefetch".into())
        .spawn(move || {
            for item in items {
                if tx.send(item).is_err() {
                    return;
                }
            }
        })
        .expect("spawn the prefetch thread");
    Background { lanes: vec![rx], handles: vec![handle], taken: 0, count: None }
}

/// Maps `items` through `f` on `threads` background threads, `depth`
/// results ahead per thread, and yields the results in the items' order.
/// Thread k takes items k, k + threads, …; the consumer takes from each in
/// turn, so the order is the input's whatever finishes first. The threads
/// stop when the iterator is dropped, and the drop waits for them.
pub fn read_ahead<T, R, F>(items: Vec<T>, threads: usize, depth: usize, f: F) -> Background<R>
where
    T: Send + 'static,
    R: Send + 'static,
    F: Fn(T) -> R + Send + Sync + 'static,
{
    let threads = threads.clamp(1, items.len().max(1));
    let f = std::sync::Arc::new(f);
    let mut lanes: Vec<Vec<T>> = (0..threads).map(|_| Vec::new()).collect();
    let count = items.len();
    for (i, item) in items.into_iter().enumerate() {
        lanes[i % threads].push(item);
    }
    let (receivers, handles) = lanes
        .into_iter()
        .map(|lane| {
            let (tx, rx) = mpsc::sync_channel(depth.max(1));
            let f = f.clone();
            let handle = std::thread::Builder::new()
                .name("loader-read".into())
                .spawn(move || {
                    for item in lane {
                        if tx.send(f(item)).is_err() {
                            return;
                        }
                    }
                })
                .expect("spawn a read-ahead thread");
            (rx, handle)
        })
        .unzip();
    Background { lanes: receivers, handles, taken: 0, count: Some(count) }
}

/// Items made on background threads, taken from their lanes in turn. When
/// dropped it closes every lane, then waits for the threads, so no loader
/// thread outlives its epoch (and none runs into a stage measured after it).
pub struct Background<T> {
    lanes: Vec<mpsc::Receiver<T>>,
    handles: Vec<std::thread::JoinHandle<()>>,
    taken: usize,
    /// How many items the lanes hold in all, where known.
    count: Option<usize>,
}

impl<T> Iterator for Background<T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        if self.lanes.is_empty() || self.count.is_some_and(|n| self.taken >= n) {
            return None;
        }
        let item = self.lanes[self.taken % self.lanes.len()].recv().ok()?;
        self.taken += 1;
        Some(item)
    }
}

impl<T> Drop for Background<T> {
    fn drop(&mut self) {
        // A thread blocked sending sees its closed lane and returns.
        self.lanes.clear();
        for handle in self.handles.drain(..) {
            let _ = handle.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(tag: f32) -> Context {
        Context {
            x: Array2::from_elem((CONTEXT_FRAMES, N_FEATURES), tag),
            y: Array1::from_elem(CONTEXT_FRAMES, 1),
        }
    }

    fn identity() -> Normalizer {
        Normalizer {
            contract: "test".into(),
            count: 1,
            mean: [0.0; N_FEATURES],
            variance: [1.0; N_FEATURES],
            scale: [1.0; N_FEATURES],
        }
    }

    #[test]
    fn the_shuffle_is_a_seeded_permutation_bounded_by_the_buffer() {
        let a: Vec<u32> = Shuffle::new(0..1000u32, SHUFFLE_BUFFER, 5).collect();
        let b: Vec<u32> = Shuffle::new(0..1000u32, SHUFFLE_BUFFER, 5).collect();
        let c: Vec<u32> = Shuffle::new(0..1000u32, SHUFFLE_BUFFER, 6).collect();
        assert_eq!(a, b, "same seed, same order");
        assert_ne!(a, c, "another seed, another order");
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, (0..1000).collect::<Vec<_>>(), "every element exactly once");
        assert_ne!(a, sorted, "shuffled");
        // The i-th output was among the first i + 256 source elements.
        assert!(a.iter().enumerate().all(|(i, x)| (*x as usize) < i + SHUFFLE_BUFFER));
    }

    #[test]
    fn batches_are_full_but_the_last_and_keep_every_context() {
        let n = 3 * BATCH + 10;
        let all: Vec<Batch> = batches((0..n).map(|i| context(i as f32)), &identity(), 0).collect();
        assert_eq!(all.len(), 4);
        assert_eq!(all.iter().map(|b| b.len()).collect::<Vec<_>>(), [32, 32, 32, 10]);
        for b in &all {
            assert_eq!(b.x.dim(), (b.len(), CONTEXT_FRAMES, N_FEATURES));
            assert_eq!(b.y.dim(), (b.len(), CONTEXT_FRAMES));
        }
        let mut tags: Vec<u32> =
            all.iter().flat_map(|b| b.x.outer_iter().map(|c| c[[0, 0]] as u32)).collect();
        tags.sort();
        assert_eq!(tags, (0..n as u32).collect::<Vec<_>>());
    }

    #[test]
    fn batches_are_normalised_and_targets_widened() {
        let mut norm = identity();
        norm.mean = [1.0, 2.0, 3.0, 4.0, 5.0];
        norm.scale = [2.0; N_FEATURES];
        let mut c = context(0.0);
        for mut row in c.x.rows_mut() {
            row.assign(&ndarray::arr1(&[3.0, 4.0, 5.0, 6.0, 7.0]));
        }
        c.y[0] = -1;
        let b = batches(std::iter::once(c), &norm, 0).next().unwrap();
        assert_eq!(b.x.slice(ndarray::s![0, 0, ..]).to_vec(), [1.0; N_FEATURES]);
        assert_eq!(b.y[[0, 0]], -1);
        assert_eq!(b.len(), 1);
    }

    #[test]
    fn read_ahead_keeps_the_input_order_whatever_finishes_first() {
        // Earlier items take longer, so later ones finish first.
        let slow = |i: u64| {
            std::thread::sleep(std::time::Duration::from_micros(200 * (20 - i)));
            i * 10
        };
        for threads in [1, 2, 3, 7, 40] {
            let got: Vec<u64> = read_ahead((0..20).collect(), threads, 2, slow).collect();
            assert_eq!(got, (0..20).map(|i| i * 10).collect::<Vec<_>>(), "{threads} threads");
        }
        assert_eq!(read_ahead(Vec::<u8>::new(), 2, 1, |x| x).count(), 0);
        // Dropping it early stops the readers and waits for them: a reader
        // still running afterwards would see the flag.
        let running = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let r = running.clone();
        let mut it = read_ahead((0..1000u32).collect(), 2, 1, move |x| {
            r.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(1));
            r.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            x
        });
        assert_eq!(it.next(), Some(0));
        drop(it);
        assert_eq!(running.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    #[test]
    fn prefetching_keeps_order_and_stops_with_the_consumer() {
        let got: Vec<u32> = prefetched(0..100u32, 2).collect();
        assert_eq!(got, (0..100).collect::<Vec<_>>());
        let mut it = prefetched(0.., 1);
        assert_eq!(it.next(), Some(0u64));
        drop(it); // the producer thread sees the closed channel and returns
    }
}
