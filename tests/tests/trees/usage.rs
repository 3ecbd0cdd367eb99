//! What a tree used: its peak at once against the sum of its processes'
//! own peaks (sampled, from `wait4`, from the cgroup), an orphan's CPU, and
//! its I/O without the sampler's own.

use super::*;

#[test]
fn four_children_at_once_are_one_tree_and_in_turn_are_not_by_every_method() {
    let s = scripts();
    let default = if cgroups_here() { "cgroup" } else { "sampled" };
    for (forced, method) in [(None, default), (Some("sampled"), "sampled")] {
        let together = command_stage_by(&py(&s, "tree.py", "together 4 100 0.6"), &[], forced);
        assert_eq!(together.tree_peak_method, method, "{together:?}");
        let peak = mib(together.tree_peak_bytes);
        assert!(peak >= 390.0, "4 x 100 MiB at once, {method}: {together:?}");
        // The old figure, the worker and its largest descendant, stays as it was.
        assert!(mib(together.peak_rss_bytes) < 200.0, "{together:?}");
        if method == "cgroup" {
            let anon = mib(together.tree_peak_anon_bytes.expect("the anonymous part"));
            assert!(anon >= 350.0, "the split shows the children's anonymous pages: {together:?}");
        }
        eprintln!("4 x 100 MiB at once, {method}: tree peak {peak:.1} MiB");

        let in_turn = command_stage_by(&py(&s, "tree.py", "sequence 4 100 0.3"), &[], forced);
        assert_eq!(in_turn.tree_peak_method, method, "{in_turn:?}");
        let peak = mib(in_turn.tree_peak_bytes);
        assert!(peak < 160.0, "one 100 MiB child at a time, {method}: {in_turn:?}");
        assert!(mib(in_turn.sum_of_peaks_bytes) >= 400.0, "{in_turn:?}");
        assert_eq!(in_turn.leaked_processes.count, 0);
        eprintln!(
            "4 x 100 MiB in turn, {method}: tree peak {peak:.1} MiB, sum of peaks {:.1} MiB",
            mib(in_turn.sum_of_peaks_bytes)
        );
    }
}

/// A peak between two samples (10 s apart, in a stage of about a second)
/// is one sampling cannot see: the sampled tree peak stays small, which is
/// the control. The sum of peaks still counts it, from the `ru_maxrss` the
/// worker's own `wait4` gave, for the command's process and for an orphan
/// the worker reaped; the kernel's cgroup peak, where there is one, sees it.
#[test]
fn a_peak_between_samples_is_kept_by_the_wait4_of_the_process_that_made_it() {
    let s = scripts();
    let slow = ["--sample-ms", "10000"];
    for who in ["own", "orphan"] {
        let st =
            command_stage_by(&py(&s, "spike.py", &format!("{who} 256")), &slow, Some("sampled"));
        assert_eq!(st.tree_peak_method, "sampled", "{st:?}");
        assert!(mib(st.tree_peak_bytes) < 128.0, "{who}: the samples saw the spike: {st:?}");
        assert!(mib(st.sum_of_peaks_bytes) >= 256.0, "{who}: the spike's 256 MiB: {st:?}");
        // Its processes' own peaks added: the spike, two Pythons, a shell
        // and the worker, not more.
        assert!(mib(st.sum_of_peaks_bytes) < 512.0, "{who}: {st:?}");
        if cgroups_here() {
            let st = command_stage_by(&py(&s, "spike.py", &format!("{who} 256")), &slow, None);
            assert_eq!(st.tree_peak_method, "cgroup", "{st:?}");
            assert!(mib(st.tree_peak_bytes) >= 256.0, "{who}: the cgroup's peak: {st:?}");
        }
    }
}

/// With no process of its own, a stage's tree is its worker.
#[test]
fn a_worker_alone_is_its_own_tree() {
    let (_tmp, out, mut c) = coordinator_with_output();
    c.args(["--quiet", "--stage", "alloc:256"]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = harness::reports::read(&out);
    let st = harness::reports::stage(&report, "alloc:256");
    let (tree, own) = (mib(st.tree_peak_bytes), mib(st.peak_rss_bytes));
    assert!(own >= 256.0, "{st:?}");
    assert!(tree >= own && tree <= 1.02 * own, "tree {tree} MiB against the worker's {own} MiB");
}

#[test]
fn an_orphans_cpu_counts_in_its_stage() {
    let s = scripts();
    let st = command_stage(&py(&s, "orphan.py", ""), &[]);
    let cpu = st.cpu_s;
    assert!(cpu >= 0.27, "the grandchild's 0.3 s of CPU is missing: cpu_s {cpu}");
    assert_eq!(st.leaked_processes.count, 0, "it had exited: {st:?}");
}

/// The tree thread's own reads of /proc are not the stage's I/O: a
/// `sleep 1` sampled every millisecond (about a thousand samples, each
/// several reads of /proc) shows the few hundred read calls a shell and a
/// `sleep` make, not the sampler's thousands.
#[test]
fn the_samplers_own_reads_are_not_the_stages_io() {
    let st = command_stage_by("sleep 1", &["--sample-ms", "1"], Some("sampled"));
    let syscr = st.io.as_ref().unwrap_or_else(|| panic!("no I/O in {st:?}")).syscr;
    assert!(syscr < 1000, "the sampler's reads were counted: {syscr} read calls: {st:?}");
    assert!(syscr > 0, "a shell and sleep read nothing? {st:?}");
}

#[test]
fn trials_give_the_tree_the_statistics_of_every_figure() {
    let s = scripts();
    let (_tmp, out, mut c) = coordinator_with_output();
    c.args(["--quiet", "--mode", "trials", "--trials", "3", "--warmup", "0", "--command"]);
    c.arg(py(&s, "tree.py", "together 2 40 0.2"));
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let r = harness::reports::read(&out);
    let t = &harness::reports::trials(&r).trials["command"];
    assert_eq!(t.samples["tree_peak_bytes"].len(), 3, "{t:?}");
    let median = t.summary["tree_peak_bytes"].median;
    assert!(median / MIB >= 80.0, "two 40 MiB children at once: {} MiB", median / MIB);
    // The stage record carries the median, as for every other figure.
    assert_eq!(harness::reports::stage(&r, "command").tree_peak_bytes, median as u64);
}
