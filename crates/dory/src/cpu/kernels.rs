//! The CPU's kernels: output first, shapes in the comments, f32 throughout.

/// Σ a_i b_i, on the kernels chosen at start.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    super::isa::dot(super::Isa::detect(), a, b)
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
