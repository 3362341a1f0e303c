//! The first half of the validation pass: turns a [`RawHeader`] into candle's `Content` after
//! checking the file's layout. Metadata keys are unique; `general.alignment` is a power of two;
//! every tensor has a known type, 1 to 4 non-zero dimensions whose product (checked) fills whole
//! blocks, and a byte size (checked) that sits exactly where the previous tensor's padded data
//! ends, inside the file; the data ends where the file does. A tensor that fails a check is left
//! out of the `Content` (so candle never sees its numbers) and reported as a [`Problem`].

use std::collections::{HashMap, HashSet};

use candle_core::quantized::gguf_file::{Content, TensorInfo, Value, VersionedMagic};
use candle_core::quantized::GgmlDType;

use super::header::{RawHeader, RawTensor};
use super::validate::Problem;

/// Alignment of tensor data when `general.alignment` is absent.
const DEFAULT_ALIGNMENT: u64 = 32;

/// The checked `Content` and what was wrong with the layout.
pub(crate) struct Layout {
    pub content: Content,
    pub problems: Vec<Problem>,
    /// Names of every tensor the header declares, those left out of `content` included.
    pub declared: HashSet<String>,
}

/// Checks `raw` against a file of `file_len` bytes.
pub(crate) fn check(raw: RawHeader, file_len: u64) -> Layout {
    let mut problems = Vec::new();
    let mut metadata = HashMap::new();
    for (key, value) in raw.metadata {
        match metadata.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => problems.push(Problem::new(
                format!("metadata key {}", e.key()),
                "present twice",
                "each key once",
            )),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(value);
            }
        }
    }
    let alignment = alignment(metadata.get("general.alignment"), &mut problems);
    let data_start = align_up(raw.end, alignment).unwrap_or(u64::MAX);
    let (tensor_infos, declared) =
        tensors(&raw.tensors, alignment, data_start, file_len, &mut problems);
    let magic = match raw.version {
        1 => VersionedMagic::GgufV1,
        2 => VersionedMagic::GgufV2,
        _ => VersionedMagic::GgufV3,
    };
    Layout {
        content: Content {
            magic,
            metadata,
            tensor_infos,
            tensor_data_offset: data_start,
        },
        problems,
        declared,
    }
}

/// `general.alignment`: an unsigned integer, a power of two; the default (32) otherwise.
fn alignment(v: Option<&Value>, problems: &mut Vec<Problem>) -> u64 {
    let Some(v) = v else {
        return DEFAULT_ALIGNMENT;
    };
    let n = match v {
        Value::U8(x) => Some(u64::from(*x)),
        Value::U16(x) => Some(u64::from(*x)),
        Value::U32(x) => Some(u64::from(*x)),
        Value::U64(x) => Some(*x),
        _ => None,
    };
    match n {
        Some(a) if a.is_power_of_two() && a <= 1 << 30 => a,
        _ => {
            problems.push(Problem::new(
                "metadata key general.alignment",
                format!("{v:?}"),
                "an unsigned integer that is a power of two, such as 32",
            ));
            DEFAULT_ALIGNMENT
        }
    }
}

fn align_up(x: u64, a: u64) -> Option<u64> {
    x.checked_add(a - 1).map(|y| y / a * a)
}

/// The tensors that pass, keyed by name, and the set of every declared name.
fn tensors(
    raw: &[RawTensor],
    alignment: u64,
    data_start: u64,
    file_len: u64,
    problems: &mut Vec<Problem>,
) -> (HashMap<String, TensorInfo>, HashSet<String>) {
    let mut infos = HashMap::new();
    let mut declared = HashSet::new();
    // Where the next tensor's data must start (relative to the data section), and the
    // unpadded end of the last tensor's data.
    let mut expected = Some(0u64);
    let mut last_end = 0u64;
    let before = problems.len();
    for t in raw {
        if !declared.insert(t.name.clone()) {
            problems.push(Problem::new(
                format!("tensor {}", t.name),
                "declared twice",
                "each tensor once",
            ));
            continue;
        }
        let sized = size(t);
        if let (Some(want), true) = (expected, sized.is_ok()) {
            if t.offset != want {
                problems.push(Problem::new(
                    format!("tensor {} offset", t.name),
                    t.offset,
                    format!("{want}, where the previous tensor's data ends (padded to {alignment} bytes)"),
                ));
            }
        }
        let (dtype, bytes) = match sized {
            Ok(x) => x,
            Err(p) => {
                problems.push(p);
                expected = None;
                continue;
            }
        };
        let end = data_start
            .checked_add(t.offset)
            .and_then(|s| s.checked_add(bytes));
        match end {
            Some(e) if e <= file_len => last_end = last_end.max(e),
            _ => {
                problems.push(Problem::new(
                    format!("tensor {}", t.name),
                    format!(
                        "{bytes} bytes at offset {} of the data, which starts at byte {data_start}",
                        t.offset
                    ),
                    format!("data inside the file's {file_len} bytes"),
                ));
                expected = None;
                continue;
            }
        }
        expected = t
            .offset
            .checked_add(bytes)
            .and_then(|e| align_up(e, alignment));
        let dims: Vec<usize> = t.dims.iter().rev().map(|&d| d as usize).collect();
        infos.insert(
            t.name.clone(),
            TensorInfo {
                ggml_dtype: dtype,
                shape: dims.into(),
                offset: t.offset,
            },
        );
    }
    if !raw.is_empty() && problems.len() == before {
        problems.extend(check_end(file_len, last_end, alignment));
    }
    (infos, declared)
}

/// The file must end where the last tensor's data ends, give or take its padding.
fn check_end(file_len: u64, last_end: u64, alignment: u64) -> Option<Problem> {
    let padded = align_up(last_end, alignment).unwrap_or(u64::MAX);
    (file_len < last_end || file_len > padded).then(|| {
        Problem::new(
            "tensor data",
            format!("the file has {file_len} bytes"),
            format!("{last_end} to {padded} bytes, where the last tensor's data ends; a tensor's type or shape does not match its data"),
        )
    })
}

/// A tensor's type and byte size, every step checked.
fn size(t: &RawTensor) -> Result<(GgmlDType, u64), Problem> {
    let subject = || format!("tensor {}", t.name);
    let dtype = ggml_dtype(t.dtype).ok_or_else(|| {
        Problem::new(
            format!("tensor {} type", t.name),
            t.dtype,
            "a ggml type id candle reads (0-3, 6-15, 30)",
        )
    })?;
    if t.dims.is_empty() || t.dims.contains(&0) {
        return Err(Problem::new(
            format!("tensor {} dimensions", t.name),
            format!("{:?}", t.dims),
            "1 to 4 dimensions, each at least 1",
        ));
    }
    let elems = t
        .dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= i64::MAX as u64 && usize::try_from(n).is_ok());
    let Some(elems) = elems else {
        return Err(Problem::new(
            format!("tensor {} dimensions", t.name),
            format!("{:?}", t.dims),
            "an element count that fits in 63 bits",
        ));
    };
    let block = dtype.block_size() as u64;
    if !t.dims[0].is_multiple_of(block) {
        return Err(Problem::new(
            subject(),
            format!("rows of {} {dtype:?} values", t.dims[0]),
            format!("whole {dtype:?} blocks of {block} values"),
        ));
    }
    let bytes = (elems / block).checked_mul(dtype.type_size() as u64);
    let bytes = bytes.ok_or_else(|| {
        Problem::new(
            subject(),
            format!("{elems} {dtype:?} values"),
            "a byte size that fits in 64 bits",
        )
    })?;
    Ok((dtype, bytes))
}

/// The ggml type of an id, for the types candle reads.
fn ggml_dtype(id: u32) -> Option<GgmlDType> {
    Some(match id {
        0 => GgmlDType::F32,
        1 => GgmlDType::F16,
        2 => GgmlDType::Q4_0,
        3 => GgmlDType::Q4_1,
        6 => GgmlDType::Q5_0,
        7 => GgmlDType::Q5_1,
        8 => GgmlDType::Q8_0,
        9 => GgmlDType::Q8_1,
        10 => GgmlDType::Q2K,
        11 => GgmlDType::Q3K,
        12 => GgmlDType::Q4K,
        13 => GgmlDType::Q5K,
        14 => GgmlDType::Q6K,
        15 => GgmlDType::Q8K,
        30 => GgmlDType::BF16,
        _ => return None,
    })
}
