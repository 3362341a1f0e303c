//! Where weights come from: a GGUF file (llama.cpp tensor names) or a directory of safetensors
//! (Hugging Face names), behind one small trait so the model has one builder.

use std::ops::Range;
use std::path::{Path, PathBuf};

use candle_core::quantized::QTensor;
use candle_core::safetensors::MmapedSafetensors;
use candle_core::{DType, Device, Tensor};

use super::gguf::Gguf;
use super::linear::Linear;
use super::mapped::MappedFile;
use crate::config::WeightDType;
use crate::error::ModelError;
use crate::kernels::{Bytes, QMatrix, QType};

/// Names of a model's tensors in one file format.
pub enum Names {
    Gguf,
    Hf,
}

impl Names {
    pub(crate) fn embed(&self) -> &'static str {
        match self {
            Self::Gguf => "token_embd.weight",
            Self::Hf => "model.embed_tokens.weight",
        }
    }
    pub(crate) fn norm(&self) -> &'static str {
        match self {
            Self::Gguf => "output_norm.weight",
            Self::Hf => "model.norm.weight",
        }
    }
    pub(crate) fn head(&self) -> &'static str {
        match self {
            Self::Gguf => "output.weight",
            Self::Hf => "lm_head.weight",
        }
    }
    /// The name of `part` (`q k v o gate up down attn_norm ffn_norm q_norm k_norm`) in layer `i`; `suffix`
    /// is `weight` or `bias`.
    pub(crate) fn layer(&self, i: usize, part: &str, suffix: &str) -> String {
        let (gguf, hf) = match part {
            "q" => ("attn_q", "self_attn.q_proj"),
            "k" => ("attn_k", "self_attn.k_proj"),
            "v" => ("attn_v", "self_attn.v_proj"),
            "o" => ("attn_output", "self_attn.o_proj"),
            "gate" => ("ffn_gate", "mlp.gate_proj"),
            "up" => ("ffn_up", "mlp.up_proj"),
            "down" => ("ffn_down", "mlp.down_proj"),
            "attn_norm" => ("attn_norm", "input_layernorm"),
            "ffn_norm" => ("ffn_norm", "post_attention_layernorm"),
            "q_norm" => ("attn_q_norm", "self_attn.q_norm"),
            // phi3's fused layouts (GGUF names; its config.json is refused).
            "qkv" => ("attn_qkv", "self_attn.qkv_proj"),
            "gate_up" => ("ffn_up", "mlp.gate_up_proj"),
            "k_norm" => ("attn_k_norm", "self_attn.k_norm"),
            _ => unreachable!("unknown layer part {part}; this is a bug"),
        };
        match self {
            Self::Gguf => format!("blk.{i}.{gguf}.{suffix}"),
            Self::Hf => format!("model.layers.{i}.{hf}.{suffix}"),
        }
    }
}

/// Something that hands out a model's tensors by name.
pub trait WeightSource {
    fn names(&self) -> Names;
    fn has(&self, name: &str) -> bool;
    /// A matrix as a linear layer in the storage `dtype` asks for.
    fn linear(&mut self, name: &str, dtype: WeightDType) -> Result<Linear, ModelError>;
    /// A tensor as dense f32 (norm weights, biases, embeddings).
    fn dense(&mut self, name: &str) -> Result<Tensor, ModelError>;
    fn device(&self) -> &Device;
    /// Whether our kernels and the CPU attention run the model (else candle's ops: another
    /// device, or `--kernels candle`).
    fn ours(&self) -> bool;
}

/// GGUF tensors, read by copying or borrowed from a mapping of the file.
pub(crate) struct GgufSource<'a> {
    gguf: &'a mut Gguf,
    device: Device,
    map: Option<MappedFile>,
    ours: bool,
    /// File bytes borrowed from the mapping.
    pub mapped_bytes: u64,
    /// File bytes read into our own memory.
    pub copied_bytes: u64,
    /// The mapped ranges handed out, for the first touch.
    pub mapped_ranges: Vec<Range<usize>>,
    /// Repack our kernels' matrices into tiles.
    repack: bool,
    /// Seconds spent repacking (reading a mapped matrix's pages included).
    pub repack_s: f64,
    /// File bytes of the matrices repacked (owned by us, not borrowed from the mapping).
    pub repacked_bytes: u64,
    /// Off the CPU: reading into host memory and copying to the device (open_s is the caller's).
    pub device_load: Option<super::mapped::DeviceLoad>,
}

impl<'a> GgufSource<'a> {
    /// Tensors of `gguf` onto `device`; `map` lets quantized CPU matrices borrow their bytes;
    /// `kernels` says whose code runs them, `repack` whether our kernels' matrices are repacked.
    pub(crate) fn new(
        gguf: &'a mut Gguf,
        device: Device,
        map: Option<MappedFile>,
        kernels: super::Kernels,
        repack: bool,
    ) -> Self {
        Self {
            ours: kernels.ours(&device),
            repack,
            repack_s: 0.0,
            repacked_bytes: 0,
            device_load: (!device.is_cpu()).then(Default::default),
            gguf,
            device,
            map,
            mapped_bytes: 0,
            copied_bytes: 0,
            mapped_ranges: Vec::new(),
        }
    }

    /// The mapping, once the weights are built (to touch its pages).
    pub(crate) fn mapping(&self) -> Option<&MappedFile> {
        self.map.as_ref()
    }

    /// Tensor `name` as a matrix borrowing the mapping, when the file is mapped, the matrix
    /// stays quantized on the CPU and our kernels run its block type; repacked (owned) instead
    /// when asked and its type has tiles.
    fn mapped_matrix(
        &mut self,
        name: &str,
        dtype: WeightDType,
    ) -> Result<Option<QMatrix>, ModelError> {
        let Some(map) = &self.map else {
            return Ok(None);
        };
        if dtype != WeightDType::Q || !self.ours {
            return Ok(None);
        }
        let e = self.gguf.extent(name)?;
        let (Some(qtype), &[n, k]) = (QType::from_ggml(e.dtype), e.dims.as_slice()) else {
            return Ok(None);
        };
        let bytes = map.range(e.offset, e.len, &format!("tensor {name}"))?;
        let Bytes::Borrowed { range, .. } = &bytes else {
            unreachable!("a mapping hands out borrowed bytes; this is a bug");
        };
        let range = range.clone();
        let m = QMatrix::from_bytes(qtype, n, k, bytes).ok_or_else(|| ModelError::Invalid {
            path: self.gguf.path.clone(),
            detail: format!(
                "tensor {name}: {} bytes do not hold {n} × {k} {qtype:?} values",
                e.len
            ),
        })?;
        if let Some(tiles) = self.repacked(&m, e.len) {
            return Ok(Some(tiles));
        }
        self.mapped_bytes += e.len;
        self.mapped_ranges.push(range);
        Ok(Some(m))
    }

    /// `m` repacked, its time and `len` file bytes counted, when repacking is on and its type
    /// has tiles.
    fn repacked(&mut self, m: &QMatrix, len: u64) -> Option<QMatrix> {
        if !self.repack {
            return None;
        }
        let start = std::time::Instant::now();
        let tiles = m.repacked()?;
        self.repack_s += start.elapsed().as_secs_f64();
        self.repacked_bytes += len;
        Some(tiles)
    }

    fn copied(&mut self, name: &str) -> Result<QTensor, ModelError> {
        let len = self.gguf.extent(name)?.len;
        self.copied_bytes += len;
        let Some(d) = self.device_load.as_mut() else {
            return self.gguf.tensor(name, &self.device);
        };
        let (q, read, upload) = self.gguf.tensor_via_host(name, &self.device)?;
        d.read_s += read.as_secs_f64();
        d.upload_s += upload.as_secs_f64();
        d.upload_bytes += len;
        Ok(q)
    }
}

impl WeightSource for GgufSource<'_> {
    fn names(&self) -> Names {
        Names::Gguf
    }
    fn has(&self, name: &str) -> bool {
        self.gguf.has_tensor(name)
    }
    fn linear(&mut self, name: &str, dtype: WeightDType) -> Result<Linear, ModelError> {
        if let Some(m) = self.mapped_matrix(name, dtype)? {
            return Ok(Linear::from_kernel(m));
        }
        let q = self.copied(name)?;
        let len = self.gguf.extent(name)?.len;
        let linear = Linear::from_qtensor(q, dtype, self.ours)
            .map_err(ModelError::candle(format!("building {name}")))?;
        let tiles = linear.kernel_matrix().and_then(|m| self.repacked(m, len));
        Ok(match tiles {
            Some(m) => Linear::from_kernel(m),
            None => linear,
        })
    }
    fn dense(&mut self, name: &str) -> Result<Tensor, ModelError> {
        let q = self.copied(name)?;
        q.dequantize(&self.device)
            .map_err(ModelError::candle(format!("dequantizing {name}")))
    }
    fn device(&self) -> &Device {
        &self.device
    }
    fn ours(&self) -> bool {
        self.ours
    }
}

/// Safetensors shards of a model directory.
pub(crate) struct SafetensorsSource {
    st: MmapedSafetensors,
    dir: PathBuf,
    device: Device,
    ours: bool,
}

impl SafetensorsSource {
    /// Memory-maps every `*.safetensors` file in `dir`; `kernels` says whose code runs them.
    pub(crate) fn open(
        dir: &Path,
        device: &Device,
        kernels: super::Kernels,
    ) -> Result<Self, ModelError> {
        let files = safetensors_files(dir)?;
        // SAFETY: the files are only read; like every mmap, they must not be truncated meanwhile.
        let st = unsafe { MmapedSafetensors::multi(&files) }.map_err(ModelError::candle(
            format!("{}: opening safetensors", dir.display()),
        ))?;
        Ok(Self {
            st,
            dir: dir.to_path_buf(),
            device: device.clone(),
            ours: kernels.ours(device),
        })
    }

    fn load(&self, name: &str) -> Result<Tensor, ModelError> {
        if !self.has(name) {
            return Err(ModelError::Invalid {
                path: self.dir.clone(),
                detail: format!("tensor {name} is missing"),
            });
        }
        self.st
            .load(name, &self.device)
            .map_err(ModelError::candle(format!(
                "{}: loading {name}",
                self.dir.display()
            )))
    }
}

impl WeightSource for SafetensorsSource {
    fn names(&self) -> Names {
        Names::Hf
    }
    fn has(&self, name: &str) -> bool {
        self.st.get(name).is_ok()
    }
    fn linear(&mut self, name: &str, dtype: WeightDType) -> Result<Linear, ModelError> {
        let t = self.load(name)?;
        Linear::from_dense(t, dtype, self.ours)
            .map_err(ModelError::candle(format!("building {name}")))
    }
    fn dense(&mut self, name: &str) -> Result<Tensor, ModelError> {
        self.load(name)?
            .to_dtype(DType::F32)
            .map_err(ModelError::candle(format!("converting {name}")))
    }
    fn device(&self) -> &Device {
        &self.device
    }
    fn ours(&self) -> bool {
        self.ours
    }
}

/// The `*.safetensors` files of `dir`, sorted.
pub(crate) fn safetensors_files(dir: &Path) -> Result<Vec<PathBuf>, ModelError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(ModelError::io(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(ModelError::Invalid {
            path: dir.to_path_buf(),
            detail: "no *.safetensors files in this directory".into(),
        });
    }
    Ok(files)
}
