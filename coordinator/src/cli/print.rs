//! `coordinator doctor`: this machine's record, read now, and what makes
//! measurements on it hard to trust (a run's console is `report`'s
//! `render::console`).

use protocol::exit::coordinator as code;

/// `coordinator doctor`: the machine's state and its warnings; the exit code.
pub(super) fn doctor(workers: u32) -> u8 {
    use report::rundir::environment;
    let env = host::machine::capture("local", std::path::Path::new("."));
    for line in environment::described(&env) {
        println!("{line}");
    }
    let warnings = environment::warnings_now(&env, workers);
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
