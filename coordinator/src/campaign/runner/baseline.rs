//! A pipeline's scratch state against its cold runs': the files in which
//! they differ among themselves (the baseline), what a resume changes
//! beyond them, and the paths, which go to `private/identity.txt` only.

use report::campaign::report as records;
use std::collections::{BTreeMap, BTreeSet};

/// A pipeline's scratch state compared file by file: the first cold
/// trial's files are the reference, the paths in which later cold trials
/// differ from it the baseline; every differing path goes to
/// `private/identity.txt`, never into evidence.
#[derive(Default)]
pub(super) struct Baseline {
    reference: Option<BTreeMap<String, String>>,
    paths: BTreeSet<String>,
    identity: records::Identity,
    private: Vec<String>,
}

impl Baseline {
    /// A trial's scratch files (`evidence::digest::files_all_but`): their
    /// digest once `exclude` left some out, and against the reference the
    /// files that differ and how many of them lie beyond the baseline.
    pub(super) fn judge(
        &mut self,
        files: Vec<(String, String, u64)>,
        exclude: &[glob::Pattern],
        cold: bool,
        label: &str,
    ) -> (String, u64, u64) {
        let (kept, left): (Vec<_>, Vec<_>) =
            files.into_iter().partition(|(rel, _, _)| !exclude.iter().any(|p| p.matches(rel)));
        let digest = evidence::digest::files_sha256(&kept);
        let now: BTreeMap<String, String> = kept.into_iter().map(|(r, s, _)| (r, s)).collect();
        let first = self.reference.is_none();
        if first {
            self.identity.excluded_files = left.len() as u64;
        }
        let reference = self.reference.get_or_insert_with(|| now.clone());
        let differ: BTreeSet<String> = reference
            .keys()
            .chain(now.keys())
            .filter(|p| reference.get(*p) != now.get(*p))
            .cloned()
            .collect();
        if cold {
            self.identity.cold_trials += 1;
            self.identity.cold_identical += u32::from(differ.is_empty());
            self.paths.extend(differ.iter().cloned());
            self.identity.baseline_files = self.paths.len() as u64;
        }
        let beyond = differ.iter().filter(|p| !self.paths.contains(*p)).count() as u64;
        let what = if cold { "differs among cold runs" } else { "differs from the first cold run" };
        self.private.extend(differ.iter().map(|p| format!("{label}\t{what}\t{p}")));
        (digest, differ.len() as u64, beyond)
    }

    /// What the report records: how the cold runs compared, with the
    /// campaign's `identity_exclude`.
    pub(super) fn identity(&self, exclude: &[String]) -> records::Identity {
        records::Identity { exclude: exclude.to_vec(), ..self.identity.clone() }
    }

    /// The differing paths, one line each, into `private/identity.txt` in
    /// the campaign directory `dir`; nothing when none differed.
    pub(super) fn write_private(&self, dir: &std::path::Path) -> std::io::Result<()> {
        if self.private.is_empty() {
            return Ok(());
        }
        let private = dir.join(report::campaign::PRIVATE);
        std::fs::create_dir_all(&private)?;
        let mut text = self.private.join("\n");
        text.push('\n');
        std::fs::write(private.join("identity.txt"), text)
    }
}
