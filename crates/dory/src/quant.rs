//! 8-bit weights, an extension of the model format (docs/SEMANTICS.md): with
//! `"quantization": {"format": "q8_0", "group": 32}` in config.json, every matrix of spec §2
//! (`embed`, `head` and each layer's projections) is stored as `NAME`, I8 `[out, in]`,
//! and `NAME.scale`, F16 `[out, in / 32]`: w[j, i] = scale[j, ⌊i / 32⌋] · q[j, i]. Vectors
//! keep a float dtype. `quantize` writes such a folder from a float one.

use std::collections::BTreeMap;
use std::path::Path;

use half::f16;
use safetensors::Dtype;
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::error::{invalid, Error, Result};
use crate::model::Model;
use crate::weights::{expected_tensors, Stored};

/// Inputs that share one scale in q8_0.
pub const Q8_0_GROUP: usize = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Format {
    #[serde(rename = "q8_0")]
    Q8_0,
}

/// The `quantization` section of config.json.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quantization {
    pub format: Format,
    pub group: usize,
}

impl Quantization {
    pub fn q8_0() -> Quantization {
        Quantization { format: Format::Q8_0, group: Q8_0_GROUP }
    }

    /// The field of config.json this section breaks for `c`, and the rule.
    pub(crate) fn broken(&self, c: &Config) -> Option<(&'static str, String)> {
        let g = self.group;
        if g != Q8_0_GROUP {
            return Some(("quantization.group", format!("must be {Q8_0_GROUP} for q8_0, got {g}")));
        }
        let widths = [("hidden", c.hidden), ("heads × head_dim", c.q_width()), ("ffn", c.ffn)];
        let (name, n) = widths.into_iter().find(|(_, n)| n % g != 0)?;
        Some(("quantization", format!("every matrix's input width must be a multiple of the group {g}: {name} is {n}")))
    }
}

/// Whether a tensor of spec §2 of `shape` is quantized: the matrices are, vectors are not.
pub fn is_quantized(shape: &[usize]) -> bool {
    shape.len() == 2
}

/// The name of the scales of the quantized matrix `name`.
pub fn scale_name(name: &str) -> String {
    format!("{name}.scale")
}

/// The stored form a checked tensor must have: None for any float dtype.
pub(crate) fn stored_as(c: &Config, name: &str, shape: &[usize]) -> Option<Stored> {
    c.quantization.as_ref()?;
    if name.ends_with(".scale") {
        Some(Stored::Float(crate::weights::DType::F16))
    } else {
        is_quantized(shape).then_some(Stored::I8)
    }
}

/// Row-major [n, k] weights as q8_0: int8 values and one f16 scale per group of 32 inputs,
/// each scale the group's largest magnitude over 127 (rounded to f16 before the values
/// are divided by it, so that they are rounded against the scale the engine reads).
pub fn quantize_q8_0(w: &[f32], k: usize) -> Option<(Vec<i8>, Vec<f16>)> {
    let mut q = Vec::with_capacity(w.len());
    let mut scales = Vec::with_capacity(w.len() / Q8_0_GROUP);
    for row in w.chunks_exact(k) {
        for group in row.chunks_exact(Q8_0_GROUP) {
            let max = group.iter().fold(0.0f32, |m, x| m.max(x.abs()));
            let scale = f16::from_f32(max / 127.0);
            if !scale.is_finite() {
                return None;
            }
            let s = scale.to_f32();
            q.extend(group.iter().map(|&x| if s == 0.0 { 0 } else { (x / s).round().clamp(-127.0, 127.0) as i8 }));
            scales.push(scale);
        }
    }
    Some((q, scales))
}

/// Writes to `out` a copy of `model` whose matrices are quantized as `q` says: config.json
/// (with the `quantization` section), model.safetensors and tokenizer.json.
pub fn quantize(model: &Model, out: &Path, q: &Quantization) -> Result<()> {
    let c = &model.config;
    if c.quantization.is_some() {
        return Err(invalid!("{} is quantized already", model.dir.display()));
    }
    if let Some((field, rule)) = q.broken(c) {
        return Err(invalid!("cannot quantize {}: {field}: {rule}", model.dir.display()));
    }
    let mut tensors: BTreeMap<String, (Dtype, Vec<usize>, Vec<u8>)> = BTreeMap::new();
    for (name, shape) in expected_tensors(c) {
        let t = model.weights.get(&name);
        if !is_quantized(&shape) {
            tensors.insert(name, (crate::init::st_dtype(t.dtype), shape, t.bytes.to_vec()));
            continue;
        }
        let (values, scales) = quantize_q8_0(&t.to_f32(), shape[1])
            .ok_or_else(|| invalid!("tensor {name}: a value is too large for q8_0's f16 scales"))?;
        let scale_shape = vec![shape[0], shape[1] / q.group];
        let scale_bytes = scales.iter().flat_map(|s| s.to_le_bytes()).collect();
        tensors.insert(scale_name(&name), (Dtype::F16, scale_shape, scale_bytes));
        tensors.insert(name, (Dtype::I8, shape, values.iter().map(|&v| v as u8).collect()));
    }
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    crate::init::write_safetensors(out, &tensors, 1)?;
    let config_path = model.dir.join("config.json");
    let text = std::fs::read_to_string(&config_path).map_err(|e| Error::io(&config_path, e))?;
    // The original's text, every field kept (unknown ones too), plus the section.
    let mut json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| Error::Json { path: config_path, msg: e.to_string() })?;
    json["quantization"] = serde_json::to_value(q).expect("plain data");
    let pretty = serde_json::to_string_pretty(&json).expect("json");
    let write =
        |name: &str, bytes: &[u8]| std::fs::write(out.join(name), bytes).map_err(|e| Error::io(out.join(name), e));
    write("config.json", pretty.as_bytes())?;
    let tokenizer = model.dir.join("tokenizer.json");
    write("tokenizer.json", &std::fs::read(&tokenizer).map_err(|e| Error::io(&tokenizer, e))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q8_0_round_trips_within_half_a_step() {
        let w = crate::testing::rand_vec(3 * 64, 5);
        let (q, s) = quantize_q8_0(&w, 64).unwrap();
        assert_eq!((q.len(), s.len()), (192, 6));
        for (i, (&x, &v)) in w.iter().zip(&q).enumerate() {
            let scale = s[i / 32].to_f32();
            assert!((x - scale * v as f32).abs() <= 0.5 * scale * 1.0001, "{i}");
        }
        let (q, s) = quantize_q8_0(&[0.0; 32], 32).unwrap();
        assert!(q.iter().all(|&v| v == 0) && s[0].to_f32() == 0.0);
        assert!(quantize_q8_0(&[1e9; 32], 32).is_none());
    }
}
