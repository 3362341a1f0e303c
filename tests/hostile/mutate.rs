//! Seeded mutations of a GGUF file: structural ones on its parts (metadata values set to edge
//! values, retyped, removed or duplicated; tensors with overflowing or zero dimensions, other
//! types, removed, duplicated or moved past the last layer; alignment 0 or 3; other versions)
//! and raw ones on its bytes (counts, lengths, types, dimensions and offsets overwritten with
//! 0, 1, 2^31−1, 2^32, 2^63, 2^64−1 and friends, NaN and negative floats, bit flips, cuts).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::gguf_edit::{scalar_width, Gguf, Kind, Payload, Spot, Val, T_ARRAY, T_STRING};

/// Edge values for counts, lengths, dimensions and integers.
pub const EDGES: [u64; 14] = [
    0,
    1,
    2,
    3,
    9,
    255,
    (1 << 31) - 1,
    1 << 31,
    (1 << 32) - 1,
    1 << 32,
    1 << 40,
    1 << 63,
    u64::MAX - 1,
    u64::MAX,
];

/// Edge values for floats.
pub const FLOATS: [f64; 8] = [
    f64::NAN,
    -1.0,
    0.0,
    f64::INFINITY,
    f64::NEG_INFINITY,
    1e-30,
    1e30,
    -1e-5,
];

/// Metadata keys worth aiming at; `ARCH` stands for the architecture.
const KEYS: [&str; 21] = [
    "general.alignment",
    "general.architecture",
    "ARCH.block_count",
    "ARCH.embedding_length",
    "ARCH.feed_forward_length",
    "ARCH.attention.head_count",
    "ARCH.attention.head_count_kv",
    "ARCH.rope.dimension_count",
    "ARCH.context_length",
    "ARCH.vocab_size",
    "ARCH.attention.layer_norm_rms_epsilon",
    "ARCH.rope.freq_base",
    "tokenizer.ggml.bos_token_id",
    "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.padding_token_id",
    "tokenizer.ggml.tokens",
    "tokenizer.ggml.merges",
    "tokenizer.ggml.token_type",
    "tokenizer.ggml.model",
    "tokenizer.chat_template",
    "tokenizer.ggml.add_bos_token",
];

/// Integer type ids.
const INT_TYPES: [u32; 8] = [0, 1, 2, 3, 4, 5, 10, 11];
/// ggml type ids candle knows, plus some it does not.
const DTYPES: [u32; 19] = [
    0, 1, 2, 3, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 30, 4, 5, 16, 1000,
];

/// Mutant `seed` of `base`: its bytes and what was done.
pub fn mutant(base: &Gguf, arch: &str, seed: u64) -> (Vec<u8>, String) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut g = base.clone();
    let mut what = Vec::new();
    let structural = rng.random_range(0..=2);
    let raw = if structural == 0 {
        rng.random_range(1..=2)
    } else {
        rng.random_range(0..=1)
    };
    for _ in 0..structural {
        what.push(structural_op(&mut g, arch, &mut rng));
    }
    let (mut bytes, spots) = g.write();
    for _ in 0..raw {
        what.push(raw_op(&mut bytes, &spots, &mut rng));
    }
    (bytes, what.join(", "))
}

fn key(arch: &str, rng: &mut StdRng) -> String {
    KEYS[rng.random_range(0..KEYS.len())].replace("ARCH", arch)
}

fn edge(rng: &mut StdRng) -> u64 {
    if rng.random_bool(0.8) {
        EDGES[rng.random_range(0..EDGES.len())]
    } else {
        rng.random_range(0..1000)
    }
}

fn int_val(ty: u32, x: u64) -> Val {
    Val::scalar(ty, &x.to_le_bytes()[..scalar_width(ty).unwrap_or(8)])
}

fn structural_op(g: &mut Gguf, arch: &str, rng: &mut StdRng) -> String {
    if rng.random_bool(0.5) {
        metadata_op(g, arch, rng)
    } else {
        tensor_op(g, rng)
    }
}

fn metadata_op(g: &mut Gguf, arch: &str, rng: &mut StdRng) -> String {
    match rng.random_range(0..8) {
        0 => {
            let (k, ty, x) = (key(arch, rng), INT_TYPES[rng.random_range(0..8)], edge(rng));
            g.set(&k, int_val(ty, x));
            format!("{k} = {x} as type {ty}")
        }
        1 => {
            let (k, x) = (key(arch, rng), FLOATS[rng.random_range(0..FLOATS.len())]);
            let v = if rng.random_bool(0.5) {
                Val::f32(x as f32)
            } else {
                Val::f64(x)
            };
            g.set(&k, v);
            format!("{k} = float {x}")
        }
        2 => {
            let k = key(arch, rng);
            let v = match rng.random_range(0..3) {
                0 => Val::str("llama"),
                1 => Val::scalar(7, &[rng.random_range(0..3)]),
                _ => Val {
                    ty: T_ARRAY,
                    payload: Payload::Array(4, vec![Val::u32(1); rng.random_range(0..4)]),
                },
            };
            g.set(&k, v);
            format!("{k} = a string, bool or array")
        }
        3 => {
            let k = key(arch, rng);
            g.remove(&k);
            format!("{k} removed")
        }
        4 => {
            let i = rng.random_range(0..g.kvs.len());
            let kv = g.kvs[i].clone();
            g.kvs.push(kv);
            format!("metadata #{i} duplicated")
        }
        5 => {
            let a = [0u64, 1, 3, 64, 1 << 31, u64::MAX][rng.random_range(0..6)];
            let ty = [4u32, 10][rng.random_range(0..2)];
            g.set("general.alignment", int_val(ty, a));
            format!("general.alignment = {a}")
        }
        6 => {
            g.version = [0u32, 1, 2, 3, 4, u32::MAX][rng.random_range(0..6)];
            format!("version {}", g.version)
        }
        _ => {
            let i = rng.random_range(0..g.kvs.len());
            let ty = rng.random_range(0..13);
            let (k, v) = &mut g.kvs[i];
            if let (Payload::Scalar(b), Some(w)) = (&mut v.payload, scalar_width(ty)) {
                b.resize(w, 0);
                v.ty = ty;
            } else if ty == T_STRING {
                *v = Val::str("7");
            }
            format!("{k} retyped to {ty}")
        }
    }
}

fn tensor_op(g: &mut Gguf, rng: &mut StdRng) -> String {
    let nt = g.tensors.len();
    match rng.random_range(0..5) {
        0 => {
            let t = &mut g.tensors[rng.random_range(0..nt)];
            match rng.random_range(0..5) {
                0 => t.dims = vec![1 << 32, 1 << 32],
                1 => {
                    t.dims.pop();
                }
                2 => t.dims.push(edge(rng)),
                3 => t.dims.reverse(),
                _ => {
                    let n = t.dims.len().max(1);
                    t.dims.resize(n, 1);
                    t.dims[rng.random_range(0..n)] = edge(rng);
                }
            }
            format!("tensor {} dims = {:?}", t.name, t.dims)
        }
        1 => {
            let t = &mut g.tensors[rng.random_range(0..nt)];
            t.dtype = if rng.random_bool(0.9) {
                DTYPES[rng.random_range(0..DTYPES.len())]
            } else {
                rng.random()
            };
            format!("tensor {} type = {}", t.name, t.dtype)
        }
        2 => {
            let t = g.tensors.remove(rng.random_range(0..nt));
            format!("tensor {} removed", t.name)
        }
        3 => {
            let mut t = g.tensors[rng.random_range(0..nt)].clone();
            if rng.random_bool(0.5) {
                t.name = format!("blk.{}.attn_q.weight", edge(rng));
            }
            let name = t.name.clone();
            let at = rng.random_range(0..=nt);
            g.tensors.insert(at, t);
            format!("tensor {name} added at #{at}")
        }
        _ => {
            let t = &mut g.tensors[rng.random_range(0..nt)];
            let n = rng.random_range(0..=t.data.len() + 64);
            t.data.resize(n, 0);
            format!("tensor {} data resized to {n}", t.name)
        }
    }
}

fn raw_op(b: &mut Vec<u8>, spots: &[Spot], rng: &mut StdRng) -> String {
    if b.len() < 16 {
        return "no-op (file too short)".into();
    }
    let header_end = spots
        .last()
        .map_or(b.len(), |s| s.pos + s.width)
        .clamp(9, b.len());
    match rng.random_range(0..6) {
        0 | 1 => {
            let kinds = [
                Kind::Count,
                Kind::Length,
                Kind::ValueType,
                Kind::Dim,
                Kind::DType,
                Kind::Offset,
                Kind::Int,
                Kind::Float,
            ];
            let kind = kinds[rng.random_range(0..kinds.len())];
            let of_kind: Vec<&Spot> = spots.iter().filter(|s| s.kind == kind).collect();
            let Some(s) = of_kind.get(rng.random_range(0..of_kind.len().max(1))) else {
                return "no-op".into();
            };
            if s.pos + s.width > b.len() {
                return "no-op (field cut off)".into();
            }
            let bytes = match (kind, s.width) {
                (Kind::Float, 4) => (FLOATS[rng.random_range(0..8)] as f32)
                    .to_le_bytes()
                    .to_vec(),
                (Kind::Float, _) => FLOATS[rng.random_range(0..8)].to_le_bytes().to_vec(),
                (Kind::ValueType | Kind::DType, _) if rng.random_bool(0.7) => {
                    (rng.random_range(0..32u64)).to_le_bytes().to_vec()
                }
                _ => edge(rng).to_le_bytes().to_vec(),
            };
            b[s.pos..s.pos + s.width].copy_from_slice(&bytes[..s.width]);
            format!("{kind:?} at byte {} overwritten", s.pos)
        }
        2 => {
            let n = rng.random_range(1..=8);
            for _ in 0..n {
                let i = rng.random_range(0..header_end.min(b.len()));
                b[i] ^= 1 << rng.random_range(0..8);
            }
            format!("{n} header bits flipped")
        }
        3 => {
            let i = rng.random_range(0..b.len());
            b[i] = rng.random();
            format!("byte {i} replaced")
        }
        4 => {
            let n = if rng.random_bool(0.7) {
                rng.random_range(0..header_end)
            } else {
                rng.random_range(0..b.len())
            };
            b.truncate(n);
            format!("cut at {n}")
        }
        _ => {
            let i = rng.random_range(8..header_end);
            let n = rng.random_range(1..=8);
            if rng.random_bool(0.5) {
                b.splice(i..i, std::iter::repeat_n(0xff, n));
                format!("{n} bytes inserted at {i}")
            } else {
                b.drain(i..(i + n).min(b.len()));
                format!("{n} bytes removed at {i}")
            }
        }
    }
}
