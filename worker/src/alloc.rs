//! How a worker's heap behaves: the C library's allocator, told to keep what
//! it was given.
//!
//! A worker is often short-lived (a cold preparation's worker prepares two
//! or three series and exits), and what it pays for fresh memory is then a
//! large part of its cost: each page it touches for the first time is one
//! the kernel must fault in and zero. Measured on this project's 2-core
//! machines, for one series of the built-in cohort (6.4 MiB of live heap at
//! most):
//! - mimalloc (v3, the allocator before this one) touched 35 MiB, because it
//!   keeps each size class of large objects in a 4 MiB page of its own, and
//!   asked for transparent huge pages, so each touch faulted in a whole
//!   2 MiB page. How long zeroing those took varied tenfold from run to run
//!   (the kernel's and the hypervisor's free-page state), which made the
//!   main job's speedup swing between 0.5x and 1.5x;
//! - glibc's malloc touched 4 MiB, in 4 KiB pages it reuses.
//!
//! glibc's defaults return freed memory to the kernel (trimming the heap's
//! top) and serve every large block with its own `mmap`, so a training
//! loop that allocates and frees the same tensors each step faults them in
//! again each step (measured: 7-9 ms a step against 3.4 ms). [`configure`]
//! turns both off, which keeps the model's step where mimalloc had it and
//! the preparation as fast or faster at every scale (docs/evidence.md has
//! the figures).

/// Freed memory below this much at the heap's top stays with the process.
const TRIM_THRESHOLD: i32 = 256 << 20;
/// Blocks up to this size come from the heap, not a fresh mapping each (the
/// largest glibc accepts, `HEAP_MAX_SIZE / 2` on 64-bit).
const MMAP_THRESHOLD: i32 = 32 << 20;
/// The heap grows by at least this much at a time.
const TOP_PAD: i32 = 16 << 20;

/// Keeps freed memory in the process. Call first thing in `main`.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn configure() {
    // SAFETY: mallopt only changes the allocator's parameters; a value it
    // refuses leaves the default in place (it returns 0, which changes
    // nothing this process relies on).
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_TOP_PAD, TOP_PAD);
    }
}

/// Not glibc: the C library's allocator keeps its defaults.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn configure() {}
