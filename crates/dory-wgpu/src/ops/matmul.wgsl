// What the projections of several rows share (gemv.wgsl, gemm.wgsl, gemm_coop.wgsl): out[r,
// row0 + j] ← Σ_i x[xr0 + r, i] · W[j, i] for r < rows, over one part of a matrix W (rows
// row0 … row0 + rows_w − 1), stored as dtype.wgsl says; `scale` is a per-column scale (the
// head's) or, for the fused SwiGLU, [gate_scale | up_scale] (matmul.rs binds x there when a
// kernel reads neither). The parameters `p` are matmul.rs's `Params` (kernels.rs declares
// their `struct P`).

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read> scale: array<vec4<f32>>;

// scale[i], one float of the vec4 array.
fn scale_at(i: u32) -> f32 {
    return scale[i / 4u][i % 4u];
}
