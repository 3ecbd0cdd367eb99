//! `STAGEBENCH_SPANS_CPU=1`: each span's calls also take their thread's CPU
//! time, `span:NAME_cpu_s`, held to a spin (CPU about its wall) and a sleep
//! (next to none); without it there is no such figure.

use harness::{coordinator_with_output, python, run};

const PROGRAM: &str = "import sys, time\n\
sys.path.insert(0, sys.argv[1])\n\
def spin():\n    t = time.perf_counter()\n    while time.perf_counter() - t < 0.08:\n        pass\n\
def rest():\n    time.sleep(0.08)\n\
spin(); rest()\n";

#[test]
fn a_spans_cpu_time_is_its_threads_and_only_where_asked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cpu_prog.py"), PROGRAM).unwrap();
    for asked in [true, false] {
        let (_tmp, out, mut c) = coordinator_with_output();
        let py = python(&mut c);
        if asked {
            c.env("STAGEBENCH_SPANS_CPU", "1");
        } else {
            c.env_remove("STAGEBENCH_SPANS_CPU");
        }
        c.args(["--quiet", "--name", "cpu", "--span", "__main__:spin", "--span", "__main__:rest"]);
        c.arg("--command").arg(format!(
            "'{py}' '{}' '{}'",
            dir.path().join("cpu_prog.py").display(),
            dir.path().display()
        ));
        let f = run(c);
        assert_eq!(f.code(), Some(0), "{}", f.stderr);
        let r = harness::reports::read(&out);
        let stage = harness::reports::stage(&r, "cpu");
        let figure = |name: &str| stage.figures.get(name).copied();
        let (spin, rest) = (figure("span:spin_s").unwrap(), figure("span:rest_s").unwrap());
        assert!(spin >= 0.08 && rest >= 0.08, "{:?}", stage.figures);
        match asked {
            true => {
                let spin_cpu = figure("span:spin_cpu_s").expect("the spin's CPU time");
                let rest_cpu = figure("span:rest_cpu_s").expect("the sleep's CPU time");
                // A spin is on the CPU for most of its wall (a busy machine
                // takes some); a sleep next to none of it.
                assert!(spin_cpu > 0.5 * spin && spin_cpu <= spin * 1.02, "{spin_cpu} of {spin}");
                assert!(rest_cpu < 0.1 * rest, "{rest_cpu} of {rest}");
            }
            false => {
                let cpu: Vec<&String> =
                    stage.figures.keys().filter(|k| k.ends_with("_cpu_s")).collect();
                assert!(cpu.is_empty(), "not asked, yet {cpu:?}");
            }
        }
    }
}
