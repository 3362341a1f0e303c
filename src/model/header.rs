//! A bounded reader of the GGUF header (magic, version, counts, metadata, tensor infos), used
//! instead of candle's `Content::read` because every number in it comes from the file: each
//! length and count is checked against the bytes left in the file before anything is allocated
//! from it, nesting and the total number of metadata values are capped, and nothing past the
//! file's size (taken once, from `fstat`) is ever read, so an endless input stays bounded.
//!
//! It only reads; what the values mean (alignment, tensor sizes and offsets, shapes) is checked
//! by [`super::layout`] and [`super::validate`].

use std::io::Read;

use candle_core::quantized::gguf_file::Value;

/// Longest metadata key or tensor name, in bytes (GGUF keys are at most 65 535 bytes).
const MAX_NAME_BYTES: u64 = 65_535;
/// Longest string value, in bytes.
const MAX_STRING_BYTES: u64 = 1 << 30;
/// Most dimensions a tensor may have (`GGML_MAX_DIMS`).
const MAX_DIMS: u32 = 4;
/// Deepest nesting of arrays in arrays.
const MAX_DEPTH: usize = 4;
/// Most metadata values (array elements included) in one file; real models hold under 10⁶.
/// Each costs 32 bytes in memory, so this bounds the parsed metadata to about 256 MiB.
const MAX_VALUES: u64 = 1 << 23;

/// One tensor info as the header states it, unchecked.
#[derive(Debug, Clone)]
pub(crate) struct RawTensor {
    pub name: String,
    /// Dimensions in file order (innermost first), as stated.
    pub dims: Vec<u64>,
    /// The ggml type id, as stated.
    pub dtype: u32,
    /// Offset from the start of the tensor data, as stated, in bytes.
    pub offset: u64,
}

/// The header of a GGUF file, every length-prefixed item bounded by the file size.
#[derive(Debug, Clone)]
pub(crate) struct RawHeader {
    /// GGUF version (1, 2 or 3).
    pub version: u32,
    /// Metadata in file order (duplicates kept, so they can be reported).
    pub metadata: Vec<(String, Value)>,
    /// Tensor infos in file order.
    pub tensors: Vec<RawTensor>,
    /// Byte offset just after the last tensor info.
    pub end: u64,
}

/// Why the header could not be read: the item being read and what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeaderError(pub String);

type Res<T> = Result<T, HeaderError>;

fn fail<T>(msg: String) -> Res<T> {
    Err(HeaderError(msg))
}

/// Reads the header from `r`, which holds `len` bytes from its current position on.
pub(crate) fn read(r: &mut impl Read, len: u64) -> Res<RawHeader> {
    let mut c = Cursor {
        r,
        pos: 0,
        len,
        wide: true,
        values_left: MAX_VALUES,
    };
    let magic = c.bytes::<4>("the magic bytes")?;
    if &magic != b"GGUF" {
        return fail(format!("magic bytes are {magic:?}, expected \"GGUF\""));
    }
    let version = c.u32("the version")?;
    if !(1..=3).contains(&version) {
        return fail(format!("version = {version}; expected 1, 2 or 3"));
    }
    c.wide = version >= 2;
    let tensor_count = c.len_field("the tensor count")?;
    let kv_count = c.len_field("the metadata count")?;
    // Smallest possible entries: an empty key, a type and a 1-byte value; an empty name,
    // n_dims, no dimension, a type and an offset.
    let prefix = c.prefix_bytes();
    let min_kv = prefix + 4 + 1;
    let min_tensor = prefix + 4 + 4 + 8;
    c.fits(kv_count, min_kv, || format!("{kv_count} metadata entries"))?;
    let rest = c.remaining() - kv_count * min_kv;
    if tensor_count > rest / min_tensor {
        return fail(format!(
            "the header declares {tensor_count} tensors and {kv_count} metadata entries; the {} bytes after the counts hold at most {} tensor infos",
            c.remaining(),
            rest / min_tensor
        ));
    }
    let mut metadata = Vec::new();
    for i in 0..kv_count {
        let key = c.string(MAX_NAME_BYTES, &format!("metadata key #{i}"))?;
        let ty = c.u32(&format!("the type of metadata key {key}"))?;
        let value = c.value(ty, 0, &key)?;
        metadata.push((key, value));
    }
    let mut tensors = Vec::new();
    for i in 0..tensor_count {
        tensors.push(c.tensor_info(i)?);
    }
    Ok(RawHeader {
        version,
        metadata,
        tensors,
        end: c.pos,
    })
}

/// Reads from `r`, counting bytes, never past `len`.
struct Cursor<'a, R> {
    r: &'a mut R,
    pos: u64,
    len: u64,
    /// Lengths and counts are u64 (v2, v3) rather than u32 (v1).
    wide: bool,
    values_left: u64,
}

impl<R: Read> Cursor<'_, R> {
    fn remaining(&self) -> u64 {
        self.len.saturating_sub(self.pos)
    }

    fn prefix_bytes(&self) -> u64 {
        if self.wide {
            8
        } else {
            4
        }
    }

    /// Fails unless `count` items of at least `each` bytes fit in what is left.
    fn fits(&self, count: u64, each: u64, what: impl FnOnce() -> String) -> Res<()> {
        let left = self.remaining();
        match count.checked_mul(each) {
            Some(n) if n <= left => Ok(()),
            _ => fail(format!(
                "{} need at least {} bytes but only {left} are left in the file",
                what(),
                count.saturating_mul(each)
            )),
        }
    }

    fn bytes<const N: usize>(&mut self, what: &str) -> Res<[u8; N]> {
        let mut buf = [0u8; N];
        if (N as u64) > self.remaining() {
            return fail(format!(
                "the file ends at byte {} while reading {what}",
                self.len
            ));
        }
        self.r
            .read_exact(&mut buf)
            .or_else(|e| fail(format!("reading {what} at byte {}: {e}", self.pos)))?;
        self.pos += N as u64;
        Ok(buf)
    }

    fn u32(&mut self, what: &str) -> Res<u32> {
        self.bytes::<4>(what).map(u32::from_le_bytes)
    }

    fn u64(&mut self, what: &str) -> Res<u64> {
        self.bytes::<8>(what).map(u64::from_le_bytes)
    }

    /// A length or count: u32 in v1, u64 after.
    fn len_field(&mut self, what: &str) -> Res<u64> {
        if self.wide {
            self.u64(what)
        } else {
            self.u32(what).map(u64::from)
        }
    }

    fn string(&mut self, max: u64, what: &str) -> Res<String> {
        let n = self.len_field(&format!("the length of {what}"))?;
        if n > max || n > self.remaining() {
            return fail(format!(
                "{what} is {n} bytes long; expected at most {} (the bytes left in the file, limit {max})",
                self.remaining().min(max)
            ));
        }
        let mut buf = vec![0u8; n as usize];
        self.r
            .read_exact(&mut buf)
            .or_else(|e| fail(format!("reading {what} at byte {}: {e}", self.pos)))?;
        self.pos += n;
        while buf.last() == Some(&0) {
            buf.pop();
        }
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    /// The smallest number of bytes a value of type `ty` takes on disk.
    fn min_size(&self, ty: u32) -> u64 {
        match ty {
            0 | 1 | 7 => 1,
            2 | 3 => 2,
            4..=6 => 4,
            8 => self.prefix_bytes(),
            9 => 4 + self.prefix_bytes(),
            _ => 8,
        }
    }

    fn value(&mut self, ty: u32, depth: usize, key: &str) -> Res<Value> {
        if self.values_left == 0 {
            return fail(format!(
                "more than {MAX_VALUES} metadata values (at key {key}); no model needs that many"
            ));
        }
        self.values_left -= 1;
        let what = || format!("the value of {key}");
        Ok(match ty {
            0 => Value::U8(self.bytes::<1>(&what())?[0]),
            1 => Value::I8(self.bytes::<1>(&what())?[0] as i8),
            2 => Value::U16(u16::from_le_bytes(self.bytes(&what())?)),
            3 => Value::I16(i16::from_le_bytes(self.bytes(&what())?)),
            4 => Value::U32(self.u32(&what())?),
            5 => Value::I32(self.u32(&what())? as i32),
            6 => Value::F32(f32::from_le_bytes(self.bytes(&what())?)),
            7 => match self.bytes::<1>(&what())?[0] {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => return fail(format!("{key} is a bool stored as {b}; expected 0 or 1")),
            },
            8 => Value::String(self.string(MAX_STRING_BYTES, &what())?),
            9 => self.array(depth, key)?,
            10 => Value::U64(self.u64(&what())?),
            11 => Value::I64(self.u64(&what())? as i64),
            12 => Value::F64(f64::from_le_bytes(self.bytes(&what())?)),
            t => return fail(format!("{key} has value type {t}; expected 0 to 12")),
        })
    }

    fn array(&mut self, depth: usize, key: &str) -> Res<Value> {
        if depth >= MAX_DEPTH {
            return fail(format!("{key} nests arrays deeper than {MAX_DEPTH} levels"));
        }
        let ty = self.u32(&format!("the element type of {key}"))?;
        if ty > 12 {
            return fail(format!("{key} has element type {ty}; expected 0 to 12"));
        }
        let n = self.len_field(&format!("the length of {key}"))?;
        self.fits(n, self.min_size(ty), || {
            format!("{key}'s {n} elements of type {ty}")
        })?;
        if n > self.values_left {
            return fail(format!(
                "{key} has {n} elements; more than {MAX_VALUES} metadata values in all is not a model"
            ));
        }
        let mut items = Vec::new();
        for _ in 0..n {
            items.push(self.value(ty, depth + 1, key)?);
        }
        Ok(Value::Array(items))
    }

    fn tensor_info(&mut self, i: u64) -> Res<RawTensor> {
        let name = self.string(MAX_NAME_BYTES, &format!("the name of tensor #{i}"))?;
        let n_dims = self.u32(&format!("the dimension count of tensor {name}"))?;
        if n_dims > MAX_DIMS {
            return fail(format!(
                "tensor {name} has {n_dims} dimensions; expected at most {MAX_DIMS}"
            ));
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            dims.push(self.len_field(&format!("a dimension of tensor {name}"))?);
        }
        let dtype = self.u32(&format!("the type of tensor {name}"))?;
        let offset = self.u64(&format!("the offset of tensor {name}"))?;
        Ok(RawTensor {
            name,
            dims,
            dtype,
            offset,
        })
    }
}
