//! The CPU's kernels: output first, shapes in the comments, f32 throughout.

use rayon::prelude::*;

/// Σ a_i b_i, eight lanes wide with fused multiply-adds where the CPU has them.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the features this function was compiled for are present.
            return unsafe { dot_avx2(a, b) };
        }
    }
    dot_lanes(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut i = 0;
    while i + 32 <= n {
        for (j, acc) in acc.iter_mut().enumerate() {
            let x = _mm256_loadu_ps(pa.add(i + 8 * j));
            let y = _mm256_loadu_ps(pb.add(i + 8 * j));
            *acc = _mm256_fmadd_ps(x, y, *acc);
        }
        i += 32;
    }
    while i + 8 <= n {
        acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), acc[0]);
        i += 8;
    }
    let s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    let mut lanes = [0.0f32; 8];
    _mm256_storeu_ps(lanes.as_mut_ptr(), s);
    let mut total: f32 = lanes.iter().sum();
    while i < n {
        total += *pa.add(i) * *pb.add(i);
        i += 1;
    }
    total
}

fn dot_lanes(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// Outputs below this many multiply-adds are not worth a thread.
const PARALLEL_WORK: usize = 1 << 15;

/// out[rows, n] ← x[rows, k] · w[n, k]ᵀ.
pub fn matmul(out: &mut [f32], x: &[f32], w: &[f32], rows: usize, k: usize, n: usize) {
    let out = &mut out[..rows * n];
    let x = &x[..rows * k];
    if rows <= 2 {
        // Decoding: a matrix-vector product, bound by reading w once.
        for (o, xr) in out.chunks_exact_mut(n).zip(x.chunks_exact(k)) {
            gemv(o, xr, w, k);
        }
        return;
    }
    let parallelism = if rows * k * n >= PARALLEL_WORK { gemm::Parallelism::Rayon(0) } else { gemm::Parallelism::None };
    // SAFETY: the pointers cover [rows, n], [rows, k] and [n, k] with the strides given.
    unsafe {
        gemm::gemm(
            rows,
            n,
            k,
            out.as_mut_ptr(),
            1,
            n as isize,
            false,
            x.as_ptr(),
            1,
            k as isize,
            w.as_ptr(),
            k as isize,
            1,
            0.0,
            1.0,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// out[n] ← w[n, k] · x[k].
fn gemv(out: &mut [f32], x: &[f32], w: &[f32], k: usize) {
    let n = out.len();
    if n * k < PARALLEL_WORK {
        for (o, wr) in out.iter_mut().zip(w.chunks_exact(k)) {
            *o = dot(wr, x);
        }
        return;
    }
    // Blocks of rows big enough that a task outweighs its scheduling.
    let block = (PARALLEL_WORK / k).clamp(8, 256);
    out.par_chunks_mut(block).zip(w[..n * k].par_chunks(block * k)).for_each(|(o, wb)| {
        for (o, wr) in o.iter_mut().zip(wb.chunks_exact(k)) {
            *o = dot(wr, x);
        }
    });
}

/// 1 / √(Σ x² + ε), the factor of N(x).
#[inline]
pub fn inv_norm(x: &[f32], eps: f32) -> f32 {
    1.0 / (dot(x, x) + eps).sqrt()
}

/// x ← N(x).
#[inline]
pub fn normalize(x: &mut [f32], eps: f32) {
    let r = inv_norm(x, eps);
    x.iter_mut().for_each(|v| *v *= r);
}

#[inline]
pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{rand_vec, rel_err};

    fn naive_matmul(x: &[f32], w: &[f32], rows: usize, k: usize, n: usize) -> Vec<f64> {
        let mut out = vec![0.0f64; rows * n];
        for r in 0..rows {
            for j in 0..n {
                out[r * n + j] = (0..k).map(|i| x[r * k + i] as f64 * w[j * k + i] as f64).sum();
            }
        }
        out
    }

    #[test]
    fn matmul_matches_the_formula_on_odd_shapes() {
        for (i, &(rows, k, n)) in
            [(1, 1757, 33), (2, 64, 1025), (3, 7, 5), (17, 96, 130), (64, 384, 960), (1, 4096, 9)].iter().enumerate()
        {
            let x = rand_vec(rows * k, 10 + i as u64);
            let w = rand_vec(n * k, 20 + i as u64);
            let mut out = vec![f32::NAN; rows * n];
            matmul(&mut out, &x, &w, rows, k, n);
            let want = naive_matmul(&x, &w, rows, k, n);
            assert!(rel_err(&out, &want) < 1e-5, "{rows}×{k}×{n}: {}", rel_err(&out, &want));
        }
    }

    #[test]
    fn dot_paths_agree() {
        for n in [0, 1, 7, 8, 31, 32, 33, 100, 1757] {
            let a = rand_vec(n, 1);
            let b = rand_vec(n, 2);
            let want: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
            assert!((dot(&a, &b) as f64 - want).abs() < 1e-4, "n {n}");
            assert!((dot_lanes(&a, &b) as f64 - want).abs() < 1e-4, "n {n}");
        }
    }
}
