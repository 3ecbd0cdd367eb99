//! What each mode adds to report.json, and how it shows itself. A run's
//! [`Report`] is the part every mode shares and one [`Section`]: the
//! mode's own records, one variant per mode, tagged by `mode`. Every view
//! (summary.md, the plots, the console, the exports) walks a section
//! through [`ModeSection`], so no view asks which mode it has. What each
//! mode runs is the coordinator's; what it records is here.

// Floor 0: the names, wording and judgments several modes share.
pub mod input_wait;
pub mod params;
pub mod preparation;
pub mod scan;
// Floor 1: each mode's section.
pub mod cold_prep;
pub mod diagnostic;
pub mod profile;
pub mod recipe;
pub mod trials;
// Floor 2: the report: its common part and the section, one enum.
pub mod report;
pub mod section;

pub use report::Report;
pub use section::{ModeSection, Section};
