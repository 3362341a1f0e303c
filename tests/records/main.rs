//! Records read back: the HTML page, text snapshots of old records, workload files.
//!
//! One test binary for the area (link time on 2 cores); each file is a module.

mod format;
mod report_html;
mod report_snapshot;
mod workload;
