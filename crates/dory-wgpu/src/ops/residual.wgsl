// The nGPT residual (spec §4): h ← N(N(h) + alpha ⊙ (N(o) − N(h))), one workgroup per row.

struct P {
    d: u32,
    eps: f32,
    row0: u32,    // first row of this dispatch (grids hold at most 65535 rows)
}
var<immediate> p: P;

@group(0) @binding(0) var<storage, read_write> h: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> o: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> alpha: array<vec4<f32>>;

fn res_h(base: u32, e: u32) -> vec4<f32> {
    return h[base + e];
}

fn res_o(base: u32, e: u32) -> vec4<f32> {
    return o[base + e];
}

fn res_put(base: u32, e: u32, y: vec4<f32>) {
    h[base + e] = y;
}

@compute @workgroup_size(256)
fn residual(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let n = p.d / 4u;
    let base = (wid.x + p.row0) * n;
    let r = residual_row(base, n, lid, p.eps).z;
    for (var e = lid; e < n; e = e + 256u) {
        h[base + e] = h[base + e] * r;
    }
}
