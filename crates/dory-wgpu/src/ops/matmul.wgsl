// What the projections of several rows share (gemv.wgsl, gemm.wgsl, gemm_coop.wgsl): out[r,
// row0 + j] ← Σ_i x[xr0 + r, i] · W[j, i] for r < rows, over one part of a matrix W (rows
// row0 … row0 + rows_w − 1), stored as dtype.wgsl says; `scale` is a per-column scale (the
// head's) or, for the fused SwiGLU, [gate_scale | up_scale] (matmul.rs binds x there when a
// kernel reads neither).

struct P {
    k: u32,      // width of a row of x (a multiple of 4)
    g8: u32,     // groups of 8 weights in a stored row of W
    n: u32,      // width of a row of out
    row0: u32,   // first column of out this part covers
    rows_w: u32, // rows of this part of W
    xr0: u32,    // first row of x
    yr0: u32,    // first row of out
    rows: u32,   // rows of x and out
    eps: f32,    // the residual's (gemv.wgsl's RES)
    unshift: f32, // the sums times this: 2^-shift of a bf16 W held as f16 (model.rs), else 1
    tiled: u32,   // W in tiles (dtype.wgsl's piece)
    kv_heads: u32, // the attention's shape and chunks (gemv.wgsl's COMBINE)
    d: u32,
    chunks: u32,
}
var<immediate> p: P;

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read> scale: array<vec4<f32>>;

// scale[i], one float of the vec4 array.
fn scale_at(i: u32) -> f32 {
    return scale[i / 4u][i % 4u];
}
