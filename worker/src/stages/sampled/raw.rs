//! py-spy's raw output (`record --format raw --subprocesses --nolineno
//! --full-filenames`) made into evidence: collapsed stacks with no path,
//! no pid and no command line in them.
//!
//! A raw record is `process PID:"CMDLINE";…;function (FILE);… COUNT`, the
//! processes from the sampled root down to the one sampled (a command line
//! may hold newlines and quotes). What comes out is one line per stack,
//! `LANE;function (module);… COUNT`, sorted, where
//! - LANE is `main` for the shallowest processes with Python frames (the
//!   program, under any shell that started it), and for a process below
//!   them its role: `forked` (the same command line as its parent's: a
//!   DataLoader worker, a fork-started pool), `multiprocessing` (a
//!   spawn- or forkserver-started one), or the base names of its program
//!   and script;
//! - a file is named as a module: below `site-packages`/`dist-packages`
//!   as `package/module.py`, below the working directory relative to it,
//!   in the standard library relative to `lib/pythonX.Y`, anything else by
//!   its base name; `<frozen …>` and `<string>` stay;
//! - a run of the import machinery's frames is one frame, and a chain of
//!   imports (each module's code importing the next) is one frame named
//!   for the top-level import that began it, `import keras (<frozen
//!   importlib>)` ([`imports_folded`]), as pyinstrument hides a library's
//!   internals: what the program imported, not forty alternating frames.

use std::collections::BTreeMap;

/// The frame that stands for a run of the import machinery's own frames
/// (`_find_and_load`, `_load_unlocked`, `exec_module`, …): its self time is
/// the machinery's and a C extension's initialisation.
pub const IMPORT: &str = "import (<frozen importlib>)";
use std::path::Path;

/// One raw record: its process chain (pid, command line) and frames, root first.
#[derive(Debug, PartialEq)]
struct Record<'a> {
    processes: Vec<(u32, &'a str)>,
    frames: Vec<&'a str>,
    count: u64,
}

/// The raw text's records; a line py-spy would not write is skipped.
fn records(text: &str) -> Vec<Record<'_>> {
    // Every record starts with a process frame; a command line may hold a
    // newline, so records are split where a line starts one.
    let mut starts: Vec<usize> = text.match_indices("\nprocess ").map(|(i, _)| i + 1).collect();
    if text.starts_with("process ") {
        starts.insert(0, 0);
    }
    let mut out = Vec::new();
    for (k, &s) in starts.iter().enumerate() {
        let end = starts.get(k + 1).map_or(text.len(), |e| e - 1);
        if let Some(r) = record(text[s..end].trim_end()) {
            out.push(r);
        }
    }
    out
}

fn record(text: &str) -> Option<Record<'_>> {
    let (body, count) = text.rsplit_once(' ')?;
    let count = count.parse::<u64>().ok()?;
    let mut rest = body;
    let mut processes = Vec::new();
    while let Some(after) = rest.strip_prefix("process ") {
        let (pid, after) = after.split_once(":\"")?;
        let pid = pid.parse::<u32>().ok()?;
        // The command line ends at the first `";` (the next frame), or at
        // the record's last quote when no frame follows.
        match after.find("\";") {
            Some(i) => {
                processes.push((pid, &after[..i]));
                rest = &after[i + 2..];
            }
            None => {
                processes.push((pid, after.strip_suffix('"')?));
                rest = "";
            }
        }
    }
    // A frame ends with `)`: a `;` inside a file's name does not split it.
    let mut frames = Vec::new();
    let mut from = 0;
    for (i, _) in rest.match_indices(");") {
        frames.push(&rest[from..=i]);
        from = i + 2;
    }
    if from < rest.len() {
        frames.push(&rest[from..]);
    }
    Some(Record { processes, frames, count })
}

/// `function (FILE)` with FILE named as a module (see the module's doc);
/// a `;` or a control character in it (a file may be named anything)
/// becomes `_`, so the frame stays one frame of one line.
fn frame(raw: &str, cwd: &Path) -> String {
    // Whatever py-spy wrote, its file is reduced: never a path.
    let named = match raw.rsplit_once(" (") {
        Some((function, file)) => {
            let file = file.strip_suffix(')').unwrap_or(file);
            format!("{function} ({})", module(file, cwd))
        }
        None => raw.rsplit('/').next().unwrap_or(raw).to_string(),
    };
    named.chars().map(|c| if c == ';' || c.is_control() { '_' } else { c }).collect()
}

/// A file as a path-free module name.
pub(super) fn module(file: &str, cwd: &Path) -> String {
    if file.starts_with('<') || !file.contains('/') {
        return file.to_string();
    }
    for marker in ["/site-packages/", "/dist-packages/"] {
        if let Some(i) = file.rfind(marker) {
            return file[i + marker.len()..].to_string();
        }
    }
    // The helper, from its copy below the run directory: `stagebench/_sink.py`.
    let helper = format!("/{}", crate::stages::autospan::BOOTSTRAP_DIR);
    if let Some(i) = file.find(&helper) {
        let rest = &file[i + helper.len()..];
        if let Some(k) = rest.find('/') {
            return rest[k + 1..].to_string();
        }
    }
    if let Ok(inside) = Path::new(file).strip_prefix(cwd) {
        if let Some(s) = inside.to_str().filter(|s| !s.is_empty()) {
            return s.to_string();
        }
    }
    // The standard library: …/lib/pythonX.Y/…
    if let Some(i) = file.find("/lib/python") {
        let rest = &file[i + "/lib/python".len()..];
        if let Some(k) = rest.find('/') {
            return rest[k + 1..].to_string();
        }
    }
    file.rsplit('/').next().unwrap_or(file).to_string()
}

/// The first word of a command line, and whether it is a shell or a
/// launcher that only starts the program (not the program's own Python).
fn is_wrapper(cmdline: &str) -> bool {
    let first = cmdline.split_whitespace().next().unwrap_or("");
    let base = first.rsplit('/').next().unwrap_or(first);
    matches!(base, "sh" | "bash" | "dash" | "zsh" | "env" | "nice" | "time" | "timeout")
}

/// A child process's lane, from its command line and its parent's.
fn role(cmdline: &str, parent: &str) -> String {
    if cmdline == parent {
        return "forked".into();
    }
    if cmdline.contains("multiprocessing") {
        return "multiprocessing".into();
    }
    let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
    let mut words = cmdline.split_whitespace();
    let program = words.next().map(base).unwrap_or_default();
    let script = words.find(|w| w.ends_with(".py")).map(base);
    let name: String = match script {
        Some(s) => format!("{program} {s}"),
        None => program,
    };
    // A lane is one frame of a collapsed stack: no `;`, no space at its ends.
    let name: String =
        name.chars().map(|c| if c == ';' || c.is_control() { '_' } else { c }).collect();
    match name.trim() {
        "" => "child".into(),
        n => n.to_string(),
    }
}

/// The raw text as collapsed, path-free stacks (see the module's doc),
/// one line each, sorted; and the number of samples.
pub fn fold(text: &str, cwd: &Path) -> (String, u64) {
    let records = records(text);
    // The program's own processes: the shallowest depth at which a process
    // with Python frames was sampled, below any wrapper.
    let main_depth = records
        .iter()
        .filter(|r| !r.frames.is_empty() || !r.processes.last().is_some_and(|p| is_wrapper(p.1)))
        .map(|r| r.processes.len())
        .min()
        .unwrap_or(0);
    let mut stacks: BTreeMap<String, u64> = BTreeMap::new();
    let mut total = 0;
    for r in &records {
        let depth = r.processes.len();
        let lane = if depth <= main_depth {
            "main".to_string()
        } else {
            let me = r.processes[depth - 1].1;
            let parent = r.processes[depth - 2].1;
            role(me, parent)
        };
        let mut line = lane;
        for f in imports_folded(&r.frames, cwd) {
            line.push(';');
            line.push_str(&f);
        }
        *stacks.entry(line).or_default() += r.count;
        total += r.count;
    }
    let mut out = String::new();
    for (stack, n) in stacks {
        out.push_str(&format!("{stack} {n}\n"));
    }
    (out, total)
}

/// A stack's frames named ([`frame`]), the import machinery's runs made
/// one frame each ([`IMPORT`]), and a chain of imports (a module's code
/// importing the next: `IMPORT;<module> (a);IMPORT;<module> (b);…`) made
/// one frame for the top-level import that began it, `import a (<frozen
/// importlib>)`: an import twenty deep reads as what the program imported,
/// not forty alternating frames. The functions a module's code runs stay.
fn imports_folded(frames: &[&str], cwd: &Path) -> Vec<String> {
    let machinery = |f: &str| {
        f.ends_with("(<frozen importlib._bootstrap>)")
            || f.ends_with("(<frozen importlib._bootstrap_external>)")
    };
    let mut out: Vec<String> = Vec::new();
    let mut in_chain = false;
    let mut i = 0;
    while i < frames.len() {
        if !machinery(frames[i]) {
            out.push(frame(frames[i], cwd));
            in_chain = false;
            i += 1;
            continue;
        }
        // A run of the machinery's frames, and what it ran.
        while i < frames.len() && machinery(frames[i]) {
            i += 1;
        }
        let module = frames.get(i).map(|f| frame(f, cwd));
        match module.as_deref().and_then(top_level_module) {
            Some(top) => {
                if !in_chain {
                    out.push(format!("import {top} (<frozen importlib>)"));
                    in_chain = true;
                }
                i += 1;
            }
            // The machinery at the top of the stack, or running no module's
            // code (a C extension's initialisation): its own frame.
            None if in_chain => {}
            None => out.push(IMPORT.to_string()),
        }
    }
    out
}

/// The top-level package of a module's code frame, `<module> (a/b.py)` →
/// `a`; None for any other frame.
fn top_level_module(frame: &str) -> Option<String> {
    let file = frame.strip_prefix("<module> (")?.strip_suffix(')')?;
    let first = file.split('/').next()?;
    let name = first.strip_suffix(".py").unwrap_or(first);
    (!name.is_empty()).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An import chain twenty modules deep is one frame named for what the
    /// program imported; the functions the modules ran stay under it; a
    /// second top-level import is its own frame; the machinery at a
    /// stack's top keeps its own frame.
    #[test]
    fn a_chain_of_imports_is_one_frame_for_the_top_level_import() {
        let m = "_find_and_load (<frozen importlib._bootstrap>)";
        let x = "exec_module (<frozen importlib._bootstrap_external>)";
        let mut frames = vec!["<module> (/p/t.py)"];
        let deep: Vec<String> = (0..20)
            .map(|k| format!("<module> (/v/lib/python3.11/site-packages/keras/m{k}.py)"))
            .collect();
        for d in &deep {
            frames.extend([m, x]);
            frames.push(d);
        }
        frames.push("build (/v/lib/python3.11/site-packages/keras/ops.py)");
        frames.extend([m, "<module> (/v/lib/python3.11/site-packages/numpy/__init__.py)", m]);
        let got = imports_folded(&frames, Path::new("/p"));
        assert_eq!(
            got,
            [
                "<module> (t.py)",
                "import keras (<frozen importlib>)",
                "build (keras/ops.py)",
                "import numpy (<frozen importlib>)",
            ]
        );
        // The machinery alone, at the top of a stack: its own frame.
        assert_eq!(
            imports_folded(&["<module> (/p/t.py)", m, x], Path::new("/p")),
            ["<module> (t.py)", IMPORT]
        );
    }

    const RAW: &str = "process 10:\"sh -c python3 /home/u/proj/t.py\";<module> (/home/u/proj/t.py);main (/home/u/proj/t.py);f (/home/u/proj/t.py) 34\n\
process 10:\"sh -c python3 /home/u/proj/t.py\";process 11:\"/usr/bin/python3 -c \"x\ny\"\";h (/home/u/proj/lib/w.py) 5\n\
process 10:\"sh -c python3 /home/u/proj/t.py\";process 12:\"/usr/bin/python3 -c from multiprocessing.spawn import spawn_main\";run (/opt/venv/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py);get (/usr/lib/python3.11/queue.py) 7\n\
process 10:\"sh -c python3 /home/u/proj/t.py\";process 13:\"sh -c python3 /home/u/proj/t.py\";g (/home/u/proj/t.py) 2\n\
process 10:\"sh -c python3 /home/u/proj/t.py\" 1\n\
process 10:\"sh -c python3 /home/u/proj/t.py\";_find_and_load (<frozen importlib._bootstrap>);_load_unlocked (<frozen importlib._bootstrap_external>) 3\n";

    #[test]
    fn stacks_are_named_by_lane_and_module_with_no_path_pid_or_command_line() {
        let (folded, total) = fold(RAW, Path::new("/home/u/proj"));
        assert_eq!(total, 52);
        let lines: Vec<&str> = folded.lines().collect();
        assert_eq!(
            lines,
            vec![
                "forked;g (t.py) 2",
                "main 1",
                "main;<module> (t.py);main (t.py);f (t.py) 34",
                "main;import (<frozen importlib>) 3",
                "multiprocessing;run (torch/utils/data/_utils/worker.py);get (queue.py) 7",
                "python3;h (lib/w.py) 5",
            ]
        );
        for forbidden in ["/home", "/usr", "/opt", "process 1", "spawn_main", "\"", "\n\n"] {
            assert!(!folded.contains(forbidden), "{forbidden} in {folded}");
        }
    }

    #[test]
    fn a_file_named_with_a_separator_stays_one_frame() {
        assert_eq!(frame("f (/w/a;b\tc.py)", Path::new("/w")), "f (a_b_c.py)");
        let r = record("process 1:\"p\";<module> (/x/a;b.py);hot (/x/a;b.py) 4").unwrap();
        assert_eq!(r.frames, vec!["<module> (/x/a;b.py)", "hot (/x/a;b.py)"]);
        // Unreadable as py-spy writes frames: still no path.
        assert_eq!(frame("hot (/x/y/a.py", Path::new("/w")), "hot (a.py)");
        assert_eq!(frame("/x/y/z", Path::new("/w")), "z");
    }

    #[test]
    fn a_file_is_named_as_a_module() {
        let cwd = Path::new("/w");
        assert_eq!(module("/w/examples/train.py", cwd), "examples/train.py");
        assert_eq!(module("/v/lib/python3.11/site-packages/keras/src/x.py", cwd), "keras/src/x.py");
        assert_eq!(module("/usr/lib/python3/dist-packages/numpy/a.py", cwd), "numpy/a.py");
        assert_eq!(
            module("/root/.pyenv/versions/3.11.7/lib/python3.11/json/decoder.py", cwd),
            "json/decoder.py"
        );
        assert_eq!(module("/elsewhere/secret/name.py", cwd), "name.py");
        assert_eq!(
            module("/w/run/.spans-bootstrap-worker-0-22991/stagebench/_sink.py", cwd),
            "stagebench/_sink.py"
        );
        assert_eq!(module("<frozen importlib._bootstrap>", cwd), "<frozen importlib._bootstrap>");
    }

    #[test]
    fn a_malformed_line_is_skipped_not_a_panic() {
        for text in ["", "process", "process x:\"a\" 1", "process 1:\"a\";f (a.py) x", "garbage 3"]
        {
            let (folded, _) = fold(text, Path::new("/"));
            assert!(folded.is_empty(), "{text:?} gave {folded:?}");
        }
    }
}
