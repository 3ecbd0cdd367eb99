//! A campaign file (TOML): its schema and every check made before anything
//! runs. Unknown keys, a missing or misplaced field, an unknown stage in a
//! kill point: refused with one line naming it.

use crate::error::Refusal;
use crate::interrupt::KillAt;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// `scripts/campaigns/cold-resume.toml`, embedded: what `coordinator
/// campaign` runs when given no file.
pub(crate) const DEFAULT: &str = include_str!("../../../scripts/campaigns/cold-resume.toml");

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
}

/// What a pipeline's span is, in the vocabulary of the recipe's components:
/// with roles, a pipeline's judgment says what the recipe's says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Role {
    Startup,
    Integrity,
    RecordCheck,
    Load,
    Restore,
    Recompute,
    Work,
}

impl Role {
    /// The component (see `report::COMPONENTS`) the role's seconds join.
    /// A start-up span is inside its stage's wall, so it is kept apart from
    /// process start-up (`startup`, the time before the stage began, which
    /// the worker measures): each second is counted once.
    pub(crate) fn component(self) -> &'static str {
        match self {
            Role::Startup => "startup_spans",
            Role::Integrity => "integrity",
            Role::RecordCheck => "record_check",
            Role::Load => "load",
            Role::Restore => "restore",
            Role::Recompute => "recompute",
            Role::Work => "work",
        }
    }
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
                .map_err(|e| format!("campaign file '{}': {e}", p.display()))?;
            (text, p.parent().map(Path::to_path_buf))
        }
        None => (DEFAULT.to_string(), None),
    };
    let shown =
        path.map(|p| p.display().to_string()).unwrap_or_else(|| "the default campaign".into());
    let mut file = parse(&text).map_err(|e| format!("{shown}: {e}"))?;
    let base = base.filter(|b| !b.as_os_str().is_empty()).unwrap_or_else(|| PathBuf::from("."));
    if let Some(data) = &file.campaign.data {
        file.campaign.data = Some(base.join(data));
    }
    resolve_pipeline(&mut file, &base).map_err(|e| format!("{shown}: {e}"))?;
    Ok((file, text.into_bytes()))
}

/// The places a scratch directory must not hold, all absolute with symlinks
/// resolved: the user's home, the current directory, the campaign file, and
/// where the campaign's evidence goes.
pub(crate) struct Places {
    pub(crate) home: Option<PathBuf>,
    pub(crate) cwd: PathBuf,
    pub(crate) campaign_file: Option<PathBuf>,
    pub(crate) output: PathBuf,
}

impl Places {
    /// This process's places, for a campaign file and an output path (the
    /// default output, `campaigns/`, when None).
    pub(crate) fn here(campaign_file: Option<&Path>, output: Option<&Path>) -> Places {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| resolved(&cwd, Path::new(&h)));
        Places {
            campaign_file: campaign_file.map(|f| resolved(&cwd, f)),
            output: resolved(&cwd, output.unwrap_or(Path::new("campaigns"))),
            home,
            cwd: resolved(&cwd, Path::new(".")),
        }
    }
}

/// `path` (relative to `cwd`) made absolute, symlinks resolved as far as
/// it exists: its deepest existing ancestor canonicalised, the rest joined on.
fn resolved(cwd: &Path, path: &Path) -> PathBuf {
    let full = cwd.join(path);
    let mut rest = Vec::new();
    let mut probe = full.as_path();
    loop {
        if let Ok(real) = std::fs::canonicalize(probe) {
            return rest.iter().rev().fold(real, |p, c| p.join(c));
        }
        match (probe.parent(), probe.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                probe = parent;
            }
            _ => return full,
        }
    }
}

/// Refuses a scratch directory (absolute, resolved) that a cold step's
/// resets or the scratch digest could turn against the user: the root, one
/// holding the home or current directory, or one holding the campaign file
/// or the campaign's evidence. One line, before anything is written.
pub(crate) fn guard_scratch(scratch: &Path, places: &Places) -> Result<(), Refusal> {
    let shown = scratch.display();
    let holds = |p: &Path, what: &str| -> Result<(), Refusal> {
        match p.starts_with(scratch) {
            true => Err(format!(
                "scratch = \"{shown}\" holds {what}: a cold step resets inside it and its digest reads all of it; name a directory of the pipeline's own"
            )
            .into()),
            false => Ok(()),
        }
    };
    if scratch.parent().is_none() {
        return Err(format!(
            "scratch = \"{shown}\" is the root of the file system; name a directory of the pipeline's own"
        )
        .into());
    }
    if let Some(home) = &places.home {
        holds(home, "your home directory")?;
    }
    holds(&places.cwd, "the current directory")?;
    if let Some(f) = &places.campaign_file {
        holds(f, "the campaign file")?;
    }
    holds(&places.output, "the campaign's output directory")
}

/// Makes a pipeline's paths absolute and checks, before anything runs,
/// that every program exists, every working directory exists, and every
/// reset path lies inside the declared scratch directory.
fn resolve_pipeline(file: &mut CampaignFile, base: &Path) -> Result<(), Refusal> {
    if file.pipeline.is_empty() {
        return Ok(());
    }
    let base = std::fs::canonicalize(base).map_err(|e| format!("{}: {e}", base.display()))?;
    let scratch = match &file.campaign.scratch {
        Some(s) => {
            let shown = s.display().to_string();
            let s = std::fs::canonicalize(base.join(s)).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => format!(
                    "scratch = {shown:?} does not exist: create it first (relative to the campaign file); it is the directory the pipeline writes and a cold step resets inside"
                ),
                _ => format!("scratch = {shown:?}: {e}"),
            })?;
            if !s.is_dir() {
                return Err(
                    format!("scratch = {:?} is not a directory", s.display().to_string()).into()
                );
            }
            Some(s)
        }
        None => None,
    };
    file.campaign.scratch = scratch.clone();
    for st in &mut file.pipeline {
        let name = st.name.clone();
        let cwd = base.join(st.cwd.as_deref().unwrap_or(Path::new(".")));
        if !cwd.is_dir() {
            return Err(format!("pipeline stage '{name}': its cwd is not a directory").into());
        }
        let program = Path::new(&st.argv[0]);
        let found = if st.argv[0].contains('/') {
            cwd.join(program).is_file()
        } else {
            std::env::var_os("PATH")
                .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
                .unwrap_or(false)
        };
        if !found {
            return Err(format!(
                "pipeline stage '{name}': command '{}' not found{}",
                st.argv[0],
                if st.argv[0].contains('/') { " (relative to its cwd)" } else { " on PATH" }
            )
            .into());
        }
        st.cwd = Some(cwd);
        st.marker = st.marker.as_ref().map(|m| base.join(m));
        let mut reset = Vec::new();
        for r in &st.reset {
            let Some(scratch) = &scratch else {
                return Err(format!(
                    "pipeline stage '{name}': reset needs a declared scratch directory ([campaign] scratch)"
                ).into());
            };
            let outside = || {
                format!(
                    "pipeline stage '{name}': reset path {:?} is not inside the scratch directory",
                    r.display().to_string()
                )
            };
            let full = base.join(r);
            let lexically_inside = full.starts_with(scratch)
                && full != *scratch
                && !full.components().any(|c| matches!(c, Component::ParentDir));
            // Through symlinks too: the deepest existing ancestor, resolved,
            // must still be the scratch directory or inside it.
            let mut probe = full.clone();
            while !probe.exists() {
                probe = probe.parent().ok_or_else(outside)?.to_path_buf();
            }
            let real = std::fs::canonicalize(&probe).map_err(|_| outside())?;
            if !lexically_inside || !real.starts_with(scratch) {
                return Err(outside().into());
            }
            reset.push(full);
        }
        st.reset = reset;
    }
    Ok(())
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
        format!("{}{}", at.unwrap_or_default(), e.message().trim_end())
    })?;
    check(&file)?;
    Ok(file)
}

fn check(f: &CampaignFile) -> Result<(), Refusal> {
    let s = &f.campaign;
    let safe = crate::plan::is_label;
    if !safe(&s.name) {
        return Err(format!("campaign name '{}' must be 1-64 of a-z, 0-9, _ and -", s.name).into());
    }
    if !(1..=100).contains(&s.trials) {
        return Err(format!("trials = {} must be between 1 and 100", s.trials).into());
    }
    if !(1..=1000).contains(&s.epochs) {
        return Err(format!("epochs = {} must be between 1 and 1000", s.epochs).into());
    }
    if s.stage_timeout_s.is_some_and(|t| !(t.is_finite() && t > 0.0)) {
        return Err("stage_timeout_s must be a positive number of seconds".into());
    }
    if f.steps.is_empty() {
        return Err("the campaign has no [[step]]".into());
    }
    let mut names = std::collections::BTreeSet::new();
    for st in &f.pipeline {
        if !safe(&st.name) || !names.insert(st.name.as_str()) {
            return Err(format!(
                "pipeline stage name '{}' must be unique, 1-64 of a-z, 0-9, _ and -",
                st.name
            )
            .into());
        }
        if st.argv.first().is_none_or(|a| a.trim().is_empty()) {
            return Err(
                format!("pipeline stage '{}' has no command (argv is empty)", st.name).into()
            );
        }
        if st.timeout_s.is_some_and(|t| !(t.is_finite() && t > 0.0)) {
            return Err(format!(
                "pipeline stage '{}': timeout_s must be a positive number",
                st.name
            )
            .into());
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
            return Err(
                format!("{whose}: span name '{span}' must be 1-64 of A-Z a-z 0-9 _ . -").into()
            );
        }
    }
    if f.pipeline.is_empty() && !s.roles.is_empty() {
        return Err("roles apply to a pipeline's spans ([[pipeline]])".into());
    }
    if !f.pipeline.is_empty() {
        for step in &f.steps {
            if step.policy.is_some() {
                return Err(format!(
                    "step '{}': policy applies to the recipe, not to a pipeline",
                    step.name
                )
                .into());
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
            return Err(format!("step name '{name}' must be 1-64 of a-z, 0-9, _ and -").into());
        }
        if !seen.insert(name.as_str()) {
            return Err(format!("two steps are called '{name}'").into());
        }
        match step.kind {
            StepKind::Cold => {
                if step.policy.is_some() {
                    return Err(format!(
                        "step '{name}': a cold step has nothing to resume (no policy)"
                    )
                    .into());
                }
                cold_seen = true;
            }
            StepKind::Resume | StepKind::Interrupted if !cold_seen => {
                return Err(format!(
                    "step '{name}': a cold step must come first (it is the reference every resume is held to)"
                ).into());
            }
            _ => {}
        }
        match (step.kind, &step.kill_at) {
            (StepKind::Interrupted, None) => {
                return Err(format!(
                    "step '{name}': an interrupted step needs kill_at = \"STAGE:FRACTION\""
                )
                .into());
            }
            (StepKind::Interrupted, Some(k)) => {
                let point: KillAt = k.parse().map_err(|e| format!("step '{name}': kill_at {e}"))?;
                if !stages.contains(&point.stage.as_str()) {
                    return Err(format!(
                        "step '{name}': kill_at names stage '{}', which the {} does not have ({})",
                        point.stage,
                        if pipeline { "pipeline" } else { "recipe" },
                        stages.join(", ")
                    )
                    .into());
                }
                if point.needs_a_command() && !pipeline {
                    return Err(format!(
                        "step '{name}': kill_at {k}: span: and after: points apply to a pipeline's stages"
                    ).into());
                }
            }
            (_, Some(_)) => {
                return Err(format!("step '{name}': only an interrupted step has a kill_at").into());
            }
            (_, None) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_default_parses() {
        let f = parse(DEFAULT).unwrap();
        assert_eq!(f.campaign.name, "cold-resume");
        assert!(f.steps.iter().any(|s| s.kind == StepKind::Interrupted));
    }

    #[test]
    fn mistakes_are_refused_with_what_is_wrong() {
        let base = "[campaign]\nname = \"x\"\n[[step]]\nname = \"cold\"\nkind = \"cold\"\n";
        let refused = |extra: &str, needle: &str| {
            let e = parse(&format!("{base}{extra}")).unwrap_err().0;
            assert!(e.contains(needle), "{e:?} does not say {needle:?}");
            assert!(!e.contains('\n'), "{e:?} is not one line");
        };
        refused("colour = 1\n", "colour");
        refused("[[step]]\nname = \"r\"\nkind = \"resume\"\nretries = 2\n", "retries");
        refused("[[step]]\nname = \"i\"\nkind = \"interrupted\"\n", "kill_at");
        refused("[[step]]\nname = \"i\"\nkind = \"interrupted\"\nkill_at = \"warp:0.5\"\n", "warp");
        refused(
            "[[step]]\nname = \"i\"\nkind = \"interrupted\"\nkill_at = \"train:2\"\n",
            "fraction",
        );
        refused("[[step]]\nname = \"cold\"\nkind = \"resume\"\n", "two steps");
        refused("[[step]]\nname = \"r\"\nkind = \"sideways\"\n", "sideways");
        // Where: the line and its text.
        refused(
            "[[step]]\nname = \"r\"\nkind = \"resume\"\npolicy = \"lod\"\n",
            "line 9 (policy = \"lod\"): ",
        );
        let e = parse("[campaign]\nname = \"x\"\nepochs = \"2\"\n").unwrap_err().0;
        assert!(e.starts_with("line 3 (epochs = \"2\"): invalid type"), "{e}");
        let e = parse("[campaign]\nname = \"x\"\n[[step]]\nname = \"r\"\nkind = \"resume\"\n")
            .unwrap_err()
            .0;
        assert!(e.contains("cold step must come first"), "{e}");
        parse(base).unwrap();
    }

    #[test]
    fn a_pipelines_roles_and_kill_points_are_checked_before_anything_runs() {
        let base = "[campaign]\nname = \"x\"\n[[pipeline]]\nname = \"fit\"\nargv = [\"true\"]\n";
        let steps = "[[step]]\nname = \"cold\"\nkind = \"cold\"\n";
        let refused = |pipeline_extra: &str, step: &str, needle: &str| {
            let e = parse(&format!("{base}{pipeline_extra}{steps}{step}")).unwrap_err().0;
            assert!(e.contains(needle), "{e:?} does not say {needle:?}");
            assert!(!e.contains('\n'), "{e:?} is not one line");
        };
        let interrupted = |k: &str| {
            format!("[[step]]\nname = \"i\"\nkind = \"interrupted\"\nkill_at = \"{k}\"\n")
        };
        refused("roles = { search = \"magic\" }\n", "", "magic");
        refused("roles = { \"a/b\" = \"work\" }\n", "", "span name 'a/b'");
        refused("", &interrupted("warp:0.5"), "the pipeline does not have (fit)");
        refused("", &interrupted("fit:span:search:0"), "≥ 1");
        refused("", &interrupted("fit:after:0"), "positive");
        let ok = parse(&format!(
            "{base}roles = {{ search = \"work\" }}\n{steps}{}{}",
            interrupted("fit:span:search:2"),
            interrupted("fit:after:1.5").replace("\"i\"", "\"j\"")
        ))
        .unwrap();
        assert_eq!(ok.pipeline[0].roles["search"], Role::Work);
        // The recipe's stages report progress only.
        let recipe = "[campaign]\nname = \"x\"\n[[step]]\nname = \"cold\"\nkind = \"cold\"\n";
        let e = parse(&format!("{recipe}{}", interrupted("train:after:1"))).unwrap_err().0;
        assert!(e.contains("apply to a pipeline's stages"), "{e}");
        let with_roles =
            recipe.replace("name = \"x\"\n", "name = \"x\"\nroles = { a = \"work\" }\n");
        let e = parse(&with_roles).unwrap_err().0;
        assert!(e.contains("roles apply to a pipeline"), "{e}");
    }

    /// Each place a scratch directory must not hold is refused in one line
    /// naming it; a directory of the pipeline's own, beside them, is not.
    #[test]
    fn a_scratch_directory_that_holds_what_the_user_owns_is_refused() {
        let places = Places {
            home: Some("/home/ana".into()),
            cwd: "/home/ana/project".into(),
            campaign_file: Some("/home/ana/project/pipe/campaign.toml".into()),
            output: "/home/ana/project/campaigns".into(),
        };
        let refused = |scratch: &str| guard_scratch(Path::new(scratch), &places).err().map(|e| e.0);
        for (scratch, what) in [
            ("/", "the root of the file system"),
            ("/home", "your home directory"),
            ("/home/ana", "your home directory"),
            ("/home/ana/project", "the current directory"),
            ("/home/ana/project/pipe", "the campaign file"),
            ("/home/ana/project/campaigns", "the campaign's output directory"),
        ] {
            let e = refused(scratch).unwrap_or_else(|| panic!("scratch {scratch} was accepted"));
            assert!(e.contains(what) && !e.contains('\n'), "{scratch}: {e}");
        }
        assert_eq!(refused("/home/ana/project/pipe/scratch"), None);
        assert_eq!(refused("/srv/scratch"), None);
        // A prefix that is not a parent holds nothing.
        assert_eq!(refused("/home/ana/proj"), None);
    }

    /// A path is resolved through what exists of it, and the rest joined on.
    #[test]
    fn a_path_is_resolved_as_far_as_it_exists() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink(&real, real.join("link")).unwrap();
        assert_eq!(resolved(&real, Path::new("link/not/yet")), real.join("not/yet"));
        assert_eq!(resolved(Path::new("/"), &real.join("link")), real);
    }
}
