use std::process::ExitCode;

fn main() -> ExitCode {
    coordinator::cli::run(coordinator::cli::parse())
}
