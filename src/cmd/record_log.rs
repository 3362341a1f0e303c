//! The plain-text log beside a record: a verb's rendering of a finished run appended under one
//! header line (`== started · run id · status ==`) to the `.txt` file next to `--out`, and the
//! closing stderr line that says where the record and the log went.

use std::path::Path;

use crate::record::io::RecordWriter;
use crate::record::RunRecord;

/// Appends `body` (the run rendered as text) under the run's header line to the log beside
/// `out`, then says on stderr where both are.
pub(super) fn append_and_say(out: &Path, run: &RunRecord, body: &str) -> anyhow::Result<()> {
    let text = format!(
        "== {} · run {} · {} ==\n{}\n",
        run.started_utc,
        run.id,
        run.status.label(),
        body
    );
    let log = RecordWriter::at(out).append_log(&text)?;
    eprintln!(
        "record appended to {}, summary to {}",
        out.display(),
        log.display()
    );
    Ok(())
}
