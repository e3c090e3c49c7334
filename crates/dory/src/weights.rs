//! `model.safetensors` or hub-style shards (spec §2), memory-mapped and checked tensor by
//! tensor: name, shape, dtype and finite values.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use half::{bf16, f16};
use memmap2::Mmap;
use rayon::prelude::*;
use safetensors::{Dtype, SafeTensors};
use serde_json::Value;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::quant;

/// How a tensor is stored. The engine computes in f32 whatever the storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    F32,
    F16,
    BF16,
}

impl DType {
    pub fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F16 | DType::BF16 => 2,
        }
    }
}

/// One stored tensor: its dtype, shape and little-endian bytes in a mapped file.
#[derive(Clone, Copy, Debug)]
pub struct TensorView<'a> {
    pub dtype: DType,
    pub shape: &'a [usize],
    pub bytes: &'a [u8],
}

impl TensorView<'_> {
    pub fn len(&self) -> usize {
        self.bytes.len() / self.dtype.size()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The values widened to f32 (exactly, for f16 and bf16).
    pub fn to_f32(&self) -> Vec<f32> {
        let mut out = vec![0.0f32; self.len()];
        const CHUNK: usize = 1 << 16;
        let size = self.dtype.size();
        out.par_chunks_mut(CHUNK).zip(self.bytes.par_chunks(CHUNK * size)).for_each(|(o, b)| widen(self.dtype, b, o));
        out
    }
}

fn widen(dtype: DType, bytes: &[u8], out: &mut [f32]) {
    match dtype {
        DType::F32 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        DType::F16 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = f16::from_le_bytes([b[0], b[1]]).to_f32();
            }
        }
        DType::BF16 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = bf16::from_le_bytes([b[0], b[1]]).to_f32();
            }
        }
    }
}

/// Where a weights file's bytes live: mapped (loads at once, shares the page cache, but
/// a file truncated on disk meanwhile faults the reader), or read into memory (for a
/// long-running server: what changes on disk afterwards cannot reach it).
enum Storage {
    Mapped(Mmap),
    Read(Vec<u8>),
}

impl std::ops::Deref for Storage {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Storage::Mapped(m) => m,
            Storage::Read(v) => v,
        }
    }
}

impl Storage {
    fn open(path: &Path, in_memory: bool) -> Result<Storage> {
        let (file, len) = crate::limits::open_regular(path)?;
        if !in_memory {
            // SAFETY: the file is mapped read-only; like every engine that maps weights,
            // we rely on nobody truncating it while the model is loaded (`dory serve`
            // reads it instead).
            return Ok(Storage::Mapped(unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?));
        }
        crate::limits::fits(&format!("{}: a copy in memory", path.display()), Some(len))?;
        let mut bytes = Vec::new();
        let no_room = |_| Error::io(path, std::io::Error::new(std::io::ErrorKind::OutOfMemory, "cannot hold it"));
        bytes.try_reserve_exact(len as usize).map_err(no_room)?;
        // A file cut short meanwhile reads short, and then fails the checks of its header.
        file.take(len).read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
        Ok(Storage::Read(bytes))
    }
}

/// How a tensor is stored: a float type, or the int8 of a quantized matrix (`quant`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    Float(DType),
    I8,
}

struct Entry {
    file: usize,
    stored: Stored,
    shape: Vec<usize>,
    bytes: Range<usize>,
}

/// A tensor's bytes that outlive a borrow of `Weights`: the mapped file, shared, so that
/// a backend can hold its matrices as stored without a copy.
#[derive(Clone)]
pub struct Shared {
    pub stored: Stored,
    pub shape: Vec<usize>,
    map: Arc<Storage>,
    range: Range<usize>,
}

impl std::ops::Deref for Shared {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.map[self.range.clone()]
    }
}

/// Every tensor of a model, in its mapped files.
pub struct Weights {
    maps: Vec<Arc<Storage>>,
    /// The file each map came from, to name it in errors.
    paths: Vec<PathBuf>,
    entries: HashMap<String, Entry>,
    /// Bytes of all tensors as stored.
    pub stored_bytes: usize,
}

/// The tensors a model of `config` must hold, with their shapes (spec §2; a quantized
/// model's scales too, `quant`).
pub fn expected_tensors(c: &Config) -> Vec<(String, Vec<usize>)> {
    let (d, qd, kd, f) = (c.hidden, c.q_width(), c.kv_width(), c.ffn);
    let mut t = vec![
        ("embed".to_string(), vec![c.vocab_size, d]),
        ("head".to_string(), vec![c.vocab_size, d]),
        ("head_scale".to_string(), vec![c.vocab_size]),
    ];
    for i in 0..c.layers.len() {
        let shapes: [(&str, Vec<usize>); 14] = [
            ("attn.q", vec![qd, d]),
            ("attn.k", vec![kd, d]),
            ("attn.v", vec![kd, d]),
            ("attn.gate", vec![qd, d]),
            ("attn.out", vec![d, qd]),
            ("attn.q_scale", vec![qd]),
            ("attn.gate_scale", vec![qd]),
            ("attn.alpha", vec![d]),
            ("mlp.gate", vec![f, d]),
            ("mlp.up", vec![f, d]),
            ("mlp.down", vec![d, f]),
            ("mlp.gate_scale", vec![f]),
            ("mlp.up_scale", vec![f]),
            ("mlp.alpha", vec![d]),
        ];
        t.extend(shapes.into_iter().map(|(n, s)| (format!("layers.{i}.{n}"), s)));
    }
    if let Some(q) = &c.quantization {
        let scales: Vec<_> = t.iter().filter(|(_, s)| quant::is_quantized(s)).collect();
        let scales = scales.into_iter().map(|(n, s)| (quant::scale_name(n), vec![s[0], s[1] / q.group])).collect();
        t.extend::<Vec<_>>(scales);
    }
    t
}

impl Weights {
    /// Maps `model.safetensors`, or the shards that `model.safetensors.index.json`
    /// lists, and checks every tensor against `config`.
    pub fn load(dir: &Path, config: &Config) -> Result<Weights> {
        Weights::load_with(dir, config, false)
    }

    /// `load`, the files read into memory (`in_memory`) or mapped.
    pub fn load_with(dir: &Path, config: &Config, in_memory: bool) -> Result<Weights> {
        let single = dir.join("model.safetensors");
        let index = dir.join("model.safetensors.index.json");
        let weights = if single.exists() {
            Weights::open(&[single], None, in_memory)?
        } else if index.exists() {
            let (files, map) = read_index(&index)?;
            let paths: Vec<PathBuf> = files.iter().map(|f| dir.join(f)).collect();
            Weights::open(&paths, Some((&index, &map, &files)), in_memory)?
        } else {
            return Err(Error::io(
                &single,
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no model.safetensors (nor model.safetensors.index.json) in the model folder",
                ),
            ));
        };
        weights.check(config, dir)?;
        Ok(weights)
    }

    fn open(
        paths: &[PathBuf],
        index: Option<(&Path, &BTreeMap<String, String>, &[String])>,
        in_memory: bool,
    ) -> Result<Weights> {
        let mut maps = Vec::new();
        let mut entries = HashMap::new();
        let mut stored_bytes = 0;
        for (file, path) in paths.iter().enumerate() {
            let map = Storage::open(path, in_memory)?;
            let bad = |msg: String| Error::Safetensors { path: path.clone(), msg };
            let (header, meta) =
                SafeTensors::read_metadata(&map).map_err(|e| bad(format!("not a valid safetensors file: {e}")))?;
            let base = 8 + header;
            for (name, info) in meta.tensors() {
                let stored = match info.dtype {
                    Dtype::F32 => Stored::Float(DType::F32),
                    Dtype::F16 => Stored::Float(DType::F16),
                    Dtype::BF16 => Stored::Float(DType::BF16),
                    Dtype::I8 => Stored::I8,
                    other => {
                        return Err(Error::Tensor {
                            path: path.clone(),
                            name,
                            rule: format!("dtype must be F32, F16 or BF16 (or I8 in a quantized model), got {other:?}"),
                        })
                    }
                };
                if let Some((index_path, map, files)) = index {
                    if map.get(&name).map(String::as_str) != Some(files[file].as_str()) {
                        return Err(Error::Tensor {
                            path: path.clone(),
                            name: name.clone(),
                            rule: format!("is not listed for this file in {}", index_path.display()),
                        });
                    }
                }
                let (s, e) = info.data_offsets;
                stored_bytes += e - s;
                let entry = Entry { file, stored, shape: info.shape.clone(), bytes: base + s..base + e };
                if entries.insert(name.clone(), entry).is_some() {
                    return Err(Error::Tensor { path: path.clone(), name, rule: "appears in two shards".into() });
                }
            }
            maps.push(Arc::new(map));
        }
        if let Some((index_path, map, _)) = index {
            if let Some(name) = map.keys().find(|n| !entries.contains_key(*n)) {
                return Err(Error::Tensor {
                    path: index_path.into(),
                    name: name.clone(),
                    rule: "is listed but its shard does not hold it".into(),
                });
            }
        }
        Ok(Weights { maps, paths: paths.to_vec(), entries, stored_bytes })
    }

    fn check(&self, config: &Config, dir: &Path) -> Result<()> {
        let expected = expected_tensors(config);
        let path_of = |name: &str| match self.entries.get(name) {
            Some(e) => self.paths[e.file].clone(),
            None if self.paths.len() == 1 => self.paths[0].clone(),
            None => dir.join("model.safetensors.index.json"),
        };
        for (name, shape) in &expected {
            let Some(e) = self.entries.get(name) else {
                return Err(Error::Tensor { path: path_of(name), name: name.clone(), rule: "missing".into() });
            };
            if &e.shape != shape {
                return Err(Error::Tensor {
                    path: path_of(name),
                    name: name.clone(),
                    rule: format!("shape must be {shape:?}, got {:?}", e.shape),
                });
            }
            if let Some(rule) = dtype_rule(e.stored, quant::stored_as(config, name, shape)) {
                return Err(Error::Tensor { path: path_of(name), name: name.clone(), rule });
            }
        }
        if self.entries.len() != expected.len() {
            let known: std::collections::HashSet<&str> = expected.iter().map(|(n, _)| n.as_str()).collect();
            let mut extra: Vec<&String> = self.entries.keys().filter(|n| !known.contains(n.as_str())).collect();
            extra.sort();
            return Err(Error::Tensor {
                path: path_of(extra[0]),
                name: extra[0].clone(),
                rule: "is not a tensor of this model (spec §2 lists them)".into(),
            });
        }
        // Finite values: one pass over every byte, in parallel across tensors.
        let bad = expected.par_iter().find_map_any(|(name, _)| {
            let t = self.share(name);
            let Stored::Float(dtype) = t.stored else { return None };
            let finite = t.par_chunks(1 << 18).all(|b| all_finite(dtype, b));
            (!finite).then(|| name.clone())
        });
        if let Some(name) = bad {
            return Err(Error::Tensor { path: path_of(&name), name, rule: "holds a NaN or an infinity".into() });
        }
        Ok(())
    }

    /// A checked tensor. Panics on a name that `expected_tensors` does not list, which
    /// is a bug in the engine, never bad input: `load` has checked them all.
    /// The same for a float tensor (every tensor of a model that is not quantized).
    pub fn get(&self, name: &str) -> TensorView<'_> {
        let e = self.entries.get(name).unwrap_or_else(|| panic!("no tensor {name}"));
        let Stored::Float(dtype) = e.stored else { panic!("{name} is quantized") };
        TensorView { dtype, shape: &e.shape, bytes: &self.maps[e.file][e.bytes.clone()] }
    }

    /// A checked tensor's bytes, held with the mapped file (see `get` for the names).
    pub fn share(&self, name: &str) -> Shared {
        let e = self.entries.get(name).unwrap_or_else(|| panic!("no tensor {name}"));
        Shared { stored: e.stored, shape: e.shape.clone(), map: self.maps[e.file].clone(), range: e.bytes.clone() }
    }

    /// The dtype most float tensors are stored in (they may differ; the vectors of a
    /// quantized model keep a float dtype).
    pub fn dtype(&self) -> DType {
        self.get("head_scale").dtype
    }
}

/// What is wrong with a tensor stored as `got` where `want` (None: any float type) is due.
fn dtype_rule(got: Stored, want: Option<Stored>) -> Option<String> {
    let name = |s: Stored| match s {
        Stored::Float(d) => format!("{d:?}").to_uppercase(),
        Stored::I8 => "I8".into(),
    };
    match want {
        None if got == Stored::I8 => {
            Some("dtype must be F32, F16 or BF16 (I8 only in a quantized model), got I8".into())
        }
        Some(want) if want != got => Some(format!("dtype must be {} in a q8_0 model, got {}", name(want), name(got))),
        _ => None,
    }
}

fn all_finite(dtype: DType, bytes: &[u8]) -> bool {
    match dtype {
        DType::F32 => {
            bytes.chunks_exact(4).all(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) & 0x7f80_0000 != 0x7f80_0000)
        }
        DType::F16 => bytes.chunks_exact(2).all(|b| u16::from_le_bytes([b[0], b[1]]) & 0x7c00 != 0x7c00),
        DType::BF16 => bytes.chunks_exact(2).all(|b| u16::from_le_bytes([b[0], b[1]]) & 0x7f80 != 0x7f80),
    }
}

/// The shard files in order, and the tensor → file map.
fn read_index(path: &Path) -> Result<(Vec<String>, BTreeMap<String, String>)> {
    let text = crate::limits::read_text(path, crate::limits::MAX_INDEX_BYTES)?;
    let bad = |msg: String| Error::Json { path: path.into(), msg };
    let v: Value = serde_json::from_str(&text).map_err(|e| bad(format!("invalid JSON: {e}")))?;
    let map = v
        .get("weight_map")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("field `weight_map` must be an object of tensor name → shard file".into()))?;
    let mut files: Vec<String> = Vec::new();
    let mut out = BTreeMap::new();
    for (name, file) in map {
        let file = file
            .as_str()
            .filter(|f| !f.contains('/') && !f.contains('\\') && !f.is_empty())
            .ok_or_else(|| bad(format!("weight_map[`{name}`] must name a file in the model folder")))?;
        if !files.iter().any(|f| f == file) {
            files.push(file.to_string());
        }
        out.insert(name.clone(), file.to_string());
    }
    files.sort();
    Ok((files, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finite_checks_know_each_dtype() {
        let f = |x: f32| x.to_le_bytes().to_vec();
        assert!(all_finite(DType::F32, &[f(1.0), f(-3e38)].concat()));
        assert!(!all_finite(DType::F32, &[f(1.0), f(f32::NAN)].concat()));
        assert!(!all_finite(DType::F32, &f(f32::NEG_INFINITY)));
        assert!(all_finite(DType::F16, &f16::from_f32(65504.0).to_le_bytes()));
        assert!(!all_finite(DType::F16, &f16::INFINITY.to_le_bytes()));
        assert!(all_finite(DType::BF16, &bf16::from_f32(3e38).to_le_bytes()));
        assert!(!all_finite(DType::BF16, &bf16::NAN.to_le_bytes()));
    }

    #[test]
    fn widening_is_exact() {
        let vals = [1.5f32, -0.0078125, 3.0e-5, 65504.0];
        let b: Vec<u8> = vals.iter().flat_map(|&x| bf16::from_f32(x).to_le_bytes()).collect();
        let t = TensorView { dtype: DType::BF16, shape: &[4], bytes: &b };
        let want: Vec<f32> = vals.iter().map(|&x| bf16::from_f32(x).to_f32()).collect();
        assert_eq!(t.to_f32(), want);
        let h: Vec<u8> = vals.iter().flat_map(|&x| f16::from_f32(x).to_le_bytes()).collect();
        let t = TensorView { dtype: DType::F16, shape: &[4], bytes: &h };
        assert_eq!(t.to_f32(), vals.iter().map(|&x| f16::from_f32(x).to_f32()).collect::<Vec<_>>());
    }
}
