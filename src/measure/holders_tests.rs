//! Unit tests of `crate::measure::holders`.

use super::*;

#[test]
fn maps_lines_match_by_device_and_inode() {
    let l = "7f0a1c000000-7f0a1d000000 r--s 00000000 103:02 5505078   /models/m.gguf";
    assert!(maps_line_matches(l, "103:02", 5505078));
    assert!(!maps_line_matches(l, "103:02", 5505079));
    assert!(!maps_line_matches(l, "08:01", 5505078));
    assert!(!maps_line_matches("garbage", "08:01", 1));
}

#[cfg(target_os = "linux")]
#[test]
fn a_process_that_maps_the_file_is_named() {
    let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
    let p = dir.path().join("m.bin");
    std::fs::write(&p, vec![1u8; 8192]).unwrap();
    assert!(holders(&[p.as_path()]).is_empty());
    // python3 maps the file and waits: a process other than this one.
    let script = format!(
        "import mmap,sys,time\nf=open({:?},'rb')\nm=mmap.mmap(f.fileno(),0,access=mmap.ACCESS_READ)\nprint('ok',flush=True)\ntime.sleep(30)",
        p.display().to_string()
    );
    let Ok(mut child) = std::process::Command::new("python3")
        .args(["-c", &script])
        .stdout(std::process::Stdio::piped())
        .spawn()
    else {
        return; // no python3 here
    };
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let held = holders(&[p.as_path()]);
    let why = why_resident(&[p.as_path()], None, FIX_COLD);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0].pid, child.id());
    assert!(why.contains(&format!("pid {}", child.id())), "{why}");
    assert!(why.contains("--private-copy"), "{why}");
}
