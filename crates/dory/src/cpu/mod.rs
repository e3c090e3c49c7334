//! The reference backend: every op in plain f32 on the CPU, fast where it matters
//! (projections through a GEMM crate and rayon; attention parallel over rows and KV
//! heads).

mod attention;
mod isa;
mod kernels;
mod matrix;
mod o1;

use rayon::prelude::*;

use attention::Attn;
pub(crate) use attention::KvHead;
pub use isa::Isa;
pub use kernels::dot;
use kernels::{inv_norm, normalize, sigmoid};
use matrix::Stacked;

use crate::backend::{Backend, Layer, Mat, Mix, Part};
use crate::cache::{Keys, Near, Rows};
use crate::config::Config;
use crate::error::Result;
use crate::nystrom::{Exported, Landmarks};
use crate::weights::Weights;

/// One layer's weights: the matrices as stored (the projections that share an input
/// stacked), the vectors widened to f32.
struct LayerWeights {
    qkvg: Stacked,            // [H·d + K·d + K·d + H·d, D]
    out: Stacked,             // [D, H·d]
    gate_up: Stacked,         // [2F, D]
    down: Stacked,            // [D, F]
    q_scale: Vec<f32>,        // [H·d]
    gate_scale: Vec<f32>,     // [H·d]
    attn_alpha: Vec<f32>,     // [D]
    mlp_gate_scale: Vec<f32>, // [F]
    mlp_up_scale: Vec<f32>,   // [F]
    mlp_alpha: Vec<f32>,      // [D]
}

impl LayerWeights {
    fn matrices(&self) -> [&Stacked; 4] {
        [&self.qkvg, &self.out, &self.gate_up, &self.down]
    }

    fn vector_floats(&self) -> usize {
        2 * self.q_scale.len() + 2 * self.mlp_up_scale.len() + 2 * self.mlp_alpha.len()
    }
}

/// Rows per task of the loops over rows (a row's work is a few microseconds).
const MIN_ROWS: usize = 8;

/// Its parallel loops run on rayon's current pool: call its steps from a thread of that
/// pool (`ThreadPool::install`, as the CLI and the server do). From outside one, each loop
/// (about a hundred a token) sends its work to the pool and sleeps until it is done, and
/// the pool's spinning threads hold the cores the woken caller needs in between: decode
/// ran 1.2–2.0× slower so on 2 cores.
pub struct Cpu {
    c: Config,
    /// The kernels' instruction set, chosen once.
    isa: Isa,
    embed: Stacked,       // [V, D]
    head: Stacked,        // [V, D]
    head_scale: Vec<f32>, // [V]
    layers: Vec<LayerWeights>,
}

/// A layer's keys and values: [slots, K·d] each (slots as `Keys` lays them out).
#[derive(Default)]
pub struct CpuCache {
    k: Vec<f32>,
    v: Vec<f32>,
    /// [samples, H·d]: prepared queries kept for a seal (`Keys::Full { sample }`).
    q: Vec<f32>,
    /// A sealed layer's landmarks and far statistics.
    landmarks: Option<Landmarks>,
}

#[cfg(test)]
impl CpuCache {
    pub(crate) fn landmarks(&self) -> Option<&Landmarks> {
        self.landmarks.as_ref()
    }

    /// The key and value in `slot`, `width` = K·d floats each.
    pub(crate) fn entry(&self, slot: usize, width: usize) -> (&[f32], &[f32]) {
        (&self.k[slot * width..][..width], &self.v[slot * width..][..width])
    }
}

impl Cpu {
    /// The backend with the kernels the environment chooses (`Isa::detect`).
    pub fn new(config: &Config, w: &Weights) -> Cpu {
        Cpu::with_kernels(config, w, Isa::detect())
    }

    /// The backend on the kernels of `isa` (which this CPU must have: `Isa::available`).
    pub fn with_kernels(config: &Config, w: &Weights, isa: Isa) -> Cpu {
        let f = |name: &str| w.get(name).to_f32();
        let m = |names: &[String]| Stacked::load(w, names);
        let layers = (0..config.layers.len())
            .map(|i| {
                let n = |n: &str| format!("layers.{i}.{n}");
                let t = |name: &str| f(&n(name));
                LayerWeights {
                    qkvg: m(&[n("attn.q"), n("attn.k"), n("attn.v"), n("attn.gate")]),
                    out: m(&[n("attn.out")]),
                    gate_up: m(&[n("mlp.gate"), n("mlp.up")]),
                    down: m(&[n("mlp.down")]),
                    q_scale: t("attn.q_scale"),
                    gate_scale: t("attn.gate_scale"),
                    attn_alpha: t("attn.alpha"),
                    mlp_gate_scale: t("mlp.gate_scale"),
                    mlp_up_scale: t("mlp.up_scale"),
                    mlp_alpha: t("mlp.alpha"),
                }
            })
            .collect();
        let (embed, head) = (m(&["embed".into()]), m(&["head".into()]));
        Cpu { c: config.clone(), isa, embed, head, head_scale: f("head_scale"), layers }
    }

    /// Bytes of weights this backend holds: (mapped from the model's files, owned).
    pub fn weight_bytes(&self) -> (usize, usize) {
        let matrices = self.layers.iter().flat_map(|l| l.matrices()).chain([&self.embed, &self.head]);
        let (mapped, owned) = matrices.map(Stacked::bytes).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        let vectors: usize = self.layers.iter().map(LayerWeights::vector_floats).sum::<usize>() + self.head_scale.len();
        (mapped, owned + 4 * vectors)
    }
}

/// A session on `model` with the CPU backend, on the kernels `DORY_CPU_KERNELS` names.
pub fn session(model: &crate::Model, chunk: usize) -> Result<crate::Session<Cpu>> {
    let backend = Cpu::with_kernels(&model.config, &model.weights, Isa::from_env()?);
    Ok(crate::Session::new(crate::Forward::new(backend, &model.config, chunk)?))
}

impl Cpu {
    /// q ← N(rope(yq)) ⊙ q_scale; k, v into the cache (and sampled queries): the first half
    /// of `Backend::attend`.
    fn prep(&self, layer: &mut Layer<CpuCache>, q: &mut [f32], qkvg: &[f32], at: Rows, rope: Option<&[f32]>) {
        let (keys, cache) = (&layer.keys, &mut layer.cache);
        let c = &self.c;
        let (d, qd, kd, eps) = (c.head_dim, c.q_width(), c.kv_width(), c.eps);
        let q_scale = &self.layers[layer.index].q_scale;
        for r in 0..at.rows {
            let y = &qkvg[r * c.qkvg_width()..][..c.qkvg_width()];
            let rot = rope.map(|t| &t[r * d..][..d]);
            let qr = &mut q[r * qd..][..qd];
            qr.copy_from_slice(&y[..qd]);
            for (qh, sh) in qr.chunks_exact_mut(d).zip(q_scale.chunks_exact(d)) {
                if let Some(rot) = rot {
                    crate::rope::rotate(qh, rot);
                }
                normalize(qh, eps);
                qh.iter_mut().zip(sh).for_each(|(q, s)| *q *= s);
            }
            let p = at.pos0 + r;
            if let Keys::Full { sample: Some(stride) } = keys {
                if p % stride == 0 {
                    cache.q[p / stride * qd..][..qd].copy_from_slice(qr);
                }
            }
            let slot = keys.slot(p);
            let kr = &mut cache.k[slot * kd..][..kd];
            kr.copy_from_slice(&y[qd..qd + kd]);
            for kh in kr.chunks_exact_mut(d) {
                if let Some(rot) = rot {
                    crate::rope::rotate(kh, rot);
                }
                normalize(kh, eps);
            }
            cache.v[slot * kd..][..kd].copy_from_slice(&y[qd + kd..qd + 2 * kd]);
        }
    }

    /// z ← the gated attention of the prepared q: the second half of `Backend::attend`.
    /// A chunk of several rows runs in blocks of rows (`attention::attend_blocks`), a
    /// single row (decoding, a sealed layer's step) on its own.
    fn attend_prepared(&self, layer: &Layer<CpuCache>, z: &mut [f32], q: &[f32], qkvg: &[f32], at: Rows) {
        let c = &self.c;
        let (qd, kd, width) = (c.q_width(), c.kv_width(), c.qkvg_width());
        let a =
            Attn { keys: &layer.keys, cache: &layer.cache, d: c.head_dim, kv_heads: c.kv_heads, scale: c.attn_scale };
        if at.rows > 1 && !matches!(layer.keys, Keys::Sealed(_)) {
            attention::attend_blocks(self.isa, &a, z, q, at);
        } else {
            attention::attend_rows(self.isa, &a, z, q, at);
        }
        // The gate: z ⊙ σ(yg ⊙ gate_scale).
        let gate_scale = &self.layers[layer.index].gate_scale;
        z[..at.rows * qd].par_chunks_mut(qd).enumerate().for_each(|(r, zr)| {
            let g = &qkvg[r * width + qd + 2 * kd..][..qd];
            for ((z, g), s) in zr.iter_mut().zip(g).zip(gate_scale) {
                *z *= sigmoid(g * s);
            }
        });
    }
}

impl Backend for Cpu {
    type Buf = Vec<f32>;
    type Cache = CpuCache;

    fn name(&self) -> String {
        format!("cpu ({} threads, {:?} kernels)", rayon::current_num_threads(), self.isa)
    }

    fn alloc(&mut self, len: usize) -> Result<Vec<f32>> {
        crate::limits::zeros(len, &format!("a working buffer of {len} floats"))
    }

    fn cache(&mut self, _layer: usize) -> Result<CpuCache> {
        Ok(CpuCache::default())
    }

    fn relayout(&mut self, cache: &mut CpuCache, next: &Keys, end: usize, moves: &[(usize, usize)]) -> Result<()> {
        let width = self.c.kv_width();
        let (slots, samples) = (next.slots(end), next.samples(end));
        let what = format!("a layer's cache of {slots} positions × {width} floats (and {samples} queries)");
        let len = slots.checked_mul(width).ok_or_else(|| crate::error::invalid!("{what}: too large"))?;
        crate::limits::resize(&mut cache.q, samples.saturating_mul(self.c.q_width()), &what)?;
        for store in [&mut cache.k, &mut cache.v] {
            let old = if moves.is_empty() { None } else { Some(std::mem::take(store)) };
            crate::limits::resize(store, len, &what)?;
            if let Some(old) = old {
                for &(from, to) in moves {
                    store[to * width..][..width].copy_from_slice(&old[from * width..][..width]);
                }
            }
        }
        Ok(())
    }

    fn embed(&mut self, x: &mut Vec<f32>, ids: &[u32]) {
        let d = self.c.hidden;
        for (row, &id) in x.chunks_exact_mut(d).zip(ids) {
            self.embed.widen_row(self.isa, id as usize, row);
        }
    }

    fn mix(&mut self, mix: Mix, h: &mut Vec<f32>, x: &Vec<f32>, s: &mut Vec<f32>, rows: usize) {
        let (d, eps) = (self.c.hidden, self.c.eps);
        let (h, s) = (h[..rows * d].par_chunks_mut(d), s[..rows * d].par_chunks_mut(d));
        h.zip(x[..rows * d].par_chunks(d)).zip(s).with_min_len(MIN_ROWS).for_each(|((h, x), s)| match mix {
            Mix::Enter => {
                s.copy_from_slice(x);
                h.iter_mut().zip(s.iter().zip(x)).for_each(|(h, (s, x))| *h = s + x);
                normalize(h, eps);
            }
            Mix::Between | Mix::ReadOut => {
                let r = inv_norm(h, eps);
                s.iter_mut().zip(h.iter()).for_each(|(s, h)| *s = h * r);
                if mix == Mix::Between {
                    h.iter_mut().zip(s.iter().zip(x)).for_each(|(h, (s, x))| *h = s + x);
                    normalize(h, eps);
                } else {
                    h.copy_from_slice(s);
                }
            }
            Mix::Leave => normalize(h, eps),
            Mix::Resume => {
                h.iter_mut().zip(s.iter().zip(x)).for_each(|(h, (s, x))| *h = s + x);
                normalize(h, eps);
            }
        });
    }

    fn project(&mut self, out: &mut Vec<f32>, mat: Mat, x: &Vec<f32>, rows: usize) {
        let w = match mat {
            Mat::Qkvg(i) => &self.layers[i].qkvg,
            Mat::Out(i) => &self.layers[i].out,
            Mat::GateUp(i) => &self.layers[i].gate_up,
            Mat::Down(i) => &self.layers[i].down,
        };
        matrix::matmul(self.isa, out, x, w, rows);
    }

    fn attend(
        &mut self,
        layer: &mut Layer<CpuCache>,
        z: &mut Vec<f32>,
        q: &mut Vec<f32>,
        qkvg: &Vec<f32>,
        at: Rows,
        rope: Option<&[f32]>,
    ) {
        self.prep(layer, q, qkvg, at, rope);
        self.attend_prepared(layer, z, q, qkvg, at);
    }

    fn export(&mut self, cache: &CpuCache, end: usize) -> Result<Exported> {
        let kd = self.c.kv_width();
        Ok(Exported {
            keys: cache.k[..end * kd].to_vec(),
            values: cache.v[..end * kd].to_vec(),
            queries: cache.q.clone(),
        })
    }

    fn seal(
        &mut self,
        cache: &mut CpuCache,
        near: &Near,
        moves: &[(usize, usize)],
        landmarks: &Landmarks,
    ) -> Result<()> {
        self.relayout(cache, &Keys::Sealed(*near), 0, moves)?;
        cache.k.shrink_to_fit();
        cache.v.shrink_to_fit();
        cache.q = Vec::new();
        cache.landmarks = Some(landmarks.clone());
        Ok(())
    }

    fn push(&mut self, cache: &mut CpuCache, near: &Near, leaving: usize) {
        let c = &self.c;
        let (kd, slot) = (c.kv_width(), near.slot(leaving));
        let lm = cache.landmarks.as_mut().expect("a sealed layer has landmarks");
        o1::push(lm, &cache.k[slot * kd..][..kd], &cache.v[slot * kd..][..kd], c.head_dim, c.attn_scale);
    }

    fn cache_bytes(&self, cache: &CpuCache) -> usize {
        4 * (cache.k.len() + cache.v.len() + cache.q.len()) + cache.landmarks.as_ref().map_or(0, Landmarks::bytes)
    }

    fn swiglu(&mut self, layer: usize, m: &mut Vec<f32>, gu: &Vec<f32>, rows: usize) {
        let (f, isa) = (self.c.ffn, self.isa);
        let l = &self.layers[layer];
        let gu = gu[..rows * 2 * f].par_chunks(2 * f).with_min_len(MIN_ROWS);
        m[..rows * f].par_chunks_mut(f).with_min_len(MIN_ROWS).zip(gu).for_each(|(m, gu)| {
            let (g, u) = gu.split_at(f);
            isa::swiglu(isa, m, g, u, &l.mlp_gate_scale, &l.mlp_up_scale);
        });
    }

    fn residual(&mut self, layer: usize, part: Part, h: &mut Vec<f32>, o: &Vec<f32>, rows: usize) {
        let (d, eps) = (self.c.hidden, self.c.eps);
        let l = &self.layers[layer];
        let alpha = match part {
            Part::Attn => &l.attn_alpha,
            Part::Mlp => &l.mlp_alpha,
        };
        let o = o[..rows * d].par_chunks(d).with_min_len(MIN_ROWS);
        h[..rows * d].par_chunks_mut(d).with_min_len(MIN_ROWS).zip(o).for_each(|(h, o)| {
            let (ih, io) = (inv_norm(h, eps), inv_norm(o, eps));
            for ((h, o), a) in h.iter_mut().zip(o).zip(alpha) {
                let nh = *h * ih;
                *h = nh + a * (o * io - nh);
            }
            normalize(h, eps);
        });
    }

    fn logits(&mut self, out: &mut Vec<f32>, h: &Vec<f32>, first: usize, rows: usize) {
        let (d, v) = (self.c.hidden, self.c.vocab_size);
        matrix::matmul(self.isa, out, &h[first * d..], &self.head, rows);
        for row in out[..rows * v].chunks_exact_mut(v) {
            row.iter_mut().zip(&self.head_scale).for_each(|(x, s)| *x *= s);
        }
    }

    fn copy_rows(
        &mut self,
        dst: &mut Vec<f32>,
        dst_row: usize,
        src: &Vec<f32>,
        src_row: usize,
        rows: usize,
        width: usize,
    ) {
        dst[dst_row * width..][..rows * width].copy_from_slice(&src[src_row * width..][..rows * width]);
    }

    fn read(&mut self, buf: &Vec<f32>, len: usize) -> Result<Vec<f32>> {
        Ok(buf[..len].to_vec())
    }
}
