//! Attention on the CPU: a single row's four query heads of one KV head over its visible
//! keys (`attend_group`), and a chunk of prompt rows in blocks (`attend_blocks`): a block of
//! query rows against a tile of keys at a time (flash attention's order), so that each key
//! and value, gathered once into the tile, serves every row of the block and the four query
//! heads of its KV head. Each row of a block keeps an online softmax (running maximum and
//! sum, its value sum rescaled when the maximum grows); the result equals the row-by-row
//! one within f32 rounding (spec §8). Blocks serve sliding and exact full layers: a sealed
//! layer's steps are single rows (spec §5).

use std::ops::Range;

use rayon::prelude::*;

use super::isa::{self, Isa};
use super::{o1, CpuCache};
use crate::cache::{Keys, Rows};
use crate::config::GROUP;

/// A layer's cache as attention reads it.
pub struct Attn<'a> {
    pub keys: &'a Keys,
    pub cache: &'a CpuCache,
    pub d: usize,
    pub kv_heads: usize,
    pub scale: f32,
}

/// One KV head's keys and values: [slots, stride] storage, the head at `offset`.
pub(crate) struct KvHead<'a> {
    pub k: &'a [f32],
    pub v: &'a [f32],
    pub stride: usize,
    pub offset: usize,
}

/// The attention of the four query heads of one KV head of one row over the keys in
/// `slots`: z4 ← Σ_j softmax_j(λ q·k_j) v_j, for z4 and q4 = [4, d]. Each key and value is
/// read once for the four heads; `scores` holds [slots, 4].
pub fn attend_group(
    isa: Isa,
    z4: &mut [f32],
    q4: &[f32],
    kv: &KvHead,
    slots: impl Iterator<Item = usize> + Clone,
    scale: f32,
    scores: &mut Vec<f32>,
) {
    let (k, v, stride, off) = (kv.k, kv.v, kv.stride, kv.offset);
    let d = z4.len() / GROUP;
    scores.clear();
    scores.extend(slots.clone().flat_map(|s| isa::dot4(isa, q4, &k[s * stride + off..][..d]).map(|x| scale * x)));
    let mut max = [f32::NEG_INFINITY; GROUP];
    for row in scores.chunks_exact(GROUP) {
        max.iter_mut().zip(row).for_each(|(m, &x)| *m = m.max(x));
    }
    let sum = isa::softmax4(isa, scores, &max);
    z4.fill(0.0);
    for (w, s) in scores.chunks_exact(GROUP).zip(slots) {
        isa::axpy4(isa, z4, w, &v[s * stride + off..][..d]);
    }
    for (zh, s) in z4.chunks_exact_mut(d).zip(sum) {
        let inv = 1.0 / s;
        zh.iter_mut().for_each(|z| *z *= inv);
    }
}

/// z ← the attention of the prepared q of the rows `at`, one task per (row, KV head): z
/// and q = [rows, H·d], without the gate.
pub fn attend_rows(isa: Isa, a: &Attn, z: &mut [f32], q: &[f32], at: Rows) {
    let (keys, cache, d, nk) = (a.keys, a.cache, a.d, a.kv_heads);
    let (qd, kd) = (nk * GROUP * d, nk * d);
    z[..at.rows * qd].par_chunks_mut(GROUP * d).enumerate().for_each_init(Vec::new, |scores, (t, z4)| {
        let (r, kh) = (t / nk, t % nk);
        let p = at.pos0 + r;
        let slots = keys.visible(p).map(|j| keys.slot(j));
        let q4 = &q[r * qd + kh * GROUP * d..][..GROUP * d];
        let kv = KvHead { k: &cache.k, v: &cache.v, stride: kd, offset: kh * d };
        match (keys, &cache.landmarks) {
            (Keys::Sealed(near), Some(lm)) => {
                o1::attend_sealed(z4, q4, &kv, slots, lm, !near.far(p).is_empty(), a.scale, scores)
            }
            _ => attend_group(isa, z4, q4, &kv, slots, a.scale, scores),
        }
    });
}

/// As `attend_rows`, in blocks of rows (a sliding or exact full layer): one task per block,
/// blocks small enough that every thread has several.
pub fn attend_blocks(isa: Isa, a: &Attn, z: &mut [f32], q: &[f32], at: Rows) {
    let qd = a.kv_heads * GROUP * a.d;
    let per = at.rows.div_ceil(4 * rayon::current_num_threads()).clamp(1, MAX_ROWS);
    let z = &mut z[..at.rows * qd];
    z.par_chunks_mut(per * qd)
        .zip(q[..at.rows * qd].par_chunks(per * qd))
        .enumerate()
        .for_each_init(Scratch::default, |t, (i, (zb, qb))| attend_block(isa, zb, qb, a, at.pos0 + i * per, t));
}

/// Keys per tile (a multiple of 8): the tile's keys and values, 2 · 32 · d floats, and a
/// block's value sums stay in the L1 cache.
const TILE: usize = 32;

/// The most query rows per block.
const MAX_ROWS: usize = 16;

/// A task's scratch, reused across its blocks (no allocation per row or block once grown).
#[derive(Default)]
struct Scratch {
    kt: Vec<f32>,  // [d, TILE]: the tile's keys, transposed
    v: Vec<f32>,   // [TILE, d]: the tile's values
    s: Vec<f32>,   // [4, TILE]: one row's scores, then weights
    acc: Vec<f32>, // [rows, 4, d]: the block's value sums
    max: Vec<f32>, // [rows, 4]: running maxima
    sum: Vec<f32>, // [rows, 4]: running sums
}

/// The positions a query at `p` sees: one contiguous span in a ring or an exact full layer.
fn span(keys: &Keys, p: usize) -> Range<usize> {
    match keys {
        Keys::Ring(r) => (p + 1).saturating_sub(r.window)..p + 1,
        Keys::Full { .. } => 0..p + 1,
        Keys::Sealed(_) => unreachable!("a sealed layer's steps are single rows"),
    }
}

/// z ← Σ_j softmax_j(λ q·k_j) v_j for every query head of a block of rows from `pos0`: z
/// and q = [rows, H·d], H = 4 K.
fn attend_block(isa: Isa, z: &mut [f32], q: &[f32], b: &Attn, pos0: usize, t: &mut Scratch) {
    let (k, v) = (&b.cache.k, &b.cache.v);
    let (d, nk) = (b.d, b.kv_heads);
    let (qd, kv_width) = (nk * GROUP * d, nk * d);
    let rows = z.len() / qd;
    t.kt.resize(d * TILE, 0.0);
    t.v.resize(TILE * d, 0.0);
    t.s.resize(GROUP * TILE, 0.0);
    t.acc.resize(rows * GROUP * d, 0.0);
    t.max.resize(rows * GROUP, 0.0);
    t.sum.resize(rows * GROUP, 0.0);
    let (first, last) = (span(b.keys, pos0).start, pos0 + rows);
    for kh in 0..nk {
        t.acc.fill(0.0);
        t.max.fill(f32::NEG_INFINITY);
        t.sum.fill(0.0);
        let off = kh * d;
        for t0 in (first..last).step_by(TILE) {
            let t1 = (t0 + TILE).min(last);
            let n8 = (t1 - t0).div_ceil(8) * 8;
            // Gather the tile: keys transposed to [d, n8] (zero columns past t1), values.
            let kt = &mut t.kt[..d * n8];
            kt.fill(0.0);
            for (j, p) in (t0..t1).enumerate() {
                let slot = b.keys.slot(p) * kv_width + off;
                for (i, &x) in k[slot..][..d].iter().enumerate() {
                    kt[i * n8 + j] = x;
                }
                t.v[j * d..][..d].copy_from_slice(&v[slot..][..d]);
            }
            for r in 0..rows {
                let seen = span(b.keys, pos0 + r);
                let (a, e) = (seen.start.max(t0), seen.end.min(t1));
                if a >= e {
                    continue;
                }
                let (ja, je) = (a - t0, e - t0);
                let s = &mut t.s[..GROUP * n8];
                isa::scores4(isa, s, &q[r * qd + kh * GROUP * d..][..GROUP * d], kt, n8);
                for h in 0..GROUP {
                    let w = &mut s[h * n8 + ja..h * n8 + je];
                    w.iter_mut().for_each(|x| *x *= b.scale);
                    let top = w.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
                    let (m, sum) = (&mut t.max[r * GROUP + h], &mut t.sum[r * GROUP + h]);
                    let acc = &mut t.acc[(r * GROUP + h) * d..][..d];
                    if top > *m {
                        if *m > f32::NEG_INFINITY {
                            let c = (*m - top).exp();
                            *sum *= c;
                            acc.iter_mut().for_each(|x| *x *= c);
                        }
                        *m = top;
                    }
                    *sum += isa::exp_sum(isa, w, *m);
                    isa::axpy_rows(isa, acc, w, &t.v[ja * d..je * d]);
                }
            }
        }
        for r in 0..rows {
            for h in 0..GROUP {
                let inv = 1.0 / t.sum[r * GROUP + h];
                let acc = &t.acc[(r * GROUP + h) * d..][..d];
                let zh = &mut z[r * qd + (kh * GROUP + h) * d..][..d];
                zh.iter_mut().zip(acc).for_each(|(z, a)| *z = a * inv);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::Ring;
    use crate::config::LayerKind;
    use crate::testing::{rand_vec, rel_err};

    /// Random keys and values for the positions below pos0 + rows of `keys`, random
    /// queries; attention in blocks against row by row, outputs poisoned with NaN first.
    fn compare(isa: Isa, keys: Keys, d: usize, kv_heads: usize, at: Rows, seed: u64) {
        let (kd, qd) = (kv_heads * d, kv_heads * GROUP * d);
        let slots = keys.slots(at.end());
        // Unit keys and queries of norm ~3 (the model's are normalised then scaled).
        let unit = |n: usize, s: u64, norm: f32| {
            let mut x = rand_vec(n, s);
            for h in x.chunks_exact_mut(d) {
                let r = norm / h.iter().map(|v| v * v).sum::<f32>().sqrt();
                h.iter_mut().for_each(|v| *v *= r);
            }
            x
        };
        let cache =
            CpuCache { k: unit(slots * kd, seed, 1.0), v: rand_vec(slots * kd, seed + 1), ..Default::default() };
        let q = unit(at.rows * qd, seed + 2, 3.0);
        let a = Attn { keys: &keys, cache: &cache, d, kv_heads, scale: 1.0 / (d as f32).sqrt() * 4.0 };
        let (mut rows, mut blocks) = (vec![f32::NAN; at.rows * qd], vec![f32::NAN; at.rows * qd]);
        attend_rows(isa, &a, &mut rows, &q, at);
        attend_blocks(isa, &a, &mut blocks, &q, at);
        let want: Vec<f64> = rows.iter().map(|&x| x as f64).collect();
        assert!(rows.iter().all(|x| x.is_finite()), "row by row: {keys:?} d {d} {at:?}");
        let e = rel_err(&blocks, &want);
        assert!(e < 1e-5, "{isa:?} {keys:?} d {d} K {kv_heads} {at:?}: {e}");
        // Row by row too, each row's own error (a bad row would hide in the whole's norm).
        for (r, (b, w)) in blocks.chunks_exact(qd).zip(want.chunks_exact(qd)).enumerate() {
            assert!(rel_err(b, w) < 1e-5, "{isa:?} {keys:?} d {d} {at:?}: row {r}");
        }
    }

    #[test]
    fn blocks_match_row_by_row_in_every_isa() {
        let ring = |w: usize, rows: usize| Keys::for_step(LayerKind::Sliding, w, rows, None);
        let full = Keys::Full { sample: None };
        let sampled = Keys::Full { sample: Some(3) };
        #[rustfmt::skip]
        let cases = [
            // (keys, d, K, pos0, rows)
            (full, 48, 2, 0, 512), (full, 48, 2, 200, 77), (full, 13, 1, 0, 2), (full, 8, 3, 5, 33),
            (sampled, 16, 2, 0, 100), (sampled, 48, 2, 64, 40),
            (ring(256, 512), 48, 2, 0, 512), (ring(256, 300), 48, 2, 700, 300),
            (ring(4, 40), 13, 1, 0, 40), (ring(4, 40), 13, 1, 9, 40), (ring(1, 7), 8, 2, 3, 7),
            (ring(37, 65), 40, 1, 100, 65), (ring(100, 16), 48, 2, 30, 16), (ring(8, 3), 70, 1, 2, 3),
            // A ring of exactly the step's slots (Ring::for_rows), and one row alone.
            (Keys::Ring(Ring { window: 5, cap: 5 + 20 - 1 }), 24, 2, 11, 20), (full, 48, 2, 9, 1),
        ];
        for isa in Isa::available() {
            for (i, &(keys, d, kv_heads, pos0, rows)) in cases.iter().enumerate() {
                compare(isa, keys, d, kv_heads, Rows { pos0, rows }, 40 + 3 * i as u64);
            }
        }
    }

    /// The two paths timed on the benchmark config's shapes (d 48, 2 KV heads, a 512-row
    /// chunk, a sliding layer of window 256 and a full one), interleaved:
    /// `cargo test --release -p dory --lib -- --ignored attention_speed --nocapture`.
    #[test]
    #[ignore]
    fn attention_speed() {
        let (d, kv_heads, at) = (48, 2, Rows { pos0: 0, rows: 512 });
        let (kd, qd) = (kv_heads * d, kv_heads * GROUP * d);
        for keys in [Keys::for_step(LayerKind::Sliding, 256, 512, None), Keys::Full { sample: None }] {
            let slots = keys.slots(at.end());
            let cache = CpuCache { k: rand_vec(slots * kd, 1), v: rand_vec(slots * kd, 2), ..Default::default() };
            let q = rand_vec(at.rows * qd, 3);
            let a = Attn { keys: &keys, cache: &cache, d, kv_heads, scale: 0.3 };
            let mut z = vec![0.0; at.rows * qd];
            let (mut rows, mut blocks) = (vec![], vec![]);
            for _ in 0..15 {
                let t = std::time::Instant::now();
                attend_rows(Isa::best(), &a, &mut z, &q, at);
                rows.push(t.elapsed().as_secs_f64() * 1e3);
                let t = std::time::Instant::now();
                attend_blocks(Isa::best(), &a, &mut z, &q, at);
                blocks.push(t.elapsed().as_secs_f64() * 1e3);
            }
            let median = |x: &mut Vec<f64>| {
                x.sort_by(f64::total_cmp);
                x[x.len() / 2]
            };
            let (r, b) = (median(&mut rows), median(&mut blocks));
            println!("{keys:?}: row by row {r:.2} ms, blocks {b:.2} ms, {:.2}×", r / b);
        }
    }
}
