//! The names a preparation's phases and outputs go by, shared by the
//! cold-prep, profile and recipe modes: their stage keys, output
//! directories and the manifest sealing each.

use std::borrow::Cow;

pub const VERIFY_BEFORE: &str = "verify_before";
pub const SERIAL: &str = "cold_feature_cache_prepare";
pub const PARALLEL: &str = "cold_feature_cache_prepare_parallel";
pub const VERIFY_AFTER: &str = "verify_after";
pub const SERIAL_CACHE: &str = "private-feature-cache";
pub const PARALLEL_CACHE: &str = "private-feature-cache-parallel";
pub const MANIFEST: &str = "manifest.json";
pub const MANIFEST_SCHEMA: &str = "stagebench.cache-manifest";
/// Per-series time components the workers report.
pub const COMPONENTS: [&str; 5] = ["read_s", "hash_s", "decode_s", "extract_s", "write_s"];

/// The names of one kind of preparation: its phases' keys and their
/// output directories (a scanned value's, [`Names::of_value`], are made at
/// run time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    pub serial: Cow<'static, str>,
    pub parallel: Cow<'static, str>,
    pub serial_out: Cow<'static, str>,
    pub parallel_out: Cow<'static, str>,
    /// A user's items (`--prepare`), not the recipe's series.
    pub items: bool,
}

/// The recipe's feature-cache preparation.
pub const RECIPE: Names = Names {
    serial: Cow::Borrowed(SERIAL),
    parallel: Cow::Borrowed(PARALLEL),
    serial_out: Cow::Borrowed(SERIAL_CACHE),
    parallel_out: Cow::Borrowed(PARALLEL_CACHE),
    items: false,
};

/// A user's own preparation (`--prepare`).
pub const ITEMS: Names = Names {
    serial: Cow::Borrowed("cold_prepare"),
    parallel: Cow::Borrowed("cold_prepare_parallel"),
    serial_out: Cow::Borrowed("private-output"),
    parallel_out: Cow::Borrowed("private-output-parallel"),
    items: true,
};

impl Names {
    /// The names of a scanned value's phases (`--param`), whose label is
    /// `a=1,b=2`: `cold_prepare[a=1,b=2]` and `cold_prepare_parallel[a=1,b=2]`,
    /// writing into `private-output[a=1,b=2]` and
    /// `private-output[a=1,b=2]-parallel`. Each value's outputs keep the
    /// rule that a checked one is its serial output's name, `-`, and more.
    pub fn of_value(&self, label: &str) -> Names {
        let serial_out = format!("{}[{label}]", self.serial_out);
        Names {
            serial: format!("{}[{label}]", self.serial).into(),
            parallel: format!("{}[{label}]", self.parallel).into(),
            parallel_out: format!("{serial_out}-parallel").into(),
            serial_out: serial_out.into(),
            items: self.items,
        }
    }

    /// The label of a scanned value's phase key (`cold_prepare[a=1]#2`
    /// gives `a=1`), or None for the first value's plain names.
    pub fn value_of(key: &str) -> Option<&str> {
        let base = crate::rundir::keys::repeat_of(key).map_or(key, |(base, _)| base);
        let (_, rest) = base.split_once('[')?;
        rest.strip_suffix(']').filter(|label| !label.is_empty())
    }

    /// Whether a directory named `name` in a run directory is one of these
    /// names' checked outputs: a later round's, another count's or another
    /// value's (`<serial output>` then optionally `[label]`, then `-` and
    /// more), not one sealed by a manifest (the serial output and the
    /// parallel one, of the plain names or a value's).
    pub fn is_checked_output(&self, name: &str) -> bool {
        let Some(rest) = name.strip_prefix(&*self.serial_out) else {
            return false;
        };
        let rest = match rest.strip_prefix('[') {
            Some(r) => match r.split_once(']') {
                Some((label, after)) if !label.is_empty() => after,
                _ => return false,
            },
            None => rest,
        };
        rest.starts_with('-') && rest != "-parallel"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_values_names_carry_its_label_and_read_back() {
        let v = ITEMS.of_value("a=1,b=x");
        assert_eq!(v.serial, "cold_prepare[a=1,b=x]");
        assert_eq!(v.parallel, "cold_prepare_parallel[a=1,b=x]");
        assert_eq!(v.serial_out, "private-output[a=1,b=x]");
        assert_eq!(v.parallel_out, "private-output[a=1,b=x]-parallel");
        assert_eq!(Names::value_of("cold_prepare_parallel[a=1,b=x]#3"), Some("a=1,b=x"));
        assert_eq!(Names::value_of("cold_prepare[a=1]"), Some("a=1"));
        for plain in ["cold_prepare", "cold_prepare#2", "cold_prepare[]", "x[a=1]y"] {
            assert_eq!(Names::value_of(plain), None, "{plain}");
        }
    }

    #[test]
    fn checked_outputs_are_told_from_sealed_ones() {
        for (name, checked) in [
            ("private-output", false),
            ("private-output-parallel", false),
            ("private-output[a=1]", false),
            ("private-output[a=1]-parallel", false),
            ("private-output-round2", true),
            ("private-output-parallel-w2", true),
            ("private-output[a=1]-round2", true),
            ("private-output[a=1]-parallel-round2", true),
            ("private-outputs", false),
            ("private-output[]-round2", false),
            ("private-output[a=1", false),
            ("other-round2", false),
        ] {
            assert_eq!(ITEMS.is_checked_output(name), checked, "{name}");
        }
    }
}
