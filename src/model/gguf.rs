//! Opening a GGUF file: magic check, header parse through a `BufReader`, bounds check of every
//! tensor against the file size, and typed metadata getters whose errors name the file and key.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::quantized::QTensor;
use candle_core::Device;

use crate::error::ModelError;

/// A parsed GGUF header plus the open file it came from.
pub struct Gguf {
    pub path: PathBuf,
    pub content: Content,
    /// Size of the file on disk, in bytes.
    pub file_bytes: u64,
    reader: BufReader<File>,
}

impl Gguf {
    /// Opens and parses `path`; rejects files that are not GGUF or whose tensors run past the end.
    pub fn open(path: &Path) -> Result<Self, ModelError> {
        let file = File::open(path).map_err(ModelError::io(path))?;
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
        let bad = |detail: String| ModelError::BadGguf {
            path: path.to_path_buf(),
            detail,
        };
        let content = Content::read(&mut reader).map_err(|e| bad(e.to_string()))?;
        for (name, info) in &content.tensor_infos {
            let elems = info.shape.elem_count();
            let bytes = (elems / info.ggml_dtype.block_size() * info.ggml_dtype.type_size()) as u64;
            let end = content.tensor_data_offset + info.offset + bytes;
            if end > file_bytes {
                return Err(bad(format!(
                    "tensor {name} ends at byte {end} but the file has {file_bytes}"
                )));
            }
        }
        Ok(Self {
            path: path.to_path_buf(),
            content,
            file_bytes,
            reader,
        })
    }

    /// The metadata value under `key`, if present.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.content.metadata.get(key)
    }

    /// `general.architecture`.
    pub fn architecture(&self) -> Result<String, ModelError> {
        self.str("general.architecture")
    }

    /// A required string value.
    pub fn str(&self, key: &str) -> Result<String, ModelError> {
        let v = self.require(key)?;
        v.to_string().cloned().map_err(|e| self.invalid(key, e))
    }

    /// A required unsigned integer value (any integer width).
    pub fn u64(&self, key: &str) -> Result<u64, ModelError> {
        let v = self.require(key)?;
        value_u64(v).ok_or_else(|| {
            self.invalid(
                key,
                format!("expected an integer, found {:?}", v.value_type()),
            )
        })
    }

    /// An optional unsigned integer value.
    pub fn opt_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(value_u64)
    }

    /// An optional float value.
    pub fn opt_f64(&self, key: &str) -> Option<f64> {
        self.get(key)
            .and_then(|v| v.to_f32().map(f64::from).or_else(|_| v.to_f64()).ok())
    }

    /// An optional boolean value.
    pub fn opt_bool(&self, key: &str) -> Option<bool> {
        self.get(key).and_then(|v| v.to_bool().ok())
    }

    /// An optional array of strings.
    pub fn opt_strings(&self, key: &str) -> Result<Option<Vec<String>>, ModelError> {
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
    pub fn opt_ints(&self, key: &str) -> Result<Option<Vec<i64>>, ModelError> {
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
    pub fn tensor(&mut self, name: &str, device: &Device) -> Result<QTensor, ModelError> {
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

    /// Whether the file has tensor `name`.
    pub fn has_tensor(&self, name: &str) -> bool {
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
