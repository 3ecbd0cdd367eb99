//! The documentation against the code: every relative link in README.md,
//! ARCHITECTURE.md and docs/ resolves (to a file, and to a heading where it
//! names one), and every `coordinator` command line in the README's and the
//! docs' shell blocks parses with today's command line. A command is parsed
//! with `--help` appended, so nothing runs: what is checked is that every
//! flag, subcommand and value it spells exists.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// README.md, ARCHITECTURE.md and every Markdown file in docs/.
fn documents() -> Vec<PathBuf> {
    let root = root();
    let mut docs = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    let mut more: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    more.sort();
    docs.extend(more);
    docs
}

/// Each line outside fenced code blocks, and each fenced block with its
/// language, in order.
enum Part<'a> {
    Prose(&'a str),
    Code { lang: &'a str, lines: Vec<&'a str> },
}

fn parts(text: &str) -> Vec<Part<'_>> {
    let mut out = Vec::new();
    let mut block: Option<(&str, Vec<&str>)> = None;
    for line in text.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut block, fence) {
            (None, Some(lang)) => block = Some((lang.trim(), Vec::new())),
            (Some(_), Some(_)) => {
                let (lang, lines) = block.take().unwrap();
                out.push(Part::Code { lang, lines });
            }
            (Some((_, lines)), None) => lines.push(line),
            (None, None) => out.push(Part::Prose(line)),
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, every character that is not a
/// letter, digit, space, `-` or `_` dropped, spaces made `-`; a repeated
/// anchor gets `-1`, `-2`, ….
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for part in parts(text) {
        let Part::Prose(line) = part else { continue };
        let Some(title) = line.strip_prefix('#').map(|t| t.trim_start_matches('#')) else {
            continue;
        };
        if !title.starts_with(' ') {
            continue;
        }
        let base: String = title
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// The targets of a prose line's Markdown links, `[text](target)`.
fn link_targets(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            out.push(&rest[..end]);
            rest = &rest[end..];
        }
    }
    out
}

/// What is wrong with each relative link of `doc`, one line each.
fn broken_links(doc: &Path, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in parts(text) {
        let Part::Prose(line) = part else { continue };
        for target in link_targets(line) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target, None),
            };
            let path =
                if file.is_empty() { doc.to_path_buf() } else { doc.parent().unwrap().join(file) };
            if !path.exists() {
                out.push(format!("{}: `{target}`: no such file", doc.display()));
                continue;
            }
            if let Some(anchor) = anchor {
                let heads = std::fs::read_to_string(&path).map(|t| anchors(&t)).unwrap_or_default();
                if !heads.contains(anchor) {
                    out.push(format!("{}: `{target}`: no heading with that anchor", doc.display()));
                }
            }
        }
    }
    out
}

/// A shell line as words, split into its commands at unquoted `&&`, `||`,
/// `;` and `|`, with a trailing `# comment` dropped. Quotes group and are
/// removed; `\` escapes inside double quotes and outside quotes. A command
/// substitution `$(…)` outside single quotes is a word (`SUBST`), and the
/// commands inside it come first.
fn shell_commands(line: &str) -> Vec<Vec<String>> {
    let mut inner = Vec::new();
    let mut commands = vec![Vec::new()];
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        if c == '$' && quote != Some('\'') && chars.peek() == Some(&'(') {
            chars.next();
            let (mut depth, mut text) = (1, String::new());
            for c in chars.by_ref() {
                depth += match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                if depth == 0 {
                    break;
                }
                text.push(c);
            }
            inner.extend(shell_commands(&text));
            word.get_or_insert_default().push_str("SUBST");
            continue;
        }
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => word.get_or_insert_default().extend(chars.next()),
            (Some(_), c) => word.get_or_insert_default().push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_default();
            }
            (None, '\\') => word.get_or_insert_default().extend(chars.next()),
            (None, '#') if word.is_none() => break,
            (None, c) if c.is_whitespace() => commands.last_mut().unwrap().extend(word.take()),
            (None, '&' | '|' | ';') => {
                commands.last_mut().unwrap().extend(word.take());
                if matches!(chars.peek(), Some('&' | '|')) {
                    chars.next();
                }
                commands.push(Vec::new());
            }
            (None, c) => word.get_or_insert_default().push(c),
        }
    }
    commands.last_mut().unwrap().extend(word);
    commands.retain(|c| !c.is_empty());
    inner.extend(commands);
    inner
}

/// Why clap refuses `words` (a `coordinator` command line) with `--help`
/// appended, or None when it parses as far as printing help. A line with
/// RUN FLAGS after `--` (bisect, gate) is two: the command's own flags,
/// and the run's, each parsed alike.
fn refused(words: &[String]) -> Option<String> {
    if let Some(at) = words.iter().position(|w| w == "--") {
        let run: Vec<String> =
            std::iter::once(words[0].clone()).chain(words[at + 1..].iter().cloned()).collect();
        return refused(&words[..at])
            .or_else(|| refused(&run).map(|why| format!("RUN FLAGS: {why}")));
    }
    let mut argv: Vec<String> = words.to_vec();
    argv.push("--help".into());
    match super::grammar().try_get_matches_from(&argv) {
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => None,
        Err(e) => Some(e.to_string().lines().next().unwrap_or_default().to_string()),
        Ok(_) => Some("parsed without reaching --help".into()),
    }
}

/// Every `coordinator` command line in a shell block of `text`, as words.
fn coordinator_commands(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for part in parts(text) {
        let Part::Code { lang, lines } = part else { continue };
        if !matches!(lang, "sh" | "bash" | "shell" | "console") {
            continue;
        }
        // A line ending in `\` continues on the next.
        let mut joined: Vec<String> = Vec::new();
        let mut open = false;
        for line in lines {
            match (open, joined.last_mut()) {
                (true, Some(last)) => last.push_str(line),
                _ => joined.push(line.to_string()),
            }
            open = line.trim_end().ends_with('\\');
            if open {
                let last = joined.last_mut().expect("just pushed");
                last.truncate(last.trim_end().len() - 1);
            }
        }
        for line in &joined {
            for command in shell_commands(line) {
                if Path::new(&command[0]).file_name().is_some_and(|n| n == "coordinator") {
                    out.push(command);
                }
            }
        }
    }
    out
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let mut broken = Vec::new();
    for doc in documents() {
        broken.extend(broken_links(&doc, &std::fs::read_to_string(&doc).unwrap()));
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// docs/modes.md's table of modes says of each one what `--help` says.
#[test]
fn the_modes_reference_lists_every_mode_as_the_help_does() {
    let text = std::fs::read_to_string(root().join("docs/modes.md")).unwrap();
    let help = super::grammar().render_long_help().to_string();
    for m in crate::modes::MODES {
        let row = format!("| `{}` | {} |", m.name(), m.about());
        assert_eq!(text.matches(&row).count(), 1, "docs/modes.md lacks {row}");
        assert!(help.contains(m.about()), "--help does not say {:?}", m.about());
    }
}

/// The synopsis of docs/modes.md spells every flag the command line and
/// each subcommand take (the help and version flags aside).
#[test]
fn the_synopsis_lists_every_flag() {
    let text = std::fs::read_to_string(root().join("docs/modes.md")).unwrap();
    let synopsis = parts(&text)
        .into_iter()
        .find_map(|p| match p {
            Part::Code { lang: "text", lines } => Some(lines.join("\n")),
            _ => None,
        })
        .expect("docs/modes.md opens with its synopsis");
    let grammar = super::grammar();
    let mut missing = Vec::new();
    let mut check = |command: &clap::Command, prefix: &str| {
        for arg in command.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if ["help", "version"].contains(&long) {
                continue;
            }
            let flag = format!("--{long}");
            let said = synopsis.match_indices(&flag).any(|(at, _)| {
                let next = synopsis[at + flag.len()..].chars().next();
                !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
            });
            if !said {
                missing.push(format!("{prefix}{flag}"));
            }
        }
    };
    check(&grammar, "");
    for sub in grammar.get_subcommands() {
        check(sub, &format!("{} ", sub.get_name()));
        for subsub in sub.get_subcommands() {
            check(subsub, &format!("{} {} ", sub.get_name(), subsub.get_name()));
        }
    }
    assert!(missing.is_empty(), "docs/modes.md's synopsis lacks {missing:?}");
}

#[test]
fn every_command_line_in_the_docs_parses() {
    let mut bad = Vec::new();
    let mut seen = 0;
    for doc in documents() {
        for command in coordinator_commands(&std::fs::read_to_string(&doc).unwrap()) {
            seen += 1;
            if let Some(why) = refused(&command) {
                bad.push(format!("{}: `{}`: {why}", doc.display(), command.join(" ")));
            }
        }
    }
    assert!(bad.is_empty(), "command lines the CLI refuses:\n{}", bad.join("\n"));
    // The README's own examples alone are more than this; an extractor
    // that found nothing would pass vacuously.
    assert!(seen >= 10, "only {seen} command lines found");
}

#[test]
fn the_link_check_finds_a_missing_file_and_a_missing_heading() {
    let dir = std::env::temp_dir().join(format!("stagebench-links-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("b.md"),
        "# Title\n\n## The `--workers 1` control\n\n```sh\n# not a heading\n```\n",
    )
    .unwrap();
    let doc = dir.join("a.md");
    let text = "[ok](b.md) [ok](b.md#the---workers-1-control) [ok](#here) [web](https://x.org/none)\n\
                # Here\n\
                [gone](c.md) [no](b.md#the-workers-1-control) [code](b.md#not-a-heading)\n\
                ```sh\n[inside a block](nowhere.md)\n```\n";
    std::fs::write(&doc, text).unwrap();
    let broken = broken_links(&doc, text);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(broken.len(), 3, "{broken:?}");
    assert!(broken[0].contains("`c.md`: no such file"), "{broken:?}");
    assert!(broken[1].contains("b.md#the-workers-1-control"), "{broken:?}");
    assert!(broken[2].contains("b.md#not-a-heading"), "{broken:?}");
}

#[test]
fn repeated_headings_get_numbered_anchors() {
    let a = anchors("## Data\n\n### Data\n\n## Anyone's pipeline\n");
    let want: BTreeSet<String> = ["data", "data-1", "anyones-pipeline"].map(String::from).into();
    assert_eq!(a, want);
}

#[test]
fn shell_lines_split_into_commands_with_quotes_kept_whole() {
    let words = |s: &[&str]| s.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    assert_eq!(
        shell_commands(
            r#"cargo build && ./target/release/coordinator --command 'python -m a' --name "x y"   # main"#
        ),
        vec![
            words(&["cargo", "build"]),
            words(&["./target/release/coordinator", "--command", "python -m a", "--name", "x y"])
        ]
    );
    assert_eq!(
        shell_commands("a | b; c || d"),
        vec![words(&["a"]), words(&["b"]), words(&["c"]), words(&["d"])]
    );
    assert_eq!(
        shell_commands("coordinator --figure 'span:*' # x#y"),
        vec![words(&["coordinator", "--figure", "span:*"])]
    );
    // A substitution's commands come first; it is one word where it stands.
    assert_eq!(
        shell_commands(
            r#"D=$(coordinator dataset path) && coordinator --prepare "p --data $D" '$(x)'"#
        ),
        vec![
            words(&["coordinator", "dataset", "path"]),
            words(&["D=SUBST"]),
            words(&["coordinator", "--prepare", "p --data $D", "$(x)"])
        ]
    );
}

#[test]
fn a_line_ending_in_a_backslash_continues() {
    let text = "```sh\ncoordinator --mode cold-prep \\\n    --workers 2\ncoordinator doctor\n```\n";
    let got = coordinator_commands(text);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0], ["coordinator", "--mode", "cold-prep", "--workers", "2"]);
}

#[test]
fn a_flag_that_does_not_exist_or_a_bad_value_is_refused() {
    let words = |s: &str| shell_commands(s).remove(0);
    assert_eq!(refused(&words("coordinator --mode cold-prep --workers 1,2,4")), None);
    assert_eq!(refused(&words("coordinator compare a b --threshold 5")), None);
    assert!(refused(&words("coordinator --mode cold-prep --wrokers 8")).is_some());
    assert!(refused(&words("coordinator --mode cold-pep")).is_some());
    assert!(refused(&words("coordinator --workers 4,2")).is_some());
    assert!(refused(&words("coordinator frobnicate")).is_some());
}

/// `--epochs` takes what its help says, up to the one limit a campaign
/// file's `epochs` has too (`modes::recipe::MAX_EPOCHS`).
#[test]
fn epochs_are_bounded_where_the_help_says() {
    use crate::modes::recipe::MAX_EPOCHS;
    let cli = |epochs: u32| {
        let epochs = epochs.to_string();
        let argv = ["coordinator", "--mode", "recipe", "--state", "s", "--epochs", &epochs];
        super::grammar().try_get_matches_from(argv)
    };
    if let Err(e) = cli(MAX_EPOCHS) {
        panic!("{e}");
    }
    for bad in [0, MAX_EPOCHS + 1] {
        assert!(cli(bad).is_err(), "--epochs {bad} was accepted");
    }
    let help = super::grammar().render_long_help().to_string();
    assert!(help.contains(&format!("1 to {MAX_EPOCHS}")), "the help does not state the limit");
}
