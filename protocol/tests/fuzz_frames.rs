//! The frame decoder and the handshake under mutated input, on stable Rust:
//! valid frames of every message, each mutated one to four ways, then
//! mutated again, read as a stream in both directions (see
//! `protocol::fuzzing::exercise` for the property). No input may panic or
//! allocate more than the frame limit at once, and each must finish.
//! `STAGEBENCH_FUZZ_INPUTS` sets the count (CI: the default, 10⁴;
//! `scripts/fuzz.sh` runs 10⁶ here and with libFuzzer).

use protocol::fuzzing::{self, ALLOCATION_BOUND, Mutator, PeakAlloc, largest_allocation};
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc;

const DEFAULT_INPUTS: u64 = 10_000;
/// Far above what one input takes (microseconds); a decoder that loops or
/// waits on a length it was told would blow it.
const PER_INPUT: Duration = Duration::from_secs(2);

#[test]
fn mutated_frames_never_panic_allocate_past_the_limit_or_hang() {
    let inputs = std::env::var("STAGEBENCH_FUZZ_INPUTS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(DEFAULT_INPUTS);
    let seeds = fuzzing::seeds();
    // Every seed decodes whole: the property holds where it must.
    for s in &seeds {
        assert!(fuzzing::exercise(s) >= 1, "a valid seed did not decode");
    }
    let mut m = Mutator::new(0x5eed_f00d);
    let (mut decoded, mut largest) = (0usize, 0usize);
    let started = Instant::now();
    let mut corpus = seeds.clone();
    for i in 0..inputs {
        let base = &corpus[i as usize % corpus.len()];
        let input = m.mutate(base, &seeds);
        let t = Instant::now();
        let (n, peak) = largest_allocation(|| fuzzing::exercise(&input));
        assert!(t.elapsed() < PER_INPUT, "input {i} took {:?}: {input:?}", t.elapsed());
        assert!(
            peak <= ALLOCATION_BOUND,
            "input {i} allocated {peak} bytes at once (the limit is {ALLOCATION_BOUND}): {input:?}"
        );
        decoded += n;
        largest = largest.max(peak);
        // Keep some inputs that still decode, so mutations stack up.
        if n > 0 && corpus.len() < 4096 {
            corpus.push(input);
        }
    }
    eprintln!(
        "{inputs} inputs in {:.2} s, {decoded} messages decoded, largest allocation {largest} bytes",
        started.elapsed().as_secs_f64()
    );
    assert!(decoded > 0, "no mutated input decoded: the mutator only made garbage");
}

/// The allocator measures: a known allocation is seen at its size.
#[test]
fn the_allocation_meter_sees_a_known_allocation() {
    let (v, peak) = largest_allocation(|| vec![0u8; 3 << 20]);
    assert_eq!(v.len(), 3 << 20);
    assert!(peak >= 3 << 20, "{peak}");
    let (_, none) = largest_allocation(|| 1 + 1);
    assert_eq!(none, 0);
}

/// Inputs a fuzzer once failed on, kept so the failure cannot come back.
/// Each is hex, as libFuzzer left it in fuzz/artifacts/frames/.
#[test]
fn inputs_the_fuzzers_found_stay_fixed() {
    let found = [
        // A Welcome whose variant index came as a u32 varint (`fc 00 00 00
        // 00`): bincode accepts the longer form, so "one wire form per
        // message" was the wrong property; a round trip is the right one.
        "00000006fc00000000000000040006210100007402",
    ];
    for hex in found {
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let (_, peak) = largest_allocation(|| fuzzing::exercise(&bytes));
        assert!(peak <= ALLOCATION_BOUND, "{hex}");
    }
}
