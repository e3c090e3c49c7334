// Attention (spec §4, §6's near set) of one row's four query heads of one KV head over one
// chunk of the positions the row sees: scores λ q·k, an online softmax over tiles of 32
// keys, the value sum. One workgroup per (chunk, KV head, row); in it, eight invocations
// share each key's score and the value sum is cut into dims × groups of keys. With `direct` (one chunk)
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

const WG: u32 = 256u;
// Keys scored at once: LANES invocations share a key's dot product, so that a short span
// still keeps the workgroup busy and no invocation walks a whole head alone.
const LANES: u32 = 8u;
const TILE: u32 = 32u; // WG / LANES
// The lowest score: finite, so that exp(NONE − m) is 0 and never NaN.
const NONE: f32 = -1.0e30;

var<workgroup> q_sh: array<vec4<f32>, 256>;   // [4 heads, d/4]
var<workgroup> w_sh: array<vec4<f32>, 32>;    // a tile's weights, one vec4 (4 heads) per key
var<workgroup> s_sh: array<u32, 32>;          // a tile's slots
var<workgroup> acc_sh: array<vec4<f32>, 256>; // the key groups' value sums, joined at the end

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

@compute @workgroup_size(256)
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
    // Scores: key lid / LANES of the tile, dims lane, lane + LANES, … of it.
    let key = lid / LANES;
    let lane = lid % LANES;
    // Values: dim lid % d of keys group, group + groups, … (d ≤ 256: one group at least).
    let groups = WG / d;
    let group = lid / d;
    let dim = lid % d;
    var m = vec4<f32>(NONE);
    var l = vec4<f32>(0.0);
    var acc = vec4<f32>(0.0); // dim, over the 4 heads
    for (var t0 = start; t0 < end; t0 = t0 + TILE) {
        let i = t0 + key;
        let valid = i < end;
        var slot = 0u;
        var dots = vec4<f32>(0.0);
        if (valid) {
            var j = i;
            if (i >= sn.sinks) {
                j = sn.lo + i - sn.sinks;
            }
            slot = slot_of(j);
            let kb = (slot * kd + c * d) / 4u;
            for (var e = lane; e < d4; e = e + LANES) {
                let k = kc[kb + e];
                dots += vec4<f32>(dot(k, q_sh[e]), dot(k, q_sh[d4 + e]), dot(k, q_sh[2u * d4 + e]), dot(k, q_sh[3u * d4 + e]));
            }
        }
        let s = select(vec4<f32>(NONE), seg_sum4(dots, lid, LANES) * p.scale, valid);
        let top = max(m, seg_max4(s, lid, WG));
        let fix = exp(m - top);
        var e = vec4<f32>(0.0);
        if (valid) {
            e = exp(s - top);
        }
        if (lane == 0u) {
            w_sh[key] = e;
            s_sh[key] = slot;
        }
        // Each key counted once in the sum: by its first lane.
        l = l * fix + seg_sum4(select(vec4<f32>(0.0), e, lane == 0u), lid, WG);
        m = top;
        acc = acc * fix;
        if (group < groups) {
            let count = min(TILE, end - t0);
            for (var jj = group; jj < count; jj = jj + groups) {
                acc += w_sh[jj] * vc[s_sh[jj] * kd + c * d + dim];
            }
        }
        workgroupBarrier();
    }
    acc_sh[lid] = acc;
    workgroupBarrier();
    if (group != 0u) {
        return;
    }
    for (var g = 1u; g < groups; g = g + 1u) {
        acc += acc_sh[g * d + dim];
    }
    if (p.direct != 0u) {
        for (var h = 0u; h < 4u; h = h + 1u) {
            let at = (4u * c + h) * d + dim;
            let g = qkvg[r * p.width + qd + 2u * kd + at] * gate_scale[at];
            z[r * qd + at] = acc[h] / l[h] * sigmoid(g);
        }
        return;
    }
    let base = ((r * p.kv_heads + c) * p.chunks + ch) * (2u + d);
    if (lid == 0u) {
        part[base] = m;
        part[base + 1u] = l;
    }
    part[base + 2u + dim] = acc;
}
