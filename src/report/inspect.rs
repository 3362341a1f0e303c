//! Text for `tokfire inspect`.

use std::fmt::Write;

use crate::model::families::{self, FAMILIES};
use crate::model::inspect::ModelReport;
use crate::model::pretok;
use crate::model::tokenizer::Tokenizer;
use crate::model::ModelPath;

/// The model report as aligned text lines.
pub(crate) fn text(r: &ModelReport) -> String {
    let opt = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_else(|| "?".into());
    let mut s = String::new();
    let (format, path) = match &r.path {
        ModelPath::Gguf(p) => ("gguf", p),
        ModelPath::Safetensors(p) => ("safetensors", p),
    };
    let mut line =
        |k: &str, v: String| writeln!(s, "{k:<14}{v}").expect("writing to a String cannot fail");
    line("model", format!("{} ({format})", path.display()));
    if let Some(name) = &r.manifest_name {
        line(
            "manifest",
            format!("{name}, licence {}", r.license.as_deref().unwrap_or("?")),
        );
    }
    line("architecture", r.architecture.clone());
    line(
        "parameters",
        format!("{:.1} M ({})", r.parameters as f64 / 1e6, r.parameters),
    );
    let types: Vec<String> = r
        .tensor_types
        .iter()
        .map(|(t, n)| match r.candle_kernels.contains(t) {
            true => format!("{t} ×{n} (candle's kernel: none of ours)"),
            false => format!("{t} ×{n}"),
        })
        .collect();
    line(
        "tensors",
        format!("{}: {}", r.tensor_count, types.join(", ")),
    );
    line(
        "file",
        format!("{} ({} bytes)", super::bytes(r.file_bytes), r.file_bytes),
    );
    if let Some(sha) = &r.sha256 {
        line("sha256", sha.clone());
    }
    line(
        "shape",
        format!(
            "{} layers, hidden {}, ffn {}, {} heads / {} kv heads",
            opt(r.layers),
            opt(r.hidden),
            opt(r.ffn),
            opt(r.heads),
            opt(r.kv_heads)
        ),
    );
    let theta = r
        .rope_theta
        .map(|t| t.to_string())
        .unwrap_or_else(|| "?".into());
    line(
        "context",
        format!(
            "{} tokens; rope theta {theta}, dim {}",
            opt(r.context_length),
            opt(r.rope_dim)
        ),
    );
    if let Some(h) = &r.hybrid {
        hybrid_lines(h, &mut line);
    }
    if let Some(g) = &r.gemma {
        let cap = |c: Option<f64>| c.map_or_else(|| "none".to_string(), |c| c.to_string());
        let global: Vec<String> = g.global_layers.iter().map(|l| l.to_string()).collect();
        line(
            "attention",
            format!(
                "sliding window {} tokens, global layers {}; head dim {}, scores / sqrt({})",
                g.sliding_window,
                global.join(" "),
                g.head_dim,
                g.query_pre_attn_scalar
            ),
        );
        line(
            "rope bases",
            format!(
                "global {}, local {}",
                g.rope_global_theta, g.rope_local_theta
            ),
        );
        line(
            "soft-capping",
            format!(
                "final logits {}, attention {}",
                cap(g.final_softcap),
                cap(g.attn_softcap)
            ),
        );
    }
    if let Some(f) = &r.family {
        let mut adds: Vec<String> = Vec::new();
        if f.qkv_bias {
            adds.push("q/k/v bias".into());
        }
        if f.qk_norm {
            adds.push("q/k RMSNorm".into());
        }
        if let Some(d) = f.rope_dims {
            adds.push(format!("partial rotary ({d} dims rotated)"));
        }
        if !f.nope_layers.is_empty() {
            let l: Vec<String> = f.nope_layers.iter().map(|l| l.to_string()).collect();
            adds.push(format!("no RoPE on layers {}", l.join(" ")));
        }
        let adds = match adds.is_empty() {
            true => String::new(),
            false => format!("{}; ", adds.join(", ")),
        };
        line("family", f.about.clone());
        line(
            "applies",
            format!(
                "{adds}RoPE pairs {}, scaling {}",
                f.rope_pairs, f.rope_scaling
            ),
        );
    }
    line("vocab", opt(r.vocab_size));
    let split = r
        .family
        .as_ref()
        .and_then(|f| f.pre_tokenizer.as_deref())
        .filter(|k| r.tokenizer_pre.as_deref() != Some(*k))
        .map(|k| format!(", split as llama.cpp's {k}"))
        .unwrap_or_default();
    let pre = r
        .tokenizer_pre
        .as_deref()
        .map(|p| format!(" (pre {p}{split})"))
        .unwrap_or_default();
    let add_bos = r
        .add_bos
        .map(|b| b.to_string())
        .unwrap_or_else(|| "?".into());
    line(
        "tokenizer",
        format!(
            "{}{pre}, bos {}, eos {}, add_bos {add_bos}",
            r.tokenizer.as_deref().unwrap_or("none"),
            opt(r.bos_id),
            opt(r.eos_id)
        ),
    );
    line(
        "chat template",
        r.chat_template
            .as_ref()
            .map(|t| {
                let first = t.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                format!(
                    "yes: {} ({} bytes; --json has it whole)",
                    truncate(first, 64),
                    t.len()
                )
            })
            .unwrap_or_else(|| "no".into()),
    );
    for (i, p) in r.problems.iter().enumerate() {
        line(if i == 0 { "problems" } else { "" }, p.to_string());
    }
    super::wrap(&s)
}

/// `inspect --families`: every family (GGUF and `config.json` names, what it is, what it adds)
/// and every pre-tokenizer name, as text or JSON.
pub(crate) fn families(json: bool) -> anyhow::Result<String> {
    if json {
        let list: Vec<_> = FAMILIES
            .iter()
            .map(|f| {
                let mut v = serde_json::to_value(f).expect("a family serialises");
                v["keys"] = families::COMMON_KEYS
                    .iter()
                    .chain(f.keys)
                    .copied()
                    .collect();
                v
            })
            .collect();
        let pre: Vec<_> = pretok::KNOWN
            .iter()
            .map(|(n, p)| serde_json::json!({ "name": n, "type": p.kind }))
            .collect();
        let v = serde_json::json!({ "families": list, "pre_tokenizers": pre });
        return Ok(serde_json::to_string_pretty(&v)? + "\n");
    }
    let mut s =
        String::from("Model families (GGUF general.architecture; config.json model_type):\n");
    for f in FAMILIES {
        let _ = writeln!(s, "  {:<8}{} ({})", f.gguf, f.about, f.hf.join(", "));
    }
    let _ = writeln!(
        s,
        "\nEvery tensor and ARCH.* key in a file must be one its family reads, else the file is \
         refused by name (a key it ignores could change the computation). RoPE scaling: none, \
         linear, Llama-3 rope_freqs and YaRN on the llama engine, phi3's LongRoPE, linear on \
         Gemma 3's global layers; any other type is refused."
    );
    let _ = writeln!(
        s,
        "\nPre-tokenizers (tokenizer.ggml.pre of byte-level BPE files), split exactly as \
         llama.cpp 0c1e57098 splits them; any other name is refused: {}",
        pretok::names()
    );
    Ok(super::wrap(&s))
}

/// Token ids of an encoded text: `[1, 2, 3]` then one `id -> 'piece'` line each, or JSON.
pub(crate) fn token_ids(tok: &Tokenizer, ids: &[u32], json: bool) -> anyhow::Result<String> {
    let pieces: Vec<String> = ids
        .iter()
        .map(|&i| tok.decode(&[i]))
        .collect::<Result<_, _>>()?;
    if json {
        let items: Vec<_> = ids
            .iter()
            .zip(&pieces)
            .map(|(i, p)| serde_json::json!({ "id": i, "piece": p }))
            .collect();
        return Ok(serde_json::to_string_pretty(
            &serde_json::json!({ "ids": ids, "tokens": items }),
        )?);
    }
    let mut s = format!("{ids:?}");
    for (i, p) in ids.iter().zip(&pieces) {
        write!(s, "\n{i:>6} -> {p:?}").expect("writing to a String cannot fail");
    }
    Ok(s)
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

/// The layer pattern and per-sequence memory of a hybrid model.
fn hybrid_lines(h: &crate::model::inspect::HybridReport, line: &mut impl FnMut(&str, String)) {
    let list = |l: &[usize]| {
        l.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (k, v, s) = h.delta_heads;
    line(
        "layers",
        format!(
            "Gated DeltaNet {}; attention {}",
            list(&h.recurrent_layers),
            list(&h.attention_layers)
        ),
    );
    line(
        "delta net",
        format!(
            "{k} key / {v} value heads of {s}, conv width {}; attention head dim {}, rope \
             sections {:?}",
            h.conv_kernel, h.head_dim, h.rope_sections
        ),
    );
    line(
        "per sequence",
        format!(
            "state {} (fixed) + KV {} a token",
            crate::fmt::bytes(h.state_bytes_per_seq as u64),
            crate::fmt::bytes(h.kv_bytes_per_token as u64)
        ),
    );
    let mtp = match h.mtp_blocks {
        0 => "none".to_string(),
        n => format!("{n} block (drafts with --spec mtp)"),
    };
    line("mtp head", mtp);
}
