//! Trials' `--param` scan: each grid point of the one `--command` becomes
//! a stage of its own (`trial[workers=4]`), and the scan's section is
//! computed from every point's counted trials. The specs, the grid and the
//! rounds' shuffled order are the modes' shared ([`crate::modes::params`]).

use crate::error::Refusal;
use crate::modes::Records;
use crate::plan::PlannedStage;
use protocol::{LocalPath, Stage, Word};
use report::modes::params::{Grid, Point, env_name};
use report::rundir::report::TrialSet;
use std::collections::BTreeMap;

/// The name a scanned command's stages take when `--name` is not given.
pub(crate) const DEFAULT_NAME: &str = "trial";

/// The stages of `name`'s command `line` over the grid, in point order:
/// each the line with every `{NAME}` replaced, run by `sh -c` in `cwd`
/// with `STAGEBENCH_PARAM_NAME` set, named `name[a=1,b=2]`.
pub(crate) fn stages(grid: &Grid, name: &str, line: &str, cwd: &str) -> Vec<(Stage, Point)> {
    grid.points()
        .into_iter()
        .map(|point| {
            let stage = Stage::Exec {
                name: format!("{name}[{}]", Grid::label(&point)),
                argv: vec![
                    Word::from("/bin/sh"),
                    Word::Text("-c".into()),
                    Word::Text(Grid::substituted(line, &point)),
                ],
                cwd: LocalPath::from(cwd.to_string()),
                env: point.iter().map(|(k, v)| (env_name(k), v.clone())).collect(),
            };
            (stage, point)
        })
        .collect()
}

/// A trials plan's scan: its names, the seed of its rounds' order, and
/// each point's stage key, in grid order.
#[derive(Clone, Debug)]
pub(crate) struct Scan {
    pub(crate) grid: Grid,
    pub(crate) seed: u64,
    pub(crate) points: Vec<(String, Point)>,
}

impl Scan {
    /// The scan of the one `--command` among `stages` (named `name`, when
    /// `--name` gave one) over `grid`: its stages, one per point, and the scan.
    pub(crate) fn of(
        stages: Vec<PlannedStage>,
        name: Option<&str>,
        grid: Grid,
        seed: u64,
    ) -> Result<(Vec<PlannedStage>, Scan), Refusal> {
        let [PlannedStage { stage: Stage::Command { line, .. }, .. }] = &stages[..] else {
            return Err(Refusal("--param scans one --command, and no --stage beside it".into()));
        };
        let cwd = std::env::current_dir()
            .map_err(|e| Refusal(format!("--param: the working directory: {e}")))?;
        let made = self::stages(&grid, name.unwrap_or(DEFAULT_NAME), line, &cwd.to_string_lossy());
        let (stages, points): (Vec<Stage>, Vec<Point>) = made.into_iter().unzip();
        let stages = crate::plan::keyed(stages);
        let points = stages.iter().map(|s| s.key.clone()).zip(points).collect();
        Ok((stages, Scan { grid, seed, points }))
    }

    /// What the declaration records: each name with its values, in order,
    /// and the seed.
    pub(crate) fn declared(&self) -> serde_json::Value {
        self.grid.declared(self.seed)
    }

    /// The scan's section: each point's counted trials, and the
    /// recommendation computed from them.
    pub(crate) fn assess(
        &self,
        sets: &BTreeMap<String, TrialSet>,
        records: &Records,
    ) -> report::modes::scan::Scan {
        use report::modes::scan::{Measured, scan};
        let measured: Vec<Measured> = self
            .points
            .iter()
            .filter_map(|(key, point)| {
                let samples = &sets.get(key)?.samples;
                let figure = |name: &str| samples.get(name).cloned().unwrap_or_default();
                let spans = samples
                    .iter()
                    .filter_map(|(k, xs)| {
                        let name = report::rundir::spans::sum_name(k, |n| samples.contains_key(n))?;
                        Some((name.to_string(), xs.clone()))
                    })
                    .collect();
                Some(Measured {
                    stage: key.clone(),
                    parameters: point.iter().cloned().collect(),
                    walls: figure("wall_s"),
                    cpus: figure("cpu_s"),
                    tree_peaks: figure("tree_peak_bytes"),
                    tree_peak_method: records
                        .stages
                        .get(key)
                        .map(|st| st.tree_peak_method.clone())
                        .unwrap_or_default(),
                    spans,
                    input_wait: figure("input_wait_fraction"),
                })
            })
            .collect();
        scan(self.grid.names(), Some(self.seed), &measured, "--trials")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(specs: &[&str], line: &str) -> Grid {
        let params = specs.iter().map(|s| s.parse().unwrap()).collect();
        Grid::checked(params, &[line], "--command", false, false).unwrap().unwrap()
    }

    #[test]
    fn stages_replace_the_placeholder_and_set_the_variable() {
        let g = grid(&["w=1,2", "b=x"], "run {w} {b} {w}");
        let made = stages(&g, "trial", "run {w} {b} {w}", "/tmp");
        assert_eq!(made.len(), 2);
        let (Stage::Exec { name, argv, env, .. }, point) = &made[1].clone() else {
            panic!("{:?}", made[1]);
        };
        assert_eq!(name, "trial[w=2,b=x]");
        assert_eq!(argv[2].as_str(), "run 2 x 2");
        assert_eq!(
            env,
            &[("STAGEBENCH_PARAM_W".into(), "2".into()), ("STAGEBENCH_PARAM_B".into(), "x".into())]
        );
        assert_eq!(point, &[("w".to_string(), "2".to_string()), ("b".into(), "x".into())]);
        // The value is in the definition; the working directory is not.
        let other = stages(&g, "trial", "run {w} {b} {w}", "/elsewhere");
        assert_eq!(made[0].0.clone().definition(), other[0].0.clone().definition());
        assert_ne!(made[0].0.clone().definition(), made[1].0.clone().definition());
    }
}
