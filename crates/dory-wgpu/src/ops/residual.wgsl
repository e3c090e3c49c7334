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

const WG: u32 = 256u;

@compute @workgroup_size(256)
fn residual(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let n = p.d / 4u;
    let base = (wid.x + p.row0) * n;
    var sq = vec2<f32>(0.0);
    for (var e = lid; e < n; e = e + WG) {
        let a = h[base + e];
        let b = o[base + e];
        sq += vec2<f32>(dot(a, a), dot(b, b));
    }
    let sums = seg_sum4(vec4<f32>(sq, 0.0, 0.0), lid, WG);
    let ih = 1.0 / sqrt(sums.x + p.eps);
    let io = 1.0 / sqrt(sums.y + p.eps);
    var t = 0.0;
    for (var e = lid; e < n; e = e + WG) {
        let nh = h[base + e] * ih;
        let y = nh + alpha[e] * (o[base + e] * io - nh);
        h[base + e] = y;
        t += dot(y, y);
    }
    let r = 1.0 / sqrt(seg_sum(t, lid, WG) + p.eps);
    for (var e = lid; e < n; e = e + WG) {
        h[base + e] = h[base + e] * r;
    }
}
