//! `--param NAME=V1,V2|A..B[:STEP]`, the modes' shared scan of a user's
//! program over the values of its own knob (trials' `--command`,
//! cold-prep's `--prepare`). The specs are parsed and checked against the
//! command lines before anything runs; each grid point becomes stages of
//! its own (`trial[workers=4]`, `cold_prepare[chunk=64]`), the command with
//! `{NAME}` replaced and `STAGEBENCH_PARAM_NAME` in its environment; and
//! every round runs the points in a new shuffled order drawn from a
//! recorded seed.

/// A `--param` refused before anything runs, and why, in one line.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{0}")]
pub struct Refusal(pub String);

/// Grid points above which a scan needs `--yes-many`.
pub const MAX_POINTS: usize = 64;

/// The scan flags, as given (shared: `--param`, `--param-env-only`,
/// `--yes-many`, `--param-seed`).
#[derive(Clone, Debug, Default)]
pub struct ParamArgs {
    pub params: Vec<Param>,
    pub env_only: bool,
    pub many: bool,
    pub seed: Option<u64>,
}

impl ParamArgs {
    /// The checked grid over `lines` (the program given by `flag`), and
    /// its rounds' seed: the one given, else the clock's.
    pub fn grid(&self, lines: &[&str], flag: &str) -> Result<Option<(Grid, u64)>, Refusal> {
        let grid = Grid::checked(self.params.clone(), lines, flag, self.env_only, self.many)?;
        Ok(grid.map(|g| (g, self.seed.unwrap_or_else(clock_seed))))
    }
}

/// One `--param`: its name and its values, in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub values: Vec<String>,
}

/// Why a `--param` spec is refused (clap prints it after the flag).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadParam {
    #[error("write NAME=V1,V2 or NAME=A..B[:STEP]")]
    Spelling,
    #[error("the name {0:?} must be a letter or _ then letters, digits or _ (at most 32)")]
    Name(String),
    #[error("no value")]
    NoValue,
    #[error(
        "the value {0:?} must be 1-64 of A-Z a-z 0-9 and . _ + - (it is put into a command line and names a stage)"
    )]
    Value(String),
    #[error("the value {0} is given twice")]
    Twice(String),
    #[error("{0:?} is not an integer")]
    NotInteger(String),
    #[error("the step must be above 0")]
    Step,
    #[error("the range is empty ({0} is above {1})")]
    Empty(i64, i64),
    #[error("{0} values; a scan takes at most 10000 per name")]
    TooMany(i128),
}

impl std::str::FromStr for Param {
    type Err = BadParam;

    fn from_str(spec: &str) -> Result<Param, BadParam> {
        let (name, list) = spec.split_once('=').ok_or(BadParam::Spelling)?;
        if !is_name(name) {
            return Err(BadParam::Name(name.into()));
        }
        let values = match list.split_once("..") {
            Some((a, b)) => range(a, b)?,
            None => list.split(',').map(str::to_string).collect(),
        };
        if values.iter().all(String::is_empty) {
            return Err(BadParam::NoValue);
        }
        if let Some(v) = values.iter().find(|v| !is_value(v)) {
            return Err(BadParam::Value(v.clone()));
        }
        for (i, v) in values.iter().enumerate() {
            if values[..i].contains(v) {
                return Err(BadParam::Twice(v.clone()));
            }
        }
        Ok(Param { name: name.into(), values })
    }
}

/// `A..B[:STEP]`: the integers from A to B inclusive, STEP apart.
fn range(a: &str, b: &str) -> Result<Vec<String>, BadParam> {
    let (b, step) = match b.split_once(':') {
        Some((b, s)) => (b, s),
        None => (b, "1"),
    };
    let int = |s: &str| s.parse::<i64>().map_err(|_| BadParam::NotInteger(s.into()));
    let (a, b, step) = (int(a)?, int(b)?, int(step)?);
    if step <= 0 {
        return Err(BadParam::Step);
    }
    if a > b {
        return Err(BadParam::Empty(a, b));
    }
    // In i128: the count of i64::MIN..i64::MAX does not fit an i64.
    let n = (i128::from(b) - i128::from(a)) / i128::from(step) + 1;
    if n > 10_000 {
        return Err(BadParam::TooMany(n));
    }
    Ok((0..n as i64).map(|i| (a + i * step).to_string()).collect())
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.len() <= 32
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_value(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-'))
}

/// The environment variable that carries `name`'s value.
pub fn env_name(name: &str) -> String {
    format!("STAGEBENCH_PARAM_{}", name.to_ascii_uppercase())
}

/// A piece of a scanned command line: text as it stands, or a `{NAME}`.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    Text(String),
    Placeholder(&'a str),
}

/// A command line in pieces, the one reading both the check and the
/// substitution use: `{NAME}` is a placeholder; `{{` and `}}` stand for a
/// literal `{` and `}` (awk's `{{print $1}}`); the shell's own `${...}` is
/// left whole, braces and all; any other brace is text.
fn pieces(line: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let (mut i, mut text_from) = (0, 0);
    let mut text = String::new();
    let b = line.as_bytes();
    while i < b.len() {
        let (take, piece) = match (b[i], b.get(i + 1)) {
            (b'{', Some(b'{')) => (2, Some("{")),
            (b'}', Some(b'}')) => (2, Some("}")),
            (b'$', Some(b'{')) => match line[i..].find('}') {
                Some(end) => (end + 1, None),
                None => (b.len() - i, None),
            },
            (b'{', _) => match line[i + 1..].find('}') {
                Some(end) if is_name(&line[i + 1..i + 1 + end]) => {
                    text.push_str(&line[text_from..i]);
                    if !text.is_empty() {
                        out.push(Piece::Text(std::mem::take(&mut text)));
                    }
                    out.push(Piece::Placeholder(&line[i + 1..i + 1 + end]));
                    i += end + 2;
                    text_from = i;
                    continue;
                }
                _ => (1, None),
            },
            _ => (1, None),
        };
        if let Some(literal) = piece {
            text.push_str(&line[text_from..i]);
            text.push_str(literal);
            text_from = i + take;
        }
        i += take;
    }
    text.push_str(&line[text_from..]);
    if !text.is_empty() {
        out.push(Piece::Text(text));
    }
    out
}

/// The `{NAME}` placeholders of a command line, each once, in order (see
/// `pieces`: `${HOME}` and `{{print}}` are none).
pub fn placeholders(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for piece in pieces(line) {
        if let Piece::Placeholder(name) = piece {
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// A checked scan: its names in order and every point of their grid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grid {
    pub params: Vec<Param>,
}

impl Grid {
    /// Checks `params` against the command lines they scan, given by
    /// `flag` (`--command`, `--prepare`). `env_only`
    /// allows a name no line spells (the program reads its variable);
    /// `many` allows more than [`MAX_POINTS`] points.
    pub fn checked(
        params: Vec<Param>,
        lines: &[&str],
        flag: &str,
        env_only: bool,
        many: bool,
    ) -> Result<Option<Grid>, Refusal> {
        if params.is_empty() {
            return Ok(None);
        }
        if lines.is_empty() {
            return Err(Refusal(format!("--param scans a {flag}: give one")));
        }
        for (i, p) in params.iter().enumerate() {
            if params[..i].iter().any(|q| q.name == p.name) {
                return Err(Refusal(format!("--param {} is given twice", p.name)));
            }
            if let Some(q) = params[..i].iter().find(|q| env_name(&q.name) == env_name(&p.name)) {
                return Err(Refusal(format!(
                    "--param {} and --param {} differ only in case: both would set {}",
                    q.name,
                    p.name,
                    env_name(&p.name)
                )));
            }
        }
        for line in lines {
            if let Some(name) =
                placeholders(line).into_iter().find(|n| !params.iter().any(|p| p.name == *n))
            {
                return Err(Refusal(format!(
                    "{flag} has {{{name}}} but no --param {name}=... gives its values"
                )));
            }
        }
        if !env_only {
            for p in &params {
                if !lines.iter().any(|l| placeholders(l).contains(&p.name.as_str())) {
                    return Err(Refusal(format!(
                        "--param {}: no {flag} has {{{}}}; put it in the command, or give --param-env-only when the program reads {}",
                        p.name,
                        p.name,
                        env_name(&p.name)
                    )));
                }
            }
        }
        let grid = Grid { params };
        let n = grid.points().len();
        if n > MAX_POINTS && !many {
            return Err(Refusal(format!(
                "--param: a grid of {n} points (above {MAX_POINTS}); give --yes-many to run it"
            )));
        }
        Ok(Some(grid))
    }

    /// Every point, the first name varying slowest, each value in order.
    pub fn points(&self) -> Vec<Vec<(String, String)>> {
        let mut points: Vec<Vec<(String, String)>> = vec![Vec::new()];
        for p in &self.params {
            points = points
                .into_iter()
                .flat_map(|pt| {
                    p.values.iter().map(move |v| {
                        let mut next = pt.clone();
                        next.push((p.name.clone(), v.clone()));
                        next
                    })
                })
                .collect();
        }
        points
    }

    /// `line` with every `{NAME}` replaced by the point's value, `{{` and
    /// `}}` by a brace, and the rest (the shell's `${NAME}` too) as it was.
    pub fn substituted(line: &str, point: &Point) -> String {
        pieces(line)
            .into_iter()
            .map(|piece| match piece {
                Piece::Text(t) => t,
                Piece::Placeholder(name) => match point.iter().find(|(k, _)| k == name) {
                    Some((_, v)) => v.clone(),
                    None => format!("{{{name}}}"),
                },
            })
            .collect()
    }

    /// A point's label, `a=1,b=2`: what a stage's key carries in brackets.
    pub fn label(point: &Point) -> String {
        let label: Vec<String> = point.iter().map(|(k, v)| format!("{k}={v}")).collect();
        label.join(",")
    }

    /// What the declaration records: each name with its values, in order,
    /// and the seed of the rounds' order.
    pub fn declared(&self, seed: u64) -> serde_json::Value {
        let params: Vec<serde_json::Value> = self
            .params
            .iter()
            .map(|p| serde_json::json!({ "name": p.name, "values": p.values }))
            .collect();
        serde_json::json!({ "params": params, "order_seed": seed })
    }

    /// The names, in order.
    pub fn names(&self) -> Vec<String> {
        self.params.iter().map(|p| p.name.clone()).collect()
    }
}

/// A grid point: each name with its value.
pub type Point = Vec<(String, String)>;

/// A seed for a scan's order when none is given: the clock's nanoseconds.
pub fn clock_seed() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    // Below 2^53, so every JSON reader reads it back exactly.
    now.map(|d| d.as_nanos() as u64 & ((1 << 53) - 1)).unwrap_or(0)
}

/// The order of `n` points in round `round` of a scan seeded `seed`: a
/// Fisher–Yates shuffle from a generator of its own per round, so a round's
/// order does not depend on how many rounds came before.
pub fn round_order(n: usize, seed: u64, round: u32) -> Vec<usize> {
    let mut rng =
        evidence::rng::Rng::new(seed ^ (round as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = rng.range(0, i as u64 + 1) as usize;
        order.swap(i, j);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Param, BadParam> {
        s.parse()
    }

    #[test]
    fn lists_and_ranges_parse_in_order() {
        assert_eq!(p("workers=0,2,4").unwrap().values, ["0", "2", "4"]);
        assert_eq!(p("n=1..4").unwrap().values, ["1", "2", "3", "4"]);
        assert_eq!(p("n=0..10:5").unwrap().values, ["0", "5", "10"]);
        assert_eq!(p("n=-2..2:2").unwrap().values, ["-2", "0", "2"]);
        assert_eq!(p("n=3..3").unwrap().values, ["3"]);
        assert_eq!(p("mode=fast").unwrap().values, ["fast"]);
    }

    #[test]
    fn bad_specs_are_refused_by_name() {
        for (spec, says) in [
            ("workers", "NAME=V1,V2"),
            ("workers=", "no value"),
            ("workers=,", "no value"),
            ("workers=1,1", "given twice"),
            ("workers=1..4:0", "step must be above 0"),
            ("workers=4..1", "range is empty"),
            ("workers=a..4", "not an integer"),
            ("9x=1", "must be a letter"),
            ("x=1,2,", "must be 1-64"),
            ("x=a b", "must be 1-64"),
            ("x=/etc", "must be 1-64"),
            ("x=0..100000", "at most 10000"),
        ] {
            let e = p(spec).unwrap_err().to_string();
            assert!(e.contains(says), "{spec}: {e}");
        }
    }

    #[test]
    fn placeholders_leave_the_shells_own_braces_alone() {
        assert_eq!(placeholders("run {workers} {seed} {workers}"), ["workers", "seed"]);
        assert!(placeholders("echo ${HOME} {} { x }").is_empty());
        // The shell's ${x} is no placeholder, and {{...}} is a literal brace.
        assert!(placeholders("echo ${x} $(( ${n} + 1 ))").is_empty());
        assert!(placeholders("awk '{{print $1}}'").is_empty());
        assert_eq!(placeholders("echo ${x} {x} {{x}}"), ["x"]);
    }

    /// `{x}` is replaced, the shell's `${x}` is not (issue 63), and `{{`
    /// and `}}` are braces, so awk's `{print}` can be written.
    #[test]
    fn substitution_replaces_placeholders_only() {
        let point = vec![("x".to_string(), "7".to_string())];
        let sub = |line: &str| Grid::substituted(line, &point);
        assert_eq!(sub("run {x} ${x} {x}"), "run 7 ${x} 7");
        assert_eq!(sub("awk '{{print $1}}' {x}"), "awk '{print $1}' 7");
        assert_eq!(sub("a{{x}}b {y} ${x"), "a{x}b {y} ${x");
        assert_eq!(sub("echo { x } {} é{x}é"), "echo { x } {} é7é");
        assert_eq!(sub(""), "");
    }

    #[test]
    fn names_that_differ_only_in_case_are_refused() {
        let e = grid(&["X=1", "x=2"], &["run {X} {x}"], false).unwrap_err().0;
        assert!(e.contains("differ only in case: both would set STAGEBENCH_PARAM_X"), "{e}");
    }

    #[test]
    fn a_range_too_long_to_count_in_i64_is_too_many() {
        let e = p("n=-9223372036854775808..9223372036854775807").unwrap_err().to_string();
        assert!(e.contains("18446744073709551616 values"), "{e}");
    }

    fn grid(specs: &[&str], lines: &[&str], env_only: bool) -> Result<Option<Grid>, Refusal> {
        let params = specs.iter().map(|s| p(s).unwrap()).collect();
        Grid::checked(params, lines, "--command", env_only, false)
    }

    #[test]
    fn a_grid_is_checked_against_its_commands() {
        assert_eq!(grid(&[], &["x"], false).unwrap(), None);
        let refused = [
            (vec!["w=1"], vec!["run {w} {v}"], false, "{v} but no --param v"),
            (vec!["w=1", "v=2"], vec!["run {w}"], false, "--param v: no --command has {v}"),
            (vec!["w=1", "w=2"], vec!["run {w}"], false, "given twice"),
            (vec!["w=1"], vec![], false, "scans a --command"),
            (vec!["a=1..9", "b=1..8"], vec!["{a}{b}"], false, "72 points"),
        ];
        for (specs, lines, env_only, says) in refused {
            let e = grid(&specs, &lines, env_only).unwrap_err().0;
            assert!(e.contains(says), "{specs:?}: {e}");
        }
        // Env only: a name no line spells is allowed; a placeholder with no
        // --param is still refused.
        assert!(grid(&["w=1"], &["run"], true).unwrap().is_some());
        assert!(grid(&["w=1"], &["run {v}"], true).is_err());
        let many = vec![p("a=1..9").unwrap(), p("b=1..8").unwrap()];
        assert_eq!(
            Grid::checked(many, &["{a}{b}"], "--command", false, true)
                .unwrap()
                .unwrap()
                .points()
                .len(),
            72
        );
    }

    #[test]
    fn every_round_is_a_permutation_and_rounds_differ() {
        let orders: Vec<Vec<usize>> = (0..6).map(|r| round_order(8, 42, r)).collect();
        for o in &orders {
            let mut s = o.clone();
            s.sort();
            assert_eq!(s, (0..8).collect::<Vec<_>>());
        }
        assert!(orders.windows(2).any(|w| w[0] != w[1]), "{orders:?}");
        assert_eq!(round_order(8, 42, 3), orders[3], "the seed gives the order back");
        assert_ne!(round_order(8, 43, 3), orders[3]);
    }
}
