use std::process::ExitCode;

fn main() -> ExitCode {
    coordinator::cli::main()
}
