//! Records the git commit and rustc version of this build for result provenance, and the
//! default model's name from `models/manifest.toml` (its `default = "..."` line), so the name is
//! written once.

use std::process::Command;

fn main() {
    let run = |cmd: &str, args: &[&str]| -> Option<String> {
        let out = Command::new(cmd).args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let commit =
        run("git", &["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = run(&rustc, &["-V"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=TOKFIRE_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=TOKFIRE_RUSTC={rustc_version}");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
    println!("cargo:rerun-if-changed=build.rs");
    let manifest = std::fs::read_to_string("models/manifest.toml").expect("models/manifest.toml");
    let default = manifest
        .lines()
        .find_map(|l| l.strip_prefix("default = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .expect("models/manifest.toml has a `default = \"NAME\"` line");
    println!("cargo:rustc-env=TOKFIRE_DEFAULT_MODEL={default}");
    println!("cargo:rerun-if-changed=models/manifest.toml");
}
