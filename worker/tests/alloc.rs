//! The worker's allocator settings, in a process of their own (this file
//! holds one test, so nothing else has moved glibc's thresholds).

#![cfg(all(target_os = "linux", target_env = "gnu"))]

fn minor_faults() -> i64 {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_THREAD)
        .expect("getrusage")
        .minor_page_faults()
}

/// 20 MiB of 100 KiB blocks (each below glibc's default mmap threshold, so
/// from the heap), written, freed and allocated again: glibc's defaults give
/// the freed top of the heap back to the kernel and fault every page in
/// again (about 5 000 faults a round); configured, the pages stay.
#[test]
fn freed_heap_is_kept_not_faulted_in_again() {
    worker::alloc::configure();
    let round = || {
        let blocks: Vec<Vec<u8>> = (0..200).map(|_| vec![1u8; 100 << 10]).collect();
        std::hint::black_box(&blocks);
        drop(blocks);
    };
    round();
    let before = minor_faults();
    for _ in 0..4 {
        round();
    }
    let faults = minor_faults() - before;
    assert!(faults < 500, "{faults} page faults in 4 rounds of reusing 20 MiB of freed heap");
}
