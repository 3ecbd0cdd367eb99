//! What, beyond the code, may make two runs' figures differ: the machine
//! (CPU model, logical cores) from environment.json, and per stage the
//! thread settings and runtime versions its record keeps (`runtime`). A
//! difference marks the rows it touches (every row for the machine, a
//! stage's rows for its own); `--strict` refuses instead. Commits are shown
//! but mark nothing: comparing two commits is what `compare` is for.

use crate::rundir::environment::Environment;
use crate::rundir::report::RuntimeRecord;
use std::collections::BTreeMap;

/// What the block reads of environment.json: the machine and the
/// coordinator's thread settings (those set).
#[derive(Debug, Clone, Default)]
pub struct Machine {
    pub cpu_model: Option<String>,
    pub logical_cores: Option<usize>,
    pub threads: BTreeMap<String, String>,
}

impl From<&Environment> for Machine {
    fn from(env: &Environment) -> Machine {
        Machine {
            cpu_model: env.cpu.model.clone(),
            logical_cores: Some(env.cpu.logical_cores),
            threads: env
                .threads
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.clone()?)))
                .collect(),
        }
    }
}

/// Each stage's runtime record, by stage (a stage without one is absent).
pub type Runtimes = BTreeMap<String, RuntimeRecord>;

/// One line of the comparability block.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// What is compared: `CPU model`, `stage train: thread settings`, …
    pub what: String,
    pub a: String,
    pub b: String,
    /// Which rows it touches when A and B differ: None for every row, else
    /// one stage's; `informational` lines mark none.
    pub stage: Option<String>,
    pub informational: bool,
}

impl Line {
    pub fn differs(&self) -> bool {
        self.a != self.b
    }

    /// Whether, differing, it marks a row of `stage`.
    pub fn marks(&self, stage: &str) -> bool {
        self.differs() && !self.informational && self.stage.as_deref().is_none_or(|s| s == stage)
    }
}

/// The block for two runs: their machines, and their stages' runtimes.
pub fn block(machines: [&Machine; 2], runtimes: [&Runtimes; 2], common: &[String]) -> Vec<Line> {
    let both = |what: &str, side: &dyn Fn(&Machine) -> String| Line {
        what: what.into(),
        a: side(machines[0]),
        b: side(machines[1]),
        stage: None,
        informational: false,
    };
    let unknown = || "unknown".to_string();
    let mut lines = vec![
        both("CPU model", &|m| m.cpu_model.clone().unwrap_or_else(unknown)),
        both("logical cores", &|m| m.logical_cores.map_or_else(unknown, |n| n.to_string())),
        both("thread settings of the coordinator", &|m| join(&m.threads, "=")),
    ];
    for stage in common {
        let runtime = |i: usize| runtimes[i].get(stage).cloned().unwrap_or_default();
        let (a, b) = (runtime(0), runtime(1));
        let per_stage = |what: &str, a: String, b: String, informational: bool| Line {
            what: format!("stage {stage}: {what}"),
            a,
            b,
            stage: Some(stage.clone()),
            informational,
        };
        let threads = |r: &RuntimeRecord| join(&r.thread_settings, "=");
        lines.push(per_stage("thread settings", threads(&a), threads(&b), false));
        if a.python.is_some() || b.python.is_some() {
            let python = |r: &RuntimeRecord| r.python.clone().unwrap_or_else(|| "none".into());
            lines.push(per_stage("Python", python(&a), python(&b), false));
            let dists = |r: &RuntimeRecord| join(&r.distributions, " ");
            lines.push(per_stage("libraries", dists(&a), dists(&b), false));
        }
        if !a.devices.is_empty() || !b.devices.is_empty() {
            let devices = |r: &RuntimeRecord| match r.devices.is_empty() {
                true => "none".to_string(),
                false => r.devices.join(", "),
            };
            lines.push(per_stage("devices", devices(&a), devices(&b), false));
        }
        if !a.sources.is_empty() || !b.sources.is_empty() {
            // Only the modules that differ, by name and short hash.
            let short = |s: &String| s[..12.min(s.len())].to_string();
            let changed: Vec<&String> = a
                .sources
                .keys()
                .chain(b.sources.keys())
                .filter(|m| a.sources.get(*m) != b.sources.get(*m))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            let side = |r: &RuntimeRecord| match changed.is_empty() {
                true => format!("{} file(s), the same", r.sources.len()),
                false => changed
                    .iter()
                    .map(|m| format!("{m} {}", r.sources.get(*m).map_or("absent".into(), short)))
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            // Like a commit: what compare is for, shown, marking nothing.
            lines.push(per_stage("sources", side(&a), side(&b), true));
        }
        if a.git_commit.is_some() || b.git_commit.is_some() {
            let commit = |r: &RuntimeRecord| match (&r.git_commit, r.git_dirty) {
                (Some(c), Some(true)) => format!("{}, dirty", &c[..12.min(c.len())]),
                (Some(c), _) => c[..12.min(c.len())].to_string(),
                (None, _) => "none".into(),
            };
            lines.push(per_stage("commit", commit(&a), commit(&b), true));
        }
    }
    lines
}

/// The files `--sources` bound into each declaration: a line naming the
/// files that differ, which marks no row (a changed source is what
/// `compare` is for, as a commit is); none when neither declared any.
pub fn declared_sources(sources: [&BTreeMap<String, String>; 2]) -> Option<Line> {
    let [a, b] = sources;
    if a.is_empty() && b.is_empty() {
        return None;
    }
    let changed: Vec<&String> = a
        .keys()
        .chain(b.keys())
        .filter(|f| a.get(*f) != b.get(*f))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let side = |m: &BTreeMap<String, String>| match changed.is_empty() {
        true => format!("{} file(s), the same", m.len()),
        false => changed
            .iter()
            .map(|f| format!("{f} {}", m.get(*f).map_or("absent", |s| &s[..12.min(s.len())])))
            .collect::<Vec<_>>()
            .join(", "),
    };
    Some(Line {
        what: "declared sources".into(),
        a: side(a),
        b: side(b),
        stage: None,
        informational: true,
    })
}

/// The data `--inputs` bound into each declaration: a line that marks
/// every row when it differs (the same code over other data is another
/// measurement, as another machine is); none when neither declared any.
/// `inputs`: each declaration's file count and combined digest.
pub fn declared_inputs(inputs: [Option<&(u64, String)>; 2]) -> Option<Line> {
    let of = |i: Option<&(u64, String)>| {
        i.map(|(files, sha)| format!("{files} file(s), {}", &sha[..12.min(sha.len())]))
    };
    let (a, b) = (of(inputs[0]), of(inputs[1]));
    if a.is_none() && b.is_none() {
        return None;
    }
    let none = || "none".to_string();
    Some(Line {
        what: "inputs (--inputs)".into(),
        a: a.unwrap_or_else(none),
        b: b.unwrap_or_else(none),
        stage: None,
        informational: false,
    })
}

/// `K=V` pairs, or `none`.
fn join(map: &BTreeMap<String, String>, sep: &str) -> String {
    match map.is_empty() {
        true => "none".into(),
        false => map.iter().map(|(k, v)| format!("{k}{sep}{v}")).collect::<Vec<_>>().join(", "),
    }
}

/// The lines that differ and mark rows, as one sentence each.
pub fn differences(lines: &[Line]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l.differs() && !l.informational)
        .map(|l| format!("{} differs ({} vs {})", l.what, l.a, l.b))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stages' runtimes from `(stage, runtime)`, each runtime as its JSON.
    fn runtimes(stages: &[(&str, serde_json::Value)]) -> Runtimes {
        stages
            .iter()
            .map(|(s, r)| (s.to_string(), serde_json::from_value(r.clone()).unwrap()))
            .collect()
    }

    fn machine(model: Option<&str>, threads: &[(&str, &str)]) -> Machine {
        Machine {
            cpu_model: model.map(str::to_string),
            logical_cores: model.map(|_| 2),
            threads: threads.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    /// Sources both ways: the same files say so; a changed file in the
    /// declaration or a changed imported module is named, as a commit is,
    /// and marks no row; none declared, no line.
    #[test]
    fn changed_sources_are_named_and_mark_no_row() {
        let decl = |sha: &str| {
            BTreeMap::from([
                ("train.py".to_string(), sha.to_string()),
                ("lib.py".into(), "11".into()),
            ])
        };
        let sha = |c: char| c.to_string().repeat(64);
        let same = declared_sources([&decl(&sha('a')), &decl(&sha('a'))]).unwrap();
        assert!(!same.differs(), "{same:?}");
        let changed = declared_sources([&decl(&sha('a')), &decl(&sha('b'))]).unwrap();
        assert!(changed.differs() && !changed.marks("any stage"), "information, as a commit");
        assert_eq!(changed.a, format!("train.py {}", &sha('a')[..12]));
        assert!(declared_sources([&BTreeMap::new(), &BTreeMap::new()]).is_none());
        let env = machine(Some("EPYC"), &[]);
        let stage = |module_sha: &str| {
            runtimes(&[(
                "train",
                serde_json::json!({"python": "3.11.7", "sources": {"__main__": module_sha, "mylib": "c".repeat(64)}}),
            )])
        };
        let common = ["train".to_string(), "load".to_string()];
        let lines = block([&env, &env], [&stage(&sha('a')), &stage(&sha('d'))], &common);
        let sources = lines.iter().find(|l| l.what == "stage train: sources").unwrap();
        assert_eq!(sources.a, format!("__main__ {}", &sha('a')[..12]));
        assert!(sources.differs() && differences(&lines).is_empty(), "{lines:?}");
    }

    /// Inputs both ways: the same data marks nothing; other data, or data
    /// on one side only, marks every row; none declared, no line.
    #[test]
    fn other_inputs_mark_every_row() {
        let decl = |sha: &str| Some((3, sha.to_string()));
        let (x, y) = ("a".repeat(64), "b".repeat(64));
        let same = declared_inputs([decl(&x).as_ref(), decl(&x).as_ref()]).unwrap();
        assert!(!same.differs() && !same.marks("train"), "{same:?}");
        assert_eq!(same.a, format!("3 file(s), {}", &x[..12]));
        let other = declared_inputs([decl(&x).as_ref(), decl(&y).as_ref()]).unwrap();
        assert!(other.marks("train") && other.marks("load"), "{other:?}");
        let one = declared_inputs([decl(&x).as_ref(), None]).unwrap();
        assert!(one.marks("train") && one.b == "none", "{one:?}");
        assert_eq!(
            differences(&[one]),
            [format!("inputs (--inputs) differs (3 file(s), {} vs none)", &x[..12])]
        );
        assert!(declared_inputs([None, None]).is_none());
    }

    /// Both ways: the same machine and runtime mark nothing; another CPU
    /// marks every row, another library one stage's rows only, another
    /// commit none.
    #[test]
    fn differences_mark_the_rows_they_touch_and_commits_mark_none() {
        let env = |model: &str| machine(Some(model), &[]);
        let stages = |numpy: &str, commit: &str| {
            runtimes(&[(
                "train",
                serde_json::json!({"python": "3.11.7", "distributions": {"numpy": numpy}, "git_commit": commit, "git_dirty": false}),
            )])
        };
        let common = ["train".to_string(), "load".to_string()];
        let same = block(
            [&env("EPYC"), &env("EPYC")],
            [&stages("2.4", "aa"), &stages("2.4", "aa")],
            &common,
        );
        assert!(differences(&same).is_empty(), "{same:?}");
        assert!(!same.iter().any(|l| l.marks("train") || l.marks("load")));

        let cpu = block(
            [&env("EPYC"), &env("Xeon")],
            [&stages("2.4", "aa"), &stages("2.4", "bb")],
            &common,
        );
        assert_eq!(differences(&cpu), ["CPU model differs (EPYC vs Xeon)"]);
        assert!(cpu.iter().any(|l| l.marks("train")) && cpu.iter().any(|l| l.marks("load")));

        let lib = block(
            [&env("EPYC"), &env("EPYC")],
            [&stages("2.4", "aa"), &stages("2.5", "bb")],
            &common,
        );
        assert_eq!(differences(&lib), ["stage train: libraries differs (numpy 2.4 vs numpy 2.5)"]);
        assert!(lib.iter().any(|l| l.marks("train")));
        assert!(!lib.iter().any(|l| l.marks("load")), "another stage's library marks nothing here");
        let commit = lib.iter().find(|l| l.what == "stage train: commit").unwrap();
        assert!(commit.differs() && !commit.marks("train"), "a commit is information");
    }

    /// A line is there when either side has its fact: Python or a commit on
    /// one side only differs from "none"; the coordinator's thread settings
    /// are read from environment.json.
    #[test]
    fn a_fact_on_one_side_only_is_a_difference() {
        let env = |omp: Option<&str>| {
            machine(None, &omp.map(|v| ("OMP_NUM_THREADS", v)).into_iter().collect::<Vec<_>>())
        };
        let with =
            runtimes(&[("s", serde_json::json!({"python": "3.12.1", "git_commit": "ab12"}))]);
        let without = Runtimes::new();
        let lines = block([&env(None), &env(Some("2"))], [&with, &without], &["s".into()]);
        let line = |what: &str| lines.iter().find(|l| l.what == what).unwrap().clone();
        let threads = line("thread settings of the coordinator");
        assert_eq!((threads.a.as_str(), threads.b.as_str()), ("none", "OMP_NUM_THREADS=2"));
        assert!(threads.marks("s"));
        let python = line("stage s: Python");
        assert_eq!((python.a.as_str(), python.b.as_str()), ("3.12.1", "none"));
        assert!(python.marks("s"));
        let commit = line("stage s: commit");
        assert_eq!((commit.a.as_str(), commit.b.as_str()), ("ab12", "none"));
        let reversed = block([&env(None), &env(None)], [&without, &with], &["s".into()]);
        assert!(reversed.iter().any(|l| l.what == "stage s: Python" && l.differs()));
        assert!(reversed.iter().any(|l| l.what == "stage s: commit" && l.differs()));
    }
}
