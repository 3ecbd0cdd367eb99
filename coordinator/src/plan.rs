//! What a run will do, resolved from the command line before anything runs.

use crate::error::Refusal;
use crate::kill_points::KillAt;
use protocol::Stage;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Whether `name` is a label a user may give something that tables, plots,
/// traces and file names show (a campaign, a step, a pipeline stage, a
/// command stage): 1 to 64 ASCII letters, digits, `_` and `-`. Nothing else
/// reaches a Markdown table or a path.
pub(crate) fn is_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A flag's number of seconds (`--stage-timeout`, `--item-timeout`, …):
/// positive, finite and under 10⁹ (a `Duration` holds it whole).
pub(crate) fn positive_secs(s: &str) -> Result<Duration, Refusal> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v < 1e9 => Ok(Duration::from_secs_f64(v)),
        Ok(v) if v >= 1e9 => Err(Refusal(format!("'{s}' seconds is more than 10^9"))),
        _ => Err(Refusal(format!("'{s}' is not a positive number of seconds"))),
    }
}

/// Presets `--span preset:NAME` knows.
pub(crate) const SPAN_PRESETS: [&str; 2] = ["torch", "keras"];

/// `--span MODULE:QUALNAME[=NAME][:stage]` or `--span preset:NAME`,
/// checked: a module and a qualname of dotted Python identifiers, a NAME by
/// the span name rule (1 to 64 of `A-Z a-z 0-9 _ . -`), defaulting to the
/// qualname's last part; a known preset. `:stage` makes the span a stage
/// of the command (its CPU and memory too).
pub(crate) fn parse_span(spec: &str) -> Result<protocol::SpanTarget, Refusal> {
    if let Some(function) = spec.strip_suffix(":stage").filter(|f| f.contains(':')) {
        if function.starts_with("preset:") {
            return Err(Refusal(format!("'{spec}': a preset cannot be a stage")));
        }
        return match parse_span(function)? {
            protocol::SpanTarget::Function { module, qualname, name } => {
                Ok(protocol::SpanTarget::Stage { module, qualname, name })
            }
            other => Err(Refusal(format!("'{spec}': {other} cannot be a stage"))),
        };
    }
    let Some((module, rest)) = spec.split_once(':') else {
        return Err(Refusal(format!(
            "'{spec}' has no colon: spell it MODULE:QUALNAME[=NAME] or preset:NAME"
        )));
    };
    if module == "preset" {
        return match SPAN_PRESETS.contains(&rest) {
            true => Ok(protocol::SpanTarget::Preset(rest.into())),
            false => Err(Refusal(format!(
                "unknown preset '{rest}' (known: {})",
                SPAN_PRESETS.join(", ")
            ))),
        };
    }
    let (qualname, name) = match rest.split_once('=') {
        Some((q, n)) => (q, Some(n)),
        None => (rest, None),
    };
    let dotted = |s: &str| {
        !s.is_empty()
            && s.split('.').all(|part| {
                part.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
                    && part.chars().all(|c| c.is_alphanumeric() || c == '_')
            })
    };
    if !dotted(module) {
        return Err(Refusal(format!(
            "'{spec}': the module '{module}' is not a dotted Python name"
        )));
    }
    if !dotted(qualname) {
        return Err(Refusal(format!(
            "'{spec}': the qualname '{qualname}' is not a dotted Python name"
        )));
    }
    let name = name.unwrap_or_else(|| qualname.rsplit('.').next().unwrap_or(qualname));
    let ok_name = !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    if !ok_name {
        return Err(Refusal(format!(
            "'{spec}': the span name '{name}' must be 1 to 64 of A-Z a-z 0-9 _ . -"
        )));
    }
    Ok(protocol::SpanTarget::Function {
        module: module.into(),
        qualname: qualname.into(),
        name: name.into(),
    })
}

/// Targets that each name a function once: a second `--span` of the same
/// MODULE:QUALNAME (under another name, or as a stage) is refused, as the
/// helper would refuse it (one function has one span name), never a
/// second span that reads "0 calls".
pub(crate) fn distinct_spans<'a>(
    targets: impl IntoIterator<Item = &'a protocol::SpanTarget>,
) -> Result<(), Refusal> {
    let mut seen: BTreeMap<(&str, &str), &protocol::SpanTarget> = BTreeMap::new();
    for t in targets {
        let (protocol::SpanTarget::Function { module, qualname, .. }
        | protocol::SpanTarget::Stage { module, qualname, .. }) = t
        else {
            continue;
        };
        if let Some(first) = seen.insert((module, qualname), t) {
            return Err(Refusal(format!(
                "--span {first} and --span {t} name the same function {module}:{qualname}: one function has one span name"
            )));
        }
    }
    Ok(())
}

/// `--sources GLOB...`: every regular file the patterns match, below the
/// working directory, by its path relative to it, with its SHA-256. A
/// pattern that is absolute or climbs out (`..`), or matches no file, is
/// refused: a declaration binds what it names, never a path outside the
/// project.
pub(crate) fn hash_sources(patterns: &[String]) -> Result<BTreeMap<String, String>, Refusal> {
    let mut out = BTreeMap::new();
    for pattern in patterns {
        let climbs = std::path::Path::new(pattern)
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir));
        if climbs {
            return Err(Refusal(format!(
                "--sources '{pattern}': name files below the working directory, by a relative pattern without '..'"
            )));
        }
        let paths = glob::glob(pattern)
            .map_err(|e| Refusal(format!("--sources '{pattern}': {}", e.msg)))?;
        let mut matched = 0;
        for path in paths {
            let path = path.map_err(|e| Refusal(format!("--sources '{pattern}': {e}")))?;
            if !path.is_file() {
                continue;
            }
            let bytes = std::fs::read(&path)
                .map_err(|e| Refusal(format!("--sources: cannot read {}: {e}", path.display())))?;
            let name = path.strip_prefix(".").unwrap_or(&path).to_string_lossy().into_owned();
            out.insert(name, evidence::canonical::sha256_hex(&bytes));
            matched += 1;
        }
        if matched == 0 {
            return Err(Refusal(format!("--sources '{pattern}' matched no file")));
        }
    }
    Ok(out)
}

/// How stages map to processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Isolation {
    /// A fresh worker process for every stage.
    Stage,
    /// One worker process runs all stages in order.
    Run,
}

impl Isolation {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Isolation::Stage => "stage",
            Isolation::Run => "run",
        }
    }

    /// How many jobs one worker process takes before it is shut down.
    pub(crate) fn jobs_per_process(self) -> usize {
        match self {
            Isolation::Stage => 1,
            Isolation::Run => usize::MAX,
        }
    }
}

/// A stage in the plan, with the unique key its record gets in report.json.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PlannedStage {
    pub(crate) key: String,
    pub(crate) stage: Stage,
}

/// The tree sampler's interval when `--sample-ms` is not given.
pub(crate) const DEFAULT_SAMPLE_MS: u32 = protocol::env::DEFAULT_SAMPLE_MS;

/// Stages run when a mode that runs a list of stages is given no `--stage`
/// and no `--command`.
pub(crate) const DEFAULT_DIAGNOSTIC_STAGES: &[&str] =
    &["noop", "sleep:200", "spin:300", "alloc:256", "write:64"];

/// What every run needs whatever its mode, decided before the run
/// directory exists. What a mode needs of its own is in its plan
/// ([`crate::modes::ModePlan`]).
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub(crate) isolation: Isolation,
    pub(crate) workers: u32,
    pub(crate) connect_timeout: Duration,
    pub(crate) stage_timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL when a worker must be stopped.
    pub(crate) grace: Duration,
    pub(crate) worker_bin: PathBuf,
    /// How workers are started (`--launcher`).
    pub(crate) launcher: crate::launch::Kind,
    /// TCP address to listen on (`--listen`); None means a Unix socket.
    pub(crate) listen: Option<String>,
    pub(crate) output: Option<PathBuf>,
    /// A frozen dataset, for the modes that read one; None means the
    /// built-in small synthetic cohort.
    pub(crate) data: Option<PathBuf>,
    pub(crate) quiet: bool,
    /// SIGKILL a stage's worker once it reports this much progress.
    pub(crate) kill_at: Option<KillAt>,
    /// What processes a stage leaves running do to the run (`--leaks`).
    pub(crate) leaks: LeakPolicy,
    /// Milliseconds between two samples of a stage's process tree (`--sample-ms`).
    pub(crate) sample_ms: u32,
    /// `--keras-resident`: resident steps `preset:keras` times after fit
    /// (0: none).
    pub(crate) keras_resident: u32,
    /// `--no-provenance`: no helper in a command without `--span`.
    pub(crate) no_provenance: bool,
    /// `--sources`: each matched file's SHA-256 by its path relative to
    /// the working directory, read before anything runs.
    pub(crate) sources: BTreeMap<String, String>,
    /// `--inputs`: the directories the run's commands read, digested
    /// before anything runs (checked again after the last phase).
    pub(crate) inputs: Vec<host::inputs::InputDir>,
    /// `--span`: functions every command stage's (and preparation
    /// program's) Python wraps as spans.
    pub(crate) spans: Vec<protocol::SpanTarget>,
    /// A campaign's spans for one pipeline stage, by stage key, on top.
    pub(crate) stage_spans: BTreeMap<String, Vec<protocol::SpanTarget>>,
    /// `--sample`: py-spy and its rate, for every command stage.
    pub(crate) sample: Option<Sampling>,
    /// The campaign step and trial this run is (`CAMPAIGN/STEP/TRIAL`,
    /// `…-killed` for the attempt to be interrupted); None outside one.
    pub(crate) campaign_step: Option<String>,
}

/// How command stages are sampled (`--sample`).
#[derive(Clone, Debug)]
pub(crate) struct Sampling {
    pub(crate) rate_hz: u32,
    pub(crate) py_spy: crate::sampler::Found,
}

/// What a stage's leftover processes (killed by its worker) do to the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LeakPolicy {
    /// Record them, and warn in summary.md and on stderr.
    Warn,
    /// Fail the stage (`leaked_processes` in failure.json).
    Fail,
}

impl LeakPolicy {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            LeakPolicy::Warn => "warn",
            LeakPolicy::Fail => "fail",
        }
    }
}

impl Settings {
    /// The declaration's parameters every mode shares.
    pub(crate) fn parameters(&self) -> BTreeMap<String, serde_json::Value> {
        let secs = |d: Duration| serde_json::json!(d.as_secs_f64());
        let mut p = BTreeMap::new();
        p.insert("connect_timeout_s".into(), secs(self.connect_timeout));
        p.insert(
            "stage_timeout_s".into(),
            self.stage_timeout.map(secs).unwrap_or(serde_json::Value::Null),
        );
        p.insert("termination_grace_s".into(), secs(self.grace));
        p.insert("launcher".into(), self.launcher.as_str().into());
        p.insert("leaks".into(), self.leaks.as_str().into());
        p.insert("sample_ms".into(), self.sample_ms.into());
        if !self.sources.is_empty() {
            p.insert(
                report::rundir::declaration::keys::SOURCES.into(),
                serde_json::json!(self.sources),
            );
        }
        p.extend(host::inputs::parameters(&self.inputs));
        if let Some(step) = &self.campaign_step {
            p.insert("campaign_step".into(), step.clone().into());
        }
        if self.no_provenance {
            p.insert("provenance".into(), false.into());
        }
        if self.keras_resident > 0 {
            p.insert("keras_resident".into(), self.keras_resident.into());
        }
        if let Some(k) = &self.kill_at {
            p.insert("kill_at".into(), k.to_string().into());
        }
        let spelled = |t: &[protocol::SpanTarget]| -> Vec<String> {
            t.iter().map(|t| t.to_string()).collect()
        };
        if let Some(s) = &self.sample {
            p.insert("sample_hz".into(), s.rate_hz.into());
            p.insert("sampler".into(), s.py_spy.version.clone().into());
        }
        if !self.spans.is_empty() {
            p.insert("spans".into(), spelled(&self.spans).into());
        }
        if !self.stage_spans.is_empty() {
            let per: BTreeMap<&String, Vec<String>> =
                self.stage_spans.iter().map(|(k, t)| (k, spelled(t))).collect();
            p.insert("stage_spans".into(), serde_json::json!(per));
        }
        p
    }

    /// The span targets of a job: none for a built-in stage; for a command
    /// stage or a preparation program, `--span`'s and its own stage's.
    pub(crate) fn spans_of(&self, key: &str, stage: &Stage) -> Vec<protocol::SpanTarget> {
        match stage {
            Stage::Command { .. } | Stage::Exec { .. } | Stage::PrepareItem { .. } => {
                let own = self.stage_spans.get(key).into_iter().flatten();
                self.spans.iter().chain(own).cloned().collect()
            }
            _ => Vec::new(),
        }
    }
}

impl Settings {
    /// How a job's command is sampled: `--sample`'s py-spy for a command
    /// stage or a preparation program, None for everything else.
    pub(crate) fn sample_of(&self, stage: &Stage) -> Option<protocol::SampleRequest> {
        let s = self.sample.as_ref()?;
        matches!(stage, Stage::Command { .. } | Stage::Exec { .. } | Stage::PrepareItem { .. })
            .then(|| protocol::SampleRequest {
                rate_hz: s.rate_hz,
                py_spy: s.py_spy.path.to_string_lossy().into_owned(),
            })
    }
}

use report::rundir::keys::repeat_key;

/// Gives every stage a unique key: its spelling, with `#2`, `#3`, … on repeats.
pub(crate) fn keyed(stages: Vec<Stage>) -> Vec<PlannedStage> {
    let mut seen = std::collections::HashMap::<String, u32>::new();
    stages
        .into_iter()
        .map(|stage| {
            let base = stage.to_string();
            let n = seen.entry(base.clone()).or_insert(0);
            *n += 1;
            let key = repeat_key(&base, *n);
            PlannedStage { key, stage }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_targets_are_checked_and_named() {
        let f = |m: &str, q: &str, n: &str| protocol::SpanTarget::Function {
            module: m.into(),
            qualname: q.into(),
            name: n.into(),
        };
        assert_eq!(parse_span("json:loads").unwrap(), f("json", "loads", "loads"));
        assert_eq!(
            parse_span("json.decoder:JSONDecoder.decode=decode_json").unwrap(),
            f("json.decoder", "JSONDecoder.decode", "decode_json")
        );
        assert_eq!(parse_span("a:B.c").unwrap().to_string(), "a:B.c");
        assert_eq!(parse_span("a:B.c=x").unwrap().to_string(), "a:B.c=x");
        // A stage: the same function, its CPU and memory too.
        let stage = parse_span("__main__:train=fit:stage").unwrap();
        assert_eq!(
            stage,
            protocol::SpanTarget::Stage {
                module: "__main__".into(),
                qualname: "train".into(),
                name: "fit".into()
            }
        );
        assert_eq!(stage.to_string(), "__main__:train=fit:stage");
        assert_eq!(parse_span(&stage.to_string()).unwrap(), stage);
        assert_eq!(parse_span("m:prepare:stage").unwrap().to_string(), "m:prepare=prepare:stage");
        assert_eq!(
            parse_span("preset:torch").unwrap(),
            protocol::SpanTarget::Preset("torch".into())
        );
        for (bad, says) in [
            ("json.loads", "has no colon"),
            (":loads", "the module '' is not"),
            ("json:", "the qualname '' is not"),
            ("json:loads=", "the span name '' must be"),
            ("json:loads=a/b", "the span name 'a/b' must be"),
            ("json:1x", "the qualname '1x' is not"),
            ("/tmp/x:f", "the module '/tmp/x' is not"),
            ("preset:tensorflow", "unknown preset 'tensorflow' (known: torch, keras)"),
            ("preset:keras:stage", "a preset cannot be a stage"),
            ("json:1x:stage", "the qualname '1x' is not"),
        ] {
            let e = parse_span(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn repeated_stages_get_distinct_keys() {
        let stages = ["noop", "sleep:5", "noop", "noop"].map(|s| s.parse().unwrap()).to_vec();
        let keys: Vec<_> = keyed(stages).into_iter().map(|p| p.key).collect();
        assert_eq!(keys, ["noop", "sleep:5", "noop#2", "noop#3"]);
    }
}
