//! `--mode cold-prep`: serial and N-process preparation side by side, in one
//! hash-bound report, with identical caches: the report (`agreement`), the
//! caches (`caches`), and the processes (`workers`).

mod agreement;
mod caches;
mod items;
mod storage;
mod workers;
