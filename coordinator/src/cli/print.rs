//! What a person reads on stdout when a run ends: the stage table, the
//! cold-prep and trials lines, and where the evidence is.

use crate::run::RunSummary;
use protocol::exit::coordinator as code;
use report::fmt::mib;

/// `requested_workers`: what `--workers` asked for (cold-prep starts no more
/// processes than series).
pub(super) fn print_summary(s: &RunSummary, requested_workers: u32) {
    let r = &s.report;
    println!(
        "stagebench {} run: {} stage(s) in {} worker process(es), {:.3} s",
        r.mode(),
        r.stages.len(),
        r.workers.len(),
        r.run_wall_s
    );
    // As wide as the longest key (a round's or a sweep's key is long).
    let w = r.stages.keys().map(String::len).max().unwrap_or(0).max(36);
    println!(
        "  {:<w$} {:>6} {:>10} {:>10} {:>12}",
        "stage", "worker", "wall s", "cpu s", "peak RSS"
    );
    let mut rows: Vec<_> = r.stages.iter().collect();
    rows.sort_by_key(|(_, st)| st.order);
    for (key, st) in rows {
        let worker = match st.worker {
            Some(w) => w.to_string(),
            None => format!("{}x", st.processes),
        };
        println!(
            "  {:<w$} {:>6} {:>10.3} {:>10.3} {:>12}",
            key,
            worker,
            st.wall_s,
            st.cpu_s,
            mib(st.peak_rss_bytes)
        );
    }
    let mut ordered: Vec<_> = r.stages.iter().collect();
    ordered.sort_by_key(|(_, st)| st.order);
    // A later round's phase (`BASE#R`) repeats its first round's spans:
    // the console shows round 1's, summary.md and report.json every round's.
    let rounds = r.section.has_rounds();
    let later = |key: &str| rounds && report::rundir::keys::repeat_of(key).is_some();
    let mut unshown = 0;
    for (key, st) in ordered {
        if let Some(w) = st.spans_not_found_warning(key) {
            println!("  warning: {w}");
        }
        for w in &st.span_warnings {
            println!("  warning: {key}: {w}");
        }
        if let Some(note) = st.memory_note(key) {
            println!("  note: {note}");
        }
        if later(key) && !st.spans.is_empty() {
            unshown += 1;
        } else {
            for line in report::rundir::spans::lines(key, &st.spans, st.span_totals.as_ref()) {
                println!("  {line}");
            }
        }
        if !st.command_stages.is_empty() {
            use report::rundir::spans::{COMMAND_STAGE_COLUMNS as C, command_stage_cells};
            println!("  stages inside {key} (its process's own CPU and memory):");
            println!(
                "    {:<20} {:>9} {:>9} {:>12} {:>12}  {}",
                C[0], C[1], C[2], C[3], C[4], C[5]
            );
            for c in command_stage_cells(&st.command_stages) {
                println!(
                    "    {:<20} {:>9} {:>9} {:>12} {:>12}  {}",
                    c[0], c[1], c[2], c[3], c[4], c[5]
                );
            }
        }
        if let (Some(v), "command") =
            (report::modes::input_wait::preset_verdict(&st.figures), st.stage_kind())
        {
            let trials = if r.trials().is_some() { "; medians over trials" } else { "" };
            println!("  input: {key} {v}{trials}");
        }
    }
    if unshown > 0 {
        println!(
            "  spans: {unshown} later-round phase(s) (`#2` on) not shown here: summary.md and report.json hold each"
        );
    }
    r.section.console(r, requested_workers);
    if let Some(line) = r.inputs_line() {
        println!("{line}");
    }
    for w in &r.machine_warnings {
        eprintln!("warning: {w}");
    }
    let jobs = r.artifacts.iter().any(|a| a.kind == report::rundir::jobs::KIND);
    println!(
        "evidence: {}/ (declaration.json, environment.json, report.json{}; summary.md and plots/ derived from it)",
        s.dir.display(),
        if jobs { " binding jobs.jsonl.gz" } else { "" }
    );
}

/// `coordinator doctor`: the machine's state and its warnings; the exit code.
pub(super) fn doctor(workers: u32) -> u8 {
    use report::rundir::environment;
    let env = crate::machine::capture("local", std::path::Path::new("."));
    let or = |v: Option<String>| v.unwrap_or_else(|| "unknown".into());
    let c = &env.cpu;
    println!("cpu: {}", or(c.model.clone()));
    println!(
        "  cores: {} logical, {} physical; SMT {}",
        c.logical_cores,
        or(c.physical_cores.map(|n| n.to_string())),
        or(c.smt.map(|s| if s { "on" } else { "off" }.to_string()))
    );
    println!(
        "  governor {}; boost {}",
        or(c.governor.clone()),
        or(c.boost.map(|b| if b { "on" } else { "off" }.to_string()))
    );
    println!(
        "memory: {} total; cgroup limit {}; cgroup CPU quota {}",
        or(env.memory_bytes.map(report::fmt::mib)),
        env.limits.memory_limit_bytes.map_or("none".into(), report::fmt::mib),
        env.limits.cpu_quota_cores.map_or("none".into(), |q| format!("{q:.2} cores"))
    );
    println!(
        "kernel {}; transparent huge pages {} (defrag {}); ASLR {}",
        or(env.os.kernel.clone()),
        or(env.transparent_hugepages.enabled.clone()),
        or(env.transparent_hugepages.defrag.clone()),
        or(env.aslr.map(|a| a.to_string()))
    );
    if let Some(fs) = &env.output_filesystem {
        let journal = match fs.journal {
            Some(true) => ", with a journal",
            Some(false) => ", without a journal",
            None => "",
        };
        println!("this directory's file system: {}{journal}", fs.kind);
    }
    if let Some([one, five, fifteen]) = env.load_average {
        println!("load average {one:.2} {five:.2} {fifteen:.2}");
    }
    for (what, why) in &env.unknown {
        println!("unknown {what}: {why}");
    }
    // Load now, said as now (a run says start and end).
    let mut warnings: Vec<String> = env
        .load_average
        .map(|l| l[0])
        .filter(|l| *l > environment::BUSY_LOAD_PER_CORE * env.cpu.logical_cores as f64)
        .map(|l| {
            format!(
                "load average {l:.2} now on {} cores: the machine is not idle",
                env.cpu.logical_cores
            )
        })
        .into_iter()
        .collect();
    warnings.extend(environment::warnings(&env, workers, None, false));
    for w in &warnings {
        println!("warning: {w}");
    }
    match warnings.is_empty() {
        true => {
            println!("no warning for {workers} worker(s)");
            code::SUCCESS
        }
        false => code::RUN_FAILED,
    }
}
