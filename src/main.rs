//! The `tokfire` binary: parse arguments, run, print `Error: …` and set the exit code.

use clap::Parser;

fn main() {
    let cli = tokfire::cli::Cli::parse();
    if let Err(err) = tokfire::run(cli) {
        eprintln!("Error: {err:#}");
        std::process::exit(tokfire::cmd::exit_code(&err));
    }
}
