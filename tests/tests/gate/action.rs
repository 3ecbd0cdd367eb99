//! The GitHub Action (`action.yml`), tested here without GitHub: its
//! metadata parsed with the keys the Actions schema requires, then its
//! steps run as the runner runs a composite action (each `run` in bash,
//! its `env` evaluated from the inputs, the event and the earlier steps'
//! outputs; `uses` steps left to GitHub), with the `GITHUB_*` files in a
//! temporary directory and a fake `gh` on PATH that keeps the pull
//! request's comments and logs every call.

use super::{alone, made};
use harness::repo;
use serde_yaml::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn action() -> Value {
    let text = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    serde_yaml::from_str(&text).expect("action.yml parses as YAML")
}

/// A fake `gh`: `gh api` on one pull request's comments, kept as files
/// `comments/ID` in `dir` (the body), every call logged to `dir/calls`.
const FAKE_GH: &str = r#"#!/usr/bin/env bash
set -euo pipefail
dir="$(dirname "$0")"
echo "$*" >> "$dir/calls"
mkdir -p "$dir/comments"
[ "$1" = api ] || { echo "fake gh: only api" >&2; exit 1; }
shift
method=GET body="" jq=""
while [ $# -gt 0 ]; do
  case "$1" in
    -X) method="$2"; shift 2 ;;
    -F) body="${2#body=@}"; shift 2 ;;
    --jq) jq="$2"; shift 2 ;;
    --paginate) shift ;;
    *) path="$1"; shift ;;
  esac
done
case "$method" in
  GET)
    marker="${jq#*startswith(\"}"; marker="${marker%%\")*}"
    for f in "$dir"/comments/*; do
      [ -e "$f" ] || continue
      [ "$(head -n 1 "$f")" = "$marker" ] && basename "$f"
    done ;;
  POST) n=$(ls "$dir/comments" | wc -l); cp "$body" "$dir/comments/$((n + 1001))" ;;
  PATCH) cp "$body" "$dir/comments/${path##*/}" ;;
esac
"#;

/// `${{ EXPR }}` in `text`, each replaced by what `eval` makes of EXPR.
fn expand(text: &str, eval: &dyn Fn(&str) -> String) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${{") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find("}}").expect("an unclosed ${{") + at;
        out.push_str(&eval(rest[at + 3..end].trim()));
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

/// What one run of the action left: the last step's exit code, each
/// step's stdout and stderr, the gh calls, the comments.
struct Ran {
    code: i32,
    said: String,
    calls: Vec<String>,
    comments: Vec<String>,
}

/// Runs the action's steps with `inputs` (the rest their defaults), for
/// pull request 7 of `owner/repo` whose base and head are `base`, `head`,
/// in the checkout `work`, with `runner` holding the runner's files (a
/// RUNNER_TEMP fresh per run, the step summary) and `runner/gh` the fake
/// gh, kept across runs.
fn run_action(work: &Path, runner: &Path, inputs: &[(&str, &str)], base: &str, head: &str) -> Ran {
    let a = action();
    let gh = runner.join("gh");
    let temp = tempfile::tempdir_in(runner).unwrap();
    let summary = runner.join("step-summary.md");
    let event: BTreeMap<&str, String> = [
        ("github.event.pull_request.base.sha", base.to_string()),
        ("github.event.pull_request.head.sha", head.to_string()),
        ("github.event.pull_request.number", "7".into()),
        ("github.token", "fake-token".into()),
    ]
    .into();
    let given: BTreeMap<&str, &str> = inputs.iter().copied().collect();
    let mut outputs: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let input = |name: &str| -> String {
        if let Some(v) = given.get(name) {
            return v.to_string();
        }
        let default = a["inputs"][name]["default"].as_str().unwrap_or("").to_string();
        expand(&default, &|e| event.get(e).cloned().unwrap_or_default())
    };
    let bin = &harness::bins().coordinator;
    let path = format!(
        "{}:{}:{}",
        gh.display(),
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut said = String::new();
    let mut code = 0;
    for step in a["runs"]["steps"].as_sequence().unwrap() {
        let Some(script) = step["run"].as_str() else { continue };
        assert_eq!(step["shell"].as_str(), Some("bash"), "a run step without its shell: {step:?}");
        let id = step["id"].as_str().unwrap_or("").to_string();
        let output_file = temp.path().join(format!("output-{}", said.len()));
        std::fs::write(&output_file, "").unwrap();
        let eval = |e: &str| -> String {
            if let Some(name) = e.strip_prefix("inputs.") {
                return input(name);
            }
            if let Some(rest) = e.strip_prefix("steps.") {
                let (step, key) = rest.split_once(".outputs.").unwrap();
                return outputs.get(step).and_then(|o| o.get(key)).cloned().unwrap_or_default();
            }
            event
                .get(e)
                .cloned()
                .unwrap_or_else(|| panic!("an expression the test cannot read: {e}"))
        };
        let mut c = Command::new("bash");
        c.arg("-c").arg(script).current_dir(work);
        c.env("PATH", &path)
            .env("GITHUB_ACTION_PATH", repo())
            .env("GITHUB_OUTPUT", &output_file)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env("GITHUB_PATH", temp.path().join("path"))
            .env("GITHUB_REPOSITORY", "owner/repo")
            .env("RUNNER_TEMP", temp.path());
        if let Some(env) = step["env"].as_mapping() {
            for (k, v) in env {
                c.env(k.as_str().unwrap(), expand(v.as_str().unwrap_or(""), &eval));
            }
        }
        let out = c.output().unwrap();
        said.push_str(&String::from_utf8_lossy(&out.stdout));
        said.push_str(&String::from_utf8_lossy(&out.stderr));
        code = out.status.code().unwrap_or(-1);
        let written = std::fs::read_to_string(&output_file).unwrap();
        let mine = outputs.entry(id).or_default();
        for line in written.lines() {
            if let Some((k, v)) = line.split_once('=') {
                mine.insert(k.to_string(), v.to_string());
            }
        }
        // Every step but the last succeeds whatever the gate said.
        if !step["name"].as_str().unwrap_or("").starts_with("End with") {
            assert_eq!(code, 0, "step {:?} failed: {said}", step["name"]);
        }
    }
    let calls = std::fs::read_to_string(gh.join("calls")).unwrap_or_default();
    let mut comments: Vec<String> = match std::fs::read_dir(gh.join("comments")) {
        Ok(d) => d.flatten().map(|e| std::fs::read_to_string(e.path()).unwrap()).collect(),
        Err(_) => Vec::new(),
    };
    comments.sort();
    Ran { code, said, calls: calls.lines().map(str::to_string).collect(), comments }
}

#[test]
fn action_yml_has_the_keys_the_actions_schema_requires() {
    let a = action();
    for key in ["name", "description"] {
        assert!(a[key].as_str().is_some_and(|s| !s.is_empty()), "no {key}");
    }
    assert_eq!(a["runs"]["using"].as_str(), Some("composite"));
    let inputs = a["inputs"].as_mapping().unwrap();
    for (name, i) in inputs {
        assert!(i["description"].as_str().is_some(), "input {name:?} has no description");
    }
    for (name, o) in a["outputs"].as_mapping().unwrap() {
        assert!(o["value"].as_str().is_some(), "output {name:?} has no value");
    }
    let ids: Vec<&str> =
        a["runs"]["steps"].as_sequence().unwrap().iter().filter_map(|s| s["id"].as_str()).collect();
    // Every input and step an expression names exists.
    let text = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    for name in text
        .split("inputs.")
        .skip(1)
        .map(|r| r.split(|c: char| !c.is_ascii_alphanumeric() && c != '-').next().unwrap())
    {
        assert!(inputs.contains_key(name), "inputs.{name} is not an input");
    }
    for id in text.split("steps.").skip(1).map(|r| r.split('.').next().unwrap()) {
        assert!(ids.contains(&id), "steps.{id} is not a step");
    }
    for step in a["runs"]["steps"].as_sequence().unwrap() {
        assert!(step["run"].is_string() != step["uses"].is_string(), "{step:?}");
    }
}

#[test]
fn the_action_comments_once_updates_it_after_and_ends_with_the_gates_code() {
    let _one = alone();
    let r = made();
    let runner = r.base.join("runner");
    let gh = runner.join("gh");
    std::fs::create_dir_all(&gh).unwrap();
    std::fs::write(gh.join("gh"), FAKE_GH).unwrap();
    Command::new("chmod").arg("+x").arg(gh.join("gh")).status().unwrap();
    let mut probe = harness::coordinator();
    let py = harness::python(&mut probe);
    if let Some((_, Some(p))) = probe.get_envs().find(|(k, _)| *k == "PYTHONPATH") {
        // SAFETY: set before this test starts any process that reads it,
        // and the gate tests run one at a time (`alone`).
        unsafe { std::env::set_var("PYTHONPATH", p) };
    }
    let flags = format!("--mode trials --trials 3 --warmup 0 --command '{py} prog.py'");
    let (base, comment_only, slower) = (&r.commits[0], &r.commits[1], &r.commits[2]);
    // The runner's work directory is the checkout: the gate finds the repository there.
    let action = |extra: &[(&str, &str)], base: &str, head: &str| {
        let mut inputs =
            vec![("run-flags", flags.as_str()), ("install", "none"), ("gate", "span:work_s")];
        inputs.extend_from_slice(extra);
        run_action(&r.repo, &runner, &inputs, base, head)
    };
    // 1. Regressed: one comment created, the job ends 4, the summary appended.
    let first = action(&[], base, slower);
    assert_eq!(first.code, 4, "{}", first.said);
    assert!(first.said.contains("comment: created"), "{}", first.said);
    assert_eq!(first.comments.len(), 1, "{:?}", first.calls);
    assert!(first.comments[0].starts_with("<!-- stagebench gate: default -->\n"));
    assert!(first.comments[0].contains("Regressed: "), "{}", first.comments[0]);
    // 2. Again: the same comment updated, not a second one.
    let second = action(&[], base, slower);
    assert_eq!(second.code, 4, "{}", second.said);
    assert!(second.said.contains("comment: updated 1001"), "{}", second.said);
    assert_eq!(second.comments.len(), 1, "{:?}", second.calls);
    assert!(
        second
            .calls
            .iter()
            .any(|c| c.starts_with("api -X PATCH repos/owner/repo/issues/comments/1001")),
        "{:?}",
        second.calls
    );
    // 3. comment: false: no call to gh at all.
    let before = second.calls.len();
    let third = action(&[("comment", "false")], base, slower);
    assert_eq!(third.calls.len(), before, "{:?}", third.calls);
    assert!(third.said.contains("comment: off"), "{}", third.said);
    // The step summary got each run's comment.
    let summary = std::fs::read_to_string(runner.join("step-summary.md")).unwrap();
    assert_eq!(summary.matches("<!-- stagebench gate: default -->").count(), 3, "{summary}");
    // 4. Each exit code: not sure 5, passed 0; bad input 2; improved 0.
    // One window of 2-trial runs: 4 pairs, too few to judge.
    let two = flags.replace("--trials 3", "--trials 2");
    let strict = [("comment", "false"), ("max-rounds", "4"), ("run-flags", two.as_str())];
    let unsure = action(&strict, base, comment_only);
    assert_eq!(unsure.code, 5, "{}", unsure.said);
    let passed = [&strict[..], &[("not-sure", "pass")]].concat();
    assert_eq!(action(&passed, base, comment_only).code, 0);
    let same = action(&[("comment", "false")], base, base);
    assert_eq!(same.code, 2, "{}", same.said);
    assert!(same.said.contains("name the same commit"), "{}", same.said);
    let faster = action(&[("comment", "false")], slower, base);
    // The merge base of the slower commit and the first is the first:
    // nothing to gate, bad input.
    assert_eq!(faster.code, 2, "{}", faster.said);
}
