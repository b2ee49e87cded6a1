//! The `taskrail` binary: hands over to the command line in `taskrail::cli`.

fn main() -> std::process::ExitCode {
    taskrail::cli::main()
}
