// Attention (spec §4, §6's near set) of one row's four query heads of one KV head over one
// chunk of the positions the row sees: scores λ q·k, an online softmax over tiles of TILE
// keys, the value sum. One workgroup per (chunk, KV head, row); in it, LANES invocations
// share each key's score and the value sum is cut into dims × groups of keys. With `direct` (one chunk)
// the result is final: normalised and gated into z. Otherwise each chunk leaves its
// maximum, its sum and its unnormalised value sum in `part` for combine.wgsl (or, on a
// sealed layer, o1.wgsl's combine_sealed).
//
// With `fused` (a single row), the workgroup first prepares what prep.wgsl would: its four
// queries q ← N(rope(yq)) ⊙ q_scale and the row's own key k ← N(rope(yk)) and value from
// qkvg. The chunk that holds the row's position (the last) writes that key and value into
// the cache and reads them from workgroup memory, never from the cache, so no workgroup
// reads what another writes; chunk 0 writes the queries to q (and the query store).
//
// The positions a row sees are seen.wgsl's. Position j sits in slot j below
// `sinks`, else in sinks + (j mod cap) (cap 0: slot j). A sliding ring is sinks 0,
// cap = its slots; an exact full layer sinks 0, cap 0; a sealed one sinks ns, cap w.

// The parameters `p`: attend.rs's `Params` (kernels.rs declares their `struct P`).

// One chunk, written normalised and gated into z (else into part).
const DIRECT: u32 = 1u;
// Prep too (one row).
const FUSED: u32 = 2u;
// Prep rotates (else a full layer with rope_full = false).
const ROTATE: u32 = 4u;

fn has(flag: u32) -> bool {
    return (p.flags & flag) != 0u;
}

// A row of qkvg: H·d + K·d + K·d + H·d with H = 4K.
fn width() -> u32 {
    return 10u * p.kv_heads * p.d;
}

@group(0) @binding(0) var<storage, read_write> q: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> kc: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> vc: array<f32>;
// Bindings 3–5 (qkvg, gate_scale, z) are attention.wgsl's.
@group(0) @binding(6) var<storage, read_write> part: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> up: array<f32>;
@group(0) @binding(8) var<storage, read> q_scale: array<f32>;
@group(0) @binding(9) var<storage, read_write> qs: array<f32>;

const WG: u32 = 256u;
// Keys scored at once: LANES invocations share a key's dot product, so that a short span
// still keeps the workgroup busy and no invocation walks a whole head alone (a pipeline
// constant, for measuring tiles of 64 or 16 keys).
override LANES: u32 = 4u;
override TILE: u32 = WG / LANES;
// Loads an invocation has in flight in a tile's walks over its keys and its values: 4, or
// 8 (fewer round trips where the walks are long enough to fill them).
override AHEAD: u32 = 4u;
// The lowest score: finite, so that exp(NONE − m) is 0 and never NaN.
const NONE: f32 = -1.0e30;

var<workgroup> q_sh: array<vec4<f32>, 256>;   // [4 heads, d/4]
var<workgroup> w_sh: array<vec4<f32>, TILE>;  // a tile's weights, one vec4 (4 heads) per key
var<workgroup> s_sh: array<u32, TILE>;        // a tile's slots
var<workgroup> own_k: array<vec4<f32>, 64>;    // fused: the row's own key [d/4]
var<workgroup> own_v: array<f32, 256>;         // fused: and value [d]
// A tile's scores are first reduced in runs of SEG invocations (a subgroup of 32 on most
// GPUs: no barrier), whose maxima and sums meet in top_sh and l_sh.
const SEG: u32 = 32u;
var<workgroup> top_sh: array<vec4<f32>, 8>;
var<workgroup> l_sh: array<vec4<f32>, 8>;
// A slot that no cache has: the row's own key and value, from workgroup memory.
const OWN: u32 = 0xffffffffu;

// The raw pairs (i, i + d/2) for i = lane and lane + 64 of the head at qkvg[src …] (d
// values), rotated when the layer rotates, by a run of 64 invocations: loads only, so that
// the row's heads are all in flight before the first reduction waits on any.
fn load_head(lane: u32, r: u32, src: u32) -> array<vec2<f32>, 2> {
    let half = p.d / 2u;
    var y: array<vec2<f32>, 2>;
    for (var t = 0u; t < 2u; t = t + 1u) {
        let i = lane + 64u * t;
        if (i < half) {
            let x0 = qkvg[src + i];
            let x1 = qkvg[src + half + i];
            var v = vec2<f32>(x0, x1);
            if (has(ROTATE)) {
                let c = up[p.rope_at + r * p.d + i];
                let s = up[p.rope_at + r * p.d + half + i];
                v = vec2<f32>(x0 * c - x1 * s, x1 * c + x0 * s);
            }
            y[t] = v;
        }
    }
    return y;
}

// Σ y² of this invocation's pairs of a head from load_head.
fn head_sq(lid: u32, y: array<vec2<f32>, 2>) -> f32 {
    let lane = lid % 64u;
    var sq = 0.0;
    for (var t = 0u; t < 2u; t = t + 1u) {
        if (lane + 64u * t < p.d / 2u) {
            sq += dot(y[t], y[t]);
        }
    }
    return sq;
}

// y · inv ⊙ scale, pair by pair.
fn scaled(y: array<vec2<f32>, 2>, inv: f32, scale: array<vec2<f32>, 2>) -> array<vec2<f32>, 2> {
    return array<vec2<f32>, 2>(y[0] * inv * scale[0], y[1] * inv * scale[1]);
}

// The fused prologue: q_sh, own_k, own_v from qkvg; the cache, q and the query store
// written by the chunks named above. Every load (the row's query head, key, value, rope and
// q_scale) is issued before the first reduction.
fn prepare(lid: u32, ch: u32, c: u32, r: u32) {
    let d = p.d;
    let half = d / 2u;
    let kd = p.kv_heads * d;
    let qd = GROUP * kd;
    let pos = p.pos0 + r;
    // Segment h of 64 invocations prepares query head 4c + h, then each the key.
    let h = lid / 64u;
    let lane = lid % 64u;
    let a = GROUP * c + h;
    let rq = load_head(lane, r, r * width() + a * d);
    let rk = load_head(lane, r, r * width() + qd + c * d);
    var qs4: array<vec2<f32>, 2>;
    var v: array<vec2<f32>, 2>;
    for (var t = 0u; t < 2u; t = t + 1u) {
        let i = lane + 64u * t;
        if (i < half) {
            qs4[t] = vec2<f32>(q_scale[a * d + i], q_scale[a * d + half + i]);
            if (h == 0u) {
                let vb = r * width() + qd + kd + c * d;
                v[t] = vec2<f32>(qkvg[vb + i], qkvg[vb + half + i]);
            }
        }
    }
    // N(·) of the query head and the key, their norms in one reduction.
    let sq = seg_sum4(vec4<f32>(head_sq(lid, rq), head_sq(lid, rk), 0.0, 0.0), lid, 64u);
    let one = vec2<f32>(1.0);
    let yq = scaled(rq, 1.0 / sqrt(sq.x + p.eps), qs4);
    let yk = scaled(rk, 1.0 / sqrt(sq.y + p.eps), array<vec2<f32>, 2>(one, one));
    let write_kv = ch + 1u == p.chunks;
    let keep = ch == 0u && p.sample != 0u && pos % p.sample == 0u;
    let slot = slot_of(pos);
    for (var t = 0u; t < 2u; t = t + 1u) {
        let i = lane + 64u * t;
        if (i < half) {
            let lo = h * d + i;
            q_sh[lo / 4u][lo % 4u] = yq[t].x;
            q_sh[(lo + half) / 4u][(lo + half) % 4u] = yq[t].y;
            if (ch == 0u) {
                let at = r * qd + a * d + i;
                q[at / 4u][at % 4u] = yq[t].x;
                q[(at + half) / 4u][(at + half) % 4u] = yq[t].y;
            }
            if (keep) {
                let at = pos / p.sample * qd + a * d + i;
                qs[at] = yq[t].x;
                qs[at + half] = yq[t].y;
            }
            if (h == 0u) {
                own_k[i / 4u][i % 4u] = yk[t].x;
                own_k[(i + half) / 4u][(i + half) % 4u] = yk[t].y;
                own_v[i] = v[t].x;
                own_v[i + half] = v[t].y;
                if (write_kv) {
                    let kb = slot * kd + c * d;
                    kc[(kb + i) / 4u][(kb + i) % 4u] = yk[t].x;
                    kc[(kb + half + i) / 4u][(kb + half + i) % 4u] = yk[t].y;
                    vc[kb + i] = v[t].x;
                    vc[kb + half + i] = v[t].y;
                }
            }
        }
    }
}

// The online softmax over the keys folded in so far: the maximum and the sum of the four
// heads' scores, and this invocation's dim of their value sums.
struct Run {
    m: vec4<f32>,
    l: vec4<f32>,
    acc: vec4<f32>,
}

// The four queries' dot products with the key in `slot` (OWN: the row's own), over the
// dims lane, lane + LANES, … of it: AHEAD (then four, then the rest) pieces of the key
// loaded before any is used, so that their reads overlap (d is a parameter, so the compiler
// cannot unroll the loop).
fn key_dots(slot: u32, c: u32, lane: u32) -> vec4<f32> {
    let d4 = p.d / 4u;
    let kb = (slot * p.kv_heads * p.d + c * p.d) / 4u;
    var dots = vec4<f32>(0.0);
    var e = lane;
    // Named, not an array: gemv.wgsl says why.
    for (; AHEAD == 8u && e + 7u * LANES < d4; e = e + 8u * LANES) {
        let k0 = key4(slot, kb, e);
        let k1 = key4(slot, kb, e + LANES);
        let k2 = key4(slot, kb, e + 2u * LANES);
        let k3 = key4(slot, kb, e + 3u * LANES);
        let k4 = key4(slot, kb, e + 4u * LANES);
        let k5 = key4(slot, kb, e + 5u * LANES);
        let k6 = key4(slot, kb, e + 6u * LANES);
        let k7 = key4(slot, kb, e + 7u * LANES);
        dots += q_dots(k0, e) + q_dots(k1, e + LANES) + q_dots(k2, e + 2u * LANES) + q_dots(k3, e + 3u * LANES);
        dots += q_dots(k4, e + 4u * LANES) + q_dots(k5, e + 5u * LANES) + q_dots(k6, e + 6u * LANES)
            + q_dots(k7, e + 7u * LANES);
    }
    for (; e + 3u * LANES < d4; e = e + 4u * LANES) {
        let k0 = key4(slot, kb, e);
        let k1 = key4(slot, kb, e + LANES);
        let k2 = key4(slot, kb, e + 2u * LANES);
        let k3 = key4(slot, kb, e + 3u * LANES);
        dots += q_dots(k0, e) + q_dots(k1, e + LANES) + q_dots(k2, e + 2u * LANES) + q_dots(k3, e + 3u * LANES);
    }
    // The last pieces (three at most: a head of 48 dims has three a lane) in one round trip,
    // those past the key loaded as its last and weighed 0.
    if (e < d4) {
        let e1 = min(e + LANES, d4 - 1u);
        let e2 = min(e + 2u * LANES, d4 - 1u);
        let k0 = key4(slot, kb, e);
        let k1 = key4(slot, kb, e1);
        let k2 = key4(slot, kb, e2);
        dots += q_dots(k0, e);
        dots += select(vec4<f32>(0.0), q_dots(k1, e1), e + LANES < d4);
        dots += select(vec4<f32>(0.0), q_dots(k2, e2), e + 2u * LANES < d4);
    }
    return dots;
}

fn key4(slot: u32, kb: u32, e: u32) -> vec4<f32> {
    if (slot == OWN) {
        return own_k[e];
    }
    return kc[kb + e];
}

// Dims 4e … 4e + 3 of k against the same dims of the four queries.
fn q_dots(k: vec4<f32>, e: u32) -> vec4<f32> {
    let d4 = p.d / 4u;
    return vec4<f32>(dot(k, q_sh[e]), dot(k, q_sh[d4 + e]), dot(k, q_sh[2u * d4 + e]), dot(k, q_sh[3u * d4 + e]));
}

fn value(slot: u32, c: u32, dim: u32) -> f32 {
    if (slot == OWN) {
        return own_v[dim];
    }
    return vc[slot * p.kv_heads * p.d + c * p.d + dim];
}

// acc plus this invocation's dim of the tile's value sums, over its first `count` keys (the
// slots in s_sh, the weights in w_sh): dim lid % d of keys group, group + groups, … (d ≤
// 256: one group at least), AHEAD (then four, then the rest) keys' values loaded before any
// is used (as in key_dots).
fn value_sums(acc0: vec4<f32>, lid: u32, c: u32, count: u32) -> vec4<f32> {
    let d = p.d;
    let groups = WG / d;
    let group = lid / d;
    let dim = lid % d;
    var acc = acc0;
    if (group >= groups) {
        return acc;
    }
    var jj = group;
    for (; AHEAD == 8u && jj + 7u * groups < count; jj = jj + 8u * groups) {
        let v0 = value(s_sh[jj], c, dim);
        let v1 = value(s_sh[jj + groups], c, dim);
        let v2 = value(s_sh[jj + 2u * groups], c, dim);
        let v3 = value(s_sh[jj + 3u * groups], c, dim);
        let v4 = value(s_sh[jj + 4u * groups], c, dim);
        let v5 = value(s_sh[jj + 5u * groups], c, dim);
        let v6 = value(s_sh[jj + 6u * groups], c, dim);
        let v7 = value(s_sh[jj + 7u * groups], c, dim);
        acc += w_sh[jj] * v0 + w_sh[jj + groups] * v1 + w_sh[jj + 2u * groups] * v2 + w_sh[jj + 3u * groups] * v3;
        acc += w_sh[jj + 4u * groups] * v4 + w_sh[jj + 5u * groups] * v5 + w_sh[jj + 6u * groups] * v6
            + w_sh[jj + 7u * groups] * v7;
    }
    for (; jj + 3u * groups < count; jj = jj + 4u * groups) {
        let v0 = value(s_sh[jj], c, dim);
        let v1 = value(s_sh[jj + groups], c, dim);
        let v2 = value(s_sh[jj + 2u * groups], c, dim);
        let v3 = value(s_sh[jj + 3u * groups], c, dim);
        acc += w_sh[jj] * v0 + w_sh[jj + groups] * v1 + w_sh[jj + 2u * groups] * v2 + w_sh[jj + 3u * groups] * v3;
    }
    // The last keys (three at most) in one round trip, as key_dots' last pieces: those past
    // `count` read the last key's value again and are dropped.
    if (jj < count) {
        let j1 = min(jj + groups, count - 1u);
        let j2 = min(jj + 2u * groups, count - 1u);
        let v0 = value(s_sh[jj], c, dim);
        let v1 = value(s_sh[j1], c, dim);
        let v2 = value(s_sh[j2], c, dim);
        acc += w_sh[jj] * v0;
        acc += select(vec4<f32>(0.0), w_sh[j1] * v1, jj + groups < count);
        acc += select(vec4<f32>(0.0), w_sh[j2] * v2, jj + 2u * groups < count);
    }
    return acc;
}

// Folds the tile of keys t0 … t0 + TILE − 1 (of the row's visible span, before `end`) into
// `run`: LANES invocations score each key, then the value sum is cut into dims × groups.
fn tile(lid: u32, c: u32, pos: u32, sn: Seen, t0: u32, end: u32, run: Run) -> Run {
    let key = lid / LANES;
    let lane = lid % LANES;
    let i = t0 + key;
    let valid = i < end;
    var slot = 0u;
    var dots = vec4<f32>(0.0);
    if (valid) {
        let j = walk_at(sn, i);
        slot = slot_of(j);
        if (has(FUSED) && j == pos) {
            slot = OWN;
        }
        dots = key_dots(slot, c, lane);
    }
    let s = select(vec4<f32>(NONE), seg_sum4(dots, lid, LANES) * p.scale, valid);
    // The tile's maximum and sum from each run of SEG invocations' own (each key counted
    // once: by its first lane), which meet at one barrier.
    let seg_top = seg_max4(s, lid, SEG);
    let own = select(vec4<f32>(0.0), exp(s - seg_top), valid && lane == 0u);
    let seg_l = seg_sum4(own, lid, SEG);
    if (lid % SEG == 0u) {
        top_sh[lid / SEG] = seg_top;
        l_sh[lid / SEG] = seg_l;
    }
    if (lane == 0u) {
        s_sh[key] = slot;
    }
    workgroupBarrier();
    var top = run.m;
    for (var g = 0u; g < WG / SEG; g = g + 1u) {
        top = max(top, top_sh[g]);
    }
    let fix = exp(run.m - top);
    var l = run.l * fix;
    for (var g = 0u; g < WG / SEG; g = g + 1u) {
        l += l_sh[g] * exp(top_sh[g] - top);
    }
    var e = vec4<f32>(0.0);
    if (valid) {
        e = exp(s - top);
    }
    if (lane == 0u) {
        w_sh[key] = e;
    }
    workgroupBarrier();
    let acc = value_sums(run.acc * fix, lid, c, min(TILE, end - t0));
    workgroupBarrier();
    return Run(top, l, acc);
}

@compute @workgroup_size(256)
fn attend(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let ch = wid.x;
    let c = wid.y;
    let r = wid.z + p.row0;
    let d = p.d;
    let pos = p.pos0 + r;
    // The gates of a direct result, loaded before the row's waits (dims past d: unused).
    var g = vec4<f32>(0.0);
    if (has(DIRECT) && lid < d) {
        g = gates(r, c, p.kv_heads, d, lid);
    }
    if (has(FUSED)) {
        prepare(lid, ch, c, r);
    } else {
        let qd = GROUP * p.kv_heads * d;
        for (var i = lid; i < GROUP * d / 4u; i = i + WG) {
            q_sh[i] = q[(r * qd + GROUP * c * d) / 4u + i];
        }
    }
    workgroupBarrier();
    let sn = seen(pos);
    let start = min(ch * p.per, sn.n);
    let end = min(start + p.per, sn.n);
    var run = Run(vec4<f32>(NONE), vec4<f32>(0.0), vec4<f32>(0.0));
    for (var t0 = start; t0 < end; t0 = t0 + TILE) {
        run = tile(lid, c, pos, sn, t0, end, run);
    }
    let acc = join_groups(run.acc, lid, d);
    if (lid >= d) {
        return;
    }
    if (has(DIRECT)) {
        gated_into_z(r, c, p.kv_heads, d, lid, acc / run.l, g);
        return;
    }
    let base = ((r * p.kv_heads + c) * p.chunks + ch) * (2u + d);
    if (lid == 0u) {
        part[base] = run.m;
        part[base + 1u] = run.l;
    }
    part[base + 2u + lid] = acc;
}
