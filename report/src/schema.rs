//! The JSON Schema of each file a run directory holds (and of a campaign's
//! report), generated from the types that read and write them, and kept in
//! docs/schema/ for scripts that read evidence without this crate. A test
//! holds the checked-in files to what the types generate.
//!
//! The schemas are strict: an object the types do not know a key of is
//! refused (`additionalProperties: false`, or `unevaluatedProperties:
//! false` where a report's mode section is flattened beside its common
//! part), so a file with a planted field does not validate.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};
use serde_json::Value;
use std::collections::BTreeSet;

/// Where the files are kept, from the workspace root.
pub const DIR: &str = "docs/schema";

/// One file a schema describes.
pub struct File {
    /// The schema's file name under [`DIR`].
    pub name: &'static str,
    /// The evidence file's own `schema` key (`stagebench.report`, …).
    pub schema: &'static str,
    /// The `schema_version` this stagebench writes and reads.
    pub version: u32,
    /// The schema, as the file holds it: pretty JSON, one trailing newline.
    pub text: String,
}

/// Every schema: the four files of a run directory and a campaign's report.
/// report.json and failure.json are sealed (see [`crate::rundir::report::seal`]).
pub fn all() -> Vec<File> {
    use crate::campaign::report as campaign;
    use crate::rundir::{declaration, environment, failure, report};
    vec![
        file::<declaration::Declaration>(
            "declaration.schema.json",
            declaration::SCHEMA,
            declaration::SCHEMA_VERSION,
            Seal::None,
        ),
        file::<environment::Environment>(
            "environment.schema.json",
            environment::SCHEMA,
            environment::SCHEMA_VERSION,
            Seal::None,
        ),
        file::<crate::modes::Report>(
            "report.schema.json",
            report::SCHEMA,
            report::SCHEMA_VERSION,
            Seal::Body,
        ),
        file::<failure::Failure>(
            "failure.schema.json",
            failure::SCHEMA,
            failure::SCHEMA_VERSION,
            Seal::Body,
        ),
        file::<campaign::CampaignReport>(
            "campaign-report.schema.json",
            campaign::SCHEMA,
            campaign::SCHEMA_VERSION,
            Seal::Body,
        ),
    ]
}

/// Whether the file carries the digest of its own canonical body, which
/// the writer adds beside the typed fields (see
/// [`crate::rundir::report::BODY_DIGEST_KEY`]).
enum Seal {
    None,
    Body,
}

/// `T`'s schema (draft 2020-12), strict, with its `schema` and
/// `schema_version` held to this stagebench's.
fn file<T: JsonSchema>(name: &'static str, schema: &'static str, version: u32, seal: Seal) -> File {
    let generator = SchemaSettings::draft2020_12().into_generator();
    let mut root: Schema = generator.into_root_schema_for::<T>();
    let object = root.ensure_object();
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        for (key, value) in
            [("schema", Value::from(schema)), ("schema_version", Value::from(version))]
        {
            if let Some(Value::Object(property)) = properties.get_mut(key) {
                property.insert("const".into(), value);
            }
        }
    }
    if let Seal::Body = seal {
        sealed(&mut root);
    }
    strict(&mut root);
    let mut text = serde_json::to_string_pretty(&root).expect("a schema serialises");
    text.push('\n');
    File { name, schema, version, text }
}

/// Adds the body digest to the root's properties, required.
fn sealed(schema: &mut Schema) {
    use crate::rundir::report::BODY_DIGEST_KEY;
    let root = schema.ensure_object();
    if let Some(Value::Object(properties)) = root.get_mut("properties") {
        properties.insert(
            BODY_DIGEST_KEY.into(),
            serde_json::json!({
                "description": "SHA-256 (hex) of the file's canonical JSON without this key.",
                "type": "string",
                "pattern": "^[0-9a-f]{64}$",
            }),
        );
    }
    if let Some(Value::Array(required)) = root.get_mut("required") {
        required.push(Value::String(BODY_DIGEST_KEY.into()));
    }
}

/// Refuses unknown keys in every object schema that lists its properties.
///
/// A schema whose properties are only part of its object (it sits beside a
/// `$ref` or a `oneOf`, as a report's common fields sit beside its mode's
/// section) cannot say `additionalProperties: false` without refusing the
/// other part's keys. The outermost such schema says
/// `unevaluatedProperties: false` instead, which counts the keys every
/// part it applies evaluated; the parts themselves (a `oneOf` branch, the
/// definition it refers to) are left open.
fn strict(schema: &mut Schema) {
    let value = schema.as_value().clone();
    let mut parts = BTreeSet::new();
    partial_definitions(&value, &mut parts);
    let mut value = value;
    close(&mut value, Place::Whole, &parts);
    *schema = Schema::try_from(value).expect("a closed schema is still a schema");
}

/// Where a schema sits: as a whole object, or as one part of a
/// composition whose other parts add keys.
#[derive(Clone, Copy, PartialEq)]
enum Place {
    Whole,
    Part,
}

/// The composition keywords whose subschemas apply to the same object.
const COMPOSITIONS: [&str; 3] = ["oneOf", "anyOf", "allOf"];

/// Whether an object schema is only part of its object: it lists
/// properties and also applies a `$ref` or a composition to the same
/// object.
fn is_partial(object: &serde_json::Map<String, Value>) -> bool {
    object.contains_key("properties")
        && (object.contains_key("$ref") || COMPOSITIONS.iter().any(|k| object.contains_key(*k)))
}

/// The names of the `$defs` a partial schema refers to, directly or
/// through a branch of its composition: they are parts too.
fn partial_definitions(value: &Value, parts: &mut BTreeSet<String>) {
    match value {
        Value::Object(object) => {
            if is_partial(object) {
                refs_of(object, parts);
                for key in COMPOSITIONS {
                    if let Some(Value::Array(branches)) = object.get(key) {
                        for branch in branches.iter().filter_map(Value::as_object) {
                            refs_of(branch, parts);
                        }
                    }
                }
            }
            object.values().for_each(|v| partial_definitions(v, parts));
        }
        Value::Array(items) => items.iter().for_each(|v| partial_definitions(v, parts)),
        _ => {}
    }
}

fn refs_of(object: &serde_json::Map<String, Value>, parts: &mut BTreeSet<String>) {
    if let Some(name) =
        object.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/"))
    {
        parts.insert(name.to_owned());
    }
}

fn close(value: &mut Value, place: Place, parts: &BTreeSet<String>) {
    match value {
        Value::Object(object) => {
            let open = object.contains_key("additionalProperties")
                || object.contains_key("unevaluatedProperties");
            if object.contains_key("properties") && !open {
                if is_partial(object) {
                    if place == Place::Whole {
                        object.insert("unevaluatedProperties".into(), Value::Bool(false));
                    }
                } else if place == Place::Whole {
                    object.insert("additionalProperties".into(), Value::Bool(false));
                }
            }
            let partial = is_partial(object);
            for (key, child) in object.iter_mut() {
                match key.as_str() {
                    "$defs" => {
                        if let Value::Object(defs) = child {
                            for (name, def) in defs.iter_mut() {
                                let place =
                                    if parts.contains(name) { Place::Part } else { Place::Whole };
                                close(def, place, parts);
                            }
                        }
                    }
                    k if COMPOSITIONS.contains(&k) => {
                        // A branch of a partial schema is a part; a branch
                        // of a plain composition (an enum's variants, an
                        // `Option`'s anyOf) is a whole object of its own.
                        let place = if partial { Place::Part } else { Place::Whole };
                        if let Value::Array(branches) = child {
                            branches.iter_mut().for_each(|b| close(b, place, parts));
                        }
                    }
                    "properties" => {
                        if let Value::Object(properties) = child {
                            properties.values_mut().for_each(|v| close(v, Place::Whole, parts));
                        }
                    }
                    // Instance values, not schemas.
                    "default" | "const" | "enum" | "examples" => {}
                    _ => close(child, Place::Whole, parts),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| close(v, Place::Whole, parts)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(DIR)
    }

    /// The checked-in schemas are what the types generate; with
    /// `STAGEBENCH_WRITE_SCHEMA=1` this test rewrites them instead.
    #[test]
    fn the_checked_in_schemas_are_what_the_types_generate() {
        let write = std::env::var("STAGEBENCH_WRITE_SCHEMA").is_ok_and(|v| v == "1");
        for file in all() {
            let path = dir().join(file.name);
            if write {
                std::fs::create_dir_all(dir()).unwrap();
                std::fs::write(&path, &file.text).unwrap();
                continue;
            }
            let kept = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                kept == file.text,
                "{} differs from what the types generate: run \
                 STAGEBENCH_WRITE_SCHEMA=1 cargo test -p stagebench-report schema, \
                 and review the change",
                path.display()
            );
        }
        let names: BTreeSet<_> = all().iter().map(|f| f.name.to_owned()).collect();
        let kept: BTreeSet<_> = std::fs::read_dir(dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".schema.json"))
            .collect();
        assert_eq!(kept, names, "docs/schema holds a schema no type generates");
    }

    fn root(name: &str) -> serde_json::Map<String, Value> {
        let file = all().into_iter().find(|f| f.name == name).unwrap();
        match serde_json::from_str(&file.text).unwrap() {
            Value::Object(m) => m,
            _ => panic!("{name} is not an object"),
        }
    }

    /// A report's root refuses keys its parts did not evaluate (its mode's
    /// section is a part), every whole object refuses unknown keys, and
    /// the parts stay open.
    #[test]
    fn objects_refuse_unknown_keys() {
        let report = root("report.schema.json");
        assert_eq!(report["unevaluatedProperties"], Value::Bool(false));
        assert!(!report.contains_key("additionalProperties"));
        let defs = report["$defs"].as_object().unwrap();
        for section in ["ColdPrepSection", "TrialsSection", "ProfileSection", "RecipeSection"] {
            assert!(!defs[section].as_object().unwrap().contains_key("additionalProperties"));
        }
        assert_eq!(defs["StageRecord"]["additionalProperties"], Value::Bool(false));
        assert_eq!(defs["PrepSide"]["additionalProperties"], Value::Bool(false));
        // A map keeps its value schema.
        assert!(defs["PrepSide"]["properties"]["components_s"]["additionalProperties"].is_object());
        let declaration = root("declaration.schema.json");
        assert_eq!(declaration["additionalProperties"], Value::Bool(false));
        assert_eq!(declaration["properties"]["schema"]["const"], "stagebench.declaration");
    }

    #[test]
    fn sealed_files_require_their_body_digest() {
        for name in ["report.schema.json", "failure.schema.json", "campaign-report.schema.json"] {
            let r = root(name);
            assert!(r["properties"].get(crate::rundir::report::BODY_DIGEST_KEY).is_some());
            assert!(r["required"].as_array().unwrap().contains(&Value::from("body_sha256")));
        }
        assert!(root("declaration.schema.json")["properties"].get("body_sha256").is_none());
    }
}
