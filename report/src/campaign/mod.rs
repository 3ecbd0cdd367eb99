//! A campaign directory's evidence (`coordinator campaign`): its report
//! (every trial of every step decomposed per stage and component, and the
//! judgment computed from them), summary.md, its plot and its trace. The
//! coordinator's `campaign` runs the steps; what they record is here.

mod page;
mod plot;
pub mod report;
pub mod roles;
// (spans: a pipeline's campaign judged by its own spans and their roles)
pub mod spans;
pub mod summary;
pub mod trace;

pub const SCHEMA_DECLARATION: &str = "stagebench.campaign-declaration";

/// A campaign directory's folder for what must never be evidence (the
/// paths of files whose content differs between runs): `verify` leaves it
/// unread.
pub const PRIVATE: &str = "private";
