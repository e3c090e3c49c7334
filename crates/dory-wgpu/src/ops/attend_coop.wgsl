// attend_rows.wgsl's work on the tensor cores: a block of 16 rows' four query heads of one
// KV head (64 queries) over one chunk of the positions the block sees, in tiles of 32 keys,
// the scores Q·Kᵀ and the value sums P·V as cooperative products (16 × 16 × 16, f16 in, f32
// accumulated). Four subgroups of 32, each 16 queries: rows r0 + 4 sg … + 3, heads 0 … 3.
//
// The operands in f16 parts, hi + lo keeping ~22 bits, as gemm_coop.wgsl's x; a product of
// parts is hi·hi + hi·lo + lo·hi (lo·lo is below f32's precision), so that spec §8's bounds
// hold as with f32 operands:
// - q: prep.wgsl's `prep_parts` writes each query's parts times a power of two s_q that
//   puts its largest magnitude in [2¹², 2¹³), and 1/s_q;
// - k: a unit vector (spec §4), times 2¹² as its tile is staged in workgroup memory;
// - v: times a power of two per tile, from the tile's largest magnitude (values have no
//   bound), as it is staged;
// - the weights p = e^{s − m} ≤ 1, times 2¹².
// A tile's value sums start from zero in their own accumulators and reach the row's sums
// through workgroup memory, where each lane undoes the scales and applies the online
// softmax's rescaling in f32 (a cooperative matrix cannot be scaled by rows).
//
// The f16 operands are staged in a region of `scratch` of the workgroup's own, not in
// workgroup memory: on the H200 a cooperative load from workgroup memory ran many times
// slower than one from a buffer (a GEMM staged that way ran 3–13× slower, and this
// kernel so staged 3.5× slower than attend_rows.wgsl: bench/logs/h200-2026-12-03a/call-1).
//
// Lane l of a subgroup keeps query l / 2: its softmax over half l % 2 of each tile's keys,
// and its value sums over half l % 2 of each 16-dim tile (8 dims of each). The result is
// attend_rows.wgsl's: with `direct` normalised and gated into z, else the partials in
// `part` for combine.wgsl.

enable f16;
enable wgpu_cooperative_matrix;

// prep.wgsl's q parts, KV head by KV head ([K][rows16][4][d], hi then lo), and their 1/s_q
// after them (the same buffer, bound twice).
@group(0) @binding(0) var<storage, read> qh: array<f16>;
@group(0) @binding(7) var<storage, read> qw: array<f32>;
// Each workgroup's staged operands (REGION halves): the tile's keys [KT][d], then its
// values, hi then lo each, then each subgroup's weights [16][KT], hi then lo.
@group(0) @binding(8) var<storage, read_write> scratch: array<f16>;

// Keys of a tile.
const KT: u32 = 32u;
// The lowest score: finite, so that exp(NONE − m) is 0 and never NaN.
const NONE: f32 = -1.0e30;
// A workgroup's part of `scratch`, in halves: keys and values of up to 128 dims in two
// parts each, and four subgroups' weights in two parts.
const REGION: u32 = 4u * KT * 128u + 4u * 2u * 16u * KT;
// Per subgroup, [16][SS] floats: its scores (32 columns), then its value sums (d).
const SS: u32 = 132u;
var<workgroup> s_sh: array<f32, 8448>;
// Each subgroup's largest value magnitude of the tile.
var<workgroup> vmax_sh: array<f32, 4>;

alias FragA = coop_mat16x16<f16, A>;
alias FragB = coop_mat16x16<f16, B>;
alias Acc = coop_mat16x16<f32, C>;

// c + hi_a·hi_b + hi_a·lo_b + lo_a·hi_b
fn mma3(ah: FragA, al: FragA, bh: FragB, bl: FragB, c: Acc) -> Acc {
    return coopMultiplyAdd(ah, bh, coopMultiplyAdd(ah, bl, coopMultiplyAdd(al, bh, c)));
}

// An accumulator of zeros (through s_sh; every invocation of the workgroup calls it).
fn zero_acc(lid: u32) -> Acc {
    for (var e = lid; e < 256u; e = e + 128u) {
        s_sh[e] = 0.0;
    }
    workgroupBarrier();
    let zero = coopLoad<Acc>(&s_sh[0], 16u);
    workgroupBarrier();
    return zero;
}

// Invocation lid's pieces of the tile's keys or values (`cache` 0: kc, else vc) from the
// walk's step t0 on, `count` of them (the rest zero): piece n is dims 4e … 4e + 3 of key j,
// lid + 128 n = j · d/4 + e.
fn fetch(lid: u32, c: u32, walk: Seen, t0: u32, count: u32, cache: u32) -> array<vec4<f32>, 8> {
    let d4 = p.d / 4u;
    var f: array<vec4<f32>, 8>;
    for (var n = 0u; n < 8u; n = n + 1u) {
        let i = lid + 128u * n;
        let j = i / d4;
        var v = vec4<f32>(0.0);
        if (j < count) {
            let at = (slot_of(walk_at(walk, t0 + j)) * p.kv_heads + c) * d4 + i % d4;
            if (cache == 0u) {
                v = kc[at];
            } else {
                v = vc[at];
            }
        }
        f[n] = v;
    }
    return f;
}

// Fetched pieces into the scratch from `at` ([KT][d], lo KT · d halves on) as f16 parts,
// times 2^shift.
fn stage(lid: u32, f: array<vec4<f32>, 8>, shift: i32, at: u32) {
    let d4 = p.d / 4u;
    let lo = KT * p.d;
    for (var n = 0u; n < 8u; n = n + 1u) {
        let i = lid + 128u * n;
        if (i < KT * d4) {
            let v = ldexp(f[n], vec4<i32>(shift));
            let hi = hi11(v);
            let rest = v - hi;
            for (var e = 0u; e < 4u; e = e + 1u) {
                scratch[at + 4u * i + e] = f16(hi[e]);
                scratch[at + lo + 4u * i + e] = f16(rest[e]);
            }
        }
    }
}

// The largest magnitude among every invocation's fetched values, through vmax_sh (read
// after a barrier that follows this).
fn note_vmax(lid: u32, f: array<vec4<f32>, 8>) {
    var most = vec4<f32>(0.0);
    for (var n = 0u; n < 8u; n = n + 1u) {
        most = max(most, abs(f[n]));
    }
    let m = subgroupMax(max(max(most.x, most.y), max(most.z, most.w)));
    if (lid % 32u == 0u) {
        vmax_sh[lid / 32u] = m;
    }
}

// The subgroup's scores of the tile (its 16 queries' parts from qa, lo parts ql halves on;
// the keys' from ka) into its slice of s_sh, [16 queries][32 keys].
fn scores(sg: u32, qa: u32, ql: u32, ka: u32, zero: Acc) {
    let d = p.d;
    let kl = ka + KT * d;
    var s0 = zero;
    var s1 = zero;
    for (var k = 0u; k < d; k = k + 16u) {
        let ah = coopLoadT<FragA>(&qh[qa + k], d);
        let al = coopLoadT<FragA>(&qh[ql + qa + k], d);
        let bh0 = coopLoad<FragB>(&scratch[ka + k], d);
        let bl0 = coopLoad<FragB>(&scratch[kl + k], d);
        let bh1 = coopLoad<FragB>(&scratch[ka + 16u * d + k], d);
        let bl1 = coopLoad<FragB>(&scratch[kl + 16u * d + k], d);
        s0 = mma3(ah, al, bh0, bl0, s0);
        s1 = mma3(ah, al, bh1, bl1, s1);
    }
    let at = sg * 16u * SS;
    let next = at + 16u;
    let stride = SS;
    let t0 = s0;
    coopStoreT(t0, &s_sh[at], stride);
    let t1 = s1;
    coopStoreT(t1, &s_sh[next], stride);
}

// A query's online softmax: its maximum and sum so far.
struct Soft {
    m: f32,
    l: f32,
}

// The lane's half of its query's scores of the tile (`seen`: which of its 16 keys the row
// sees) into weights e^{s − m} times 2¹² in the scratch from `pa` ([16][KT], lo 16 · KT
// halves on), as f16 parts, m the new maximum; returns m and the tile's sum of weights.
fn weigh(sg: u32, lane: u32, seen: u32, k_scale: f32, soft: Soft, pa: u32) -> vec2<f32> {
    let q = lane / 2u;
    let at = sg * 16u * SS + q * SS + 16u * (lane % 2u);
    var top = NONE;
    for (var j = 0u; j < 16u; j = j + 1u) {
        if ((seen >> j & 1u) != 0u) {
            top = max(top, s_sh[at + j] * k_scale);
        }
    }
    top = max(top, subgroupShuffleXor(top, 1u));
    let m = max(soft.m, top);
    let to = pa + q * KT + 16u * (lane % 2u);
    var sum = 0.0;
    for (var j = 0u; j < 16u; j = j + 1u) {
        var w = 0.0;
        if ((seen >> j & 1u) != 0u) {
            w = exp(s_sh[at + j] * k_scale - m);
        }
        sum += w;
        let v = w * 4096.0;
        let hi = bitcast<f32>(bitcast<u32>(v) & 0xffffe000u);
        scratch[to + j] = f16(hi);
        scratch[to + 16u * KT + j] = f16(v - hi);
    }
    sum += subgroupShuffleXor(sum, 1u);
    return vec2<f32>(m, sum);
}

// The tile's value sums of the subgroup's queries (weights from pa, values from va in the
// scratch) into its slice of s_sh, [16 queries][d], 16 dims at a time.
fn value_sums(sg: u32, pa: u32, va: u32, zero: Acc) {
    let d = p.d;
    let vl = va + KT * d;
    let pl = pa + 16u * KT;
    for (var n = 0u; n < d; n = n + 16u) {
        var acc = zero;
        for (var ks = 0u; ks < KT; ks = ks + 16u) {
            let ah = coopLoadT<FragA>(&scratch[pa + ks], KT);
            let al = coopLoadT<FragA>(&scratch[pl + ks], KT);
            let bh = coopLoadT<FragB>(&scratch[va + ks * d + n], d);
            let bl = coopLoadT<FragB>(&scratch[vl + ks * d + n], d);
            acc = mma3(ah, al, bh, bl, acc);
        }
        let t = acc;
        let at = sg * 16u * SS + n;
        let stride = SS;
        coopStoreT(t, &s_sh[at], stride);
    }
}

// The lane's value sums: o[8 n + i] is dim 16 n + 8 (lane % 2) + i of its query.
struct Sums {
    o: array<f32, 64>,
}

// The lane's sums times alpha plus its dims of the tile's (in s_sh) times `unscale`.
fn add_tile(sg: u32, lane: u32, alpha: f32, unscale: f32, sums: Sums) -> Sums {
    var out = sums;
    let at = sg * 16u * SS + (lane / 2u) * SS + 8u * (lane % 2u);
    for (var n = 0u; n < 8u; n = n + 1u) {
        if (16u * n < p.d) {
            for (var i = 0u; i < 8u; i = i + 1u) {
                out.o[8u * n + i] = out.o[8u * n + i] * alpha + s_sh[at + 16u * n + i] * unscale;
            }
        }
    }
    return out;
}

// The lane's query's result: normalised and gated into z, or its partials for the
// combine.
fn finish(r: u32, c: u32, g: u32, ch: u32, lane: u32, soft: Soft, sums: Sums) {
    let half = 8u * (lane % 2u);
    let base = ((r * p.kv_heads + c) * p.chunks + ch) * (2u + p.d);
    if (p.direct == 0u && half == 0u) {
        part[base][g] = soft.m;
        part[base + 1u][g] = soft.l;
    }
    for (var n = 0u; n < 8u; n = n + 1u) {
        if (16u * n < p.d) {
            for (var i = 0u; i < 8u; i = i + 1u) {
                let dim = 16u * n + half + i;
                if (p.direct != 0u) {
                    gate_one(r, c, g, p.kv_heads, p.d, dim, sums.o[8u * n + i] / soft.l);
                } else {
                    part[base + 2u + dim][g] = sums.o[8u * n + i];
                }
            }
        }
    }
}

@compute @workgroup_size(128)
fn attend_coop(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let ch = wid.x;
    let c = wid.y;
    let sg = lid / 32u;
    let lane = lid % 32u;
    let r0 = (wid.z + p.block0) * 16u;
    let last = min(r0 + 16u, p.rows) - 1u;
    let walk = block_walk(r0, last);
    let start = min(ch * p.per, walk.n);
    let end = min(start + p.per, walk.n);
    // The lane's query: row r0 + 4 sg + q / 4 (past the prompt's end: the last row's mask,
    // and nothing written), head q % 4.
    let q = lane / 2u;
    let rq = r0 + 4u * sg + q / 4u;
    let row = min(rq, last);
    let sn = seen(p.pos0 + row);
    let rows16 = (p.rows + 15u) / 16u * 16u;
    let queries = GROUP * p.kv_heads * rows16;
    let qa = ((c * rows16 + r0 + 4u * sg) * GROUP) * p.d;
    let k_scale = p.scale * qw[queries * p.d + (c * rows16 + rq) * GROUP + q % GROUP] / 4096.0;
    // The workgroup's region of the scratch: keys, values, then this subgroup's weights.
    let ka = (((wid.z * p.kv_heads) + c) * p.chunks + ch) * REGION;
    let va = ka + 2u * KT * p.d;
    let pa = ka + 4u * KT * 128u + sg * 2u * 16u * KT;
    let zero = zero_acc(lid);
    var soft = Soft(NONE, 0.0);
    var sums: Sums;
    for (var i = 0u; i < 64u; i = i + 1u) {
        sums.o[i] = 0.0;
    }
    // Each tile's keys and values are read a tile ahead, so that the reads overlap the
    // tile before.
    var keys = fetch(lid, c, walk, start, min(KT, end - start), 0u);
    var vals = fetch(lid, c, walk, start, min(KT, end - start), 1u);
    for (var t0 = start; t0 < end; t0 = t0 + KT) {
        let count = min(KT, end - t0);
        stage(lid, keys, 12, ka);
        let v = vals;
        note_vmax(lid, v);
        if (t0 + KT < end) {
            keys = fetch(lid, c, walk, t0 + KT, min(KT, end - t0 - KT), 0u);
            vals = fetch(lid, c, walk, t0 + KT, min(KT, end - t0 - KT), 1u);
        }
        storageBarrier();
        workgroupBarrier();
        let most = max(max(vmax_sh[0], vmax_sh[1]), max(vmax_sh[2], vmax_sh[3]));
        let e = clamp(frexp(most).exp, -100, 100);
        stage(lid, v, 13 - e, va);
        scores(sg, qa, queries * p.d, ka, zero);
        // The row's keys among the lane's half of the tile.
        var visible = 0u;
        for (var j = 0u; j < 16u; j = j + 1u) {
            let t = 16u * (lane % 2u) + j;
            let i = walk_at(walk, t0 + t);
            visible |= select(0u, 1u << j, t < count && sees(sn, p.pos0 + row, i));
        }
        storageBarrier();
        workgroupBarrier();
        let ml = weigh(sg, lane, visible, k_scale, soft, pa);
        let alpha = exp(soft.m - ml.x);
        soft = Soft(ml.x, soft.l * alpha + ml.y);
        storageBarrier();
        workgroupBarrier();
        value_sums(sg, pa, va, zero);
        workgroupBarrier();
        sums = add_tile(sg, lane, alpha, ldexp(1.0, e - 25), sums);
    }
    if (rq <= last) {
        finish(rq, c, q % GROUP, ch, lane, soft, sums);
    }
}
