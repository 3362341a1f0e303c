//! The `tokfire` binary: parse arguments, run, print `Error: …` and set the exit code.

use clap::Parser;

fn main() {
    quiet_library_backtraces();
    let cli = tokfire::cli::Cli::parse();
    if let Err(err) = tokfire::run(cli) {
        eprintln!("{}", tokfire::report::wrap(&format!("Error: {err:#}")));
        std::process::exit(tokfire::cmd::exit_code(&err));
    }
}

/// candle captures a backtrace into every error it makes when `RUST_BACKTRACE` is set and prints
/// it as part of the message. Library backtraces are turned off (panics keep theirs) unless the
/// user asks for them with `RUST_LIB_BACKTRACE` or for debug logs with `TOKFIRE_LOG`, where the
/// model loader logs them at debug level instead of printing them in the error.
fn quiet_library_backtraces() {
    let debug =
        std::env::var("TOKFIRE_LOG").is_ok_and(|v| v.contains("debug") || v.contains("trace"));
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() && !debug {
        // Called first thing in main, before any other thread exists.
        std::env::set_var("RUST_LIB_BACKTRACE", "0");
    }
}
