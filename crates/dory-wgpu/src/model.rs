//! A model's weights on the device, uploaded once and shared (through an `Arc`) by every
//! session. Matrices keep their stored dtype (the kernels widen f16 and bf16 as they
//! read); each stored row is padded to a multiple of 8 elements so that 8 weights are
//! one aligned 16-byte load; a matrix larger than the adapter's storage binding limit is
//! split into parts of whole rows, each its own buffer.

use std::sync::Arc;

use dory::backend::{self, Mat};
use dory::weights::{DType, TensorView, Weights};
use dory::Config;

use crate::device::GpuDevice;
use crate::error::gpu_err;
use crate::record::Store;

/// Rows row0 … row0 + rows − 1 of a matrix.
pub struct Part {
    pub store: Arc<Store>,
    pub row0: usize,
    pub rows: usize,
}

/// A [n, k] matrix as stored: `g8` groups of 8 weights per padded row.
pub struct Matrix {
    pub dtype: DType,
    /// Whether the tensor-core GEMM may read it (f16 on a device with tensor cores; each
    /// part then ends in 16 rows of zeros).
    pub coop: bool,
    pub n: usize,
    pub k: usize,
    pub g8: usize,
    pub parts: Vec<Part>,
}

impl Matrix {
    pub fn bytes(&self) -> usize {
        self.parts.iter().map(|p| p.store.bytes as usize).sum()
    }
}

pub struct LayerWeights {
    pub qkvg: Matrix,    // [H·d + K·d + K·d + H·d, D]
    pub out: Matrix,     // [D, H·d]
    pub gate_up: Matrix, // [2F, D]
    pub down: Matrix,    // [D, F]
    pub q_scale: Arc<Store>,
    pub gate_scale: Arc<Store>,
    pub attn_alpha: Arc<Store>,
    pub mlp_scales: Arc<Store>, // [gate_scale | up_scale], 2F
    pub mlp_alpha: Arc<Store>,
}

impl LayerWeights {
    /// The alpha of the residual that closes `part`.
    pub fn alpha(&self, part: backend::Part) -> &Arc<Store> {
        match part {
            backend::Part::Attn => &self.attn_alpha,
            backend::Part::Mlp => &self.mlp_alpha,
        }
    }
}

pub struct GpuModel {
    pub dev: Arc<GpuDevice>,
    pub config: Config,
    pub embed: Matrix, // [V, D]
    pub head: Matrix,  // [V, D]
    pub head_scale: Arc<Store>,
    pub layers: Vec<LayerWeights>,
}

/// Rows of [n, k] tensors stacked into one matrix (the fused projections), in the
/// tensors' common dtype, or f32 when they differ.
pub fn upload_matrix(dev: &GpuDevice, name: &str, tensors: &[TensorView]) -> dory::Result<Matrix> {
    let k = tensors[0].shape[1];
    let n: usize = tensors.iter().map(|t| t.shape[0]).sum();
    let dtype = if tensors.iter().all(|t| t.dtype == tensors[0].dtype) { tensors[0].dtype } else { DType::F32 };
    let g8 = k.div_ceil(8);
    let row_bytes = 8 * g8 * dtype.size();
    // The tensor-core GEMM reads f16 weights as they are, in tiles of 16 rows that may
    // cross the last: 16 rows of zeros after it keep those reads inside the buffer.
    let coop = dtype == DType::F16 && dev.caps.coop;
    let pad = if coop { 16 * row_bytes } else { 0 };
    let per_part = ((dev.caps.max_binding as usize).saturating_sub(pad) / row_bytes).min(8 * 65535);
    if per_part == 0 {
        return Err(gpu_err(format!("one row of {name} ({row_bytes} bytes) is over the adapter's binding limit")));
    }
    // The stacked rows, each widened only when the dtypes differ, then padded.
    let widened: Vec<Option<Vec<f32>>> = tensors.iter().map(|t| (t.dtype != dtype).then(|| t.to_f32())).collect();
    let row = |i: usize, out: &mut Vec<u8>| {
        let mut i = i;
        for (t, wide) in tensors.iter().zip(&widened) {
            if i < t.shape[0] {
                match wide {
                    Some(v) => v[i * k..][..k].iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
                    None => out.extend_from_slice(&t.bytes[i * k * dtype.size()..][..k * dtype.size()]),
                }
                out.resize(out.len() + (8 * g8 - k) * dtype.size(), 0);
                return;
            }
            i -= t.shape[0];
        }
    };
    let mut parts = Vec::new();
    let mut row0 = 0;
    while row0 < n {
        let rows = per_part.min(n - row0);
        let mut bytes = Vec::with_capacity(rows * row_bytes + pad);
        for i in row0..row0 + rows {
            row(i, &mut bytes);
        }
        bytes.resize(bytes.len() + pad, 0);
        let label = if parts.is_empty() && rows == n { name.to_string() } else { format!("{name} rows {row0}…") };
        parts.push(Part { store: Store::with_data(dev, &bytes, &label)?, row0, rows });
        row0 += rows;
    }
    Ok(Matrix { dtype, coop, n, k, g8, parts })
}

fn upload_vector(dev: &GpuDevice, name: &str, t: TensorView) -> dory::Result<Arc<Store>> {
    Store::with_data(dev, bytemuck::cast_slice(&t.to_f32()), name)
}

impl GpuModel {
    pub fn new(dev: Arc<GpuDevice>, config: &Config, w: &Weights) -> dory::Result<Arc<GpuModel>> {
        if config.quantization.is_some() {
            return Err(gpu_err("q8_0 (8-bit) weights are not supported by the wgpu backend yet; use --backend cpu"));
        }
        let d = &*dev;
        let layers = (0..config.layers.len())
            .map(|i| {
                let t = |n: &str| w.get(&format!("layers.{i}.{n}"));
                let m = |name: &str, parts: &[&str]| {
                    let views: Vec<TensorView> = parts.iter().map(|n| t(n)).collect();
                    upload_matrix(d, &format!("layers.{i}.{name}"), &views)
                };
                let v = |n: &str| upload_vector(d, &format!("layers.{i}.{n}"), t(n));
                Ok(LayerWeights {
                    qkvg: m("attn.qkvg", &["attn.q", "attn.k", "attn.v", "attn.gate"])?,
                    out: m("attn.out", &["attn.out"])?,
                    gate_up: m("mlp.gate_up", &["mlp.gate", "mlp.up"])?,
                    down: m("mlp.down", &["mlp.down"])?,
                    q_scale: v("attn.q_scale")?,
                    gate_scale: v("attn.gate_scale")?,
                    attn_alpha: v("attn.alpha")?,
                    mlp_scales: Store::with_data(
                        d,
                        bytemuck::cast_slice(&[t("mlp.gate_scale").to_f32(), t("mlp.up_scale").to_f32()].concat()),
                        &format!("layers.{i}.mlp.gate_scale|up_scale"),
                    )?,
                    mlp_alpha: v("mlp.alpha")?,
                })
            })
            .collect::<dory::Result<Vec<_>>>()?;
        let embed = upload_matrix(d, "embed", &[w.get("embed")])?;
        let head = upload_matrix(d, "head", &[w.get("head")])?;
        let head_scale = upload_vector(d, "head_scale", w.get("head_scale"))?;
        Ok(Arc::new(GpuModel { dev, config: config.clone(), embed, head, head_scale, layers }))
    }

    pub fn matrix(&self, mat: Mat) -> &Matrix {
        let l = &self.layers;
        match mat {
            Mat::Qkvg(i) => &l[i].qkvg,
            Mat::Out(i) => &l[i].out,
            Mat::GateUp(i) => &l[i].gate_up,
            Mat::Down(i) => &l[i].down,
        }
    }

    /// Bytes of weights on the device.
    pub fn weight_bytes(&self) -> usize {
        let vectors = |l: &LayerWeights| {
            [&l.q_scale, &l.gate_scale, &l.attn_alpha, &l.mlp_scales, &l.mlp_alpha]
                .iter()
                .map(|s| s.bytes as usize)
                .sum::<usize>()
        };
        let layers: usize = self
            .layers
            .iter()
            .map(|l| l.qkvg.bytes() + l.out.bytes() + l.gate_up.bytes() + l.down.bytes() + vectors(l))
            .sum();
        layers + self.embed.bytes() + self.head.bytes() + self.head_scale.bytes as usize
    }

    /// Bytes of weights one decoded token reads at least: every layer's matrices once per
    /// pass, the head once (the embedding row is negligible).
    pub fn bytes_per_token(&self, passes: usize) -> usize {
        let layers: usize =
            self.layers.iter().map(|l| l.qkvg.bytes() + l.out.bytes() + l.gate_up.bytes() + l.down.bytes()).sum();
        passes * layers + self.head.bytes()
    }
}
