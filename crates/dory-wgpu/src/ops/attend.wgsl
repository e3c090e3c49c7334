// Attention (spec §4, §6's near set) of one row's four query heads of one KV head over one
// chunk of the positions the row sees: scores λ q·k, an online softmax over tiles of 64
// keys, the value sum. One workgroup per (chunk, KV head, row). With `direct` (one chunk)
// the result is final: normalised and gated into z. Otherwise each chunk leaves its
// maximum, its sum and its unnormalised value sum in `part` for combine.wgsl (or, on a
// sealed layer, o1.wgsl's combine_sealed).
//
// The positions a row at p sees: the sinks [0, min(sinks, p + 1)), then [lo, p] with
// lo = max(sinks, p + 1 − window) (window 0: no bound). Position j sits in slot j below
// `sinks`, else in sinks + (j mod cap) (cap 0: slot j). A sliding ring is sinks 0,
// cap = its slots; an exact full layer sinks 0, cap 0; a sealed one sinks ns, cap w.

struct P {
    rows: u32,
    pos0: u32,
    kv_heads: u32,
    d: u32,
    width: u32,   // a row of qkvg
    sinks: u32,
    cap: u32,
    window: u32,
    per: u32,     // positions per chunk
    chunks: u32,
    direct: u32,  // 1: one chunk, written normalised and gated into z; 0: into part
    row0: u32,    // first row of this dispatch (grids hold at most 65535 rows)
    scale: f32,   // λ
}
var<immediate> p: P;

@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> kc: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> vc: array<f32>;
@group(0) @binding(3) var<storage, read> qkvg: array<f32>;
@group(0) @binding(4) var<storage, read> gate_scale: array<f32>;
@group(0) @binding(5) var<storage, read_write> z: array<f32>;
@group(0) @binding(6) var<storage, read_write> part: array<vec4<f32>>;

const WG: u32 = 64u;
// The lowest score: finite, so that exp(NONE − m) is 0 and never NaN.
const NONE: f32 = -1.0e30;

var<workgroup> q_sh: array<vec4<f32>, 256>; // [4 heads, d/4]
var<workgroup> w_sh: array<vec4<f32>, 64>;  // a tile's weights, one vec4 (4 heads) per key
var<workgroup> s_sh: array<u32, 64>;        // a tile's slots

fn slot_of(j: u32) -> u32 {
    if (j < p.sinks) {
        return j;
    }
    if (p.cap == 0u) {
        return j;
    }
    return p.sinks + j % p.cap;
}

struct Seen {
    sinks: u32, // sinks the row sees
    lo: u32,    // first position after them
    n: u32,     // positions seen in all
}

fn seen(pos: u32) -> Seen {
    let ns = min(p.sinks, pos + 1u);
    var lo = p.sinks;
    if (p.window != 0u && pos + 1u > p.window) {
        lo = max(lo, pos + 1u - p.window);
    }
    lo = min(lo, pos + 1u);
    return Seen(ns, lo, ns + pos + 1u - lo);
}

@compute @workgroup_size(64)
fn attend(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let ch = wid.x;
    let c = wid.y;
    let r = wid.z + p.row0;
    let d = p.d;
    let d4 = d / 4u;
    let qd = 4u * p.kv_heads * d;
    let kd = p.kv_heads * d;
    let pos = p.pos0 + r;
    for (var i = lid; i < 4u * d4; i = i + WG) {
        q_sh[i] = q[(r * qd + 4u * c * d) / 4u + i];
    }
    workgroupBarrier();
    let sn = seen(pos);
    let start = min(ch * p.per, sn.n);
    let end = min(start + p.per, sn.n);
    var m = vec4<f32>(NONE);
    var l = vec4<f32>(0.0);
    var acc: array<vec4<f32>, 4>; // dims lid + 64t, each over the 4 heads
    for (var t0 = start; t0 < end; t0 = t0 + WG) {
        let i = t0 + lid;
        let valid = i < end;
        var s = vec4<f32>(NONE);
        if (valid) {
            var j = i;
            if (i >= sn.sinks) {
                j = sn.lo + i - sn.sinks;
            }
            let slot = slot_of(j);
            s_sh[lid] = slot;
            let kb = (slot * kd + c * d) / 4u;
            var dots = vec4<f32>(0.0);
            for (var e = 0u; e < d4; e = e + 1u) {
                let k = kc[kb + e];
                dots += vec4<f32>(dot(k, q_sh[e]), dot(k, q_sh[d4 + e]), dot(k, q_sh[2u * d4 + e]), dot(k, q_sh[3u * d4 + e]));
            }
            s = dots * p.scale;
        }
        let top = max(m, seg_max4(s, lid, WG));
        let fix = exp(m - top);
        var e = vec4<f32>(0.0);
        if (valid) {
            e = exp(s - top);
        }
        w_sh[lid] = e;
        l = l * fix + seg_sum4(e, lid, WG);
        m = top;
        for (var t = 0u; t < 4u; t = t + 1u) {
            acc[t] = acc[t] * fix;
        }
        let count = min(WG, end - t0);
        for (var jj = 0u; jj < count; jj = jj + 1u) {
            let wj = w_sh[jj];
            let vb = s_sh[jj] * kd + c * d;
            for (var t = 0u; t < 4u; t = t + 1u) {
                let dim = lid + t * WG;
                if (dim < d) {
                    acc[t] += wj * vc[vb + dim];
                }
            }
        }
        workgroupBarrier();
    }
    if (p.direct != 0u) {
        let width = p.width;
        for (var t = 0u; t < 4u; t = t + 1u) {
            let dim = lid + t * WG;
            if (dim < d) {
                for (var h = 0u; h < 4u; h = h + 1u) {
                    let at = (4u * c + h) * d + dim;
                    let g = qkvg[r * width + qd + 2u * kd + at] * gate_scale[at];
                    z[r * qd + at] = acc[t][h] / l[h] * sigmoid(g);
                }
            }
        }
        return;
    }
    let base = ((r * p.kv_heads + c) * p.chunks + ch) * (2u + d);
    if (lid == 0u) {
        part[base] = m;
        part[base + 1u] = l;
    }
    for (var t = 0u; t < 4u; t = t + 1u) {
        let dim = lid + t * WG;
        if (dim < d) {
            part[base + 2u + dim] = acc[t];
        }
    }
}
