//! libFuzzer over the frame decoder and the handshake: any bytes, read as a
//! stream of frames both ways, must decode or end in one error, never
//! panic, re-encode to the bytes they came from, and never allocate more
//! than the frame limit at once (`protocol::fuzzing`). Run by
//! `scripts/fuzz.sh`; libFuzzer's `-timeout` catches a hang.

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::fuzzing::{self, ALLOCATION_BOUND, PeakAlloc, largest_allocation};

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc;

fuzz_target!(|data: &[u8]| {
    let (_, peak) = largest_allocation(|| fuzzing::exercise(data));
    assert!(peak <= ALLOCATION_BOUND, "allocated {peak} bytes at once (limit {ALLOCATION_BOUND})");
});
