//! Unit tests of `crate::measure::memory`.

use super::*;

#[test]
fn parses_proc_fields() {
    let text = "Name:\tx\nVmHWM:\t  1234 kB\nVmRSS:\t 1000 kB\n";
    assert_eq!(field(text, "VmHWM:"), Some(1234));
    assert_eq!(field(text, "VmSwap:"), None);
}

#[cfg(target_os = "linux")]
#[test]
fn reads_this_process() {
    let peak = peak_rss_bytes().expect("linux has VmHWM");
    let now = status_kib("VmRSS:").expect("linux has VmRSS") * 1024;
    assert!(peak >= now / 2 && now > 0);
    assert!(total_memory_bytes().unwrap_or(0) > now);
}
