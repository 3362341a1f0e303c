//! A GGUF file as editable parts (metadata in order, tensor infos with their padded data chunks)
//! for building hostile variants: parsed from a file this crate wrote (so trusted), written back
//! byte for byte, and on the way out recording where every count, length, type, dimension,
//! offset and scalar sits so raw mutations can aim at them.

/// GGUF value type ids.
pub const T_U32: u32 = 4;
pub const T_I32: u32 = 5;
pub const T_F32: u32 = 6;
pub const T_STRING: u32 = 8;
pub const T_ARRAY: u32 = 9;
pub const T_U64: u32 = 10;
pub const T_F64: u32 = 12;

/// A metadata value: its type id and payload.
#[derive(Debug, Clone)]
pub struct Val {
    pub ty: u32,
    pub payload: Payload,
}

#[derive(Debug, Clone)]
pub enum Payload {
    /// A scalar's little-endian bytes.
    Scalar(Vec<u8>),
    Str(Vec<u8>),
    /// Element type and elements.
    Array(u32, Vec<Val>),
}

impl Val {
    pub fn u32(x: u32) -> Self {
        Self::scalar(T_U32, &x.to_le_bytes())
    }
    pub fn u64(x: u64) -> Self {
        Self::scalar(T_U64, &x.to_le_bytes())
    }
    pub fn i32(x: i32) -> Self {
        Self::scalar(T_I32, &x.to_le_bytes())
    }
    pub fn f32(x: f32) -> Self {
        Self::scalar(T_F32, &x.to_le_bytes())
    }
    pub fn f64(x: f64) -> Self {
        Self::scalar(T_F64, &x.to_le_bytes())
    }
    pub fn str(s: &str) -> Self {
        Self {
            ty: T_STRING,
            payload: Payload::Str(s.as_bytes().to_vec()),
        }
    }
    pub fn scalar(ty: u32, bytes: &[u8]) -> Self {
        let mut b = bytes.to_vec();
        b.resize(scalar_width(ty).unwrap_or(bytes.len()), 0);
        Self {
            ty,
            payload: Payload::Scalar(b),
        }
    }
}

/// Bytes of a scalar type, `None` for strings and arrays.
pub fn scalar_width(ty: u32) -> Option<usize> {
    Some(match ty {
        0 | 1 | 7 => 1,
        2 | 3 => 2,
        4..=6 => 4,
        10..=12 => 8,
        _ => return None,
    })
}

/// One tensor: name, dimensions in file order, ggml type id, and its padded data chunk.
#[derive(Debug, Clone)]
pub struct Tensor {
    pub name: String,
    pub dims: Vec<u64>,
    pub dtype: u32,
    pub data: Vec<u8>,
}

/// What a recorded field is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Tensor or metadata count.
    Count,
    /// A string or array length.
    Length,
    /// A value type or array element type.
    ValueType,
    Dim,
    DType,
    Offset,
    Int,
    Float,
}

/// Where a field sits in the written bytes.
#[derive(Debug, Clone, Copy)]
pub struct Spot {
    pub pos: usize,
    pub width: usize,
    pub kind: Kind,
}

/// A whole GGUF file as parts.
#[derive(Debug, Clone)]
pub struct Gguf {
    pub version: u32,
    pub kvs: Vec<(String, Val)>,
    pub tensors: Vec<Tensor>,
}

const ALIGN: usize = 32;

impl Gguf {
    /// Parses a well-formed v2/v3 file (this crate's synthetic models).
    pub fn parse(b: &[u8]) -> Self {
        let mut r = Reader { b, pos: 4 };
        let version = r.u32();
        let (nt, nkv) = (r.u64() as usize, r.u64() as usize);
        let kvs = (0..nkv)
            .map(|_| {
                let k = String::from_utf8(r.string()).unwrap();
                let ty = r.u32();
                (k, r.value(ty))
            })
            .collect();
        let mut infos: Vec<(Tensor, usize)> = (0..nt)
            .map(|_| {
                let name = String::from_utf8(r.string()).unwrap();
                let n = r.u32() as usize;
                let dims = (0..n).map(|_| r.u64()).collect();
                let dtype = r.u32();
                let off = r.u64() as usize;
                let t = Tensor {
                    name,
                    dims,
                    dtype,
                    data: Vec::new(),
                };
                (t, off)
            })
            .collect();
        let start = r.pos.div_ceil(ALIGN) * ALIGN;
        let ends: Vec<usize> = (0..infos.len())
            .map(|i| infos.get(i + 1).map_or(b.len() - start, |x| x.1))
            .collect();
        for (i, (t, off)) in infos.iter_mut().enumerate() {
            t.data = b[start + *off..start + ends[i]].to_vec();
        }
        Self {
            version,
            kvs,
            tensors: infos.into_iter().map(|x| x.0).collect(),
        }
    }

    /// The file's bytes and where its fields are.
    pub fn write(&self) -> (Vec<u8>, Vec<Spot>) {
        let mut w = Writer::default();
        w.out.extend_from_slice(b"GGUF");
        w.put(&self.version.to_le_bytes(), None);
        w.put(
            &(self.tensors.len() as u64).to_le_bytes(),
            Some(Kind::Count),
        );
        w.put(&(self.kvs.len() as u64).to_le_bytes(), Some(Kind::Count));
        for (k, v) in &self.kvs {
            w.string(k.as_bytes());
            w.put(&v.ty.to_le_bytes(), Some(Kind::ValueType));
            w.value(v);
        }
        let mut off = 0u64;
        for t in &self.tensors {
            w.string(t.name.as_bytes());
            w.put(&(t.dims.len() as u32).to_le_bytes(), Some(Kind::Length));
            for d in &t.dims {
                w.put(&d.to_le_bytes(), Some(Kind::Dim));
            }
            w.put(&t.dtype.to_le_bytes(), Some(Kind::DType));
            w.put(&off.to_le_bytes(), Some(Kind::Offset));
            off += t.data.len() as u64;
        }
        let pad = w.out.len().div_ceil(ALIGN) * ALIGN - w.out.len();
        w.out.extend(std::iter::repeat_n(0u8, pad));
        for t in &self.tensors {
            w.out.extend_from_slice(&t.data);
        }
        (w.out, w.spots)
    }

    /// The index of metadata key `key`.
    pub fn kv(&self, key: &str) -> Option<usize> {
        self.kvs.iter().position(|(k, _)| k == key)
    }

    /// Sets (or adds) metadata key `key`.
    pub fn set(&mut self, key: &str, v: Val) {
        match self.kv(key) {
            Some(i) => self.kvs[i].1 = v,
            None => self.kvs.push((key.to_string(), v)),
        }
    }

    /// Removes metadata key `key`.
    pub fn remove(&mut self, key: &str) {
        self.kvs.retain(|(k, _)| k != key);
    }

    /// The tensor named `name`.
    pub fn tensor(&mut self, name: &str) -> &mut Tensor {
        self.tensors
            .iter_mut()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("the base model has no tensor {name}"))
    }
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> &[u8] {
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        s
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().unwrap())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().unwrap())
    }
    fn string(&mut self) -> Vec<u8> {
        let n = self.u64() as usize;
        self.take(n).to_vec()
    }
    fn value(&mut self, ty: u32) -> Val {
        let payload = match ty {
            T_STRING => Payload::Str(self.string()),
            T_ARRAY => {
                let et = self.u32();
                let n = self.u64() as usize;
                Payload::Array(et, (0..n).map(|_| self.value(et)).collect())
            }
            t => Payload::Scalar(self.take(scalar_width(t).unwrap()).to_vec()),
        };
        Val { ty, payload }
    }
}

#[derive(Default)]
struct Writer {
    out: Vec<u8>,
    spots: Vec<Spot>,
}

impl Writer {
    fn put(&mut self, b: &[u8], kind: Option<Kind>) {
        if let Some(kind) = kind {
            self.spots.push(Spot {
                pos: self.out.len(),
                width: b.len(),
                kind,
            });
        }
        self.out.extend_from_slice(b);
    }
    fn string(&mut self, s: &[u8]) {
        self.put(&(s.len() as u64).to_le_bytes(), Some(Kind::Length));
        self.out.extend_from_slice(s);
    }
    fn value(&mut self, v: &Val) {
        match &v.payload {
            Payload::Scalar(b) => {
                let kind = if matches!(v.ty, T_F32 | T_F64) {
                    Kind::Float
                } else {
                    Kind::Int
                };
                self.put(b, Some(kind));
            }
            Payload::Str(s) => self.string(s),
            Payload::Array(et, items) => {
                self.put(&et.to_le_bytes(), Some(Kind::ValueType));
                self.put(&(items.len() as u64).to_le_bytes(), Some(Kind::Length));
                for it in items {
                    self.value(it);
                }
            }
        }
    }
}
