//! RoPE tables. Since q_scale multiplies the rotated query dimension by dimension,
//! attention depends on absolute positions too, so the angles are computed in f64 and
//! only their cosines and sines rounded to f32 (spec §3): precise at positions in the
//! millions.

/// cos and sin of p·θ_i, θ_i = theta^(−2i/d), for p in `pos0..pos0 + rows` and i < d/2:
/// [rows, d], each row the d/2 cosines then the d/2 sines.
pub fn table(theta: f64, head_dim: usize, pos0: usize, rows: usize) -> Vec<f32> {
    let half = head_dim / 2;
    let freqs: Vec<f64> = (0..half).map(|i| theta.powf(-2.0 * i as f64 / head_dim as f64)).collect();
    let mut out = vec![0.0f32; rows * head_dim];
    for (r, row) in out.chunks_exact_mut(head_dim).enumerate() {
        let p = (pos0 + r) as f64;
        for (i, f) in freqs.iter().enumerate() {
            let (sin, cos) = (p * f).sin_cos();
            row[i] = cos as f32;
            row[half + i] = sin as f32;
        }
    }
    out
}

/// Rotates the pairs (x_i, x_{i+d/2}) of one head by a row of `table`.
#[inline]
pub fn rotate(x: &mut [f32], row: &[f32]) {
    let half = x.len() / 2;
    let (lo, hi) = x.split_at_mut(half);
    let (cos, sin) = row.split_at(half);
    for i in 0..half {
        let (a, b) = (lo[i], hi[i]);
        lo[i] = a * cos[i] - b * sin[i];
        hi[i] = b * cos[i] + a * sin[i];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn angles_are_exact_at_large_positions() {
        // At p = 2^24 + 3 an f32 angle would be off by whole radians.
        let p = (1usize << 24) + 3;
        let t = table(10000.0, 8, p, 1);
        let want = (p as f64).sin_cos();
        assert_eq!(t[0], want.1 as f32);
        assert_eq!(t[4], want.0 as f32);
        let f1 = 10000f64.powf(-2.0 / 8.0);
        assert_eq!(t[1], (p as f64 * f1).cos() as f32);
    }

    #[test]
    fn rotation_preserves_norm_and_matches_the_formula() {
        let t = table(10000.0, 4, 7, 1);
        let mut x = [0.3f32, -1.2, 0.5, 2.0];
        let n0: f32 = x.iter().map(|v| v * v).sum();
        rotate(&mut x, &t);
        let n1: f32 = x.iter().map(|v| v * v).sum();
        assert!((n0 - n1).abs() < 1e-5);
        let a = 7.0f64;
        let want0 = 0.3 * a.cos() - 0.5 * a.sin();
        assert!((x[0] as f64 - want0).abs() < 1e-6);
    }
}
