//! `coordinator campaign`: scripted cold, resume and interrupted runs,
//! decomposed, judged and hash-bound, over the recipe (`recipe`) or an
//! external pipeline (`pipeline`), and what is refused before anything runs
//! (`refusals`). Here: the campaign files they share.

mod autofit;
mod pipeline;
mod recipe;
mod refusals;

use harness::data::tiny;

pub(crate) const CAMPAIGN: &str = r#"
[campaign]
name = "tiny"
trials = 2
epochs = 2

[[step]]
name = "cold"
kind = "cold"

[[step]]
name = "resume_load"
kind = "resume"
policy = "load"

[[step]]
name = "resume_recompute"
kind = "resume"
policy = "recompute"

[[step]]
name = "interrupted_cache"
kind = "interrupted"
kill_at = "cache_prepare:0.5"

[[step]]
name = "interrupted_train"
kind = "interrupted"
kill_at = "train:0.75"
"#;

pub(crate) fn campaign_file(dir: &std::path::Path, text: &str) -> std::path::PathBuf {
    let data = tiny().frozen.display().to_string();
    let text = text.replacen("[campaign]\n", &format!("[campaign]\ndata = \"{data}\"\n"), 1);
    let path = dir.join("campaign.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A three-stage external pipeline: each stage a script with its own
/// argv, cwd and environment, its inner spans reported through
/// STAGEBENCH_SPANS; two stages leave a completion marker, so a resume
/// skips them and runs only the third.
pub(crate) fn pipeline(dir: &std::path::Path, extra_stage: &str) -> std::path::PathBuf {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pipeline_stage.py");
    std::fs::copy(&script, dir.join("stage.py")).unwrap();
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let stage = |name: &str, previous: &str, marker: bool| {
        format!(
            "[[pipeline]]\nname = \"{name}\"\nargv = [\"python3\", \"stage.py\", \"{name}\", \"work\"{previous}]\nenv = {{ STAGE_FLAVOUR = \"salted\" }}\n{}reset = [\"work/{name}\"]\n",
            if marker { format!("marker = \"work/{name}/done\"\n") } else { String::new() }
        )
    };
    let text = format!(
        "[campaign]\nname = \"pipe\"\ntrials = 2\nscratch = \"work\"\n\n{}{}{}{extra_stage}\n[[step]]\nname = \"cold\"\nkind = \"cold\"\n\n[[step]]\nname = \"resume\"\nkind = \"resume\"\n",
        stage("adapt_images", "", true),
        stage("fit_likelihood", ", \"adapt_images\"", true),
        stage("sample", ", \"fit_likelihood\"", false),
    );
    let path = dir.join("pipeline.toml");
    std::fs::write(&path, text).unwrap();
    path
}
