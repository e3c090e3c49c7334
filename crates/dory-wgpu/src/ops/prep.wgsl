// Prepares the heads of a step's rows (spec §4): each query head q ← N(rope(yq)) ⊙ q_scale,
// each KV head k ← N(rope(yk)) and v ← yv written into the layer's cache at the row's
// slot. One workgroup per (head, row); invocation i rotates the pairs (i, i + d/2) and
// (i + 64, i + 64 + d/2). Before an O(1) seal it also keeps the query of every position
// j ≡ 0 (mod sample) in the query store, row j / sample (spec §6). `prep_parts` also writes
// each query's f16 parts for attend_coop.wgsl.

// The parameters `p`: prep.rs's `Params` (kernels.rs declares their `struct P`).

@group(0) @binding(0) var<storage, read> qkvg: array<f32>;
@group(0) @binding(1) var<storage, read> up: array<f32>;
@group(0) @binding(2) var<storage, read> q_scale: array<f32>;
@group(0) @binding(3) var<storage, read_write> q: array<f32>;
@group(0) @binding(4) var<storage, read_write> kc: array<f32>;
@group(0) @binding(5) var<storage, read_write> vc: array<f32>;
@group(0) @binding(6) var<storage, read_write> qs: array<f32>;
// `prep_parts`: each query's f16 parts for attend_coop.wgsl (its layout there), two halves
// to a u32, and after them 1/s of each (a stand-in buffer elsewhere).
@group(0) @binding(7) var<storage, read_write> qa: array<u32>;

const WG: u32 = 64u;
// 1: `prep_parts`, which writes the queries' parts too.
override PARTS: u32 = 0u;

// A query head, for its parts.
var<workgroup> q_sh: array<f32, 256>;

// The parts of query head a of row r (its values in q_sh, `most` their largest
// magnitude): times s, a power of two that puts `most` in [2¹², 2¹³), hi cut to f16's 11
// bits by a mask (parts.wgsl says why) and lo = the rest, at query ((a / 4) · rows16 + r) ·
// 4 + a % 4 of the layout; 1/s after both parts.
fn put_q_parts(lid: u32, r: u32, a: u32, most: f32) {
    let d = p.d;
    let group = p.heads / p.kv_heads;
    let rows16 = (p.rows + 15u) / 16u * 16u;
    let halves = p.heads * rows16 * d;
    let query = ((a / group) * rows16 + r) * group + a % group;
    let e = clamp(frexp(most).exp, -100, 100);
    for (var t = lid; 2u * t < d; t = t + WG) {
        let v = ldexp(vec2<f32>(q_sh[2u * t], q_sh[2u * t + 1u]), vec2<i32>(13 - e));
        let hi = bitcast<vec2<f32>>(bitcast<vec2<u32>>(v) & vec2<u32>(0xffffe000u));
        qa[query * d / 2u + t] = pack2x16float(hi);
        qa[(halves + query * d) / 2u + t] = pack2x16float(v - hi);
    }
    if (lid == 0u) {
        qa[halves + query] = bitcast<u32>(ldexp(1.0, e - 13));
    }
}

@compute @workgroup_size(64)
fn prep(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let a = wid.x;
    let r = wid.y + p.row0;
    let d = p.d;
    let half = d / 2u;
    let is_q = a < p.heads;
    var src = r * p.width + a * d;
    if (!is_q) {
        src = r * p.width + p.heads * d + (a - p.heads) * d;
    }
    // Two pairs per invocation at most (d ≤ 256).
    var y: array<vec2<f32>, 2>;
    var sq = 0.0;
    for (var t = 0u; t < 2u; t = t + 1u) {
        let i = lid + t * WG;
        if (i < half) {
            let x0 = qkvg[src + i];
            let x1 = qkvg[src + half + i];
            var v = vec2<f32>(x0, x1);
            if (p.rotate != 0u) {
                let c = up[p.rope_at + r * d + i];
                let s = up[p.rope_at + r * d + half + i];
                v = vec2<f32>(x0 * c - x1 * s, x1 * c + x0 * s);
            }
            y[t] = v;
            sq += dot(v, v);
        }
    }
    let inv = 1.0 / sqrt(seg_sum(sq, lid, WG) + p.eps);
    let pos = p.pos0 + r;
    if (is_q) {
        let qd = p.heads * d;
        let keep = p.sample != 0u && pos % p.sample == 0u;
        var most = 0.0;
        for (var t = 0u; t < 2u; t = t + 1u) {
            let i = lid + t * WG;
            if (i < half) {
                let at = a * d + i;
                let lo = y[t].x * inv * q_scale[at];
                let hi = y[t].y * inv * q_scale[at + half];
                q[r * qd + at] = lo;
                q[r * qd + at + half] = hi;
                if (keep) {
                    qs[pos / p.sample * qd + at] = lo;
                    qs[pos / p.sample * qd + at + half] = hi;
                }
                if (PARTS != 0u) {
                    q_sh[i] = lo;
                    q_sh[i + half] = hi;
                    most = max(most, max(abs(lo), abs(hi)));
                }
            }
        }
        if (PARTS != 0u) {
            // (seg_max4 holds the barrier that makes q_sh whole.)
            put_q_parts(lid, r, a, seg_max4(vec4<f32>(most), lid, WG).x);
        }
        return;
    }
    let kd = p.kv_heads * d;
    let c = a - p.heads;
    let at = slot_of(pos) * kd + c * d;
    let vsrc = r * p.width + p.heads * d + kd + c * d;
    for (var t = 0u; t < 2u; t = t + 1u) {
        let i = lid + t * WG;
        if (i < half) {
            kc[at + i] = y[t].x * inv;
            kc[at + half + i] = y[t].y * inv;
            vc[at + i] = qkvg[vsrc + i];
            vc[at + half + i] = qkvg[vsrc + half + i];
        }
    }
}
