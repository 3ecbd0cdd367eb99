//! What makes a stage's trials hard to trust, read from their own figures
//! (as a cold preparation has its own, in its folder).

use super::{FIRST_TRIAL_RATIO, MAX_CV};
use crate::stats::{self, Summary};

/// A stage's warnings: its wall time unstable (coefficient of variation
/// above [`MAX_CV`]), its first counted trial slower than [`FIRST_TRIAL_RATIO`]
/// times the median of the rest (`walls` in trial order), and the machine's
/// load at the start and end of the run on `cores` cores.
pub fn warnings(
    wall: &Summary,
    walls: &[f64],
    load: [Option<[f64; 3]>; 2],
    cores: f64,
) -> Vec<String> {
    let mut out = Vec::new();
    let cv = wall.stdev / wall.mean;
    if cv > MAX_CV {
        out.push(format!(
            "wall time is unstable: coefficient of variation {:.1}% (above {:.0}%)",
            100.0 * cv,
            100.0 * MAX_CV
        ));
    }
    if walls.len() >= 3 {
        let rest = stats::distribution(&walls[1..]).median;
        if walls[0] > FIRST_TRIAL_RATIO * rest {
            out.push(format!(
                "the first counted trial took {:.2}x the median of the rest: consider more --warmup",
                walls[0] / rest
            ));
        }
    }
    out.extend(crate::rundir::environment::load_warnings(load[0], load[1], cores));
    out
}

#[cfg(test)]
mod tests {
    use super::warnings;
    use crate::stats::summarize;

    /// Each warning is given where its figure says so, and only there.
    #[test]
    fn unstable_walls_a_slow_first_trial_and_load_each_warn_alone() {
        let steady = [1.0, 1.01, 0.99, 1.0, 1.0];
        let quiet = [Some([0.1, 0.1, 0.1]), Some([0.1, 0.1, 0.1])];
        assert!(warnings(&summarize(&steady, 1), &steady, quiet, 2.0).is_empty());
        let noisy = [1.0, 1.3, 0.7, 1.2, 0.8];
        let w = warnings(&summarize(&noisy, 1), &noisy, quiet, 2.0);
        assert!(w.len() == 1 && w[0].starts_with("wall time is unstable"), "{w:?}");
        let slow_first = [1.6, 1.0, 1.0, 1.0, 1.0];
        let w = warnings(&summarize(&steady, 1), &slow_first, quiet, 2.0);
        assert!(w.iter().any(|w| w.starts_with("the first counted trial took 1.60x")), "{w:?}");
        let busy = [Some([3.0, 1.0, 1.0]), None];
        let w = warnings(&summarize(&steady, 1), &steady, busy, 2.0);
        assert!(w.len() == 1 && w[0].contains("at the start of the run"), "{w:?}");
    }
}
