//! Declared interruption points (`--kill-at`, a campaign's `kill_at`): where
//! a stage is killed on purpose, so a resume can be measured from a known
//! point.
//!
//! - `STAGE:FRACTION`: as soon as the stage has reported at least this
//!   fraction of its progress (the recipe's stages report it themselves; a
//!   command reports `{"progress": P}` lines in its spans file);
//! - `STAGE:span:NAME:N`: right after the command's Nth span called NAME
//!   ends (a command stage only);
//! - `STAGE:after:SECONDS`: that long after the command started (a command
//!   stage only).
//!
//! A built-in stage's worker is killed by the supervisor with SIGKILL; a
//! command stage's whole process tree is killed with SIGKILL by its worker,
//! which watches the command's spans file (see `protocol::KillPoint`).

use crate::error::Refusal;
use protocol::KillPoint;

/// A declared interruption point.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct KillAt {
    pub(crate) stage: String,
    pub(crate) point: KillPoint,
}

impl KillAt {
    /// A point only a command's own reports can mark (a span or a time).
    pub(crate) fn needs_a_command(&self) -> bool {
        !matches!(self.point, KillPoint::Progress(_))
    }
}

impl std::fmt::Display for KillAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.point {
            KillPoint::Progress(p) => write!(f, "{}:{p}", self.stage),
            KillPoint::Span { name, n } => write!(f, "{}:span:{name}:{n}", self.stage),
            KillPoint::After(s) => write!(f, "{}:after:{s}", self.stage),
        }
    }
}

impl std::str::FromStr for KillAt {
    type Err = crate::error::Refusal;

    fn from_str(s: &str) -> Result<KillAt, crate::error::Refusal> {
        let forms = "STAGE:FRACTION, STAGE:span:NAME:N or STAGE:after:SECONDS";
        let parts: Vec<&str> = s.split(':').collect();
        let n = parts.len();
        let (stage, point) = if n >= 4 && parts[n - 3] == "span" {
            let name = parts[n - 2];
            let count: u32 = parts[n - 1].parse().ok().filter(|c| *c >= 1).ok_or_else(|| {
                Refusal(format!("'{s}': N in span:NAME:N must be a whole number ≥ 1"))
            })?;
            let ok_name = !name.is_empty()
                && name.len() <= 64
                && name.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
            if !ok_name {
                return Err(Refusal(format!(
                    "'{s}': span name '{name}' must be 1-64 of A-Z a-z 0-9 _ . -"
                )));
            }
            (parts[..n - 3].join(":"), KillPoint::Span { name: name.into(), n: count })
        } else if n >= 3 && parts[n - 2] == "after" {
            let secs: f64 =
                parts[n - 1].parse().ok().filter(|x: &f64| x.is_finite() && *x > 0.0).ok_or_else(
                    || Refusal(format!("'{s}': SECONDS in after:SECONDS must be positive")),
                )?;
            (parts[..n - 2].join(":"), KillPoint::After(secs))
        } else {
            let (stage, fraction) = s
                .rsplit_once(':')
                .ok_or_else(|| Refusal(format!("'{s}' is not {forms} (e.g. cache_prepare:0.5)")))?;
            let fraction: f64 = fraction.parse().map_err(|_| {
                Refusal(format!("'{fraction}' in '{s}' is not a fraction between 0 and 1"))
            })?;
            if !(0.0..=1.0).contains(&fraction) {
                return Err(Refusal(format!(
                    "'{s}' is not STAGE:FRACTION with a fraction between 0 and 1"
                )));
            }
            (stage.to_string(), KillPoint::Progress(fraction))
        };
        if stage.is_empty() {
            return Err(Refusal(format!("'{s}' names no stage ({forms})")));
        }
        Ok(KillAt { stage, point })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_parses_and_prints_back() {
        for (text, point) in [
            ("cache_prepare:0.5", KillPoint::Progress(0.5)),
            ("fit:span:max_lh_fit:2", KillPoint::Span { name: "max_lh_fit".into(), n: 2 }),
            ("fit:after:1.5", KillPoint::After(1.5)),
        ] {
            let k: KillAt = text.parse().unwrap();
            assert_eq!(k.point, point);
            assert_eq!(k.to_string(), text);
        }
        let k: KillAt = "prepare:0001:0.25".parse().unwrap();
        assert_eq!((k.stage.as_str(), k.point), ("prepare:0001", KillPoint::Progress(0.25)));
    }

    #[test]
    fn bad_points_say_what_is_wrong() {
        for (text, needle) in [
            ("fit:span:a:0", "≥ 1"),
            ("fit:span:a:x", "≥ 1"),
            ("fit:span::1", "span name"),
            ("fit:after:-1", "positive"),
            ("fit:after:nan", "positive"),
            ("fit:1.5", "between 0 and 1"),
            ("fit", "is not STAGE:FRACTION"),
            (":0.5", "names no stage"),
            ("fit:span:a", "is not a fraction"),
        ] {
            let e = text.parse::<KillAt>().unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}
