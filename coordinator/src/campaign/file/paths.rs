//! Where a pipeline's files are: its paths made absolute and checked (every
//! program and working directory exists, every reset path lies inside the
//! scratch directory, through symlinks too), and what the scratch directory
//! itself may not hold.

use super::CampaignFile;
use crate::error::Refusal;
pub(super) use report::rundir::resolved;
use std::path::{Component, Path, PathBuf};

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

/// Refuses a scratch directory (absolute, resolved) that a cold step's
/// resets or the scratch digest could turn against the user: the root, one
/// holding the home or current directory, or one holding the campaign file
/// or the campaign's evidence. One line, before anything is written.
pub(crate) fn guard_scratch(scratch: &Path, places: &Places) -> Result<(), Refusal> {
    let shown = scratch.display();
    let holds = |p: &Path, what: &str| -> Result<(), Refusal> {
        match p.starts_with(scratch) {
            true => Err(Refusal(format!(
                "scratch = \"{shown}\" holds {what}: a cold step resets inside it and its digest reads all of it; name a directory of the pipeline's own"
            ))),
            false => Ok(()),
        }
    };
    if scratch.parent().is_none() {
        return Err(Refusal(format!(
            "scratch = \"{shown}\" is the root of the file system; name a directory of the pipeline's own"
        )));
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
pub(super) fn resolve_pipeline(file: &mut CampaignFile, base: &Path) -> Result<(), Refusal> {
    if file.pipeline.is_empty() {
        return Ok(());
    }
    let base =
        std::fs::canonicalize(base).map_err(|e| Refusal(format!("{}: {e}", base.display())))?;
    let scratch = match &file.campaign.scratch {
        Some(s) => {
            let shown = s.display().to_string();
            let s = std::fs::canonicalize(base.join(s)).map_err(|e| Refusal(match e.kind() {
                std::io::ErrorKind::NotFound => format!(
                    "scratch = {shown:?} does not exist: create it first (relative to the campaign file); it is the directory the pipeline writes and a cold step resets inside"
                ),
                _ => format!("scratch = {shown:?}: {e}"),
            }))?;
            if !s.is_dir() {
                return Err(Refusal(format!(
                    "scratch = {:?} is not a directory",
                    s.display().to_string()
                )));
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
            return Err(Refusal(format!("pipeline stage '{name}': its cwd is not a directory")));
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
            return Err(Refusal(format!(
                "pipeline stage '{name}': command '{}' not found{}",
                st.argv[0],
                if st.argv[0].contains('/') { " (relative to its cwd)" } else { " on PATH" }
            )));
        }
        st.cwd = Some(cwd);
        st.marker = st.marker.as_ref().map(|m| base.join(m));
        let mut reset = Vec::new();
        for r in &st.reset {
            let Some(scratch) = &scratch else {
                return Err(Refusal(format!(
                    "pipeline stage '{name}': reset needs a declared scratch directory ([campaign] scratch)"
                )));
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
            // Through symlinks too: resolved as far as it exists, it must
            // still lie inside the scratch directory.
            if !lexically_inside || !resolved(&base, &full).starts_with(scratch) {
                return Err(Refusal(outside()));
            }
            reset.push(full);
        }
        st.reset = reset;
    }
    Ok(())
}
