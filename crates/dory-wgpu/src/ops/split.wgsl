// x's rows cut into f16 parts for the tensor-core GEMM (parts.wgsl says how), one workgroup
// per row. With SWIGLU = 1 x is formed on the way in, as the down projection's input: x_i =
// silu(g_i · gs_i) · (u_i · us_i) from gu = [rows, k | k] bound as x, and scale = [gate_scale
// | up_scale] (which spares SwiGLU its own dispatch). With COMBINE = 1 x is the out
// projection's input, the row's split attention joined and gated (join.wgsl) from the
// chunks' partials bound as x, the gates' scale as scale and qkvg, into workgroup memory
// (which spares combine.wgsl its dispatch).

// The parameters `p`: matmul.rs's `SplitParams` (kernels.rs declares their `struct P`).

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> xa: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> xinv: array<f32>;
// SWIGLU = 1: [gate_scale | up_scale]; COMBINE = 1: gate_scale (bound to x where not read).
@group(0) @binding(3) var<storage, read> scale: array<vec4<f32>>;
// COMBINE = 1: qkvg (bound to x where not read).
@group(0) @binding(4) var<storage, read> qkvg: array<f32>;

const WG: u32 = 256u;
override SWIGLU: u32 = 0u;
override COMBINE: u32 = 0u;

// COMBINE = 1: the row's x (join.wgsl's, up to the larger config's 2,048).
var<workgroup> x_sh: array<vec4<f32>, 512>;

fn join_part(at: u32) -> vec4<f32> {
    return x[at];
}

fn join_gate(at: u32, i: u32) -> f32 {
    return sigmoid(qkvg[at] * scale[i / 4u][i % 4u]);
}

fn join_put(i: u32, v: f32) {
    x_sh[i / 4u][i % 4u] = v;
}

// Inputs 4i … 4i + 3 of x's row `row`.
fn x4(row: u32, i: u32) -> vec4<f32> {
    let k4 = p.k / 4u;
    if (SWIGLU == 1u) {
        return swiglu4(row, i, k4);
    }
    if (COMBINE == 1u) {
        return x_sh[i];
    }
    return x[row * k4 + i];
}

@compute @workgroup_size(256)
fn split(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let r = wid.x + p.row0;
    let k4 = p.k / 4u;
    let row = p.xr0 + r;
    if (COMBINE == 1u) {
        join_row(lid, row, p.kv_heads, p.d, p.chunks);
    }
    var top = vec4<f32>(0.0);
    for (var i = lid; i < k4; i = i + WG) {
        top = max(top, abs(x4(row, i)));
    }
    let e = parts_exp(seg_max4(top, lid, WG));
    let s = ldexp(1.0, 13 - e);
    // `copies` of the row side by side (q8_0's W is [hi | lo]: q8_tiles.wgsl).
    let k16 = p.k16 * p.copies;
    for (var i = lid; i < k16 / 4u; i = i + WG) {
        let c = i % (p.k16 / 4u);
        var v = vec4<f32>(0.0);
        if (c < k4) {
            v = x4(row, c) * s;
        }
        put_parts(r, i, v, k16, p.lo);
    }
    if (lid == 0u) {
        put_inverse(r, e);
    }
}
