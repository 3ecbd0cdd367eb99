//! A campaign file (TOML): its schema and every check made before anything
//! runs. Unknown keys, a missing or misplaced field, an unknown stage in a
//! kill point: refused with one line naming it. `paths` resolves a pipeline's
//! paths and guards what its scratch directory may hold.

mod paths;
#[cfg(test)]
mod tests;

use crate::error::Refusal;
use crate::kill_points::KillAt;
use crate::modes::recipe::MAX_EPOCHS;
use paths::resolve_pipeline;
pub(crate) use paths::{Places, guard_scratch};
use report::campaign::roles::{Role, Roles};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `scripts/campaigns/cold-resume.toml`, embedded: what `coordinator
/// campaign` runs when given no file.
pub(crate) const DEFAULT: &str = include_str!("../../../../scripts/campaigns/cold-resume.toml");

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CampaignFile {
    pub(crate) campaign: Settings,
    #[serde(rename = "step")]
    pub(crate) steps: Vec<StepSpec>,
    /// An external pipeline run by the steps instead of the recipe.
    #[serde(default, rename = "pipeline", skip_serializing_if = "Vec::is_empty")]
    pub(crate) pipeline: Vec<PipelineStage>,
}

/// One stage of an external pipeline. Paths are relative to the campaign
/// file's directory (the program, when it names a path, to `cwd`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PipelineStage {
    pub(crate) name: String,
    /// Not in the declaration (it may hold paths): the file's SHA-256 binds it.
    #[serde(skip_serializing)]
    pub(crate) argv: Vec<String>,
    #[serde(default, skip_serializing)]
    pub(crate) cwd: Option<PathBuf>,
    #[serde(default, skip_serializing)]
    pub(crate) env: BTreeMap<String, String>,
    /// A file whose existence says the stage is complete: a resume skips it.
    #[serde(default, skip_serializing)]
    pub(crate) marker: Option<PathBuf>,
    /// Paths a cold step removes first; each must lie inside `scratch`.
    #[serde(default, skip_serializing)]
    pub(crate) reset: Vec<PathBuf>,
    #[serde(default)]
    pub(crate) timeout_s: Option<f64>,
    /// What this stage's spans are, by span name (over the campaign's `roles`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) roles: BTreeMap<String, Role>,
    /// Functions this stage's Python wraps as spans, beside the campaign's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) spans: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Settings {
    pub(crate) name: String,
    /// Fresh-process runs per step.
    #[serde(default = "three")]
    pub(crate) trials: u32,
    #[serde(default = "one")]
    pub(crate) epochs: u32,
    #[serde(default)]
    pub(crate) seed: u64,
    /// A frozen dataset (relative to the campaign file); None: the built-in cohort.
    #[serde(default, skip_serializing)]
    pub(crate) data: Option<PathBuf>,
    /// Fail a stage that runs longer than this.
    #[serde(default)]
    pub(crate) stage_timeout_s: Option<f64>,
    /// Pipelines: the directory a cold step may reset paths inside.
    #[serde(default, skip_serializing)]
    pub(crate) scratch: Option<PathBuf>,
    /// Pipelines: what each span name is, for every stage.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) roles: BTreeMap<String, Role>,
    /// Pipelines: functions every stage's Python wraps as spans without its
    /// code being edited (`MODULE:QUALNAME[=NAME]` or `preset:NAME`, as
    /// `--span` spells them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) spans: Vec<String>,
    /// Pipelines: files of the scratch directory left out of its state
    /// digest (globs relative to it, such as `**/timings.json`): what a run
    /// writes differently every time by design, never state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) identity_exclude: Vec<String>,
    /// Pipelines: sample every stage's Python stacks at this rate with
    /// py-spy, as `--sample RATE` does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sample: Option<u32>,
}

fn three() -> u32 {
    3
}

fn one() -> u32 {
    1
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StepSpec {
    pub(crate) name: String,
    pub(crate) kind: StepKind,
    /// Resume and interrupted steps: how the resume treats derived artifacts.
    #[serde(default)]
    pub(crate) policy: Option<PolicyName>,
    /// Interrupted steps: `STAGE:FRACTION`; for a pipeline also
    /// `STAGE:span:NAME:N` and `STAGE:after:SECONDS` (see `interrupt`).
    #[serde(default)]
    pub(crate) kill_at: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum StepKind {
    /// From an empty state.
    Cold,
    /// On the complete state the last cold trial left.
    Resume,
    /// From an empty state, killed with SIGKILL at `kill_at`, then resumed.
    Interrupted,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PolicyName {
    Load,
    Recompute,
}

impl CampaignFile {
    /// Every role the file gives: the campaign's and each stage's own.
    pub(crate) fn roles(&self) -> Roles {
        Roles {
            campaign: self.campaign.roles.clone(),
            stages: self.pipeline.iter().map(|p| (p.name.clone(), p.roles.clone())).collect(),
        }
    }
}

impl Settings {
    /// `identity_exclude` as patterns (checked when the file was parsed).
    pub(crate) fn excluded(&self) -> Vec<glob::Pattern> {
        self.identity_exclude.iter().filter_map(|p| glob::Pattern::new(p).ok()).collect()
    }

    /// The campaign-wide span targets (checked when the file was parsed).
    pub(crate) fn span_targets(&self) -> Vec<protocol::SpanTarget> {
        self.spans.iter().filter_map(|t| crate::plan::parse_span(t).ok()).collect()
    }
}

impl PipelineStage {
    /// This stage's own span targets (checked when the file was parsed).
    pub(crate) fn span_targets(&self) -> Vec<protocol::SpanTarget> {
        self.spans.iter().filter_map(|t| crate::plan::parse_span(t).ok()).collect()
    }
}

impl StepSpec {
    pub(crate) fn policy(&self) -> protocol::ResumePolicy {
        match self.policy {
            Some(PolicyName::Recompute) => protocol::ResumePolicy::Recompute,
            _ => protocol::ResumePolicy::Load,
        }
    }

    pub(crate) fn kill_point(&self) -> Option<KillAt> {
        self.kill_at.as_deref().and_then(|k| k.parse().ok())
    }
}

/// Reads and checks a campaign file (or the embedded default).
pub(crate) fn load(path: Option<&Path>) -> Result<(CampaignFile, Vec<u8>), Refusal> {
    let (text, base) = match path {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| Refusal(format!("campaign file '{}': {e}", p.display())))?;
            (text, p.parent().map(Path::to_path_buf))
        }
        None => (DEFAULT.to_string(), None),
    };
    let shown =
        path.map(|p| p.display().to_string()).unwrap_or_else(|| "the default campaign".into());
    let mut file = parse(&text).map_err(|e| Refusal(format!("{shown}: {e}")))?;
    let base = base.filter(|b| !b.as_os_str().is_empty()).unwrap_or_else(|| PathBuf::from("."));
    if let Some(data) = &file.campaign.data {
        file.campaign.data = Some(base.join(data));
    }
    resolve_pipeline(&mut file, &base).map_err(|e| Refusal(format!("{shown}: {e}")))?;
    Ok((file, text.into_bytes()))
}

/// Parses and checks a campaign's text.
pub(crate) fn parse(text: &str) -> Result<CampaignFile, Refusal> {
    let file: CampaignFile = toml::from_str(text).map_err(|e| {
        // toml's own text spans lines (it quotes the source); keep one line,
        // led by where it is: the line's number and, when short, its text.
        let at = e.span().map(|r| {
            let line = text[..r.start.min(text.len())].matches('\n').count() + 1;
            let source = text.lines().nth(line - 1).unwrap_or("").trim();
            match source.len() {
                1..=60 => format!("line {line} ({source}): "),
                _ => format!("line {line}: "),
            }
        });
        Refusal(format!("{}{}", at.unwrap_or_default(), e.message().trim_end()))
    })?;
    check(&file)?;
    Ok(file)
}

fn check(f: &CampaignFile) -> Result<(), Refusal> {
    let s = &f.campaign;
    let safe = crate::plan::is_label;
    if !safe(&s.name) {
        return Err(Refusal(format!(
            "campaign name '{}' must be 1-64 of a-z, 0-9, _ and -",
            s.name
        )));
    }
    if !(1..=100).contains(&s.trials) {
        return Err(Refusal(format!("trials = {} must be between 1 and 100", s.trials)));
    }
    if !(1..=MAX_EPOCHS).contains(&s.epochs) {
        return Err(Refusal(format!("epochs = {} must be between 1 and {MAX_EPOCHS}", s.epochs)));
    }
    if s.stage_timeout_s.is_some_and(|t| !(t.is_finite() && t > 0.0)) {
        return Err(Refusal("stage_timeout_s must be a positive number of seconds".into()));
    }
    if f.steps.is_empty() {
        return Err(Refusal("the campaign has no [[step]]".into()));
    }
    let mut names = std::collections::BTreeSet::new();
    for st in &f.pipeline {
        if !safe(&st.name) || !names.insert(st.name.as_str()) {
            return Err(Refusal(format!(
                "pipeline stage name '{}' must be unique, 1-64 of a-z, 0-9, _ and -",
                st.name
            )));
        }
        if st.argv.first().is_none_or(|a| a.trim().is_empty()) {
            return Err(Refusal(format!(
                "pipeline stage '{}' has no command (argv is empty)",
                st.name
            )));
        }
        if st.timeout_s.is_some_and(|t| !(t.is_finite() && t > 0.0)) {
            return Err(Refusal(format!(
                "pipeline stage '{}': timeout_s must be a positive number",
                st.name
            )));
        }
    }
    let span_name = |n: &str| {
        !n.is_empty()
            && n.len() <= 64
            && n.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
    };
    let roles = s.roles.keys().map(|k| ("[campaign] roles", k));
    let stage_roles =
        f.pipeline.iter().flat_map(|st| st.roles.keys().map(move |k| (st.name.as_str(), k)));
    for (whose, span) in roles.chain(stage_roles) {
        if !span_name(span) {
            return Err(Refusal(format!(
                "{whose}: span name '{span}' must be 1-64 of A-Z a-z 0-9 _ . -"
            )));
        }
    }
    if f.pipeline.is_empty() && !s.roles.is_empty() {
        return Err(Refusal("roles apply to a pipeline's spans ([[pipeline]])".into()));
    }
    if f.pipeline.is_empty() && s.sample.is_some() {
        return Err(Refusal(
            "sample applies to a pipeline's Python stages ([[pipeline]]); the recipe's stages are not Python".into(),
        ));
    }
    if let Some(rate) = s.sample.filter(|r| !(1..=1000).contains(r)) {
        return Err(Refusal(format!("sample = {rate}: a rate from 1 to 1000 samples a second")));
    }
    if f.pipeline.is_empty() && !s.spans.is_empty() {
        return Err(Refusal("spans apply to a pipeline's Python stages ([[pipeline]])".into()));
    }
    if !s.identity_exclude.is_empty() && s.scratch.is_none() {
        return Err(Refusal(
            "identity_exclude applies to a pipeline's scratch directory (scratch = \"DIR\")".into(),
        ));
    }
    for p in &s.identity_exclude {
        let lexical = Path::new(p);
        if p.is_empty()
            || lexical.is_absolute()
            || lexical.components().any(|c| c == std::path::Component::ParentDir)
        {
            return Err(Refusal(format!(
                "identity_exclude '{p}': a pattern relative to scratch, without '..'"
            )));
        }
        glob::Pattern::new(p).map_err(|e| Refusal(format!("identity_exclude '{p}': {}", e.msg)))?;
    }
    let spans = s.spans.iter().map(|t| ("[campaign] spans", t));
    let stage_spans =
        f.pipeline.iter().flat_map(|st| st.spans.iter().map(move |t| (st.name.as_str(), t)));
    for (whose, target) in spans.chain(stage_spans) {
        crate::plan::parse_span(target).map_err(|e| Refusal(format!("{whose}: {e}")))?;
    }
    // A stage's spans and the campaign's reach the same programs.
    let campaign = s.span_targets();
    crate::plan::distinct_spans(&campaign)
        .map_err(|e| Refusal(format!("[campaign] spans: {e}")))?;
    for st in &f.pipeline {
        let targets = st.span_targets();
        crate::plan::distinct_spans(campaign.iter().chain(&targets))
            .map_err(|e| Refusal(format!("{}: {e}", st.name)))?;
    }
    if !f.pipeline.is_empty() {
        for step in &f.steps {
            if step.policy.is_some() {
                return Err(Refusal(format!(
                    "step '{}': policy applies to the recipe, not to a pipeline",
                    step.name
                )));
            }
        }
    }
    let pipeline = !f.pipeline.is_empty();
    let stages: Vec<&str> = match pipeline {
        true => f.pipeline.iter().map(|st| st.name.as_str()).collect(),
        false => crate::modes::recipe::keys().collect(),
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut cold_seen = false;
    for step in &f.steps {
        let name = &step.name;
        if !safe(name) {
            return Err(Refusal(format!("step name '{name}' must be 1-64 of a-z, 0-9, _ and -")));
        }
        if !seen.insert(name.as_str()) {
            return Err(Refusal(format!("two steps are called '{name}'")));
        }
        match step.kind {
            StepKind::Cold => {
                if step.policy.is_some() {
                    return Err(Refusal(format!(
                        "step '{name}': a cold step has nothing to resume (no policy)"
                    )));
                }
                cold_seen = true;
            }
            StepKind::Resume | StepKind::Interrupted if !cold_seen => {
                return Err(Refusal(format!(
                    "step '{name}': a cold step must come first (it is the reference every resume is held to)"
                )));
            }
            _ => {}
        }
        match (step.kind, &step.kill_at) {
            (StepKind::Interrupted, None) => {
                return Err(Refusal(format!(
                    "step '{name}': an interrupted step needs kill_at = \"STAGE:FRACTION\""
                )));
            }
            (StepKind::Interrupted, Some(k)) => {
                let point: KillAt =
                    k.parse().map_err(|e| Refusal(format!("step '{name}': kill_at {e}")))?;
                if !stages.contains(&point.stage.as_str()) {
                    return Err(Refusal(format!(
                        "step '{name}': kill_at names stage '{}', which the {} does not have ({})",
                        point.stage,
                        if pipeline { "pipeline" } else { "built-in recipe" },
                        stages.join(", ")
                    )));
                }
                if point.needs_a_command() && !pipeline {
                    return Err(Refusal(format!(
                        "step '{name}': kill_at {k}: span: and after: points apply to a pipeline's stages"
                    )));
                }
            }
            (_, Some(_)) => {
                return Err(Refusal(format!(
                    "step '{name}': only an interrupted step has a kill_at"
                )));
            }
            (_, None) => {}
        }
    }
    Ok(())
}
