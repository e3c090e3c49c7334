// Attention (spec §4, §6's near set) of a block of a prompt's rows: sixteen rows' four query
// heads of one KV head over one chunk of the positions the block sees. Each tile of 32
// keys and their values is read from the cache once, into registers while the tile before
// it is worked on: the keys then go to workgroup memory and are scored against all 64
// queries (attend.wgsl, one row to a workgroup, scores 4 queries for each key it reads),
// the values follow into the same workgroup memory once the keys are scored. A workgroup
// per (chunk, KV head, block of 16 rows). Scoring, invocation i holds row i / 16's keys
// i % 16 and i % 16 + 16 (each piece of a query read once for both keys; the row's
// maximum a reduction over its 16 invocations, passed on through m_sh). Summing, run b
// of 32 invocations holds rows b and b + 8: invocation j sums the tile's values into dims
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
// Keys of a tile: one per invocation of a run, two per invocation scoring.
const KT: u32 = 32u;
// The lowest score: finite, so that exp(NONE − m) is 0 and never NaN.
const NONE: f32 = -1.0e30;

// The tile's keys, dims-major ([d/4][KT]) so that a run's 32 invocations read 32
// neighbouring vec4s; key j of dims e sits at j ^ (e mod 8), so that the copy in, which
// writes one key's dims from a run, does not land in one bank either. Once they are
// scored, the tile's values, keys-major ([KT][d/4], as the cache holds them).
var<workgroup> k_sh: array<vec4<f32>, 1024>;
var<workgroup> w_sh: array<vec4<f32>, 512>;  // the tile's weights [BR rows][KT keys], 4 heads each
var<workgroup> m_sh: array<vec4<f32>, 16>;   // the rows' maxima after the tile, 4 heads each

fn key_at(e: u32, j: u32) -> vec4<f32> {
    return k_sh[e * KT + (j ^ (e % 8u))];
}

// Keys j and j + KT/2 of the tile against the four queries of the row at qr: both keys'
// pieces read for each piece of the queries, each query piece read once for both.
fn key_dots(j: u32, qr: u32) -> array<vec4<f32>, 2> {
    let d4 = p.d / 4u;
    var da = vec4<f32>(0.0);
    var db = vec4<f32>(0.0);
    for (var e = 0u; e < d4; e = e + 1u) {
        let ka = key_at(e, j);
        let kb = key_at(e, j + KT / 2u);
        let q0 = q[qr + e];
        let q1 = q[qr + d4 + e];
        let q2 = q[qr + 2u * d4 + e];
        let q3 = q[qr + 3u * d4 + e];
        da += vec4<f32>(dot(ka, q0), dot(ka, q1), dot(ka, q2), dot(ka, q3));
        db += vec4<f32>(dot(kb, q0), dot(kb, q1), dot(kb, q2), dot(kb, q3));
    }
    return array<vec4<f32>, 2>(da, db);
}

// A tile as one invocation copies it: pieces lid, lid + WG, … of its keys and of their
// values (at most 4: d ≤ 128).
struct Fetch {
    k: array<vec4<f32>, 4>,
    v: array<vec4<f32>, 4>,
}

// The pieces an invocation copies of every tile, lid + n·WG for n < 4 (piece i is dims
// 4e … 4e + 3 of key j, i = j·d/4 + e): (j << 8) | e each, found once (the divisions are
// the copies' dearest step); j is KT where there is no such piece.
fn pieces(lid: u32) -> vec4<u32> {
    let d4 = p.d / 4u;
    var at: vec4<u32>;
    for (var n = 0u; n < 4u; n = n + 1u) {
        let i = lid + n * WG;
        at[n] = (select(KT, i / d4, i < KT * d4) << 8u) | (i % d4);
    }
    return at;
}

// The tile's first `count` keys of the walk from t0 and their values, read from the cache
// into registers (the rest zero): a tile ahead of their use, so that the reads overlap the
// tile before.
fn fetch(c: u32, walk: Seen, t0: u32, count: u32, at: vec4<u32>) -> Fetch {
    let d4 = p.d / 4u;
    var f: Fetch;
    for (var n = 0u; n < 4u; n = n + 1u) {
        let j = at[n] >> 8u;
        var k = vec4<f32>(0.0);
        var v = vec4<f32>(0.0);
        if (j < count) {
            let i = (slot_of(walk_at(walk, t0 + j)) * p.kv_heads + c) * d4 + (at[n] & 255u);
            k = kc[i];
            v = vc[i];
        }
        f.k[n] = k;
        f.v[n] = v;
    }
    return f;
}

// A fetched tile's keys into k_sh.
fn store_tile(f: Fetch, at: vec4<u32>) {
    for (var n = 0u; n < 4u; n = n + 1u) {
        let j = at[n] >> 8u;
        let e = at[n] & 255u;
        if (j < KT) {
            k_sh[e * KT + (j ^ (e % 8u))] = f.k[n];
        }
    }
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
// it sees), whose four queries start at qr, against keys j and j + KT/2 of each tile.
struct Scorer {
    lid: u32,
    row: u32,
    r: u32,
    sn: Seen,
    qr: u32,
    j: u32,
}

fn scorer(lid: u32, c: u32, r0: u32, last: u32) -> Scorer {
    let r = min(r0 + lid / (KT / 2u), last);
    let qr = (r * p.kv_heads + c) * GROUP * p.d / 4u;
    return Scorer(lid, lid / (KT / 2u), r, seen(p.pos0 + r), qr, lid % (KT / 2u));
}

// The scorer's two keys of the tile from step t0 of the walk (count keys) scored and
// weighed against the row's new maximum (returned: its maximum so far, `m`, and the
// tile's); the weights written for the value sums, the maximum to m_sh. Every invocation
// must call it (it reduces over the row's KT/2 invocations).
fn score(s: Scorer, walk: Seen, t0: u32, count: u32, m: vec4<f32>) -> vec4<f32> {
    let dots = key_dots(s.j, s.qr);
    let va = s.j < count && sees(s.sn, p.pos0 + s.r, walk_at(walk, t0 + s.j));
    let vb = s.j + KT / 2u < count && sees(s.sn, p.pos0 + s.r, walk_at(walk, t0 + s.j + KT / 2u));
    let sa = select(vec4<f32>(NONE), dots[0] * p.scale, va);
    let sb = select(vec4<f32>(NONE), dots[1] * p.scale, vb);
    let top = max(m, seg_max4(max(sa, sb), s.lid, KT / 2u));
    let at = s.row * KT + s.j;
    w_sh[at] = select(vec4<f32>(0.0), exp(sa - top), va);
    w_sh[at + KT / 2u] = select(vec4<f32>(0.0), exp(sb - top), vb);
    if (s.j == 0u) {
        m_sh[s.row] = top;
    }
    return top;
}

// Fetched values into k_sh as the cache holds them, piece i at i (the keys scored: every
// invocation has passed a barrier since).
fn store_values(lid: u32, v: array<vec4<f32>, 4>, at: vec4<u32>) {
    for (var n = 0u; n < 4u; n = n + 1u) {
        if ((at[n] >> 8u) < KT) {
            k_sh[lid + n * WG] = v[n];
        }
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
    let acc = array<vec4<f32>, 4>(run.a0, run.a1, run.a2, run.a3);
    if (p.direct != 0u) {
        for (var k = 0u; k < 4u; k = k + 1u) {
            gate_into_z(r, c, p.kv_heads, p.d, 4u * e + k, acc[k] / run.l);
        }
        return;
    }
    let base = ((r * p.kv_heads + c) * p.chunks + ch) * (2u + p.d);
    if (e == 0u) {
        part[base] = run.m;
        part[base + 1u] = run.l;
    }
    for (var k = 0u; k < 4u; k = k + 1u) {
        part[base + 2u + 4u * e + k] = acc[k];
    }
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
    let sc = scorer(lid, c, r0, last);
    let start = min(ch * p.per, walk.n);
    let end = min(start + p.per, walk.n);
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
        let values = next.v;
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
