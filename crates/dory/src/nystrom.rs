//! The seal of an O(1) full layer (spec §6), on the host in f64: landmark keys and
//! queries from segment means, the pseudo-inverse of each head's landmark kernel, and
//! the far statistics over the far span. It is m×m work per head (plus one pass over
//! the far span), done once per layer.

use nalgebra::DMatrix;
use rayon::prelude::*;

use crate::cache::Near;
use crate::config::{Config, GROUP, O1};

/// A sealed layer's landmark state. Heads: H query heads, K KV heads; m landmarks.
#[derive(Clone, Debug)]
pub struct Landmarks {
    pub m: usize,
    pub rect: bool,
    /// [K, m, d]: k̃, the mean key of each segment.
    pub keys: Vec<f32>,
    /// [H, m, d]: q̃, the mean sampled query of each group (the push scores with them).
    pub queries: Vec<f32>,
    /// [H, m, m]: mu_a[i][b] (key landmark i, query landmark b) at (a·m + i)·m + b.
    pub mu: Vec<f32>,
    /// [H, m]: r_{a,b}, the row shift of W_a.
    pub shift: Vec<f32>,
    /// [H, m]: M_{a,b}, the largest far score (−∞ while the far span is empty).
    pub far_max: Vec<f32>,
    /// [H, m]: Σ_j e^{x_j − M}.
    pub far_mass: Vec<f32>,
    /// [H, m, d]: Σ_j e^{x_j − M} v_j.
    pub far_values: Vec<f32>,
    /// The smallest |s / (rcond · s_max) − 1| over every head's singular values: how far
    /// the pseudo-inverse is from a cutoff flip (spec §8).
    pub cutoff_margin: f64,
}

impl Landmarks {
    pub fn bytes(&self) -> usize {
        4 * (self.keys.len()
            + self.queries.len()
            + self.mu.len()
            + self.shift.len()
            + self.far_max.len()
            + self.far_mass.len()
            + self.far_values.len())
    }
}

/// A full layer's cache as the host sees it for the seal.
pub struct Exported {
    /// [p, K·d]: the keys of positions 0..p (the last pass each ran).
    pub keys: Vec<f32>,
    /// [p, K·d].
    pub values: Vec<f32>,
    /// [⌈p / stride⌉, H·d]: the prepared query of each position j ≡ 0 (mod stride), row j / stride.
    pub queries: Vec<f32>,
}

/// Seals a layer at the step whose first position is `p`, from the cached positions [0, p).
pub fn seal(c: &Config, o1: &O1, p: usize, cache: &Exported) -> Landmarks {
    let (d, nh, m) = (c.head_dim, c.heads, o1.landmarks);
    let (kd, ns, lambda) = (c.kv_width(), o1.sinks, f64::from(c.attn_scale));
    assert!(p >= ns + o1.stride * m, "seal_at ≥ ns + stride·m keeps every segment and group non-empty");
    let dot = |a: &[f64], b: &[f32]| a.iter().zip(b).map(|(x, &y)| x * f64::from(y)).sum::<f64>();
    let keys = landmark_keys(c, o1, p, &cache.keys);
    let queries = landmark_queries(c, o1, p, &cache.queries);
    let near = Near { sinks: ns, window: o1.window };
    let far = near.far(p);
    // Per query head: the landmark kernel's pseudo-inverse and the far statistics.
    let heads: Vec<HeadState> = (0..nh)
        .into_par_iter()
        .map(|a| {
            let ch = a / GROUP;
            let qt = |b: usize| &queries[(a * m + b) * d..][..d];
            let kt = |i: usize| &keys[(ch * m + i) * d..][..d];
            let x = DMatrix::from_fn(m, m, |b, i| lambda * qt(b).iter().zip(kt(i)).map(|(u, v)| u * v).sum::<f64>());
            let shift: Vec<f64> = (0..m).map(|b| x.row(b).max()).collect();
            let w = DMatrix::from_fn(m, m, |b, i| (x[(b, i)] - shift[b]).exp());
            let (mu, margin) = pinv(w, o1.rcond);
            let mut st = HeadState {
                mu,
                shift,
                far_max: vec![f64::NEG_INFINITY; m],
                far_mass: vec![0.0; m],
                far_values: vec![0.0; m * d],
                margin,
            };
            // Position by position, every landmark's score of it while its key is in the
            // cache (a landmark at a time read the span's keys and values m times each), in
            // two walks: the maxima, then the sums, each landmark's in the order of j.
            let score = |b: usize, j: usize| lambda * dot(qt(b), &cache.keys[j * kd + ch * d..][..d]);
            for j in far.clone() {
                for b in 0..m {
                    st.far_max[b] = st.far_max[b].max(score(b, j));
                }
            }
            for j in far.clone() {
                let v = &cache.values[j * kd + ch * d..][..d];
                for b in 0..m {
                    let e = (score(b, j) - st.far_max[b]).exp();
                    st.far_mass[b] += e;
                    st.far_values[b * d..][..d].iter_mut().zip(v).for_each(|(o, &x)| *o += e * f64::from(x));
                }
            }
            st
        })
        .collect();
    let f32s = |v: &mut dyn Iterator<Item = f64>| v.map(|x| x as f32).collect::<Vec<f32>>();
    Landmarks {
        m,
        rect: o1.rect,
        keys: f32s(&mut keys.iter().copied()),
        queries: f32s(&mut queries.iter().copied()),
        mu: f32s(&mut heads.iter().flat_map(|h| h.mu.iter().copied())),
        shift: f32s(&mut heads.iter().flat_map(|h| h.shift.iter().copied())),
        far_max: f32s(&mut heads.iter().flat_map(|h| h.far_max.iter().copied())),
        far_mass: f32s(&mut heads.iter().flat_map(|h| h.far_mass.iter().copied())),
        far_values: f32s(&mut heads.iter().flat_map(|h| h.far_values.iter().copied())),
        cutoff_margin: heads.iter().map(|h| h.margin).fold(f64::INFINITY, f64::min),
    }
}

/// [K, m, d]: the mean key of each of m near-equal segments of S = [ns, p).
fn landmark_keys(c: &Config, o1: &O1, p: usize, keys: &[f32]) -> Vec<f64> {
    let (d, kd, m, ns) = (c.head_dim, c.kv_width(), o1.landmarks, o1.sinks);
    let mut out = vec![0.0f64; c.kv_heads * m * d];
    for ch in 0..c.kv_heads {
        for b in 0..m {
            let segment = ns + b * (p - ns) / m..ns + (b + 1) * (p - ns) / m;
            mean(&mut out[(ch * m + b) * d..][..d], segment.map(|j| &keys[j * kd + ch * d..][..d]));
        }
    }
    out
}

/// [H, m, d]: the mean sampled query of each of m groups of the positions sampled in
/// [ns, p), by index.
fn landmark_queries(c: &Config, o1: &O1, p: usize, queries: &[f32]) -> Vec<f64> {
    let (d, qd, m) = (c.head_dim, c.q_width(), o1.landmarks);
    let sampled: Vec<usize> = (o1.sinks..p).filter(|j| j % o1.stride == 0).collect();
    let mut out = vec![0.0f64; c.heads * m * d];
    for a in 0..c.heads {
        for b in 0..m {
            let group = &sampled[b * sampled.len() / m..(b + 1) * sampled.len() / m];
            mean(
                &mut out[(a * m + b) * d..][..d],
                group.iter().map(|&j| &queries[(j / o1.stride) * qd + a * d..][..d]),
            );
        }
    }
    out
}

/// `out` = the mean of `rows` (in f64).
fn mean<'a>(out: &mut [f64], rows: impl ExactSizeIterator<Item = &'a [f32]>) {
    let n = rows.len() as f64;
    for row in rows {
        out.iter_mut().zip(row).for_each(|(o, &x)| *o += f64::from(x));
    }
    out.iter_mut().for_each(|o| *o /= n);
}

struct HeadState {
    /// [m, m]: mu[i][b] at i·m + b.
    mu: Vec<f64>,
    shift: Vec<f64>,
    far_max: Vec<f64>,
    far_mass: Vec<f64>,
    far_values: Vec<f64>,
    margin: f64,
}

/// The pseudo-inverse of `w` (rows b, columns i) through its SVD, dropping singular
/// values below rcond × the largest, as [i][b] row-major; and the cutoff margin.
fn pinv(w: DMatrix<f64>, rcond: f64) -> (Vec<f64>, f64) {
    let m = w.nrows();
    let svd = w.svd(true, true);
    let (u, vt) = (svd.u.expect("U"), svd.v_t.expect("Vᵀ"));
    let s = &svd.singular_values;
    let cutoff = rcond * s.max();
    let margin = s.iter().map(|&x| (x / cutoff - 1.0).abs()).fold(f64::INFINITY, f64::min);
    // W⁺ = V Σ⁺ Uᵀ: entry (i, b) = Σ_k V[i][k] / s_k · U[b][k].
    let mut out = vec![0.0; m * m];
    for k in 0..s.len() {
        if !(s[k] >= cutoff && s[k] > 0.0) {
            continue;
        }
        for i in 0..m {
            let vik = vt[(k, i)] / s[k];
            for b in 0..m {
                out[i * m + b] += vik * u[(b, k)];
            }
        }
    }
    (out, margin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinv_inverts_a_regular_matrix_and_drops_tiny_directions() {
        let w = DMatrix::from_row_slice(3, 3, &[2.0, 1.0, 0.0, 1.0, 3.0, 1.0, 0.0, 1.0, 4.0]);
        let (p, margin) = pinv(w.clone(), 1e-4);
        let p = DMatrix::from_row_slice(3, 3, &p);
        assert!((w.clone() * &p - DMatrix::identity(3, 3)).norm() < 1e-12);
        assert!(margin > 1.0);
        // Repeated rows: singular, and the pseudo-inverse still satisfies W W⁺ W = W.
        let w = DMatrix::from_row_slice(3, 3, &[1.0, 2.0, 3.0, 1.0, 2.0, 3.0, 0.5, 0.1, 0.2]);
        let (p, _) = pinv(w.clone(), 1e-4);
        let p = DMatrix::from_row_slice(3, 3, &p);
        assert!((&w * &p * &w - &w).norm() < 1e-9);
        assert!(p.iter().all(|x| x.is_finite()));
    }
}
