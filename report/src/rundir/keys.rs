//! A stage's key in a report: its name, and `#N` on its Nth repeat.

/// The key of the `n`th stage of one name (or a phase's round `n`): the
/// first keeps the plain name, later ones get `#n`.
pub fn repeat_key(base: &str, n: u32) -> String {
    if n == 1 { base.to_string() } else { format!("{base}#{n}") }
}

/// The base and number of a later repeat's key (`BASE#N`, N ≥ 2): the
/// inverse of [`repeat_key`]. Stage names never hold `#`.
pub fn repeat_of(key: &str) -> Option<(&str, u32)> {
    let (base, n) = key.rsplit_once('#')?;
    let n: u32 = n.parse().ok()?;
    (n >= 2 && !base.is_empty() && key == repeat_key(base, n)).then_some((base, n))
}
