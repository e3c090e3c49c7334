// Attention (spec §4, §6's near set) of a block of a prompt's rows: sixteen rows' four query
// heads of one KV head over one chunk of the positions the block sees. Each tile of 32
// keys and their values is read from the cache once, into registers while the tile before
// it is worked on: the keys then go to workgroup memory and are scored against all 64
// queries (attend.wgsl, one row to a workgroup, scores 4 queries for each key it reads),
// the values follow into the same workgroup memory once the keys are scored. A workgroup
// per (chunk, KV head, block of 16 rows). Run b of 32 invocations holds rows b and b + 8.
// Scoring, its invocations pair up over the two halves of the dims, pair j on keys j and
// j + 16: each piece of a key read is multiplied into both rows' four queries, each query
// piece into both keys (two key loads from workgroup memory for sixteen dot products of
// four dims: those loads, four cycles of the SM's one load pipe a warp, are what scoring
// waits on), the halves joined by a reduction over the pair and each row's maximum over
// the run. Summing, invocation j sums the tile's values into dims 4e … 4e + 3 of both
// rows (each value read once for both; a narrow head's dims share the run's invocations,
// each with every `groups`-th key: see `groups`). The softmax is
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

fn key_at(e: u32, j: u32) -> vec4<f32> {
    return k_sh[e * KT + (j ^ (e % 8u))];
}

// Key k's dims 4e … 4e + 3 against the same dims of a row's four queries (q0 … q3).
fn dots4(k: vec4<f32>, q0: vec4<f32>, q1: vec4<f32>, q2: vec4<f32>, q3: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(dot(k, q0), dot(k, q1), dot(k, q2), dot(k, q3));
}

// The scorer's half of the dims of keys j and j + KT/2 of the tile against its two rows'
// four queries: [row a · key j, row a · key j + KT/2, row b · key j, row b · key j + KT/2].
fn key_dots(s: Scorer) -> array<vec4<f32>, 4> {
    let d4 = p.d / 4u;
    var aj = vec4<f32>(0.0);
    var ak = vec4<f32>(0.0);
    var bj = vec4<f32>(0.0);
    var bk = vec4<f32>(0.0);
    for (var e = s.e0; e < s.e1; e = e + 1u) {
        let kj = key_at(e, s.j);
        let kk = key_at(e, s.j + KT / 2u);
        let a0 = q[s.qa + e];
        let a1 = q[s.qa + d4 + e];
        let a2 = q[s.qa + 2u * d4 + e];
        let a3 = q[s.qa + 3u * d4 + e];
        aj += dots4(kj, a0, a1, a2, a3);
        ak += dots4(kk, a0, a1, a2, a3);
        let b0 = q[s.qb + e];
        let b1 = q[s.qb + d4 + e];
        let b2 = q[s.qb + 2u * d4 + e];
        let b3 = q[s.qb + 3u * d4 + e];
        bj += dots4(kj, b0, b1, b2, b3);
        bk += dots4(kk, b0, b1, b2, b3);
    }
    return array<vec4<f32>, 4>(aj, ak, bj, bk);
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

// What invocation lid scores (`scorer`): rows `row` and row + RUNS of the block (ra and
// rb in the prompt, seeing sa and sb), whose four queries start at qa and qb, against keys
// j and j + KT/2 of each tile over pieces e0 … e1 − 1 of the dims (the half `lid % 2`).
struct Scorer {
    lid: u32,
    row: u32,
    j: u32,
    e0: u32,
    e1: u32,
    ra: u32,
    rb: u32,
    sa: Seen,
    sb: Seen,
    qa: u32,
    qb: u32,
}

fn scorer(lid: u32, c: u32, ra: u32, rb: u32) -> Scorer {
    let d4 = p.d / 4u;
    let half = (d4 + 1u) / 2u;
    let e0 = min((lid % 2u) * half, d4);
    let qa = (ra * p.kv_heads + c) * GROUP * d4;
    let qb = (rb * p.kv_heads + c) * GROUP * d4;
    let sa = seen(p.pos0 + ra);
    let sb = seen(p.pos0 + rb);
    return Scorer(lid, lid / KT, (lid % KT) / 2u, e0, min(e0 + half, d4), ra, rb, sa, sb, qa, qb);
}

// The score of a key at position i, seen or not, for a row at pos seeing sn.
fn scored(dot: vec4<f32>, sn: Seen, pos: u32, i: u32, within: bool) -> vec4<f32> {
    return select(vec4<f32>(NONE), dot * p.scale, within && sees(sn, pos, i));
}

// A key's weight in a row from its score against the row's new maximum.
fn weight(score: vec4<f32>, top: vec4<f32>) -> vec4<f32> {
    return select(vec4<f32>(0.0), exp(score - top), score > vec4<f32>(NONE));
}

// The scorer's two keys of the tile from step t0 of the walk (count keys) scored for both
// its rows and weighed against each row's new maximum (returned, from the maxima so far
// ma and mb); the weights written for the value sums (one half's invocation writes row a's,
// the other row b's). Every invocation must call it (it reduces).
fn score(s: Scorer, walk: Seen, t0: u32, count: u32, ma: vec4<f32>, mb: vec4<f32>) -> array<vec4<f32>, 2> {
    let dots = key_dots(s);
    let ij = walk_at(walk, t0 + s.j);
    let ik = walk_at(walk, t0 + s.j + KT / 2u);
    let aj = scored(seg_sum4(dots[0], s.lid, 2u), s.sa, p.pos0 + s.ra, ij, s.j < count);
    let ak = scored(seg_sum4(dots[1], s.lid, 2u), s.sa, p.pos0 + s.ra, ik, s.j + KT / 2u < count);
    let bj = scored(seg_sum4(dots[2], s.lid, 2u), s.sb, p.pos0 + s.rb, ij, s.j < count);
    let bk = scored(seg_sum4(dots[3], s.lid, 2u), s.sb, p.pos0 + s.rb, ik, s.j + KT / 2u < count);
    let ta = max(ma, seg_max4(max(aj, ak), s.lid, KT));
    let tb = max(mb, seg_max4(max(bj, bk), s.lid, KT));
    let lower = s.lid % 2u == 0u;
    let at = select(s.row + RUNS, s.row, lower) * KT + s.j;
    w_sh[at] = select(weight(bj, tb), weight(aj, ta), lower);
    w_sh[at + KT / 2u] = select(weight(bk, tb), weight(ak, ta), lower);
    return array<vec4<f32>, 2>(ta, tb);
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
    let sc = scorer(lid, c, ra, rb);
    let start = min(ch * p.per, walk.n);
    let end = min(start + p.per, walk.n);
    let zero = vec4<f32>(0.0);
    var run_a = Run(vec4<f32>(NONE), zero, zero, zero, zero, zero);
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
        let tops = score(sc, walk, t0, count, run_a.m, run_b.m);
        workgroupBarrier();
        store_values(lid, values, at);
        run_a = rescale(run_a, tops[0]);
        run_b = rescale(run_b, tops[1]);
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
