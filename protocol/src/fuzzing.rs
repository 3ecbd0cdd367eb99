//! What the frame fuzzers share (feature `fuzzing`, and this crate's own
//! tests): valid frames of every message to start from, a mutator, the
//! property every input must keep, and an allocator that measures the
//! largest single allocation an input causes.
//!
//! Two drivers use it: `fuzz/fuzz_targets/frames.rs` (cargo fuzz with
//! libFuzzer, nightly; `scripts/fuzz.sh` runs 10⁶ inputs) and
//! `protocol/tests/fuzz_frames.rs` (stable, in CI: 10⁴ mutated inputs).

use crate::frame::{self, FrameError, MAX_FRAME_BYTES};
use crate::{
    EpochInput, FromWorker, JobId, ModelStep, ResumePolicy, Stage, StateInput, StateStep, ToWorker,
    handshake,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Cursor;

pub use crate::examples::{BUILD, TOKEN, every_message, hello};

/// Stages beyond the diagnostic ones, so every container shape
/// (strings, vectors of pairs, nested enums) starts out valid.
fn more_assignments() -> Vec<ToWorker> {
    let epoch = EpochInput {
        dataset: "d".to_string().into(),
        cache: "c".into(),
        seed: 3,
        normalizer_sha256: "n".into(),
        contexts_sha256: "x".into(),
    };
    let state = StateInput {
        dataset: "d".to_string().into(),
        state: "s".to_string().into(),
        policy: ResumePolicy::Load,
        epochs: 2,
        seed: 1,
    };
    [
        Stage::PrepareSeries {
            dataset: "d".to_string().into(),
            id: "i".into(),
            file: "f".into(),
            sha256: "h".into(),
            cache: "c".into(),
        },
        Stage::PrepareItem {
            command: "python3 prep.py".into(),
            id: "s1".into(),
            out: "private-output".into(),
            ready_timeout_ms: 5000,
        },
        Stage::Exec {
            name: "n".into(),
            argv: vec!["a".into(), "b".into()],
            cwd: ".".to_string().into(),
            env: vec![("K".into(), "V".into())],
        },
        Stage::Model(ModelStep::FitEpoch, epoch),
        Stage::Resumable(StateStep::Train, state),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, stage)| ToWorker::Assign {
        job: JobId(10 + i as u32),
        stage,
        kill: None,
        spans: vec![],
        sample: None,
    })
    .collect()
}

/// Every starting frame: each message encoded alone, and all of one
/// direction back to back (a conversation).
pub fn seeds() -> Vec<Vec<u8>> {
    let (from, mut to) = every_message();
    to.extend(more_assignments());
    let mut out: Vec<Vec<u8>> = Vec::new();
    out.extend(from.iter().map(|m| frame::encode(m).expect("encodes")));
    out.extend(to.iter().map(|m| frame::encode(m).expect("encodes")));
    out.push(from.iter().flat_map(|m| frame::encode(m).expect("encodes")).collect());
    out.push(to.iter().flat_map(|m| frame::encode(m).expect("encodes")).collect());
    out
}

/// The property every input keeps: read as a stream of frames either way,
/// it decodes to messages or ends in one [`FrameError`], never a panic; a
/// decoded message survives a round trip (encode, decode) unchanged and no
/// longer than it came; and every decoded handshake is judged without panic.
/// Returns how many messages decoded.
pub fn exercise(bytes: &[u8]) -> usize {
    stream::<FromWorker>(bytes, |m| {
        if let FromWorker::Hello(h) = m {
            // As the run's gate judges it, and as a gate that holds the
            // token it carries (so a mutated build or pid is judged too).
            for token in [&TOKEN, &h.token] {
                let verdict = handshake::check(h, token, BUILD, Some(4242));
                // Rendered, as the gate logs and sends it.
                let _ = verdict.map_err(|r| r.to_string());
            }
        }
    }) + stream::<ToWorker>(bytes, |_| {})
}

fn stream<T>(bytes: &[u8], mut each: impl FnMut(&T)) -> usize
where
    T: serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut r = Cursor::new(bytes);
    let mut n = 0;
    loop {
        let at = r.position() as usize;
        match frame::read::<_, T>(&mut r) {
            Ok(m) => {
                // bincode's varints accept a longer form of a small number
                // (a 0 as `fc 00 00 00 00`), so a message may arrive in
                // more than one form; what it decoded to must survive a
                // round trip, and it must not have decoded from more bytes
                // than the frame held.
                let again = frame::encode(&m).expect("a decoded message encodes");
                assert!(again.len() <= r.position() as usize - at, "{m:?} grew on re-encoding");
                let back: T = frame::read(&mut Cursor::new(&again)).expect("re-encoded decodes");
                // Compared as bytes: a NaN figure is not equal to itself.
                let twice = frame::encode(&back).expect("a decoded message encodes");
                assert_eq!(twice, again, "{m:?} changed on a round trip");
                each(&m);
                n += 1;
            }
            Err(FrameError::Encode(e)) => panic!("reading gave an encode error: {e}"),
            Err(_) => return n,
        }
    }
}

/// A small deterministic generator (xorshift64*), so a failing input is
/// found again from its seed.
pub struct Mutator(u64);

impl Mutator {
    pub fn new(seed: u64) -> Mutator {
        Mutator(seed | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// `input` with one to four changes: a flipped bit, an interesting byte
    /// (varint markers, extremes), a length header set to a boundary, bytes
    /// inserted, removed or cut off, or a second seed spliced in.
    pub fn mutate(&mut self, input: &[u8], seeds: &[Vec<u8>]) -> Vec<u8> {
        let mut b = input.to_vec();
        for _ in 0..1 + self.below(4) {
            let at = self.below(b.len());
            match self.below(8) {
                0 if !b.is_empty() => b[at] ^= 1 << self.below(8),
                1 if !b.is_empty() => {
                    const BYTES: [u8; 9] = [0, 1, 0x7f, 0x80, 0xfa, 0xfb, 0xfc, 0xfd, 0xff];
                    b[at] = BYTES[self.below(BYTES.len())];
                }
                2 if b.len() >= 4 => {
                    let real = b.len() as u32 - 4;
                    let lens = [
                        0,
                        1,
                        real.wrapping_sub(1),
                        real + 1,
                        MAX_FRAME_BYTES as u32,
                        MAX_FRAME_BYTES as u32 + 1,
                        u32::MAX,
                    ];
                    let len = lens[self.below(lens.len())];
                    b[..4].copy_from_slice(&len.to_be_bytes());
                }
                3 => {
                    let extra: Vec<u8> =
                        (0..1 + self.below(8)).map(|_| self.next() as u8).collect();
                    b.splice(at..at, extra);
                }
                4 if !b.is_empty() => {
                    let end = (at + 1 + self.below(8)).min(b.len());
                    b.drain(at..end);
                }
                5 => b.truncate(at),
                6 => {
                    let other = &seeds[self.below(seeds.len())];
                    b.extend_from_slice(other);
                }
                _ => {
                    // A varint-sized length inside the payload: the largest a
                    // u64 marker can claim, where a container's count goes.
                    if b.len() > 8 {
                        b.splice(at..at, [0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]);
                    }
                }
            }
        }
        b
    }
}

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

/// The system allocator, recording the largest single allocation made on a
/// thread inside [`largest_allocation`]. Install it as the global allocator
/// of a fuzzing binary.
pub struct PeakAlloc;

// SAFETY: every call is forwarded to `System` unchanged; the bookkeeping
// touches only const-initialised thread-locals, which never allocate.
unsafe impl GlobalAlloc for PeakAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded as given.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded as given.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as given.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: forwarded as given.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn note(size: usize) {
    let _ = ARMED.try_with(|armed| {
        if armed.get() {
            let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
        }
    });
}

/// Runs `f` and returns its result with the largest single allocation it
/// made on this thread (0 unless [`PeakAlloc`] is the global allocator).
pub fn largest_allocation<R>(f: impl FnOnce() -> R) -> (R, usize) {
    LARGEST.with(|l| l.set(0));
    ARMED.with(|a| a.set(true));
    let r = f();
    ARMED.with(|a| a.set(false));
    (r, LARGEST.with(|l| l.get()))
}

/// The most one input may allocate at once: the frame limit. A payload
/// buffer is at most that, and bincode claims what a container announces
/// against the same limit before it allocates.
pub const ALLOCATION_BOUND: usize = MAX_FRAME_BYTES;
