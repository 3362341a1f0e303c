//! Opening a GGUF file: only regular files (a FIFO or device is refused before `open` could
//! block), the magic check, the header read by the bounded [`super::header`] reader and its
//! layout checked by [`super::layout`] before candle sees any of it; then typed metadata getters
//! whose errors name the file and key, and tensor reads through candle.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::quantized::QTensor;
use candle_core::Device;

use super::validate::{Problem, Problems};
use super::{header, layout};
use crate::error::ModelError;

/// A parsed GGUF header plus the open file it came from.
pub struct Gguf {
    pub path: PathBuf,
    /// The metadata and the tensors whose layout passed (candle's types).
    pub content: Content,
    /// Size of the file on disk, in bytes.
    pub file_bytes: u64,
    /// What the layout checks found wrong (empty for a file [`Gguf::open`] returns).
    pub problems: Vec<Problem>,
    declared: HashSet<String>,
    reader: BufReader<File>,
}

impl Gguf {
    /// Opens and parses `path`; rejects files that are not GGUF or whose layout is wrong.
    pub fn open(path: &Path) -> Result<Self, ModelError> {
        let g = Self::open_unchecked(path)?;
        if g.problems.is_empty() {
            Ok(g)
        } else {
            Err(ModelError::Rejected {
                path: path.to_path_buf(),
                problems: Problems(g.problems),
            })
        }
    }

    /// Opens and parses `path`, keeping layout problems in [`Gguf::problems`] (for `inspect`);
    /// fails only when the header itself cannot be read.
    pub(crate) fn open_unchecked(path: &Path) -> Result<Self, ModelError> {
        let file = open_regular(path)?;
        let file_bytes = file.metadata().map_err(ModelError::io(path))?.len();
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let mut magic = [0u8; 4];
        let n = read_up_to(&mut reader, &mut magic).map_err(ModelError::io(path))?;
        if n < 4 || &magic != b"GGUF" {
            let magic = String::from_utf8_lossy(&magic[..n])
                .escape_debug()
                .to_string();
            return Err(ModelError::NotGguf {
                path: path.to_path_buf(),
                magic,
            });
        }
        reader
            .seek(SeekFrom::Start(0))
            .map_err(ModelError::io(path))?;
        let raw = header::read(&mut reader, file_bytes).map_err(|e| ModelError::BadGguf {
            path: path.to_path_buf(),
            detail: e.0,
        })?;
        let layout = layout::check(raw, file_bytes);
        Ok(Self {
            path: path.to_path_buf(),
            content: layout.content,
            file_bytes,
            problems: layout.problems,
            declared: layout.declared,
            reader,
        })
    }

    /// Whether the header declares tensor `name` (even one whose layout failed).
    pub(crate) fn declared(&self, name: &str) -> bool {
        self.declared.contains(name)
    }

    /// The metadata value under `key`, if present.
    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        self.content.metadata.get(key)
    }

    /// `general.architecture`.
    pub(crate) fn architecture(&self) -> Result<String, ModelError> {
        self.str("general.architecture")
    }

    /// A required string value.
    pub(crate) fn str(&self, key: &str) -> Result<String, ModelError> {
        let v = self.require(key)?;
        v.to_string().cloned().map_err(|e| self.invalid(key, e))
    }

    /// An optional unsigned integer value.
    pub(crate) fn opt_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(value_u64)
    }

    /// An optional float value.
    pub(crate) fn opt_f64(&self, key: &str) -> Option<f64> {
        self.get(key)
            .and_then(|v| v.to_f32().map(f64::from).or_else(|_| v.to_f64()).ok())
    }

    /// An optional boolean value.
    pub(crate) fn opt_bool(&self, key: &str) -> Option<bool> {
        self.get(key).and_then(|v| v.to_bool().ok())
    }

    /// An optional array of strings.
    pub(crate) fn opt_strings(&self, key: &str) -> Result<Option<Vec<String>>, ModelError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let arr = v.to_vec().map_err(|e| self.invalid(key, e))?;
        arr.iter()
            .map(|x| x.to_string().cloned().map_err(|e| self.invalid(key, e)))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// An optional array of integers.
    pub(crate) fn opt_ints(&self, key: &str) -> Result<Option<Vec<i64>>, ModelError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let arr = v.to_vec().map_err(|e| self.invalid(key, e))?;
        arr.iter()
            .map(|x| value_i64(x).ok_or_else(|| self.invalid(key, "expected integers")))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// Reads tensor `name` onto `device`.
    pub(crate) fn tensor(&mut self, name: &str, device: &Device) -> Result<QTensor, ModelError> {
        if !self.content.tensor_infos.contains_key(name) {
            return Err(ModelError::Invalid {
                path: self.path.clone(),
                detail: format!("tensor {name} is missing"),
            });
        }
        self.content
            .tensor(&mut self.reader, name, device)
            .map_err(ModelError::candle(format!(
                "{}: reading tensor {name}",
                self.path.display()
            )))
    }

    /// Tensor `name` read into host memory, then copied onto `device` and waited for: the
    /// tensor and the two durations (read, copy), for a device other than the CPU.
    pub(crate) fn tensor_via_host(
        &mut self,
        name: &str,
        device: &Device,
    ) -> Result<(QTensor, std::time::Duration, std::time::Duration), ModelError> {
        let e = self.extent(name)?;
        let start = std::time::Instant::now();
        let len = usize::try_from(e.len).map_err(|_| ModelError::Invalid {
            path: self.path.clone(),
            detail: format!("tensor {name}: {} bytes do not fit in memory", e.len),
        })?;
        let mut raw = vec![0u8; len];
        self.reader
            .seek(SeekFrom::Start(e.offset))
            .and_then(|_| self.reader.read_exact(&mut raw))
            .map_err(ModelError::io(&self.path))?;
        let read = start.elapsed();
        let start = std::time::Instant::now();
        let q = candle_core::quantized::ggml_file::qtensor_from_ggml(e.dtype, &raw, e.dims, device)
            .map_err(ModelError::candle(format!(
                "copying tensor {name} to the device"
            )))?;
        device.synchronize().map_err(ModelError::candle(format!(
            "waiting for tensor {name}'s copy"
        )))?;
        Ok((q, read, start.elapsed()))
    }

    /// Maps the whole file read-only.
    pub(crate) fn map(&self) -> Result<super::mapped::MappedFile, ModelError> {
        super::mapped::MappedFile::map(&self.path, self.reader.get_ref())
    }

    /// Where tensor `name`'s data lies in the file, with its type and `[out, in]`-style dims.
    pub(crate) fn extent(&self, name: &str) -> Result<Extent, ModelError> {
        let info = self
            .content
            .tensor_infos
            .get(name)
            .ok_or_else(|| ModelError::Invalid {
                path: self.path.clone(),
                detail: format!("tensor {name} is missing"),
            })?;
        let dtype = info.ggml_dtype;
        let blocks = (info.shape.elem_count() / dtype.block_size()) as u64;
        let len = blocks.checked_mul(dtype.type_size() as u64);
        let offset = self.content.tensor_data_offset.checked_add(info.offset);
        match (offset, len) {
            (Some(offset), Some(len)) => Ok(Extent {
                dtype,
                dims: info.shape.dims().to_vec(),
                offset,
                len,
            }),
            _ => Err(ModelError::Invalid {
                path: self.path.clone(),
                detail: format!("tensor {name}: its data offset or size overflows"),
            }),
        }
    }

    /// Whether the file has tensor `name`.
    pub(crate) fn has_tensor(&self, name: &str) -> bool {
        self.content.tensor_infos.contains_key(name)
    }

    fn require(&self, key: &str) -> Result<&Value, ModelError> {
        self.get(key).ok_or_else(|| ModelError::Invalid {
            path: self.path.clone(),
            detail: format!("metadata key {key} is missing"),
        })
    }

    fn invalid(&self, key: &str, e: impl std::fmt::Display) -> ModelError {
        ModelError::Invalid {
            path: self.path.clone(),
            detail: format!("metadata key {key}: {e}"),
        }
    }
}

/// Where one tensor's data lies in the file.
pub(crate) struct Extent {
    pub dtype: candle_core::quantized::GgmlDType,
    /// Dimensions, outermost first (`[out, in]` for a matrix).
    pub dims: Vec<usize>,
    /// Byte offset from the start of the file.
    pub offset: u64,
    /// Bytes of data.
    pub len: u64,
}

fn value_u64(v: &Value) -> Option<u64> {
    value_i64(v).and_then(|x| u64::try_from(x).ok())
}

fn value_i64(v: &Value) -> Option<i64> {
    Some(match v {
        Value::U8(x) => *x as i64,
        Value::I8(x) => *x as i64,
        Value::U16(x) => *x as i64,
        Value::I16(x) => *x as i64,
        Value::U32(x) => *x as i64,
        Value::I32(x) => *x as i64,
        Value::U64(x) => i64::try_from(*x).ok()?,
        Value::I64(x) => *x,
        _ => return None,
    })
}

/// Opens `path` for reading if it is a regular file; anything else (a FIFO, socket, device or
/// directory) is refused before `open` could block, and the open handle is checked again.
fn open_regular(path: &Path) -> Result<File, ModelError> {
    let meta = std::fs::metadata(path).map_err(ModelError::io(path))?;
    check_regular(path, &meta)?;
    let file = crate::files::open_nonblocking(path).map_err(ModelError::io(path))?;
    check_regular(path, &file.metadata().map_err(ModelError::io(path))?)?;
    Ok(file)
}

fn check_regular(path: &Path, meta: &std::fs::Metadata) -> Result<(), ModelError> {
    match crate::files::not_regular(meta) {
        None => Ok(()),
        Some(kind) => Err(ModelError::NotRegularFile {
            path: path.to_path_buf(),
            kind: kind.into(),
        }),
    }
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::synthetic::{write_gguf, Spec};

    /// The device path's read-then-copy gives the bytes candle's one-call read gives (here onto
    /// the CPU, the one device every machine has).
    #[test]
    fn reading_via_host_gives_the_tensor_a_direct_read_gives() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.gguf");
        write_gguf(&path, &Spec::default()).unwrap();
        let mut g = Gguf::open(&path).unwrap();
        for name in [
            "token_embd.weight",
            "blk.0.attn_q.weight",
            "output_norm.weight",
        ] {
            let direct = g.tensor(name, &Device::Cpu).unwrap();
            let (via, _, _) = g.tensor_via_host(name, &Device::Cpu).unwrap();
            assert_eq!(direct.dtype(), via.dtype(), "{name}");
            assert_eq!(direct.shape(), via.shape(), "{name}");
            assert_eq!(direct.data().unwrap(), via.data().unwrap(), "{name}");
        }
    }
}
