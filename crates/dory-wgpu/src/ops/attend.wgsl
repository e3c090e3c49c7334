// Attention (spec §4, §6's near set) of one row's four query heads of one KV head over one
// chunk of the positions the row sees: scores λ q·k, an online softmax over tiles of TILE
// keys, the value sum. One workgroup per (chunk, KV head, row); in it, LANES invocations
// share each key's score and the value sum is cut into groups of keys × four dims. A
// decoded row's chunk is short, so what bounds it is its chain of waits: a tile's keys and
// values are all loaded at once (the first tile's before the prologue), where a round trip
// a piece had cost more than their bytes. With `direct` (one chunk)
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
@group(0) @binding(2) var<storage, read_write> vc: array<vec4<f32>>;
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
// The lowest score: finite, so that exp(NONE − m) is 0 and never NaN.
const NONE: f32 = -1.0e30;

var<workgroup> q_sh: array<vec4<f32>, 256>;   // [4 heads, d/4]
var<workgroup> w_sh: array<vec4<f32>, TILE>;  // a tile's weights, one vec4 (4 heads) per key
var<workgroup> own_k: array<vec4<f32>, 64>;    // fused: the row's own key [d/4]
var<workgroup> own_v: array<vec4<f32>, 64>;    // fused: and value [d/4]
// The key groups' value sums at a chunk's end, [group, head, dim], for join_values.
var<workgroup> join_sh: array<f32, 4096>;

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

// N(y) of a head from load_head, times `scale` (q_scale's pairs, loaded with it; ones for
// the key). Every invocation of the workgroup must call it (it reduces).
fn norm_head(lid: u32, y: array<vec2<f32>, 2>, scale: array<vec2<f32>, 2>) -> array<vec2<f32>, 2> {
    let lane = lid % 64u;
    var sq = 0.0;
    for (var t = 0u; t < 2u; t = t + 1u) {
        if (lane + 64u * t < p.d / 2u) {
            sq += dot(y[t], y[t]);
        }
    }
    let inv = 1.0 / sqrt(seg_sum(sq, lid, 64u) + p.eps);
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
    let one = vec2<f32>(1.0);
    let yq = norm_head(lid, rq, qs4);
    let yk = norm_head(lid, rk, array<vec2<f32>, 2>(one, one));
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
                own_v[i / 4u][i % 4u] = v[t].x;
                own_v[(i + half) / 4u][(i + half) % 4u] = v[t].y;
                if (write_kv) {
                    let kb = slot * kd + c * d;
                    kc[(kb + i) / 4u][(kb + i) % 4u] = yk[t].x;
                    kc[(kb + half + i) / 4u][(kb + half + i) % 4u] = yk[t].y;
                    vc[(kb + i) / 4u][(kb + i) % 4u] = v[t].x;
                    vc[(kb + half + i) / 4u][(kb + half + i) % 4u] = v[t].y;
                }
            }
        }
    }
}

// Four vec4s: a KV head's four query heads at four dims (named, not an array: the H200's
// driver keeps an array indexed in a loop in memory, gemv.wgsl says; here that cost a
// decoded token 7–20 %, bench/logs/h200-2026-12-04d/call-3).
struct Heads {
    h0: vec4<f32>,
    h1: vec4<f32>,
    h2: vec4<f32>,
    h3: vec4<f32>,
}

// The online softmax over the keys folded in so far: the maximum and the sum of the four
// heads' scores, and this invocation's value sums, dims 4 · (lid % d/4) … of each head over
// its group of keys.
struct Run {
    m: vec4<f32>,
    l: vec4<f32>,
    acc: Heads,
}

// A round of loads: eight pieces of a key, or eight keys' values, all issued before any is
// used, so that a tile waits on memory once, not once a piece (the compiler does not hoist
// loads over the uses before them).
struct Round {
    a: vec4<f32>,
    b: vec4<f32>,
    c: vec4<f32>,
    d: vec4<f32>,
    e: vec4<f32>,
    f: vec4<f32>,
    g: vec4<f32>,
    h: vec4<f32>,
}

// What a tile reads from the caches first, issued before anything waits: the slot of the
// key this invocation scores and its first round of pieces, and its first round of values.
struct Loads {
    kslot: u32,
    k: Round,
    v: Round,
}

// Whether step i of the walk is the row's own position (its last), read from workgroup
// memory when fused.
fn is_own(sn: Seen, i: u32) -> bool {
    return has(FUSED) && i + 1u == sn.n;
}

// Where KV head c of `slot` starts in the caches, in vec4s.
fn head_at(slot: u32, c: u32) -> u32 {
    return (slot * p.kv_heads * p.d + c * p.d) / 4u;
}

// Piece e of the key at kb (its last past the end: weighed 0 by piece_dots).
fn piece(kb: u32, e: u32) -> vec4<f32> {
    return kc[kb + min(e, p.d / 4u - 1u)];
}

// Pieces e0, e0 + LANES, … (a round) of the key in `slot`.
fn key_round(slot: u32, c: u32, e0: u32) -> Round {
    let kb = head_at(slot, c);
    return Round(piece(kb, e0), piece(kb, e0 + LANES), piece(kb, e0 + 2u * LANES), piece(kb, e0 + 3u * LANES),
        piece(kb, e0 + 4u * LANES), piece(kb, e0 + 5u * LANES), piece(kb, e0 + 6u * LANES), piece(kb, e0 + 7u * LANES));
}

// The value of key jj of the tile at t0 at this invocation's dims (0 past `count` and for
// the row's own, which add_value reads from workgroup memory).
fn value(lid: u32, c: u32, sn: Seen, t0: u32, count: u32, jj: u32) -> vec4<f32> {
    if (jj >= count || is_own(sn, t0 + jj)) {
        return vec4<f32>(0.0);
    }
    return vc[head_at(slot_of(walk_at(sn, t0 + jj)), c) + lid % (p.d / 4u)];
}

// The values of keys j0, j0 + groups, … (a round) of the tile at t0.
fn value_round(lid: u32, c: u32, sn: Seen, t0: u32, count: u32, j0: u32) -> Round {
    let s = WG / (p.d / 4u);
    return Round(value(lid, c, sn, t0, count, j0), value(lid, c, sn, t0, count, j0 + s),
        value(lid, c, sn, t0, count, j0 + 2u * s), value(lid, c, sn, t0, count, j0 + 3u * s),
        value(lid, c, sn, t0, count, j0 + 4u * s), value(lid, c, sn, t0, count, j0 + 5u * s),
        value(lid, c, sn, t0, count, j0 + 6u * s), value(lid, c, sn, t0, count, j0 + 7u * s));
}

// Issues the first round of loads of the tile of keys t0 … t0 + TILE − 1 of the walk
// (before `end`).
fn load_tile(lid: u32, c: u32, sn: Seen, t0: u32, end: u32) -> Loads {
    var ld: Loads;
    let i = t0 + lid / LANES;
    if (i < end && !is_own(sn, i)) {
        ld.kslot = slot_of(walk_at(sn, i));
        ld.k = key_round(ld.kslot, c, lid % LANES);
    }
    let group = lid / (p.d / 4u);
    if (group < WG / (p.d / 4u)) {
        ld.v = value_round(lid, c, sn, t0, min(TILE, end - t0), group);
    }
    return ld;
}

// Dims 4e … 4e + 3 of k against the same dims of the four queries (0 past the head).
fn piece_dots(k: vec4<f32>, e: u32) -> vec4<f32> {
    let d4 = p.d / 4u;
    let f = min(e, d4 - 1u);
    let dots = vec4<f32>(dot(k, q_sh[f]), dot(k, q_sh[d4 + f]), dot(k, q_sh[2u * d4 + f]), dot(k, q_sh[3u * d4 + f]));
    return select(vec4<f32>(0.0), dots, e < d4);
}

fn round_dots(k: Round, e0: u32) -> vec4<f32> {
    let l = LANES;
    return ((piece_dots(k.a, e0) + piece_dots(k.b, e0 + l)) + (piece_dots(k.c, e0 + 2u * l) + piece_dots(k.d, e0 + 3u * l)))
        + ((piece_dots(k.e, e0 + 4u * l) + piece_dots(k.f, e0 + 5u * l))
            + (piece_dots(k.g, e0 + 6u * l) + piece_dots(k.h, e0 + 7u * l)));
}

// The four queries' dot products with this invocation's key of the tile (step i of the
// walk) over its dims lane, lane + LANES, …: the first round from `ld`, any further (heads
// wider than 8 · LANES pieces) a round at a time.
fn key_dots(ld: Loads, sn: Seen, i: u32, c: u32, lane: u32) -> vec4<f32> {
    let d4 = p.d / 4u;
    var dots = vec4<f32>(0.0);
    if (is_own(sn, i)) {
        for (var e = lane; e < d4; e = e + LANES) {
            dots += piece_dots(own_k[e], e);
        }
        return dots;
    }
    dots = round_dots(ld.k, lane);
    for (var e0 = lane + 8u * LANES; e0 < d4; e0 = e0 + 8u * LANES) {
        dots += round_dots(key_round(ld.kslot, c, e0), e0);
    }
    return dots;
}

// `acc` plus key jj's value v weighed by the four heads' weights of it (w_sh).
fn add_value(acc: Heads, lid: u32, sn: Seen, t0: u32, count: u32, jj: u32, v: vec4<f32>) -> Heads {
    if (jj >= count) {
        return acc;
    }
    var x = v;
    if (is_own(sn, t0 + jj)) {
        x = own_v[lid % (p.d / 4u)];
    }
    let w = w_sh[jj];
    return Heads(acc.h0 + w.x * x, acc.h1 + w.y * x, acc.h2 + w.z * x, acc.h3 + w.w * x);
}

// `acc` plus a round of values, keys j0, j0 + groups, ….
fn add_round(acc: Heads, lid: u32, sn: Seen, t0: u32, count: u32, j0: u32, v: Round) -> Heads {
    let s = WG / (p.d / 4u);
    var a = add_value(acc, lid, sn, t0, count, j0, v.a);
    a = add_value(a, lid, sn, t0, count, j0 + s, v.b);
    a = add_value(a, lid, sn, t0, count, j0 + 2u * s, v.c);
    a = add_value(a, lid, sn, t0, count, j0 + 3u * s, v.d);
    a = add_value(a, lid, sn, t0, count, j0 + 4u * s, v.e);
    a = add_value(a, lid, sn, t0, count, j0 + 5u * s, v.f);
    a = add_value(a, lid, sn, t0, count, j0 + 6u * s, v.g);
    return add_value(a, lid, sn, t0, count, j0 + 7u * s, v.h);
}

// Folds the tile of keys t0 … t0 + TILE − 1 (of the row's visible span, before `end`),
// whose first loads are `ld`, into `run`: LANES invocations score each key, then each
// invocation adds its values of its group's keys (d/4 invocations a group).
fn tile(lid: u32, c: u32, sn: Seen, t0: u32, end: u32, ld: Loads, run: Run) -> Run {
    let key = lid / LANES;
    let lane = lid % LANES;
    let valid = t0 + key < end;
    var dots = vec4<f32>(0.0);
    if (valid) {
        dots = key_dots(ld, sn, t0 + key, c, lane);
    }
    let s = select(vec4<f32>(NONE), seg_sum4(dots, lid, LANES) * p.scale, valid);
    let top = max(run.m, seg_max4(s, lid, WG));
    let fix = exp(run.m - top);
    var e = vec4<f32>(0.0);
    if (valid) {
        e = exp(s - top);
    }
    if (lane == 0u) {
        w_sh[key] = e;
    }
    // Each key counted once in the sum: by its first lane (the reduction's barrier also
    // makes w_sh whole).
    let l = run.l * fix + seg_sum4(select(vec4<f32>(0.0), e, lane == 0u), lid, WG);
    let r = run.acc;
    var acc = Heads(r.h0 * fix.x, r.h1 * fix.y, r.h2 * fix.z, r.h3 * fix.w);
    let d4 = p.d / 4u;
    let groups = WG / d4;
    let group = lid / d4;
    if (group < groups) {
        let count = min(TILE, end - t0);
        acc = add_round(acc, lid, sn, t0, count, group, ld.v);
        for (var j0 = group + 8u * groups; j0 < count; j0 = j0 + 8u * groups) {
            acc = add_round(acc, lid, sn, t0, count, j0, value_round(lid, c, sn, t0, count, j0));
        }
    }
    workgroupBarrier();
    return Run(top, l, acc);
}

// The groups' value sums joined: for lid < d, dim lid of the four heads (a vec4).
fn join_values(acc: Heads, lid: u32) -> vec4<f32> {
    let d = p.d;
    let d4 = d / 4u;
    let groups = WG / d4;
    let group = lid / d4;
    if (group < groups) {
        let at = group * GROUP * d + 4u * (lid % d4);
        for (var i = 0u; i < 4u; i = i + 1u) {
            join_sh[at + i] = acc.h0[i];
            join_sh[at + d + i] = acc.h1[i];
            join_sh[at + 2u * d + i] = acc.h2[i];
            join_sh[at + 3u * d + i] = acc.h3[i];
        }
    }
    workgroupBarrier();
    var sum = vec4<f32>(0.0);
    if (lid < d) {
        for (var g = 0u; g < groups; g = g + 1u) {
            let b = g * GROUP * d + lid;
            sum += vec4<f32>(join_sh[b], join_sh[b + d], join_sh[b + 2u * d], join_sh[b + 3u * d]);
        }
    }
    return sum;
}

@compute @workgroup_size(256)
fn attend(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let ch = wid.x;
    let c = wid.y;
    let r = wid.z + p.row0;
    let d = p.d;
    let pos = p.pos0 + r;
    let sn = seen(pos);
    let start = min(ch * p.per, sn.n);
    let end = min(start + p.per, sn.n);
    // The first tile's keys and values and the gates of a direct result, loaded before the
    // row's waits (dims past d: unused).
    var ld = load_tile(lid, c, sn, start, end);
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
    let zero = vec4<f32>(0.0);
    var run = Run(vec4<f32>(NONE), zero, Heads(zero, zero, zero, zero));
    for (var t0 = start; t0 < end; t0 = t0 + TILE) {
        if (t0 != start) {
            ld = load_tile(lid, c, sn, t0, end);
        }
        run = tile(lid, c, sn, t0, end, ld, run);
    }
    let acc = join_values(run.acc, lid);
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
