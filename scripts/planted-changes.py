#!/usr/bin/env python3
"""The audit's planted changes (issue 30), each applied by hand and run
against the test that must fail under it (docs/testing.md).

    python3 scripts/planted-changes.py [N ...]     default: every change
    python3 scripts/planted-changes.py --check     each change's text is where
                                                   it is looked for, once (CI)

For each change: the file is edited, `cargo test` runs the named test, the
file is restored (also on Ctrl-C), and one line says CAUGHT (the test
failed, as it must) or SURVIVED. Exits 1 when any change survived. Run by
hand, on a clean tree; it edits the sources while it runs.
"""
import os
import subprocess
import sys

os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
P = {
 1: ('coordinator/src/modes/cold_prep/assemble.rs', 'let identical = serial_manifest == par_manifest;', 'let identical = true;',
     ['-p','stagebench-tests','--test','cold_prep','caches_that_differ']),
 2: ('coordinator/src/modes/cold_prep/rounds.rs', 'if manifest != sealed {', 'if false {',
     ['-p','stagebench-tests','--test','cold_prep','caches_that_differ']),
 3: ('coordinator/src/campaign/runner/recipe.rs', 'let identical = reference.as_ref().is_some_and(|(r, _)| *r == digest);', 'let identical = true;',
     ['-p','stagebench-tests','--test','campaign','a_recipe_resume_that_trains_differently']),
 4: ('coordinator/src/campaign/runner/pipeline.rs', 'let identical = reference.as_ref().is_some_and(|(r, _)| *r == digest);', 'let identical = true;',
     ['-p','stagebench-tests','--test','campaign','a_resume_that_writes_a_different_byte']),
 5: ('report/src/compare/mod.rs', 'ratio > 1.0 + threshold_pct / 100.0', 'ratio > 1.0',
     ['-p','stagebench-report','--lib','compare::']),
 6: ('coordinator/src/modes/cold_prep/assemble.rs', '(s.median, Some(s.median_interval), all)', '(s.median, Some(report::stats::Interval { low: s.median, high: s.median, ..s.median_interval }), all)',
     ['-p','stagebench-tests','--test','cold_prep','serial_and_parallel']),
 7: ('worker/src/tree/mod.rs', 'let leaked: Vec<String> = alive.iter().filter_map(|p| comm(*p)).collect();', 'let leaked: Vec<String> = alive.iter().filter_map(|p| comm(*p)).take(1).collect();',
     ['-p','stagebench-tests','--test','trees','three_leaked']),
 8: ('coordinator/src/run/ending.rs', 'LeakPolicy::Warn => eprintln!("warning: {what}"),', 'LeakPolicy::Warn => {}',
     ['-p','stagebench-tests','--test','trees','three_leaked']),
 9: ('report/src/campaign/spans/mod.rs', 'x.seconds > 0.0 && !x.stages.iter().all(|st| is_work(&format!("{st}/{}", x.name)))', 'x.seconds > 0.0',
     ['-p','stagebench-report','--lib','campaign::spans']),
 10: ('coordinator/src/modes/preparation/side.rs', '.map(|(peak, _)| *peak).max()', '.map(|(peak, _)| *peak).min()',
     ['-p','stagebench-coordinator','--lib','preparation::side']),
 11: ('report/src/rundir/tree.rs', '                        self.walk(dir, &r, limit, found);', '                        let _ = &r;',
     ['-p','stagebench-tests','--test','verify','verify_catches_added']),
 12: ('host/src/dirlock.rs', '    let _ = file.set_len(0);\n', '',
     ['-p','stagebench-host','--lib','dirlock']),
}
if sys.argv[1:] == ['--check']:
    # A moved file or a reworded line breaks CI here, not the next audit.
    lost = []
    for n, (path, old, _, _) in sorted(P.items()):
        found = open(path).read().count(old) if os.path.isfile(path) else -1
        if found != 1:
            lost.append(f"{n}: {path}: " + ("no such file" if found < 0 else f"its text stands {found} times, not once"))
    print("\n".join(lost) or f"every planted change's text stands once where it is looked for ({len(P)} changes)")
    sys.exit(1 if lost else 0)
survived = 0
for n in [int(a) for a in sys.argv[1:]] or sorted(P):
    path, old, new, args = P[n]
    orig = open(path).read()
    assert orig.count(old) == 1, (n, orig.count(old))
    open(path, 'w').write(orig.replace(old, new))
    try:
        r = subprocess.run(['cargo', 'test', '--quiet'] + args, capture_output=True, text=True, timeout=1500)
        out = r.stdout + r.stderr
        failed = [l for l in out.splitlines() if 'FAILED' in l or 'panicked' in l][:3]
        print(f"{n}: {path}: {'CAUGHT' if r.returncode != 0 else 'SURVIVED'}; {failed[:1]}", flush=True)
        survived += r.returncode == 0
    finally:
        open(path, 'w').write(orig)
sys.exit(1 if survived else 0)
