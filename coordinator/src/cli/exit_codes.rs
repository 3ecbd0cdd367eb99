//! Exit codes come from error kinds alone: each subsystem's error converts
//! into `Error` by its variant, never by its text.

/// A path refused before the run is bad usage (2); a write that fails
/// after it, with the evidence complete, is a failure (1). The kind
/// decides, whatever the text says.
#[test]
fn a_refusal_is_usage_and_a_failed_write_is_a_failure() {
    use crate::error::Error;
    use report::render::export::ExportError;
    let full = || std::io::Error::from_raw_os_error(libc::ENOSPC);
    let code = |e: ExportError| Error::from(e).exit_code();
    assert_eq!(code(ExportError::Exists("--export-json", "x".into())), 2);
    assert_eq!(code(ExportError::NamedTwice("--export-json", "x".into())), 2);
    assert_eq!(code(ExportError::NoFolder("--export-json", "d/x".into(), "d".into())), 2);
    assert_eq!(code(ExportError::Write("--export-json", "x".into(), full())), 1);
    let dash = |e: report::dashboard::DashboardError| Error::from(e).exit_code();
    assert_eq!(dash(report::dashboard::DashboardError::NotOurs("README.md".into())), 2);
    assert_eq!(dash(report::dashboard::DashboardError::Write("README.md".into(), full())), 1);
    let data = |e: host::dataset::DatasetError| Error::from(e).exit_code();
    assert_eq!(data(host::dataset::DatasetError::Input("no frozen.json".into())), 2);
    assert_eq!(data(host::dataset::DatasetError::Io("cannot create".into())), 1);
    let cmp = |e: report::compare::CompareError| Error::from(e).exit_code();
    assert_eq!(cmp(report::compare::CompareError::OutputExists("out".into())), 2);
    assert_eq!(cmp(report::compare::CompareError::Write("writing compare.txt".into())), 1);
    assert_eq!(Error::from(crate::error::Refusal("--workers 0".into())).exit_code(), 2);
}
