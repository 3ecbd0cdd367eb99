//! What cold-prep's preparation phases read from storage, and `--os-cache`:
//! whether their declared inputs (the training series' files of the frozen
//! dataset, or a user's `--inputs`) were dropped from the page cache before
//! each of them (the coordinator's `pagecache`).
//!
//! A cold phase that read less than [`NOT_COLD_BELOW`] of its inputs' bytes
//! from storage was served from the page cache, and is said to be not cold.

use super::super::preparation::Names;
use crate::doc::{Align, Block, Blocks, Cell, Table};
use crate::fmt::mib;
use crate::rundir::report::Eviction;
use serde::{Deserialize, Serialize};

/// A phase that read less than this share of its inputs' bytes from
/// storage was served from the page cache.
pub const NOT_COLD_BELOW: f64 = 0.10;

/// What the report says of storage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Storage {
    /// `cold` or `as-is`, as declared.
    pub os_cache: String,
    /// The declared inputs' bytes, where the run knows its inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs_bytes: Option<u64>,
    /// Every preparation phase, in the order run.
    pub phases: Vec<PhaseStorage>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseStorage {
    pub key: String,
    pub processes: u32,
    /// What the phase's processes fetched from storage (their `read_bytes`).
    pub read_bytes: u64,
    /// With `cold`: what dropping the inputs did just before the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction: Option<Eviction>,
}

impl Storage {
    /// Why a phase meant to be cold was not: one line for a failed
    /// eviction, one for phases served from the page cache all the same.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.os_cache != "cold" {
            return out;
        }
        if let Some(line) = self.phases.iter().find_map(|p| p.eviction.as_ref()?.failure()) {
            out.push(line);
        }
        let Some(inputs) = self.inputs_bytes.filter(|b| *b > 0) else { return out };
        let warm: Vec<&PhaseStorage> = self
            .phases
            .iter()
            .filter(|p| (p.read_bytes as f64) < NOT_COLD_BELOW * inputs as f64)
            .collect();
        // The probe said the inputs stayed, yet a phase read them from
        // storage: the two figures disagree, and the run says so.
        let read_anyway = self.phases.iter().find(|p| {
            p.eviction.as_ref().is_some_and(|e| {
                e.failure().is_some() && e.unknown_files == 0 && e.failed_files == 0
            }) && p.read_bytes as f64 >= (1.0 - NOT_COLD_BELOW) * inputs as f64
        });
        if let Some(p) = read_anyway {
            out.push(format!(
                "the page-cache probe and the storage reads disagree: after eviction {} of the inputs stayed resident by the probe, yet phase {} read {} from storage",
                mib(p.eviction.as_ref().map_or(0, |e| e.resident_after_bytes)),
                p.key,
                mib(p.read_bytes)
            ));
        }
        if let Some(least) = warm.iter().min_by_key(|p| p.read_bytes) {
            out.push(format!(
                "served from the page cache: not cold: {} of {} preparation phases read under {:.0}% of the inputs' {} from storage (the least, {}, read {})",
                warm.len(),
                self.phases.len(),
                100.0 * NOT_COLD_BELOW,
                mib(inputs),
                least.key,
                mib(least.read_bytes)
            ));
        }
        out
    }

    /// The median read of the serial phases and of the main parallel ones
    /// (`serial_key`, `parallel_key` are round 1's; later rounds' keys
    /// extend them with `#R`).
    fn medians(&self, serial_key: &str, parallel_key: &str) -> (f64, f64) {
        let of = |key: &str| {
            let reads: Vec<f64> = self
                .phases
                .iter()
                .filter(|p| {
                    crate::rundir::keys::repeat_of(&p.key).map_or(p.key.as_str(), |(base, _)| base)
                        == key
                })
                .map(|p| p.read_bytes as f64)
                .collect();
            crate::stats::distribution(&reads).median
        };
        (of(serial_key), of(parallel_key))
    }

    /// What every view says of it: the median reads in one sentence (the
    /// console's too), then every phase's read and the evictions.
    pub fn blocks(&self, n: &Names, processes: usize) -> Blocks {
        let (serial, parallel) = self.medians(&n.serial, &n.parallel);
        let inputs = match self.inputs_bytes {
            Some(b) => format!(" of the inputs' {}", mib(b)),
            None => String::new(),
        };
        let how = match self.os_cache.as_str() {
            "cold" => "--os-cache cold: evicted from the page cache before each phase",
            _ => "--os-cache as-is; --os-cache cold evicts them before each phase",
        };
        let mut out = Blocks::default();
        out.documents(Block::Subheading("Storage".into()));
        out.everywhere(Block::Para(format!(
            "Storage read: serial {}, {processes} processes {}{inputs} (medians; {how}).",
            mib(serial as u64),
            mib(parallel as u64)
        )));
        let mut t = Table::new(&[
            ("phase", Align::Left),
            ("processes", Align::Right),
            ("storage read MiB", Align::Right),
            ("resident before", Align::Right),
            ("resident after", Align::Right),
        ]);
        for p in &self.phases {
            let (before, after) = match &p.eviction {
                Some(e) => (mib(e.resident_before_bytes), mib(e.resident_after_bytes)),
                None => ("–".into(), "–".into()),
            };
            t.row(vec![
                Cell::code(&p.key),
                p.processes.to_string().into(),
                crate::fmt::mib_number(p.read_bytes).into(),
                before.into(),
                after.into(),
            ]);
        }
        out.documents(Block::Table(t));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(key: &str, read_bytes: u64, resident_after_bytes: u64) -> PhaseStorage {
        PhaseStorage {
            key: key.into(),
            processes: 1,
            read_bytes,
            eviction: Some(Eviction {
                files: 3,
                bytes: 1000,
                resident_before_bytes: 1000,
                resident_after_bytes,
                ..Eviction::default()
            }),
        }
    }

    /// Both ways: phases that read their inputs from storage are cold; one
    /// that read under 10% is named as served from the page cache; an
    /// eviction that left the inputs resident says so; `as-is` never warns.
    #[test]
    fn a_cold_phase_that_read_from_the_page_cache_is_said_to_be_not_cold() {
        let cold = |phases| Storage { os_cache: "cold".into(), inputs_bytes: Some(1000), phases };
        let s = cold(vec![phase("a", 990, 0), phase("b", 1000, 0)]);
        assert!(s.warnings().is_empty(), "{:?}", s.warnings());
        let s = cold(vec![phase("a", 990, 0), phase("b", 99, 0), phase("c", 50, 0)]);
        let w = s.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("served from the page cache: not cold: 2 of 3"), "{}", w[0]);
        assert!(w[0].contains("the least, c,"), "{}", w[0]);
        // 100 of 1000 bytes is 10%: not under it.
        assert!(cold(vec![phase("a", 100, 0)]).warnings().is_empty());
        let s = cold(vec![phase("a", 0, 1000)]);
        let w = s.warnings();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("could not evict") && w[0].contains("100%"), "{}", w[0]);
        let as_is = Storage { os_cache: "as-is".into(), ..cold(vec![phase("a", 0, 1000)]) };
        assert!(as_is.warnings().is_empty());
        // The probe says resident, the reads say storage: said, not hidden.
        let w = cold(vec![phase("a", 1000, 1000)]).warnings();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[1].starts_with("the page-cache probe and the storage reads disagree"),
            "{}",
            w[1]
        );
        // A residency the file system would not tell is unknown, not resident.
        let mut unknown = phase("a", 1000, 0);
        if let Some(e) = &mut unknown.eviction {
            e.unknown_files = 3;
        }
        let w = cold(vec![unknown]).warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("whether 3 of 3 input file(s) left the page cache is unknown"),
            "{}",
            w[0]
        );
    }

    /// The console's line gives the median read of the serial phase's rounds
    /// and of the main parallel phase's, each over its own rounds only (a
    /// sweep's other phases are not in either).
    #[test]
    fn the_storage_line_gives_each_sides_median_over_its_rounds() {
        const M: u64 = 1024 * 1024;
        let at = |key: &str, mib: u64| PhaseStorage {
            key: key.into(),
            processes: 1,
            read_bytes: mib * M,
            eviction: None,
        };
        let s = Storage {
            os_cache: "cold".into(),
            inputs_bytes: Some(100 * M),
            phases: vec![
                at("serial", 10),
                at("parallel", 5),
                at("other", 90),
                at("serial#2", 30),
                at("parallel#2", 8),
                at("serial#3", 20),
                at("parallel#3", 7),
            ],
        };
        let names = Names {
            serial: "serial".into(),
            parallel: "parallel".into(),
            serial_out: "".into(),
            parallel_out: "".into(),
            items: false,
        };
        let blocks = s.blocks(&names, 4);
        let mut console = Vec::new();
        blocks.text(&mut console).unwrap();
        assert_eq!(
            String::from_utf8(console).unwrap(),
            "  Storage read: serial 20.0 MiB, 4 processes 7.0 MiB of the inputs' 100.0 MiB (medians; --os-cache cold: evicted from the page cache before each phase).\n"
        );
        // summary.md opens its section with the same sentence, then gives
        // every phase's read.
        let mut md = String::new();
        blocks.markdown(&mut md);
        assert!(
            md.starts_with("\n### Storage\n\nStorage read: serial 20.0 MiB, 4 processes"),
            "{md}"
        );
        assert!(md.contains("| `serial#2` | 1 | 30.0 | – | – |"), "{md}");
    }
}
