// Attention (spec §4, §6's near set) of a block of a prompt's rows: sixteen rows' four query
// heads of one KV head over one chunk of the positions the block sees. Each tile of 32
// keys and their values is read from the cache once, into registers while the tile before
// it is worked on: the keys then go to workgroup memory and are scored against all 64
// queries (attend.wgsl, one row to a workgroup, scores 4 queries for each key it reads),
// the values follow into the same workgroup memory once the keys are scored. A workgroup
// per (chunk, KV head, block of 16 rows). Scoring, invocations 16i … 16i + 15 hold row i:
// four of the tile's keys over a slice of the dims (see LANES), so that a piece of a
// query read from memory serves four keys; the slices' sums meet by subgroup, the row's
// maximum a reduction over its 16 invocations, passed on through m_sh. Summing, run b of
// 32 invocations holds rows b and b + 8: invocation j sums the tile's values into dims
// 4e … 4e + 3 of both (each value read once for both; a narrow head's dims share the
// run's invocations, each with every `groups`-th key: see `groups`). The softmax is
// online, as in attend.wgsl; its sums come from the weights each invocation reads for the
// value sums, so a tile needs one reduction per row (the maximum). The result is
// attend.wgsl's: with `direct` (one chunk) normalised and gated into z, else each row's
// maximum, sum and value sums in `part` for combine.wgsl.
//
// The block walks the union of its rows' positions (seen.wgsl's block_walk). Prep has
// written every row's key and value before.

@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;

const WG: u32 = 256u;
// Runs of KT invocations; each sums two rows of the block.
const RUNS: u32 = 8u;
const BR: u32 = 2u * RUNS;
// Keys of a tile: one per invocation of a run.
const KT: u32 = 32u;
// The lowest score: finite, so that exp(NONE − m) is 0 and never NaN.
const NONE: f32 = -1.0e30;

// A row's 16 invocations score the tile as 8 lanes of keys × 2 slices of the dims: lane
// l's keys l, l + 8, l + 16 and l + 24, slice e's pieces of a key e, e + 2, …, so that every
// piece of a query read from memory serves four keys and every piece of a key four
// queries; the slices' dot products are summed across them after the walk over the dims.
// (Two keys an invocation over all the dims, each query piece read for two keys, took half
// of the attention's time, and eight over four slices ran no faster than two:
// bench/logs/h200-2026-12-07d, calls 2–4.)
const LANES: u32 = 8u;
const SLICES: u32 = 2u;
const ROW_LANES: u32 = LANES * SLICES;

// The tile's keys, keys-major ([KT][32]: a head's d/4 ≤ 32 pieces in a row of 32). Piece e
// of key j sits at e ^ 2 (j mod 4), so that the 16 pieces a scoring step reads (one key of
// each lane, one piece of each slice) fall in 8 bank groups twice each, and the copy in,
// which writes a key's pieces from consecutive invocations, lands in distinct banks. Once
// they are scored, the tile's values, keys-major ([KT][d/4], as the cache holds them).
var<workgroup> k_sh: array<vec4<f32>, 1024>;
var<workgroup> w_sh: array<vec4<f32>, 512>;  // the tile's weights [BR rows][KT keys], 4 heads each
var<workgroup> m_sh: array<vec4<f32>, 16>;   // the rows' maxima after the tile, 4 heads each

// Where piece e of the tile's key j sits in k_sh.
fn key_place(j: u32, e: u32) -> u32 {
    return j * 32u + (e ^ (2u * (j % 4u)));
}

fn key_at(j: u32, e: u32) -> vec4<f32> {
    return k_sh[key_place(j, e)];
}

// The dot products of an invocation's four keys (4 heads each), named: an array indexed
// in a loop stays in memory on the H200's driver (gemv.wgsl).
struct Dots {
    a0: vec4<f32>,
    a1: vec4<f32>,
    a2: vec4<f32>,
    a3: vec4<f32>,
}

// Piece e of key k against the four queries' pieces q0 … q3.
fn dot4(k: vec4<f32>, q0: vec4<f32>, q1: vec4<f32>, q2: vec4<f32>, q3: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(dot(k, q0), dot(k, q1), dot(k, q2), dot(k, q3));
}

// This invocation's slice of the dot products of its keys with the four queries of the
// row at qr.
fn slice_dots(s: Scorer) -> Dots {
    let d4 = p.d / 4u;
    let j = s.lane;
    var o = Dots(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    for (var e = s.slice; e < d4; e = e + SLICES) {
        let q0 = q[s.qr + e];
        let q1 = q[s.qr + d4 + e];
        let q2 = q[s.qr + 2u * d4 + e];
        let q3 = q[s.qr + 3u * d4 + e];
        let k0 = key_at(j, e);
        let k1 = key_at(j + LANES, e);
        let k2 = key_at(j + 2u * LANES, e);
        let k3 = key_at(j + 3u * LANES, e);
        o.a0 += dot4(k0, q0, q1, q2, q3);
        o.a1 += dot4(k1, q0, q1, q2, q3);
        o.a2 += dot4(k2, q0, q1, q2, q3);
        o.a3 += dot4(k3, q0, q1, q2, q3);
    }
    return o;
}

// The dot products of the invocation's keys summed over its row's slices (every
// invocation must call it: it reduces).
fn key_dots(s: Scorer) -> Dots {
    let o = slice_dots(s);
    let a0 = seg_sum4(o.a0, s.lid, SLICES);
    let a1 = seg_sum4(o.a1, s.lid, SLICES);
    let a2 = seg_sum4(o.a2, s.lid, SLICES);
    return Dots(a0, a1, a2, seg_sum4(o.a3, s.lid, SLICES));
}

// A tile as one invocation copies it: pieces lid, lid + WG, … of its keys and of their
// values (at most 4: d ≤ 128). Named, as the pieces' places below: arrays indexed in a
// loop stay in memory (gemv.wgsl).
struct Fetch {
    k0: vec4<f32>,
    k1: vec4<f32>,
    k2: vec4<f32>,
    k3: vec4<f32>,
    v0: vec4<f32>,
    v1: vec4<f32>,
    v2: vec4<f32>,
    v3: vec4<f32>,
}

// Piece lid + n·WG of a tile (piece i is dims 4e … 4e + 3 of key j, i = j·d/4 + e) as
// (j << 8) | e, found once (the divisions are the copies' dearest step); j is KT where
// there is no such piece.
fn piece(lid: u32, n: u32) -> u32 {
    let d4 = p.d / 4u;
    let i = lid + n * WG;
    return (select(KT, i / d4, i < KT * d4) << 8u) | (i % d4);
}

// The pieces an invocation copies of every tile.
fn pieces(lid: u32) -> vec4<u32> {
    return vec4<u32>(piece(lid, 0u), piece(lid, 1u), piece(lid, 2u), piece(lid, 3u));
}

// A piece's key and value.
struct Kv {
    k: vec4<f32>,
    v: vec4<f32>,
}

// The piece at `a` (`piece`) of the tile's first `count` keys of the walk from t0 (zeros
// past them).
fn fetch_piece(c: u32, walk: Seen, t0: u32, count: u32, a: u32) -> Kv {
    let j = a >> 8u;
    if (j >= count) {
        return Kv(vec4<f32>(0.0), vec4<f32>(0.0));
    }
    let i = (slot_of(walk_at(walk, t0 + j)) * p.kv_heads + c) * (p.d / 4u) + (a & 255u);
    return Kv(kc[i], vc[i]);
}

// The tile's first `count` keys of the walk from t0 and their values, read from the cache
// into registers (the rest zero): a tile ahead of their use, so that the reads overlap the
// tile before.
fn fetch(c: u32, walk: Seen, t0: u32, count: u32, at: vec4<u32>) -> Fetch {
    let a = fetch_piece(c, walk, t0, count, at.x);
    let b = fetch_piece(c, walk, t0, count, at.y);
    let d = fetch_piece(c, walk, t0, count, at.z);
    let e = fetch_piece(c, walk, t0, count, at.w);
    return Fetch(a.k, b.k, d.k, e.k, a.v, b.v, d.v, e.v);
}

// A fetched key's piece at `a` into k_sh.
fn store_key(k: vec4<f32>, a: u32) {
    let j = a >> 8u;
    let e = a & 255u;
    if (j < KT) {
        k_sh[key_place(j, e)] = k;
    }
}

// A fetched tile's keys into k_sh.
fn store_tile(f: Fetch, at: vec4<u32>) {
    store_key(f.k0, at.x);
    store_key(f.k1, at.y);
    store_key(f.k2, at.z);
    store_key(f.k3, at.w);
}

// A row's online softmax: maximum and sum of its four heads' scores, and this
// invocation's value sums (dims 4j … 4j + 3, a vec4 of heads each).
struct Run {
    m: vec4<f32>,
    l: vec4<f32>,
    a0: vec4<f32>,
    a1: vec4<f32>,
    a2: vec4<f32>,
    a3: vec4<f32>,
}

// A row's run rescaled to a new maximum.
fn rescale(run: Run, top: vec4<f32>) -> Run {
    let f = exp(run.m - top);
    return Run(top, run.l * f, run.a0 * f, run.a1 * f, run.a2 * f, run.a3 * f);
}

// One key's weight w and value v into a row's run.
fn add(run: Run, w: vec4<f32>, v: vec4<f32>) -> Run {
    return Run(run.m, run.l + w, run.a0 + w * v.x, run.a1 + w * v.y, run.a2 + w * v.z, run.a3 + w * v.w);
}

// What invocation lid scores (`scorer`): row `row` of the block (r in the prompt, `sn` what
// it sees), whose four queries start at qr, against keys lane + LANES·i of each tile, over
// the pieces e ≡ slice (mod SLICES).
struct Scorer {
    lid: u32,
    row: u32,
    r: u32,
    sn: Seen,
    qr: u32,
    lane: u32,
    slice: u32,
}

fn scorer(lid: u32, c: u32, r0: u32, last: u32) -> Scorer {
    let r = min(r0 + lid / ROW_LANES, last);
    let qr = (r * p.kv_heads + c) * GROUP * p.d / 4u;
    let t = lid % ROW_LANES;
    return Scorer(lid, lid / ROW_LANES, r, seen(p.pos0 + r), qr, t / SLICES, t % SLICES);
}

// Key i of the scorer's (i < 4) in the tile from step t0 of the walk (count keys): its
// scores, or NONE where the row does not see it.
fn masked(s: Scorer, walk: Seen, t0: u32, count: u32, i: u32, dots: vec4<f32>) -> vec4<f32> {
    let j = s.lane + LANES * i;
    let seen = j < count && sees(s.sn, p.pos0 + s.r, walk_at(walk, t0 + j));
    return select(vec4<f32>(NONE), dots * p.scale, seen);
}

// Key i's weight against the row's maximum `top` into w_sh (0 where the row does not see
// it, even when it sees none of the tile and `top` is NONE).
fn weigh(s: Scorer, i: u32, sc: vec4<f32>, top: vec4<f32>) {
    let j = s.lane + LANES * i;
    w_sh[s.row * KT + j] = select(vec4<f32>(0.0), exp(sc - top), sc > vec4<f32>(0.5 * NONE));
}

// The scorer's keys of the tile from step t0 of the walk (count keys) scored and weighed
// against the row's new maximum (returned: its maximum so far, `m`, and the tile's); the
// weights written for the value sums (each key's by one slice), the maximum to m_sh. Every
// invocation must call it (it reduces over the row's invocations).
fn score(s: Scorer, walk: Seen, t0: u32, count: u32, m: vec4<f32>) -> vec4<f32> {
    let o = key_dots(s);
    let s0 = masked(s, walk, t0, count, 0u, o.a0);
    let s1 = masked(s, walk, t0, count, 1u, o.a1);
    let s2 = masked(s, walk, t0, count, 2u, o.a2);
    let s3 = masked(s, walk, t0, count, 3u, o.a3);
    let top = max(m, seg_max4(max(max(s0, s1), max(s2, s3)), s.lid, ROW_LANES));
    // Slice 0 weighs keys 0 and 2 of the lane, slice 1 keys 1 and 3.
    if (s.slice == 0u) {
        weigh(s, 0u, s0, top);
        weigh(s, 2u, s2, top);
    } else {
        weigh(s, 1u, s1, top);
        weigh(s, 3u, s3, top);
    }
    if (s.lid % ROW_LANES == 0u) {
        m_sh[s.row] = top;
    }
    return top;
}

// Fetched values into k_sh as the cache holds them, piece i at i (the keys scored: every
// invocation has passed a barrier since).
fn store_values(lid: u32, f: Fetch, at: vec4<u32>) {
    store_value(lid, f.v0, at.x);
    store_value(lid + WG, f.v1, at.y);
    store_value(lid + 2u * WG, f.v2, at.z);
    store_value(lid + 3u * WG, f.v3, at.w);
}

fn store_value(i: u32, v: vec4<f32>, a: u32) {
    if ((a >> 8u) < KT) {
        k_sh[i] = v;
    }
}

// Dims 4j … 4j + 3 of the value of the tile's key t.
fn value(t: u32, j: u32) -> vec4<f32> {
    return k_sh[t * (p.d / 4u) + j];
}

// Four keys' weights (w_sh from `at`, `step` apart) and values into a row's run.
fn add4(run: Run, at: u32, step: u32, v0: vec4<f32>, v1: vec4<f32>, v2: vec4<f32>, v3: vec4<f32>) -> Run {
    let r = add(add(run, w_sh[at], v0), w_sh[at + step], v1);
    return add(add(r, w_sh[at + 2u * step], v2), w_sh[at + 3u * step], v3);
}

// A row's run summed over the `groups` invocations that shared its keys (every invocation
// must call it: it reduces).
fn join_keys(run: Run, lid: u32, groups: u32) -> Run {
    let l = seg_sum4(run.l, lid, groups);
    let a0 = seg_sum4(run.a0, lid, groups);
    let a1 = seg_sum4(run.a1, lid, groups);
    let a2 = seg_sum4(run.a2, lid, groups);
    return Run(run.m, l, a0, a1, a2, seg_sum4(run.a3, lid, groups));
}

// A row's result: normalised and gated into z, or its partials for the combine.
fn finish(r: u32, c: u32, ch: u32, e: u32, run: Run) {
    if (p.direct != 0u) {
        gate_into_z(r, c, p.kv_heads, p.d, 4u * e, run.a0 / run.l);
        gate_into_z(r, c, p.kv_heads, p.d, 4u * e + 1u, run.a1 / run.l);
        gate_into_z(r, c, p.kv_heads, p.d, 4u * e + 2u, run.a2 / run.l);
        gate_into_z(r, c, p.kv_heads, p.d, 4u * e + 3u, run.a3 / run.l);
        return;
    }
    let base = ((r * p.kv_heads + c) * p.chunks + ch) * (2u + p.d);
    if (e == 0u) {
        part[base] = run.m;
        part[base + 1u] = run.l;
    }
    let at = base + 2u + 4u * e;
    part[at] = run.a0;
    part[at + 1u] = run.a1;
    part[at + 2u] = run.a2;
    part[at + 3u] = run.a3;
}

@compute @workgroup_size(256)
fn attend_rows(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let ch = wid.x;
    let c = wid.y;
    let b = lid / KT;
    let j = lid % KT;
    let r0 = (wid.z + p.block0) * BR;
    let last = min(r0 + BR, p.rows) - 1u;
    // Rows past the prompt's end score the last row's again and write nothing.
    let ra = min(r0 + b, last);
    let rb = min(r0 + b + RUNS, last);
    let walk = block_walk(r0, last);
    let start = min(ch * p.per, walk.n);
    let end = min(start + p.per, walk.n);
    if (start == end) {
        if (lid < BR && r0 + lid <= last) {
            mark_empty(r0 + lid, c, ch);
        }
        return;
    }
    let sc = scorer(lid, c, r0, last);
    let zero = vec4<f32>(0.0);
    var mq = vec4<f32>(NONE);
    var run_a = Run(mq, zero, zero, zero, zero, zero);
    var run_b = run_a;
    let d4 = p.d / 4u;
    // The value sums: invocation j sums dims 4e … 4e + 3 over keys g, g + groups, … of each
    // tile, where a head of d4 ≤ 16 pieces leaves room for 32 / d4 groups of keys (each
    // such group's sums joined at the end).
    let groups = 1u << firstLeadingBit(KT / d4);
    let e = j / groups;
    let g = j % groups;
    let at = pieces(lid);
    var next = fetch(c, walk, start, min(KT, end - start), at);
    for (var t0 = start; t0 < end; t0 = t0 + KT) {
        let count = min(KT, end - t0);
        store_tile(next, at);
        let values = next;
        workgroupBarrier();
        if (t0 + KT < end) {
            next = fetch(c, walk, t0 + KT, min(KT, end - t0 - KT), at);
        }
        mq = score(sc, walk, t0, count, mq);
        workgroupBarrier();
        store_values(lid, values, at);
        run_a = rescale(run_a, m_sh[b]);
        run_b = rescale(run_b, m_sh[b + RUNS]);
        workgroupBarrier();
        if (e < d4) {
            // Four keys' values loaded before any is used.
            var t = g;
            for (; t + 3u * groups < count; t = t + 4u * groups) {
                let v0 = value(t, e);
                let v1 = value(t + groups, e);
                let v2 = value(t + 2u * groups, e);
                let v3 = value(t + 3u * groups, e);
                run_a = add4(run_a, b * KT + t, groups, v0, v1, v2, v3);
                run_b = add4(run_b, (b + RUNS) * KT + t, groups, v0, v1, v2, v3);
            }
            for (; t < count; t = t + groups) {
                let v = value(t, e);
                run_a = add(run_a, w_sh[b * KT + t], v);
                run_b = add(run_b, w_sh[(b + RUNS) * KT + t], v);
            }
        }
        workgroupBarrier();
    }
    if (groups > 1u) {
        run_a = join_keys(run_a, lid, groups);
        run_b = join_keys(run_b, lid, groups);
    }
    if (e >= d4 || g != 0u) {
        return;
    }
    if (r0 + b <= last) {
        finish(ra, c, ch, e, run_a);
    }
    if (r0 + b + RUNS <= last) {
        finish(rb, c, ch, e, run_b);
    }
}
