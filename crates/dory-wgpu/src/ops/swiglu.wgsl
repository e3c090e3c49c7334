// m ← silu(g ⊙ gate_scale) ⊙ (u ⊙ up_scale) (spec §4), from gu = [rows, F | F].

// The parameters `p`: swiglu.rs's `Params` (kernels.rs declares their `struct P`).

@group(0) @binding(0) var<storage, read> gu: array<f32>;
@group(0) @binding(1) var<storage, read> scales: array<f32>; // [gate_scale | up_scale]
@group(0) @binding(2) var<storage, read_write> m: array<f32>;

@compute @workgroup_size(256)
fn swiglu(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let r = gid.y + p.row0;
    if (j >= p.f || r >= p.rows) {
        return;
    }
    let a = gu[r * 2u * p.f + j] * scales[j];
    m[r * p.f + j] = a * sigmoid(a) * (gu[r * 2u * p.f + p.f + j] * scales[p.f + j]);
}
