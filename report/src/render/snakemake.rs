//! `--export-benchmark-tsv`: a run as Snakemake's benchmark file, the table
//! pipeline users already parse (Snakemake's `benchmark:` directive; the
//! Rust crate `tricord` writes the same). Snakemake's extended format: its
//! ten columns, then `jobid rule wildcards params threads cpu_usage
//! resources input_size_mb`, one row per stage and counted trial (`rule` is
//! the stage's key, `jobid` the trial's number, from 1), in Snakemake's
//! units: seconds (`s` with four decimals), `h:m:s`, MB (MiB, as Snakemake
//! divides by 1024²) with two decimals, `mean_load` in percent of one core.
//! A column stagebench cannot fill is `NA`, as Snakemake writes it: the
//! virtual, unique and proportional set sizes (never sampled), the I/O of a
//! stage measured without it, and the rule's wildcards, params, threads,
//! resources and inputs, which a stage does not have.

use crate::modes::Report;

/// Snakemake's extended header, column for column.
pub const HEADER: [&str; 18] = [
    "s",
    "h:m:s",
    "max_rss",
    "max_vms",
    "max_uss",
    "max_pss",
    "io_in",
    "io_out",
    "mean_load",
    "cpu_time",
    "jobid",
    "rule",
    "wildcards",
    "params",
    "threads",
    "cpu_usage",
    "resources",
    "input_size_mb",
];

const NA: &str = "NA";
const MB: f64 = 1024.0 * 1024.0;

/// One measurement of a stage: wall and CPU seconds, the tree's peak, and
/// storage read and written, where measured.
struct Sample {
    wall_s: f64,
    cpu_s: f64,
    tree_peak_bytes: f64,
    io: Option<(f64, f64)>,
}

/// Snakemake's `h:m:s`: whole seconds, `H:MM:SS`, days as `N day(s), `.
fn hms(seconds: f64) -> String {
    let total = seconds.max(0.0) as u64;
    let (days, rest) = (total / 86_400, total % 86_400);
    let clock = format!("{}:{:02}:{:02}", rest / 3600, rest % 3600 / 60, rest % 60);
    match days {
        0 => clock,
        1 => format!("1 day, {clock}"),
        n => format!("{n} days, {clock}"),
    }
}

fn row(rule: &str, jobid: usize, x: &Sample) -> String {
    let mb = |bytes: f64| format!("{:.2}", bytes / MB);
    let (io_in, io_out) = match x.io {
        Some((read, written)) => (mb(read), mb(written)),
        None => (NA.into(), NA.into()),
    };
    let load = match x.wall_s > 0.0 {
        true => format!("{:.2}", 100.0 * x.cpu_s / x.wall_s),
        false => NA.into(),
    };
    let rule: String = rule.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let cols = [
        format!("{:.4}", x.wall_s),
        hms(x.wall_s),
        mb(x.tree_peak_bytes),
        NA.into(),
        NA.into(),
        NA.into(),
        io_in,
        io_out,
        load,
        format!("{:.2}", x.cpu_s),
        jobid.to_string(),
        rule,
        NA.into(),
        NA.into(),
        NA.into(),
        NA.into(),
        NA.into(),
        NA.into(),
    ];
    cols.join("\t")
}

/// The TSV: the header, then per stage in plan order every counted trial,
/// or its one measurement.
pub fn tsv(r: &Report) -> String {
    let mut out = HEADER.join("\t");
    out.push('\n');
    for (key, st) in r.ordered() {
        let samples: Vec<Sample> = match r.trials().and_then(|t| t.get(key)) {
            Some(t) => {
                let of = |name: &str| t.samples.get(name).cloned().unwrap_or_default();
                let (walls, cpus, peaks) = (of("wall_s"), of("cpu_s"), of("tree_peak_bytes"));
                let (reads, writes) = (of("read_bytes"), of("write_bytes"));
                (0..walls.len())
                    .map(|i| Sample {
                        wall_s: walls[i],
                        cpu_s: cpus.get(i).copied().unwrap_or(0.0),
                        tree_peak_bytes: peaks.get(i).copied().unwrap_or(0.0),
                        io: reads.get(i).zip(writes.get(i)).map(|(r, w)| (*r, *w)),
                    })
                    .collect()
            }
            None => vec![Sample {
                wall_s: st.wall_s,
                cpu_s: st.cpu_s,
                tree_peak_bytes: st.tree_peak_bytes as f64,
                io: st.io.as_ref().map(|io| (io.read_bytes as f64, io.write_bytes as f64)),
            }],
        };
        for (i, x) in samples.iter().enumerate() {
            out.push_str(&row(key, i + 1, x));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_snakemakes_h_m_s() {
        assert_eq!(hms(0.4), "0:00:00");
        assert_eq!(hms(3725.9), "1:02:05");
        assert_eq!(hms(86_400.0 + 61.0), "1 day, 0:01:01");
        assert_eq!(hms(2.0 * 86_400.0), "2 days, 0:00:00");
    }

    #[test]
    fn a_row_has_every_column_in_snakemakes_units_and_na_where_unmeasured() {
        // Snakemake's MB is 1024 * 1024 bytes.
        let mib = 1_048_576.0;
        let x =
            Sample { wall_s: 2.0, cpu_s: 3.0, tree_peak_bytes: 10.0 * mib, io: Some((mib, 0.0)) };
        let cols: Vec<String> = row("train", 2, &x).split('\t').map(String::from).collect();
        assert_eq!(cols.len(), HEADER.len());
        let at = |name: &str| cols[HEADER.iter().position(|h| *h == name).unwrap()].as_str();
        assert_eq!(
            (at("s"), at("h:m:s"), at("max_rss"), at("io_in"), at("io_out")),
            ("2.0000", "0:00:02", "10.00", "1.00", "0.00")
        );
        assert_eq!(
            (at("mean_load"), at("cpu_time"), at("jobid"), at("rule")),
            ("150.00", "3.00", "2", "train")
        );
        assert_eq!((at("max_vms"), at("max_uss"), at("max_pss"), at("threads")), (NA, NA, NA, NA));
        let none = row("a\tb", 1, &Sample { io: None, wall_s: 0.0, ..x });
        let cols: Vec<&str> = none.split('\t').collect();
        assert_eq!(cols.len(), HEADER.len(), "a tab in a stage's key cannot add a column");
        assert_eq!((cols[6], cols[7], cols[8]), (NA, NA, NA));
    }

    /// A trials report (the recorded fixture, from before I/O was kept):
    /// the header, then a row per stage in plan order and per trial, each
    /// the trial's own wall time, I/O `NA`.
    #[test]
    fn a_trials_report_is_a_row_per_stage_and_trial_in_plan_order() {
        let r: Report = serde_json::from_str(include_str!("fixtures/trials-report.json")).unwrap();
        let text = tsv(&r);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], HEADER.join("\t"));
        assert_eq!(lines.len(), 1 + 3 * 8, "{text}");
        let trials = r.trials().unwrap();
        for (i, line) in lines[1..].iter().enumerate() {
            let cols: Vec<&str> = line.split('\t').collect();
            let (stage, trial) = (["noop", "sleep:20", "spin:30"][i / 8], i % 8);
            assert_eq!((cols[11], cols[10]), (stage, (trial + 1).to_string().as_str()));
            let wall = trials[stage].samples["wall_s"][trial];
            assert_eq!(cols[0], format!("{wall:.4}"));
            assert_eq!((cols[6], cols[7]), (NA, NA), "no I/O in this report");
        }
    }
}
