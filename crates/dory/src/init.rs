//! Random models for tests and benchmarks: a deterministic generator that writes a valid
//! model folder with the invariants a trained model has (unit-norm rows, positive
//! scales, alphas in (0, 1)), so that tests need no downloads and their numerics are
//! realistic.

use std::collections::BTreeMap;
use std::path::Path;

use half::{bf16, f16};
use safetensors::tensor::TensorView as StView;
use safetensors::Dtype;
use serde_json::json;

use crate::config::Config;
use crate::error::{invalid, Error, Result};
use crate::rng::Rng;
use crate::weights::{expected_tensors, DType};

/// Token ids of the tiny tokenizer's special tokens.
pub const BOS: u32 = 0;
pub const EOS: u32 = 1;
/// Specials plus the 256 bytes.
pub const BASE_VOCAB: usize = 258;

/// Every tensor of a random model of `config`, from `seed`: name → values.
pub fn random_tensors(config: &Config, seed: u64) -> BTreeMap<String, Vec<f32>> {
    let mut rng = Rng::new(seed);
    let mut out = BTreeMap::new();
    for (name, shape) in expected_tensors(config) {
        let n: usize = shape.iter().product();
        let uniform = |rng: &mut Rng, lo: f64, hi: f64| -> Vec<f32> {
            (0..n).map(|_| (lo + (hi - lo) * rng.uniform()) as f32).collect()
        };
        let values = if shape.len() == 2 {
            // Unit rows, as nGPT keeps its matrices along the embedding dimension.
            let mut w: Vec<f32> = (0..n).map(|_| rng.normal() as f32).collect();
            for row in w.chunks_exact_mut(shape[1]) {
                let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
                row.iter_mut().for_each(|x| *x /= norm);
            }
            w
        } else if name == "head_scale" {
            uniform(&mut rng, 8.0, 12.0)
        } else if name.ends_with("q_scale") {
            uniform(&mut rng, 2.0, 4.0)
        } else if name.ends_with("alpha") {
            uniform(&mut rng, 0.05, 0.3)
        } else {
            uniform(&mut rng, 0.5, 1.5)
        };
        out.insert(name, values);
    }
    out
}

/// Writes `tensors` as `model.safetensors`, or as `shards` hub-style shards with their
/// index when `shards` > 1.
pub fn write_weights(
    dir: &Path,
    tensors: &BTreeMap<String, Vec<f32>>,
    shapes: &BTreeMap<String, Vec<usize>>,
    dtype: DType,
    shards: usize,
) -> Result<()> {
    let encoded = tensors
        .iter()
        .map(|(name, v)| {
            let bytes = match dtype {
                DType::F32 => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                DType::F16 => v.iter().flat_map(|&x| f16::from_f32(x).to_le_bytes()).collect(),
                DType::BF16 => v.iter().flat_map(|&x| bf16::from_f32(x).to_le_bytes()).collect(),
            };
            (name.clone(), (st_dtype(dtype), shapes[name].clone(), bytes))
        })
        .collect();
    write_safetensors(dir, &encoded, shards)
}

/// The safetensors name of `dtype`.
pub fn st_dtype(dtype: DType) -> Dtype {
    match dtype {
        DType::F32 => Dtype::F32,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
    }
}

/// Writes tensors given as (dtype, shape, little-endian bytes) as `model.safetensors`, or
/// as `shards` hub-style shards with their index when `shards` > 1.
pub fn write_safetensors(
    dir: &Path,
    tensors: &BTreeMap<String, (Dtype, Vec<usize>, Vec<u8>)>,
    shards: usize,
) -> Result<()> {
    let names: Vec<&String> = tensors.keys().collect();
    let shards = shards.clamp(1, names.len());
    let mut weight_map = serde_json::Map::new();
    for s in 0..shards {
        let part = &names[s * names.len() / shards..(s + 1) * names.len() / shards];
        let file = if shards == 1 {
            "model.safetensors".to_string()
        } else {
            format!("model-{:05}-of-{:05}.safetensors", s + 1, shards)
        };
        let views = part
            .iter()
            .map(|&name| {
                let (dtype, shape, bytes) = &tensors[name];
                let view = StView::new(*dtype, shape.clone(), bytes).map_err(|e| invalid!("tensor {name}: {e}"))?;
                weight_map.insert(name.clone(), file.clone().into());
                Ok((name.as_str(), view))
            })
            .collect::<Result<Vec<_>>>()?;
        let path = dir.join(&file);
        let bytes = safetensors::serialize(views, None)
            .map_err(|e| Error::Safetensors { path: path.clone(), msg: e.to_string() })?;
        crate::files::write(&path, &bytes)?;
    }
    if shards > 1 {
        let index = json!({ "metadata": {}, "weight_map": weight_map });
        write_file(&dir.join("model.safetensors.index.json"), &serde_json::to_string_pretty(&index).expect("json"))?;
    }
    Ok(())
}

/// Whether a random model of `config` can be made: its vocabulary holds the tiny
/// tokenizer, and its tensors (made in f32, then encoded) fit in memory.
pub fn check(config: &Config, dtype: DType) -> Result<()> {
    if config.vocab_size < BASE_VOCAB {
        return Err(invalid!(
            "a random model needs vocab_size ≥ {BASE_VOCAB} (2 special tokens and 256 bytes), got {}",
            config.vocab_size
        ));
    }
    let bytes = (config.parameters() as u64).checked_mul(4 + dtype.size() as u64);
    crate::limits::fits(&format!("a random model of {} parameters", config.parameters()), bytes)
}

/// Writes a random model folder: config.json, weights, and a byte-level BPE tokenizer
/// that fills the vocabulary.
pub fn write_random_model(dir: &Path, config: &Config, seed: u64, dtype: DType, shards: usize) -> Result<()> {
    check(config, dtype)?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut config = config.clone();
    config.bos_token_id = Some(BOS);
    config.eos_token_ids = vec![EOS];
    write_file(&dir.join("config.json"), &serde_json::to_string_pretty(&config.to_json()).expect("json"))?;
    let shapes: BTreeMap<String, Vec<usize>> = expected_tensors(&config).into_iter().collect();
    write_weights(dir, &random_tensors(&config, seed), &shapes, dtype, shards)?;
    write_file(&dir.join("tokenizer.json"), &tokenizer_json(config.vocab_size))
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    crate::files::write(path, text.as_bytes())
}

/// GPT-2's map of bytes to printable characters, which byte-level BPE vocabularies use.
fn byte_chars() -> Vec<char> {
    let printable = |b: u32| (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
    let mut extra = 0;
    (0..256u32)
        .map(|b| {
            if printable(b) {
                char::from_u32(b).expect("latin-1")
            } else {
                extra += 1;
                char::from_u32(255 + extra).expect("latin extended")
            }
        })
        .collect()
}

/// A byte-level BPE over `vocab` ids: `<|bos|>`, `<|eos|>`, the 256 bytes, then merges
/// of letters (with and without a leading space) until the vocabulary is full, so that
/// every id a model can sample decodes to text.
pub fn tokenizer_json(vocab: usize) -> String {
    let bytes = byte_chars();
    let mut tokens: Vec<String> = vec!["<|bos|>".into(), "<|eos|>".into()];
    tokens.extend(bytes.iter().map(|c| c.to_string()));
    let letters: Vec<String> = ('a'..='z').map(String::from).collect();
    let space = bytes[b' ' as usize].to_string();
    let mut merges: Vec<(String, String)> = vec![];
    let mut level: Vec<String> = std::iter::once(space).chain(letters.iter().cloned()).collect();
    'fill: while tokens.len() < vocab {
        let mut next = vec![];
        for left in &level {
            for right in &letters {
                if tokens.len() == vocab {
                    break 'fill;
                }
                let merged = format!("{left}{right}");
                merges.push((left.clone(), right.clone()));
                tokens.push(merged.clone());
                next.push(merged);
            }
        }
        level = next;
    }
    let vocab_map: serde_json::Map<String, serde_json::Value> =
        tokens.iter().enumerate().map(|(i, t)| (t.clone(), i.into())).collect();
    let special = |id: u32, content: &str| json!({"id": id, "content": content, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true});
    let byte_level = json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true});
    let t = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [special(BOS, "<|bos|>"), special(EOS, "<|eos|>")],
        "normalizer": null,
        "pre_tokenizer": byte_level,
        "post_processor": null,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                  "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                  "vocab": vocab_map, "merges": merges},
    });
    serde_json::to_string(&t).expect("json")
}
