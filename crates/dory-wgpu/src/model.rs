//! A model's weights on the device, uploaded once and shared (through an `Arc`) by every
//! session. Matrices keep their stored values and dtype (the kernels widen f16 and bf16 as
//! they read; a bf16 projection may be held as f16 times a power of two, the same values,
//! for the tensor cores: `bf16_as_f16`); each stored row is padded to a multiple of 8
//! elements so that 8 weights are one aligned 16-byte load (and where the tensor cores
//! read a matrix, it is held in tiles: `Matrix::tiled`); a matrix larger than the adapter's
//! storage binding limit is split into parts of whole rows, each its own buffer.

use std::borrow::Cow;
use std::sync::Arc;

use dory::backend::{self, Mat};
use dory::quant::{scale_name, Q8_0_GROUP};
use dory::weights::{DType, Stored, TensorView, Weights};
use dory::Config;
use half::f16;
use rayon::prelude::*;

use crate::device::GpuDevice;
use crate::error::gpu_err;
use crate::kernels::Options;
use crate::record::Store;

/// Rows row0 … row0 + rows − 1 of a matrix.
pub struct Part {
    pub store: Arc<Store>,
    pub row0: usize,
    pub rows: usize,
}

/// A [n, k] matrix as stored: `g8` groups of 8 weights per padded row, rows one after
/// another, or in tiles where `tiled`.
pub struct Matrix {
    /// A float dtype, or q8_0: int8 values and their groups' scales, in blocks of 128
    /// weights (`upload_q8`).
    pub dtype: Stored,
    /// Held in 16 × 16 tiles (an f16 projection, by default where the device has tensor
    /// cores: `Options::tiles`), so that a tile of W is one run of 512 bytes for the
    /// tensor-core GEMM (rows of 32 bytes `k` apart would spread it over 16 cache lines):
    /// band by band of 16 rows, a band's tiles in input order, a tile's 16 rows of 16
    /// weights one after another; the last band of each part is filled with rows of zeros,
    /// and rows with zeros to a multiple of 16 weights. The other kernels read either order.
    pub tiled: bool,
    /// Whether the tensor-core GEMM may read it (held in tiles, on a device with tensor
    /// cores; q8_0 through an f16 copy of each slice of rows, `q8_shift`).
    pub coop: bool,
    pub n: usize,
    pub k: usize,
    pub g8: usize,
    /// The values held are the stored ones times 2^shift (0 but for a bf16 matrix held as
    /// f16).
    pub shift: i32,
    /// q8_0 on the tensor cores: the f16 copy's values are the weights times 2^q8_shift,
    /// which puts the largest magnitude in [2¹⁴, 2¹⁵) (matmul.rs's `q8_tiles`).
    pub q8_shift: i32,
    pub parts: Vec<Part>,
}

impl Matrix {
    pub fn bytes(&self) -> usize {
        self.parts.iter().map(|p| p.store.bytes as usize).sum()
    }

    /// What a product's sums are multiplied by to undo the shift (exactly: a power of two).
    pub fn unshift(&self) -> f32 {
        2f32.powi(-self.shift)
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
    /// What a prompt's m = SwiGLU is cut into parts with on the tensor cores (`glu_scale`),
    /// where gate|up is held for them in f16.
    pub glu_scale: Option<f32>,
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
/// tensors' common dtype, or f32 when they differ. A `projection` (read by matmul.rs's
/// kernels, which undo the shift) in bf16 is held as f16 where the options ask and its
/// values allow (`bf16_as_f16`).
pub fn upload_matrix(dev: &GpuDevice, name: &str, tensors: &[TensorView], projection: bool) -> dory::Result<Matrix> {
    let k = tensors[0].shape[1];
    let n: usize = tensors.iter().map(|t| t.shape[0]).sum();
    let (dtype, held, shift) = held(tensors, projection && dev.kernels.options.bf16_as_f16);
    let size = dtype.size();
    let g8 = k.div_ceil(8);
    let tiled = dtype == DType::F16 && projection && dev.kernels.options.tiles;
    let coop = tiled && dev.caps.coop;
    let width = if tiled { k.next_multiple_of(16) } else { 8 * g8 };
    let row = |i: usize, out: &mut Vec<u8>| {
        let (t, i) = stacked(tensors.iter().map(|t| t.shape[0]), i);
        out.extend_from_slice(&held[t][i * k * size..][..k * size]);
        out.resize(out.len() + (width - k) * size, 0);
    };
    let parts = upload_rows(dev, name, n, width * size, tiled, row)?;
    Ok(Matrix { dtype: Stored::Float(dtype), tiled, coop, n, k, g8, shift, q8_shift: 0, parts })
}

/// Weights of a block of a q8_0 row on the device: four groups, their scales first
/// (dtype.wgsl reads them so).
const Q8_BLOCK: usize = 4 * Q8_0_GROUP;

/// One q8_0 tensor as stored: `[n, k]` int8 values (as bytes) and their scales `[n, k / 32]`.
pub struct Q8Rows<'a> {
    pub n: usize,
    pub k: usize,
    pub values: &'a [u8],
    pub scales: Vec<f32>,
}

/// The q8_0 tensors `tensors` stacked into one matrix, held in blocks of Q8_BLOCK weights
/// of a row: the block's four scales as f32, then its int8 values, 144 bytes in all; a
/// row's last block is filled with zeros (values and scales).
pub fn upload_q8(dev: &GpuDevice, name: &str, tensors: &[Q8Rows]) -> dory::Result<Matrix> {
    if !dev.kernels.options.q8 {
        return Err(gpu_err(format!("{name}: q8_0 weights on a device built without their kernels (Options::q8)")));
    }
    let k = tensors[0].k;
    let n: usize = tensors.iter().map(|t| t.n).sum();
    let (groups, blocks) = (k / Q8_0_GROUP, k.div_ceil(Q8_BLOCK));
    let row = |i: usize, out: &mut Vec<u8>| {
        let (t, i) = stacked(tensors.iter().map(|t| t.n), i);
        let (values, scales) = (&tensors[t].values[i * k..][..k], &tensors[t].scales[i * groups..][..groups]);
        for b in 0..blocks {
            for g in 4 * b..4 * b + 4 {
                out.extend(scales.get(g).unwrap_or(&0.0).to_le_bytes());
            }
            let block = &values[b * Q8_BLOCK..k.min((b + 1) * Q8_BLOCK)];
            out.extend_from_slice(block);
            out.resize(out.len() + Q8_BLOCK - block.len(), 0);
        }
    };
    let parts = upload_rows(dev, name, n, blocks * (Q8_BLOCK + 16), false, row)?;
    let q8_shift = tensors.iter().map(q8_largest).try_fold(0f32, |m, v| Some(m.max(v?))).and_then(f16_shift);
    let g8 = blocks * Q8_BLOCK / 8;
    let coop = dev.caps.coop && dev.kernels.options.q8_coop && q8_shift.is_some();
    Ok(Matrix { dtype: Stored::I8, tiled: false, coop, n, k, g8, shift: 0, q8_shift: q8_shift.unwrap_or(0), parts })
}

/// The largest magnitude of the weights of `t` (its scales times its values), if finite.
fn q8_largest(t: &Q8Rows) -> Option<f32> {
    let groups = t.values.par_chunks(Q8_0_GROUP).zip(&t.scales);
    let most = groups.map(|(q, s)| {
        let q = q.iter().map(|&b| (b as i8).unsigned_abs()).max().unwrap_or(0);
        if s.is_finite() {
            f32::from(q) * s.abs()
        } else {
            f32::INFINITY
        }
    });
    Some(most.reduce(|| 0.0, f32::max)).filter(|m| m.is_finite())
}

/// The power of two that puts `largest` in [2¹⁴, 2¹⁵), where both are normal f32s (a
/// largest value far below any weight's, an f32 subnormal, would need a shift past f32's
/// exponents; zero, none).
fn f16_shift(largest: f32) -> Option<i32> {
    let shift = 14 - (((largest.to_bits() >> 23) & 0xff) as i32 - 127);
    (largest.is_normal() && (-126..=126).contains(&shift)).then_some(shift)
}

/// Which of the stacked tensors of `rows` rows each holds row `i` of the stack, and its row
/// there.
fn stacked(rows: impl Iterator<Item = usize>, mut i: usize) -> (usize, usize) {
    for (t, n) in rows.enumerate() {
        if i < n {
            return (t, i);
        }
        i -= n;
    }
    unreachable!("row {i} past the stack")
}

/// `n` rows of `row_bytes` each (`row` appends row i) in parts of whole rows that fit the
/// adapter's binding limit, in tiles where `tiled` (whole bands of 16 rows).
fn upload_rows(
    dev: &GpuDevice,
    name: &str,
    n: usize,
    row_bytes: usize,
    tiled: bool,
    row: impl Fn(usize, &mut Vec<u8>),
) -> dory::Result<Vec<Part>> {
    let band = if tiled { 16 } else { 1 };
    let per_part = ((dev.caps.max_binding as usize) / (band * row_bytes)).min(8 * 65535 / band) * band;
    if per_part == 0 {
        return Err(gpu_err(format!(
            "{band} rows of {name} ({row_bytes} bytes each) are over the adapter's binding limit"
        )));
    }
    let mut parts = Vec::new();
    let mut row0 = 0;
    while row0 < n {
        let rows = per_part.min(n - row0);
        let mut bytes = Vec::with_capacity(rows.next_multiple_of(band) * row_bytes);
        for i in row0..row0 + rows {
            row(i, &mut bytes);
        }
        bytes.resize(rows.next_multiple_of(band) * row_bytes, 0);
        if tiled {
            bytes = tiles(&bytes, row_bytes);
        }
        let label = if parts.is_empty() && rows == n { name.to_string() } else { format!("{name} rows {row0}…") };
        parts.push(Part { store: Store::with_data(dev, &bytes, &label)?, row0, rows });
        row0 += rows;
    }
    Ok(parts)
}

/// Rows of `row_bytes` (of f16, a multiple of 16 weights), whole bands of 16, reordered
/// into 16 × 16 tiles as `Matrix::tiled` says.
fn tiles(rows: &[u8], row_bytes: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(rows.len());
    for band in rows.chunks_exact(16 * row_bytes) {
        for t in 0..row_bytes / 32 {
            for r in 0..16 {
                out.extend_from_slice(&band[r * row_bytes + 32 * t..][..32]);
            }
        }
    }
    out
}

/// The tensors' values as the device holds them, each tensor's in a row-major run of
/// bytes, with their dtype and shift: in their common dtype as stored; widened to f32 when
/// they differ; bf16 as f16 times 2^shift when `as_f16` and `bf16_as_f16` finds the values
/// exact.
fn held<'a>(tensors: &[TensorView<'a>], as_f16: bool) -> (DType, Vec<Cow<'a, [u8]>>, i32) {
    let dtype = tensors[0].dtype;
    if tensors.iter().any(|t| t.dtype != dtype) {
        let wide = tensors.iter().map(|t| Cow::Owned(t.to_f32().iter().flat_map(|v| v.to_le_bytes()).collect()));
        return (DType::F32, wide.collect(), 0);
    }
    if dtype == DType::BF16 && as_f16 {
        if let Some((halves, shift)) = bf16_as_f16(tensors) {
            return (DType::F16, halves.into_iter().map(Cow::Owned).collect(), shift);
        }
    }
    (dtype, tensors.iter().map(|t| Cow::Borrowed(t.bytes)).collect(), 0)
}

/// bf16 tensors as f16 values times 2^shift (one shift for all), when that is exact for
/// every value, so that the tensor cores, which take f16, multiply by the very values
/// stored. bf16 keeps 8 significant bits to f16's 11 but has 8 exponent bits to its 5: the
/// shift puts the largest magnitude in [2^14, 2^15), and every value down to 2^-24 after it
/// (38 binades under the largest, which a trained matrix does not span) is then exact,
/// subnormals included. None when a value is not, or is not finite.
fn bf16_as_f16(tensors: &[TensorView]) -> Option<(Vec<Vec<u8>>, i32)> {
    let wide: Vec<Vec<f32>> = tensors.iter().map(|t| t.to_f32()).collect();
    let max = wide.iter().flatten().try_fold(0f32, |m, &v| v.is_finite().then(|| m.max(v.abs())))?;
    let shift = if max == 0.0 { 0 } else { f16_shift(max)? };
    let scale = 2f32.powi(shift);
    let convert = |values: &[f32]| {
        let mut out = Vec::with_capacity(2 * values.len());
        for &v in values {
            let h = f16::from_f32(v * scale);
            (h.to_f32() == v * scale).then_some(())?;
            out.extend_from_slice(&h.to_le_bytes());
        }
        Some(out)
    };
    let halves = wide
        .iter()
        .map(|v| v.par_chunks(1 << 16).map(convert).collect::<Option<Vec<_>>>().map(|c| c.concat()))
        .collect::<Option<Vec<_>>>()?;
    Some((halves, shift))
}

/// The power of two a layer's m = silu(g ⊙ gate_scale) ⊙ (u ⊙ up_scale) is cut into f16
/// parts with (gemm_coop.wgsl's GLU), from a bound on |m| over every input x of norm at most
/// 1 (spec §4: the MLP reads h, a unit row): |g_j| ≤ ‖gate_j‖, |silu(a)| ≤ max(|a|, 0.28),
/// |u_j| ≤ ‖up_j‖, so |m_j| ≤ max(‖gate_j‖ |gate_scale_j|, 0.28) · ‖up_j‖ |up_scale_j| ≤ B,
/// and 2^e ≥ B gives the scale 2^(12 − e): m within 2¹² (2⁴ inside f16's range, for the
/// sums' rounding), its parts as precise as a row's own maximum would make them unless B is
/// 2¹⁵ times looser than the row (parts.wgsl). None where B is past 2¹⁰⁰ or not finite.
pub fn glu_scale([gate, up]: [TensorView; 2], [gate_scale, up_scale]: [&[f32]; 2]) -> Option<f32> {
    let norms = |t: &TensorView| -> Vec<f64> {
        let k = t.shape[1];
        let row = |bytes| TensorView { bytes, ..*t }.to_f32().iter().map(|&v| f64::from(v).powi(2)).sum::<f64>().sqrt();
        t.bytes.par_chunks(k * t.dtype.size()).map(row).collect()
    };
    let (g, u) = (norms(&gate), norms(&up));
    let bound = g
        .iter()
        .zip(&u)
        .zip(gate_scale.iter().zip(up_scale))
        .map(|((g, u), (gs, us))| (g * f64::from(gs.abs())).max(0.28) * u * f64::from(us.abs()))
        .fold(0.0, f64::max);
    // Past 2¹⁰⁰ (or not finite) the scale would leave f32's normal range.
    let e = bound.log2().ceil().max(-100.0);
    (e <= 100.0).then(|| 2f32.powi(12 - e as i32))
}

fn upload_vector(dev: &GpuDevice, name: &str, t: TensorView) -> dory::Result<Arc<Store>> {
    Store::with_data(dev, bytemuck::cast_slice(&t.to_f32()), name)
}

impl GpuModel {
    /// The model's weights on `dev`, or, for a q8_0 model on a device built without its
    /// kernels, on the same device with them built too.
    pub fn new(dev: Arc<GpuDevice>, config: &Config, w: &Weights) -> dory::Result<Arc<GpuModel>> {
        let options = dev.kernels.options;
        let dev = if config.quantization.is_some() && !options.q8 {
            Arc::new(dev.with_options(Options { q8: true, ..options })?)
        } else {
            dev
        };
        let d = &*dev;
        // A matrix of the stacked tensors `parts`, as stored (q8_0 in a quantized model).
        let matrix = |name: &str, parts: &[String], projection: bool| {
            if config.quantization.is_some() {
                let shared: Vec<_> = parts.iter().map(|n| w.share(n)).collect();
                let rows = shared.iter().zip(parts).map(|(q, n)| Q8Rows {
                    n: q.shape[0],
                    k: q.shape[1],
                    values: q,
                    scales: w.get(&scale_name(n)).to_f32(),
                });
                return upload_q8(d, name, &rows.collect::<Vec<_>>());
            }
            let views: Vec<TensorView> = parts.iter().map(|n| w.get(n)).collect();
            upload_matrix(d, name, &views, projection)
        };
        let layers = (0..config.layers.len())
            .map(|i| {
                let t = |n: &str| w.get(&format!("layers.{i}.{n}"));
                let m = |name: &str, parts: &[&str]| {
                    let names: Vec<String> = parts.iter().map(|n| format!("layers.{i}.{n}")).collect();
                    matrix(&format!("layers.{i}.{name}"), &names, true)
                };
                let v = |n: &str| upload_vector(d, &format!("layers.{i}.{n}"), t(n));
                let gate_up = m("mlp.gate_up", &["mlp.gate", "mlp.up"])?;
                // (q8_0's gate|up takes split.wgsl's SwiGLU: `matmul::glu_parts`.)
                let glu_scale = (gate_up.coop && gate_up.dtype != Stored::I8).then(|| {
                    let scales = ["mlp.gate_scale", "mlp.up_scale"].map(|n| t(n).to_f32());
                    glu_scale([t("mlp.gate"), t("mlp.up")], [&scales[0], &scales[1]])
                });
                Ok(LayerWeights {
                    qkvg: m("attn.qkvg", &["attn.q", "attn.k", "attn.v", "attn.gate"])?,
                    out: m("attn.out", &["attn.out"])?,
                    gate_up,
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
                    glu_scale: glu_scale.flatten(),
                })
            })
            .collect::<dory::Result<Vec<_>>>()?;
        // The embedding is read by embed.wgsl, which takes no shift.
        let embed = matrix("embed", &["embed".into()], false)?;
        let head = matrix("head", &["head".into()], true)?;
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

#[cfg(test)]
mod tests {
    use half::bf16;

    use super::*;

    fn bf16_bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|&v| bf16::from_f32(v).to_le_bytes()).collect()
    }

    /// The f16 values of `bytes` times 2^-shift.
    fn unshifted(bytes: &[u8], shift: i32) -> Vec<f32> {
        bytes.chunks_exact(2).map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32() * 2f32.powi(-shift)).collect()
    }

    #[test]
    fn tiles_put_each_weight_where_the_kernels_read_it() {
        // 32 rows of 48 weights, each weight's value its (row, input): weight (j, i) must
        // sit at tile (j / 16, i / 16), row j % 16 and column i % 16 of it (dtype.wgsl's
        // `piece`, gemm_coop.wgsl's `load_b`).
        let (n, k) = (32usize, 48usize);
        let rows: Vec<u8> = (0..n * k).flat_map(|e| ((e / k * 100 + e % k) as u16).to_le_bytes()).collect();
        let tiled = tiles(&rows, 2 * k);
        let at = |j: usize, i: usize| ((j / 16) * (k / 16) + i / 16) * 256 + (j % 16) * 16 + i % 16;
        for j in 0..n {
            for i in 0..k {
                let v = u16::from_le_bytes([tiled[2 * at(j, i)], tiled[2 * at(j, i) + 1]]);
                assert_eq!(v as usize, j * 100 + i, "weight ({j}, {i})");
            }
        }
    }

    #[test]
    fn bf16_is_held_as_f16_only_where_every_value_is_exact() {
        // Trained-looking values, a wide spread, signed zeros, and the stack's second
        // tensor holding the largest value: every one comes back bit for bit.
        let a: Vec<f32> = dory::testing::rand_vec(4096, 3).iter().map(|v| v * 0.05).collect();
        let b = [0.75, -3.0e-9, 0.0, -0.0, 1.5e-7, -0.001];
        let (ab, bb) = (bf16_bytes(&a), bf16_bytes(&b));
        let views = [
            TensorView { dtype: DType::BF16, shape: &[64, 64], bytes: &ab },
            TensorView { dtype: DType::BF16, shape: &[1, 6], bytes: &bb },
        ];
        let (halves, shift) = bf16_as_f16(&views).expect("exact");
        assert_eq!(shift, 15, "0.75 is in [2^-1, 2^0): shifted into [2^14, 2^15)");
        for (view, h) in views.iter().zip(&halves) {
            let back = unshifted(h, shift);
            assert!(view.to_f32().iter().zip(&back).all(|(x, y)| x.to_bits() == y.to_bits()));
        }
        // 39 binades under the largest value: its low bits fall off f16's subnormals.
        let far = bf16_bytes(&[1.0, 1.0078125 * 2f32.powi(-32)]);
        assert!(bf16_as_f16(&[TensorView { dtype: DType::BF16, shape: &[1, 2], bytes: &far }]).is_none());
        // A power of two that far down is still exact (one significant bit).
        let two = bf16_bytes(&[1.0, 2f32.powi(-38)]);
        assert!(bf16_as_f16(&[TensorView { dtype: DType::BF16, shape: &[1, 2], bytes: &two }]).is_some());
        for bad in [f32::NAN, f32::INFINITY] {
            let v = bf16_bytes(&[1.0, bad]);
            assert!(bf16_as_f16(&[TensorView { dtype: DType::BF16, shape: &[1, 2], bytes: &v }]).is_none());
        }
        let zeros = bf16_bytes(&[0.0; 8]);
        assert_eq!(bf16_as_f16(&[TensorView { dtype: DType::BF16, shape: &[1, 8], bytes: &zeros }]).unwrap().1, 0);
    }

    #[test]
    fn glu_scale_keeps_every_m_of_a_unit_row_within_2_to_the_12() {
        // gate and up of 24 rows of 40 inputs, one gate row 30× the rest (the bound's
        // largest), against many unit rows x, the worst of them x along that row.
        let (f, k) = (24usize, 40usize);
        let mut gate = dory::testing::rand_vec(f * k, 5);
        gate[7 * k..8 * k].iter_mut().for_each(|v| *v *= 30.0);
        let up = dory::testing::rand_vec(f * k, 6);
        let (gs, us) = (dory::testing::rand_vec(f, 7), dory::testing::rand_vec(f, 8));
        let bytes = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        let (gb, ub) = (bytes(&gate), bytes(&up));
        let view = |b| TensorView { dtype: DType::F32, shape: &[24, 40], bytes: b };
        let s = glu_scale([view(&gb), view(&ub)], [&gs, &us]).expect("a finite bound");
        assert_eq!(s, 2f32.powi(s.log2().round() as i32), "a power of two");
        let unit = |mut x: Vec<f32>| {
            let n = x.iter().map(|v| v * v).sum::<f32>().sqrt();
            x.iter_mut().for_each(|v| *v /= n);
            x
        };
        let mut most = 0f32;
        let xs = (0..200).map(|seed| unit(dory::testing::rand_vec(k, 100 + seed)));
        for x in xs.chain([unit(gate[7 * k..8 * k].to_vec()), unit(up[7 * k..8 * k].to_vec())]) {
            for j in 0..f {
                let dot = |w: &[f32]| w[j * k..][..k].iter().zip(&x).map(|(a, b)| a * b).sum::<f32>();
                let (g, u) = (dot(&gate) * gs[j], dot(&up) * us[j]);
                most = most.max((g / (1.0 + (-g).exp()) * u * s).abs());
            }
        }
        assert!(most <= 4096.0, "|m| · s reaches {most}");
        // Not loose beyond the bound's own slack: the worst m lands within 2⁴ of 2¹².
        assert!(most >= 256.0, "|m| · s only {most}");
        let inf = bytes(&[f32::INFINITY; 24 * 40]);
        assert!(glu_scale([view(&inf), view(&ub)], [&gs, &us]).is_none());
        // A bound past 2¹⁰⁰ (rows of norm ~2⁵⁵ each) takes SwiGLU's own split instead.
        let huge = bytes(&gate.iter().map(|v| v * 2f32.powi(55)).collect::<Vec<_>>());
        assert!(glu_scale([view(&huge), view(&huge)], [&gs, &gs]).is_none());
        // Zero weights bound m by 0: the smallest scale's exponent, still a normal f32.
        let zeros = bytes(&[0.0; 24 * 40]);
        assert_eq!(glu_scale([view(&zeros), view(&zeros)], [&gs, &us]), Some(2f32.powi(112)));
    }
}
