//! `compare --output DIR`: the table and the forest plot, written into a
//! new directory whole or not at all.

use super::{CompareError, Comparison, plot, render};
use std::path::Path;

/// Files `compare --output DIR` writes.
pub const OUTPUT_FILES: [&str; 3] = ["compare.txt", "forest.svg", "forest.png"];

/// Writes the table and the forest plot into a new directory `out`, whole or
/// not at all; an existing `out` is refused and left alone.
pub fn write_output(out: &Path, c: &Comparison, threshold_pct: f64) -> Result<(), CompareError> {
    let named = || format!("'{}'", out.display());
    let staging = evidence::Staging::new(out).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => CompareError::OutputExists(out.display().to_string()),
        _ => CompareError::Write(format!("cannot create output {}: {e}", named())),
    })?;
    let (svg, png) =
        plot::svg_and_png(c, threshold_pct).map_err(|e| CompareError::Write(e.to_string()))?;
    let table = render(c, threshold_pct);
    for (name, bytes) in OUTPUT_FILES.iter().zip([table.as_bytes(), &svg, &png]) {
        evidence::write_atomic(&staging.path().join(name), bytes)
            .map_err(|e| CompareError::Write(format!("writing {name}: {e}")))?;
    }
    staging
        .publish()
        .map_err(|e| CompareError::Write(format!("publishing output {}: {e}", named())))
}
