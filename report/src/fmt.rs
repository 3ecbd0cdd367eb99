//! How figures read for a person: one formatter per unit, used by the
//! console, summaries, plots, compare and the dashboard alike.

/// Seconds in the unit that suits them (s, ms, µs, ns), four significant
/// digits, so a sub-microsecond median does not print as zero.
pub fn duration(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    let a = x.abs();
    let (v, unit) = if a == 0.0 {
        // -0.0 too (a sum of nothing, negated): never "-0.000 s".
        (0.0, "s")
    } else if a >= 1.0 {
        (x, "s")
    } else if a >= 1e-3 {
        (x * 1e3, "ms")
    } else if a >= 1e-6 {
        (x * 1e6, "µs")
    } else {
        (x * 1e9, "ns")
    };
    let decimals = if v.abs() >= 100.0 {
        1
    } else if v.abs() >= 10.0 {
        2
    } else {
        3
    };
    format!("{v:.decimals$} {unit}")
}

/// A setting's seconds as a person gave them (`--item-timeout 0.0001`):
/// one decimal at least, and every decimal it has, so a limit never reads
/// as "0.0 s" or as another number than the one set.
pub fn seconds_given(x: f64) -> String {
    match format!("{x:.1}").parse::<f64>() {
        Ok(one) if one == x => format!("{x:.1}"),
        _ => format!("{x}"),
    }
}

/// A figure's value in the unit its name says: seconds as a duration,
/// bytes as MiB, anything else as a number.
pub fn figure(name: &str, x: f64) -> String {
    if name.ends_with("_s") {
        duration(x)
    } else if name.ends_with("_bytes") {
        mib(x as u64)
    } else {
        format!("{x:.6}")
    }
}

/// Bytes as MiB with one decimal, without the unit (for a column headed MiB).
pub fn mib_number(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1024.0 * 1024.0))
}

/// Bytes as MiB with one decimal and the unit: `12.3 MiB`.
pub fn mib(bytes: u64) -> String {
    format!("{} MiB", mib_number(bytes))
}

/// A change of bytes with its sign, in MiB, or in GiB from 1 GiB on:
/// `+61.0 MiB`, `-1.4 GiB`.
pub fn bytes_delta(delta: i64) -> String {
    let sign = if delta < 0 { "-" } else { "+" };
    let a = delta.unsigned_abs() as f64 / (1024.0 * 1024.0);
    match a >= 1024.0 {
        true => format!("{sign}{:.1} GiB", a / 1024.0),
        false => format!("{sign}{a:.1} MiB"),
    }
}

/// A p-value with four decimals, or "–" where none was found.
pub fn p_value(p: f64) -> String {
    match p.is_nan() {
        true => "–".into(),
        false => format!("{p:.4}"),
    }
}

#[cfg(test)]
mod tests {
    use super::seconds_given;

    /// A limit prints as it was set: never "0.0 s" for 0.0001 (issue 63).
    #[test]
    fn seconds_given_keep_every_decimal_and_at_least_one() {
        assert_eq!(seconds_given(0.0001), "0.0001");
        assert_eq!(seconds_given(1.0), "1.0");
        assert_eq!(seconds_given(0.5), "0.5");
        assert_eq!(seconds_given(2.25), "2.25");
        assert_eq!(seconds_given(1e-9), "0.000000001");
    }

    use super::*;

    #[test]
    fn durations_keep_four_significant_digits_in_their_unit() {
        assert_eq!(duration(0.0), "0.000 s");
        assert_eq!(duration(-0.0), "0.000 s", "a sum of nothing, negated");
        assert_eq!(duration(1.5), "1.500 s");
        assert_eq!(duration(123.456), "123.5 s");
        assert_eq!(duration(0.04002), "40.02 ms");
        assert_eq!(duration(2.5e-7), "250.0 ns");
        assert_eq!(duration(3.2e-6), "3.200 µs");
        assert_eq!(duration(f64::NAN), "NaN");
    }

    #[test]
    fn mebibytes_are_binary() {
        assert_eq!(mib(256 * 1024 * 1024), "256.0 MiB");
        assert_eq!(mib_number(1_572_864), "1.5");
        assert_eq!(bytes_delta(61 << 20), "+61.0 MiB");
        assert_eq!(bytes_delta(-(3 << 29)), "-1.5 GiB");
        assert_eq!(bytes_delta(0), "+0.0 MiB");
    }
}
