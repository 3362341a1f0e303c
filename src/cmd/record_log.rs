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
    let log = RecordWriter::at(out).append_log(&crate::report::wrap(&text))?;
    say_where(out, &log, "");
    Ok(())
}

/// The closing stderr lines: where the record (`which` names what of it, e.g. both arms) and
/// the log beside it went.
pub(super) fn say_where(out: &Path, log: &Path, which: &str) {
    eprint!(
        "{}",
        crate::report::wrap(&format!(
            "record appended to {}{which}\nsummary appended to {}\n",
            out.display(),
            log.display()
        ))
    );
}
