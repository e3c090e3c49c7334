// Attention (spec §4, §6's near set) of a block of a prompt's rows: sixteen rows' four query
// heads of one KV head over one chunk of the positions the block sees. Each tile of 32
// keys is read from the cache once, into workgroup memory, and scored against all 64
// queries (attend.wgsl, one row to a workgroup, scores 4 queries for each key it reads).
// One workgroup of 128 per (chunk, KV head, block of 16 rows). Invocation t holds rows
// g = t / 16 and g + 8: it scores keys t % 16 and t % 16 + 16 of each tile for both rows'
// four heads (each piece of a key read once for 8 queries, each piece of a query once for
// 2 keys), then sums the tile's values into dims 4u … 4u + 3 and 4(u + 16) … of both rows,
// u = t % 16 (each value read once for both rows). The softmax is online, as in
// attend.wgsl; its sums come from the weights each invocation reads for the value sums,
// so a tile needs one reduction per row (the maximum). The result is attend.wgsl's: with
// `direct` (one chunk) normalised and gated into z, else each row's maximum, sum and value
// sums in `part` for combine.wgsl.
//
// The block walks the union of its rows' positions (seen.wgsl): the last row's sinks, then
// from the first row's lo (or the sinks' end) to the last row's position; each row masks
// the positions it does not see. Prep has written every row's key and value before.

struct P {
    rows: u32,
    pos0: u32,
    kv_heads: u32,
    d: u32,       // ≤ 128
    sinks: u32,
    cap: u32,
    window: u32,
    per: u32,     // positions of the block's walk per chunk
    chunks: u32,
    direct: u32,
    block0: u32,  // first block of this dispatch (grids hold at most 65535 blocks)
    scale: f32,   // λ
}
var<immediate> p: P;

@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> kc: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> vc: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> qkvg: array<f32>;
@group(0) @binding(4) var<storage, read> gate_scale: array<f32>;
@group(0) @binding(5) var<storage, read_write> z: array<f32>;
@group(0) @binding(6) var<storage, read_write> part: array<vec4<f32>>;

const WG: u32 = 128u;
// Rows of a block: each invocation holds two, HALF apart.
const BR: u32 = 16u;
const HALF: u32 = 8u;
// Keys of a tile, and invocations that share a row (each scores two keys, LANES apart).
const KT: u32 = 32u;
const LANES: u32 = 16u;
// The lowest score: finite, so that exp(NONE − m) is 0 and never NaN.
const NONE: f32 = -1.0e30;

// The tile's keys, dims-major ([d/4][KT]) so that neighbouring invocations read
// neighbouring vec4s; key j of dims e sits at j ^ (e mod 8), so that the copy in, which
// writes one key's dims from neighbouring invocations, does not land in one bank either.
var<workgroup> k_sh: array<vec4<f32>, 1024>;
var<workgroup> w_sh: array<vec4<f32>, 512>;  // the tile's weights [BR rows][KT keys], 4 heads each
var<workgroup> s_sh: array<u32, 32>;         // the tile's slots

fn key_at(e: u32, j: u32) -> vec4<f32> {
    return k_sh[e * KT + (j ^ (e % 8u))];
}

// Scores of two keys against two rows' four heads: [row a key 0, row a key 1, row b key
// 0, row b key 1], each a vec4 of heads.
struct Dots {
    a0: vec4<f32>,
    a1: vec4<f32>,
    b0: vec4<f32>,
    b1: vec4<f32>,
}

// Keys u and u + LANES of the tile against the four queries of the rows at qa and qb
// (vec4 e of head h of a row at q[qx + h·d/4 + e]).
fn key_dots(u: u32, qa: u32, qb: u32) -> Dots {
    let d4 = p.d / 4u;
    let z = vec4<f32>(0.0);
    var r = Dots(z, z, z, z);
    for (var e = 0u; e < d4; e = e + 1u) {
        let k0 = key_at(e, u);
        let k1 = key_at(e, u + LANES);
        let xa = mat4x4<f32>(q[qa + e], q[qa + d4 + e], q[qa + 2u * d4 + e], q[qa + 3u * d4 + e]);
        let xb = mat4x4<f32>(q[qb + e], q[qb + d4 + e], q[qb + 2u * d4 + e], q[qb + 3u * d4 + e]);
        // k · (column h of x) for each head h.
        r.a0 += k0 * xa;
        r.a1 += k1 * xa;
        r.b0 += k0 * xb;
        r.b1 += k1 * xb;
    }
    return r;
}

// The tile's first `count` keys of the walk from t0 into k_sh and s_sh (the rest zero).
fn load_tile(lid: u32, c: u32, walk: Seen, t0: u32, count: u32) {
    let d4 = p.d / 4u;
    if (lid < KT) {
        s_sh[lid] = select(0u, slot_of(walk_at(walk, t0 + lid)), lid < count);
    }
    for (var i = lid; i < KT * d4; i = i + WG) {
        let j = i / d4;
        let e = i % d4;
        var k = vec4<f32>(0.0);
        if (j < count) {
            k = kc[(slot_of(walk_at(walk, t0 + j)) * p.kv_heads + c) * d4 + e];
        }
        k_sh[e * KT + (j ^ (e % 8u))] = k;
    }
}

// A row's online softmax: maximum and sum of its four heads' scores, and this
// invocation's value sums (dims 4u … 4u + 3 in lo, 4(u + 16) … in hi; a vec4 of heads
// each).
struct Run {
    m: vec4<f32>,
    l: vec4<f32>,
    lo: mat4x4<f32>,
    hi: mat4x4<f32>,
}

// The row's scores of its two keys (`see0`, `see1`: whether it sees them) folded into its
// maximum, the run rescaled to it; the weights written for the value sums. Every
// invocation must call it (it reduces).
fn weigh(lid: u32, row: u32, u: u32, d0: vec4<f32>, d1: vec4<f32>, see0: bool, see1: bool, run: Run) -> Run {
    let none = vec4<f32>(NONE);
    let s0 = select(none, d0 * p.scale, see0);
    let s1 = select(none, d1 * p.scale, see1);
    let top = max(run.m, seg_max4(max(s0, s1), lid, LANES));
    w_sh[row * KT + u] = select(vec4<f32>(0.0), exp(s0 - top), see0);
    w_sh[row * KT + u + LANES] = select(vec4<f32>(0.0), exp(s1 - top), see1);
    let f = exp(run.m - top);
    return Run(top, run.l * f, heads_times(run.lo, f), heads_times(run.hi, f));
}

// Each column (a vec4 of heads) times the heads' factors f.
fn heads_times(m: mat4x4<f32>, f: vec4<f32>) -> mat4x4<f32> {
    return mat4x4<f32>(m[0] * f, m[1] * f, m[2] * f, m[3] * f);
}

// The tile's weights of `row` against the values v (dims u) and w (dims u + 16) of key t.
fn add(run: Run, row: u32, t: u32, v: vec4<f32>, w: vec4<f32>) -> Run {
    let x = w_sh[row * KT + t];
    return Run(run.m, run.l + x, run.lo + mat4x4<f32>(x * v.x, x * v.y, x * v.z, x * v.w),
        run.hi + mat4x4<f32>(x * w.x, x * w.y, x * w.z, x * w.w));
}

// A row's dims 4e … 4e + 3 (sums `acc`, a vec4 of heads each): normalised and gated into
// z, or left as partials for the combine.
fn finish(r: u32, c: u32, ch: u32, e: u32, run: Run, acc: mat4x4<f32>) {
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

// Both halves of a row's dims, where the head has them.
fn finish_row(r: u32, c: u32, ch: u32, u: u32, run: Run) {
    let d4 = p.d / 4u;
    if (u < d4) {
        finish(r, c, ch, u, run, run.lo);
    }
    if (u + LANES < d4) {
        finish(r, c, ch, u + LANES, run, run.hi);
    }
}

fn sees(sn: Seen, pos: u32, i: u32) -> bool {
    return i < sn.sinks || (i >= sn.lo && i <= pos);
}

// Value vec4 e of the slot's KV head c (zero past the head's dims).
fn value(slot: u32, c: u32, e: u32) -> vec4<f32> {
    let d4 = p.d / 4u;
    if (e >= d4) {
        return vec4<f32>(0.0);
    }
    return vc[(slot * p.kv_heads + c) * d4 + e];
}

@compute @workgroup_size(128)
fn attend_rows(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let ch = wid.x;
    let c = wid.y;
    let g = lid / LANES;
    let u = lid % LANES;
    let r0 = (wid.z + p.block0) * BR;
    let last = min(r0 + BR, p.rows) - 1u;
    // Rows past the prompt's end score the last row's again and write nothing.
    let ra = min(r0 + g, last);
    let rb = min(r0 + g + HALF, last);
    let first = seen(p.pos0 + r0);
    let tail = seen(p.pos0 + last);
    let lo = max(first.lo, tail.sinks);
    let walk = Seen(tail.sinks, lo, tail.sinks + p.pos0 + last + 1u - lo);
    let sa = seen(p.pos0 + ra);
    let sb = seen(p.pos0 + rb);
    let start = min(ch * p.per, walk.n);
    let end = min(start + p.per, walk.n);
    let qw = GROUP * p.kv_heads * p.d / 4u;
    let qa = ra * qw + GROUP * c * p.d / 4u;
    let qb = rb * qw + GROUP * c * p.d / 4u;
    let z = mat4x4<f32>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    var run_a = Run(vec4<f32>(NONE), vec4<f32>(0.0), z, z);
    var run_b = run_a;
    for (var t0 = start; t0 < end; t0 = t0 + KT) {
        let count = min(KT, end - t0);
        load_tile(lid, c, walk, t0, count);
        workgroupBarrier();
        let i0 = walk_at(walk, t0 + u);
        let i1 = walk_at(walk, t0 + u + LANES);
        let in0 = u < count;
        let in1 = u + LANES < count;
        let dots = key_dots(u, qa, qb);
        let pa = p.pos0 + ra;
        let pb = p.pos0 + rb;
        run_a = weigh(lid, g, u, dots.a0, dots.a1, in0 && sees(sa, pa, i0), in1 && sees(sa, pa, i1), run_a);
        run_b = weigh(lid, g + HALF, u, dots.b0, dots.b1, in0 && sees(sb, pb, i0), in1 && sees(sb, pb, i1), run_b);
        workgroupBarrier();
        for (var t = 0u; t < count; t = t + 1u) {
            let slot = s_sh[t];
            let v = value(slot, c, u);
            let w = value(slot, c, u + LANES);
            run_a = add(run_a, g, t, v, w);
            run_b = add(run_b, g + HALF, t, v, w);
        }
        workgroupBarrier();
    }
    if (r0 + g <= last) {
        finish_row(ra, c, ch, u, run_a);
    }
    if (r0 + g + HALF <= last) {
        finish_row(rb, c, ch, u, run_b);
    }
}
