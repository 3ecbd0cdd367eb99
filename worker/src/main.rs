use std::process::ExitCode;

fn main() -> ExitCode {
    // Before anything changes them: what a user's program is started with.
    worker::child_signals::record();
    worker::alloc::configure();
    // Both before any other thread exists (settle writes the environment;
    // the SIGTERM block must be inherited by every later thread).
    worker::threads::settle();
    worker::tree::start_watcher();
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        None => ExitCode::from(worker::session::run_from_env()),
        Some("--version" | "-V") => {
            println!("worker {}", protocol::program::VERSION);
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!(
                "worker: unexpected argument '{other}'; workers are started by the coordinator \
                 (try `coordinator --help`), and take only --version"
            );
            ExitCode::from(protocol::exit::worker::SETUP)
        }
    }
}
