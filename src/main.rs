//! The `tokfire` binary: parse arguments, run, print `Error: …` and set the exit code.

use clap::Parser;

fn main() {
    quiet_library_backtraces();
    file_size_limit_is_an_error();
    let cli = tokfire::cli::Cli::parse();
    if cli.only_prints() {
        closed_pipe_ends_quietly();
    }
    candle_threads(cli.threads());
    if let Err(err) = tokfire::run(cli) {
        let text = tokfire::report::wrap(&format!("Error: {err:#}"));
        eprintln!("{}", tokfire::report::terminal_safe(&text));
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

/// A write past the file size limit (`ulimit -f`) kills a process with SIGXFSZ by default,
/// leaving a run `running` with no reason; ignored, the write fails with EFBIG like a full
/// disk, and the run is saved failed, naming the file and the reason.
fn file_size_limit_is_an_error() {
    // SAFETY: setting a signal's disposition to "ignore" first thing in main, before any
    // other thread exists; no handler runs.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Rust ignores SIGPIPE, so a print to a pipe its reader closed (`tokfire report F | head`)
/// fails and `println!` panics. For verbs that only print, SIGPIPE's default ends the process
/// quietly there instead (exit by signal, as `cat` does); verbs that write records keep it
/// ignored, so a closed pipe cannot kill a run before its record is saved.
fn closed_pipe_ends_quietly() {
    // SAFETY: setting a signal's disposition to its default first thing in main, before any
    // other thread exists; no handler runs.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The library builds its own thread pools with the thread count it is given; candle's dense
/// matmuls (gemm) split their work by the count in `RAYON_NUM_THREADS`/`CANDLE_NUM_THREADS`
/// instead (else the physical cores). Where the command names `--threads`, both are set to it
/// here, before any thread exists; `cold` hands them on to its children with its environment.
fn candle_threads(threads: Option<usize>) {
    if let Some(n) = threads {
        std::env::set_var("RAYON_NUM_THREADS", n.to_string());
        std::env::set_var("CANDLE_NUM_THREADS", n.to_string());
    }
}
