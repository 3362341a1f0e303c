//! File arguments other than the model: every text file the tool reads (a results record, a
//! workload, a session script, a chat template, a lock file) goes through [`read_text`], and every
//! file it writes by name (`--html`, `--trace`, `--out`) through [`check_writable`]. Anything but
//! a regular file (a FIFO, socket, device or directory) is refused before `open` could block or
//! read without end, and a file larger than its kind may be is refused before it is read.

use std::io::{Error, ErrorKind, Read};
use std::path::Path;

/// Largest results record read, bytes.
pub const MAX_RECORD_BYTES: u64 = 1 << 30;
/// Largest workload, session script, chat template or lock file read, bytes.
pub const MAX_INPUT_BYTES: u64 = 4 << 20;

/// What the file at `meta` is, when it is not a regular file (also the model loader's check).
pub(crate) fn not_regular(meta: &std::fs::Metadata) -> Option<&'static str> {
    let ft = meta.file_type();
    if ft.is_file() {
        return None;
    }
    if ft.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if ft.is_socket() {
            return Some("a socket");
        }
        if ft.is_char_device() || ft.is_block_device() {
            return Some("a device");
        }
    }
    Some("a special file")
}

fn refuse(kind: &str) -> Error {
    Error::new(
        ErrorKind::InvalidInput,
        format!("{kind}, not a regular file; pass a regular file"),
    )
}

/// The text of the regular file `path`, at most `max` bytes (UTF-8). The file is checked before
/// it is opened, opened without blocking, checked again, and its size bounded before reading.
pub fn read_text(path: &Path, max: u64) -> std::io::Result<String> {
    let (file, meta) = open_checked(path)?;
    if meta.len() > max {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "{} bytes, more than the {} a file of this kind may hold; is it the right file?",
                meta.len(),
                crate::fmt::bytes(max)
            ),
        ));
    }
    let mut text = String::new();
    // Bounded even if the file grows while it is read.
    file.take(max).read_to_string(&mut text)?;
    Ok(text)
}

/// At most the first `n` bytes of the regular file `path` (checked as [`read_text`] checks it).
pub(crate) fn read_head(path: &Path, n: u64) -> std::io::Result<Vec<u8>> {
    let (file, _) = open_checked(path)?;
    let mut head = Vec::new();
    file.take(n).read_to_end(&mut head)?;
    Ok(head)
}

/// The regular file `path` opened for reading, and its metadata: checked before it is opened,
/// opened without blocking, checked again on the open handle.
fn open_checked(path: &Path) -> std::io::Result<(std::fs::File, std::fs::Metadata)> {
    if let Some(kind) = not_regular(&std::fs::metadata(path)?) {
        return Err(refuse(kind));
    }
    let file = open_nonblocking(path)?;
    let meta = file.metadata()?;
    if let Some(kind) = not_regular(&meta) {
        return Err(refuse(kind));
    }
    Ok((file, meta))
}

/// Opens `path` for reading without blocking in open(2), should the path have been swapped for
/// a FIFO after its check; the caller checks the open handle again.
pub(crate) fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK);
    }
    opts.open(path)
}

/// Refuses an output path that exists and is not a regular file (writing to a FIFO blocks
/// forever; a device swallows the output).
pub fn check_writable(path: &Path) -> std::io::Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) => match not_regular(&meta) {
            Some(kind) => Err(refuse(kind)),
            None => Ok(()),
        },
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;
