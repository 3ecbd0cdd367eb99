//! Declared interruption points (`--kill-at`, a campaign's `kill_at`): where
//! the supervisor kills a worker on purpose, so a resume can be measured
//! from a known point.

/// A declared interruption point (`--kill-at STAGE:FRACTION`): the worker
/// running the stage is killed with SIGKILL as soon as it has reported at
/// least this fraction of its progress.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct KillAt {
    pub(crate) stage: String,
    pub(crate) fraction: f64,
}

impl std::str::FromStr for KillAt {
    type Err = String;

    fn from_str(s: &str) -> Result<KillAt, String> {
        let (stage, fraction) = s
            .rsplit_once(':')
            .ok_or_else(|| format!("'{s}' is not STAGE:FRACTION (e.g. cache_prepare:0.5)"))?;
        let fraction: f64 = fraction
            .parse()
            .map_err(|_| format!("'{fraction}' in '{s}' is not a fraction between 0 and 1"))?;
        if !(0.0..=1.0).contains(&fraction) || stage.is_empty() {
            return Err(format!("'{s}' is not STAGE:FRACTION with a fraction between 0 and 1"));
        }
        Ok(KillAt { stage: stage.into(), fraction })
    }
}
