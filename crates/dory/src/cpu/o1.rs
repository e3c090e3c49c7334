//! The O(1) full layer's kernels on the CPU (spec §6): the attend of a sealed layer and
//! the push.

use super::{dot, KvHead};
use crate::config::GROUP;
use crate::nystrom::Landmarks;

/// The attend of the four query heads of one KV head of one row: the near set exactly
/// (`slots`), the far span through the landmarks `lm` when `far` (the far span is not
/// empty). z4 and q4 = [4, d].
#[allow(clippy::too_many_arguments)]
pub fn attend_sealed(
    z4: &mut [f32],
    q4: &[f32],
    kv: &KvHead,
    slots: impl Iterator<Item = usize> + Clone,
    lm: &Landmarks,
    far: bool,
    scale: f32,
    scores: &mut Vec<f32>,
) {
    let d = z4.len() / GROUP;
    let m = lm.m;
    let kh = kv.offset / d;
    let mut gains = vec![0.0f32; m];
    for (h, (zh, qh)) in z4.chunks_exact_mut(d).zip(q4.chunks_exact(d)).enumerate() {
        let a = kh * GROUP + h;
        // Near scores, and their maximum C.
        scores.clear();
        scores.extend(slots.clone().map(|s| scale * dot(qh, &kv.k[s * kv.stride + kv.offset..][..d])));
        let mut top = scores.iter().fold(f32::NEG_INFINITY, |t, &x| t.max(x));
        // The far part: landmark scores f, the gains u through mu, the row shifts.
        let mut far_mass = 0.0f32;
        if far {
            let f: Vec<f32> = (0..m).map(|i| scale * dot(qh, &lm.keys[(kh * m + i) * d..][..d])).collect();
            let fmax = f.iter().fold(f32::NEG_INFINITY, |t, &x| t.max(x));
            gains.fill(0.0);
            for (i, fi) in f.iter().enumerate() {
                let e = (fi - fmax).exp();
                let row = &lm.mu[(a * m + i) * m..][..m];
                gains.iter_mut().zip(row).for_each(|(u, mu)| *u += e * mu);
            }
            if lm.rect {
                gains.iter_mut().for_each(|u| *u = u.max(0.0));
            }
            let off = |b: usize| fmax + lm.far_max[a * m + b] - lm.shift[a * m + b];
            top = (0..m).fold(top, |t, b| t.max(off(b)));
            for (b, g) in gains.iter_mut().enumerate() {
                *g *= (off(b) - top).exp();
                far_mass += *g * lm.far_mass[a * m + b];
            }
            if far_mass < 0.0 {
                // A negative far mass (rect off) is dropped; C stays as it is.
                gains.fill(0.0);
                far_mass = 0.0;
            }
        }
        let mut sum = 0.0f32;
        zh.fill(0.0);
        for (x, s) in scores.iter_mut().zip(slots.clone()) {
            *x = (*x - top).exp();
            sum += *x;
            let v = &kv.v[s * kv.stride + kv.offset..][..d];
            zh.iter_mut().zip(v).for_each(|(z, &v)| *z += *x * v);
        }
        if far {
            for (b, g) in gains.iter().enumerate() {
                let th = &lm.far_values[(a * m + b) * d..][..d];
                zh.iter_mut().zip(th).for_each(|(z, &t)| *z += g * t);
            }
        }
        let inv = 1.0 / (sum + far_mass).max(1e-30);
        zh.iter_mut().for_each(|z| *z *= inv);
    }
}

/// Absorbs one position's key and value ([K·d] each) into every (query head, landmark)'s
/// far statistics, rescaling to the new maximum as an online softmax does.
pub fn push(lm: &mut Landmarks, k: &[f32], v: &[f32], d: usize, scale: f32) {
    let m = lm.m;
    let heads = lm.far_max.len() / m;
    for a in 0..heads {
        let (kh, vh) = (&k[a / GROUP * d..][..d], &v[a / GROUP * d..][..d]);
        for b in 0..m {
            let at = a * m + b;
            let x = scale * dot(&lm.queries[at * d..][..d], kh);
            let top = lm.far_max[at].max(x);
            // e^{−∞} = 0 absorbs the first position exactly: M = x, mass = 1, th = v.
            let (old, new) = ((lm.far_max[at] - top).exp(), (x - top).exp());
            lm.far_max[at] = top;
            lm.far_mass[at] = lm.far_mass[at] * old + new;
            let th = &mut lm.far_values[at * d..][..d];
            th.iter_mut().zip(vh).for_each(|(t, &v)| *t = *t * old + new * v);
        }
    }
}
