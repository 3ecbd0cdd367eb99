//! Holds every run directory the suite makes to the published JSON Schema
//! (docs/schema/), with a real validator: the Python `jsonschema` package
//! (Draft 2020-12) in the helper's Python (`STAGEBENCH_PYTHON`, where CI
//! installs it). Where that Python has no `jsonschema` the check says
//! SKIPPED once, unless `STAGEBENCH_SCHEMA_REQUIRED=1` (CI sets it), when
//! its absence fails the test.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

/// Validates every JSON file below the directories given (argv[2:]) whose
/// `schema` key one of the schemas in argv[1] holds as its `schema` const.
/// Prints `validated N` and exits 0, or names each failure and exits 1.
const VALIDATE: &str = r#"
import json, os, sys
from jsonschema import Draft202012Validator
validators = {}
for name in sorted(os.listdir(sys.argv[1])):
    if name.endswith(".schema.json"):
        with open(os.path.join(sys.argv[1], name)) as f:
            schema = json.load(f)
        Draft202012Validator.check_schema(schema)
        validators[schema["properties"]["schema"]["const"]] = (name, Draft202012Validator(schema))
failures, validated = [], 0
for top in sys.argv[2:]:
    for here, _, files in sorted(os.walk(top)):
        for name in sorted(files):
            if not name.endswith(".json"):
                continue
            path = os.path.join(here, name)
            try:
                with open(path) as f:
                    value = json.load(f)
            except ValueError:
                continue
            if not isinstance(value, dict) or value.get("schema") not in validators:
                continue
            schema_name, validator = validators[value["schema"]]
            validated += 1
            for e in validator.iter_errors(value):
                failures.append(f"{os.path.relpath(path, top)} against {schema_name} at {e.json_path}: {e.message[:300]}")
for line in failures:
    print(line)
print(f"validated {validated}")
sys.exit(1 if failures else 0)
"#;

/// The Python that has `jsonschema`, or `None` (said once) when there is
/// none and the check is not required.
fn validator() -> Option<&'static str> {
    static PYTHON: OnceLock<Option<String>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let python = match std::env::var("STAGEBENCH_PYTHON") {
                Ok(p) if !p.is_empty() => p,
                _ => "python3".into(),
            };
            let has = Command::new(&python)
                .args(["-c", "import jsonschema"])
                .output()
                .is_ok_and(|o| o.status.success());
            let required = std::env::var("STAGEBENCH_SCHEMA_REQUIRED").is_ok_and(|v| v == "1");
            match (has, required) {
                (true, _) => Some(python),
                (false, true) => panic!(
                    "STAGEBENCH_SCHEMA_REQUIRED=1 but {python} cannot import jsonschema \
                     (pip install jsonschema)"
                ),
                (false, false) => {
                    crate::skip(
                        "the JSON Schema check of run directories",
                        &format!("{python} has no jsonschema (pip install jsonschema)"),
                    );
                    None
                }
            }
        })
        .as_deref()
}

/// What the validator said of files that do not validate: every failure,
/// one per line.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

/// Validates the evidence files below `dir` against docs/schema: how many
/// were validated, or every failure. `None` when no validator is
/// available (see the module's doc).
pub fn validate(dir: &Path) -> Option<Result<usize, Invalid>> {
    let python = validator()?;
    let out = Command::new(python)
        .arg("-c")
        .arg(VALIDATE)
        .arg(crate::repo().join("docs").join("schema"))
        .arg(dir)
        .output()
        .expect("run the schema validator");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Some(Err(Invalid(format!("{stdout}{stderr}"))));
    }
    let count = stdout
        .lines()
        .find_map(|l| l.strip_prefix("validated "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the validator said no count:\n{stdout}"));
    Some(Ok(count))
}

/// Panics naming each file below `dir` that does not validate.
pub fn assert_valid(dir: &Path) {
    if let Some(Err(failures)) = validate(dir) {
        panic!("{} does not validate against docs/schema:\n{failures}", dir.display());
    }
}

/// The directory a coordinator command writes (its `--output`), when the
/// command names one.
pub fn output_of(cmd: &Command) -> Option<std::path::PathBuf> {
    let mut args = cmd.get_args();
    while let Some(arg) = args.next() {
        let arg = arg.to_str()?;
        if arg == "--output" {
            return args.next().map(std::path::PathBuf::from);
        }
        if let Some(dir) = arg.strip_prefix("--output=") {
            return Some(dir.into());
        }
    }
    None
}
