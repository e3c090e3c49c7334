// attend_rows.wgsl's work on the tensor cores: a block of BR = 4 rows' four query heads of
// one KV head (16 queries) over one chunk of the positions the block sees, in one subgroup
// of 32, the scores Q·Kᵀ and the value sums P·V as cooperative products (16 × 16 × 16, f16
// in, f32 accumulated), a tile of 32 keys at a time.
//
// Every operand is read straight from its buffer, in f16 parts hi + lo that keep ~22 bits;
// a product of parts is hi·hi + hi·lo + lo·hi (lo·lo is below f32's precision), so that
// spec §8's bounds hold as with f32 operands: the queries' parts from prep.wgsl's
// `prep_parts` (each query times its s_q, with 1/s_q), the keys' and values' from
// kv_parts.wgsl in span.wgsl's tiles (keys times 2¹², each value times its own 2^e_j).
// Where a tile of the span straddles two chunks, each walks it and masks the other's keys.
//
// The value sums stay in accumulators from the chunk's first tile to its last, and a
// cooperative matrix cannot be scaled by rows; so each query keeps its softmax maximum m
// and its values' scale e fixed while it can. A key's weight w = e^{s − m} enters the
// product as P = w · 2^{e − e_j + VB}, so that P · v_j 2^{e_j} = 2^{e + VB} w v_j. m is
// raised only when a score passes it by more than RISE, e lowered only when a key's e_j
// falls SLACK below it, and only then are the sums rescaled (through workgroup memory: a
// few times a chunk). So P < 2^{8 + SLACK + VB} = 2¹⁵ stays in f16's range; a key whose
// values are far below the query's largest loses to f16's underflow only what lies below
// f32's precision of the sum.
//
// Lane l keeps query l / 2 (row r0 + l / 8, head (l / 2) mod 4): its softmax over half
// l mod 2 of each tile's keys. The result is attend_rows.wgsl's: with `direct` normalised
// and gated into z, else the partials in `part` for combine.wgsl.
//
// naga 30 cannot hold cooperative matrices in arrays, nor store a `var` read in place:
// hence a struct of one accumulator per 16 dims of the head (d ≤ 128), stored through
// `let`s.

enable f16;
enable wgpu_cooperative_matrix;

// prep.wgsl's q parts, KV head by KV head ([K][rows16][4][d], hi then lo), and their 1/s_q
// after them (the same buffer, bound twice).
@group(0) @binding(0) var<storage, read> qh: array<f16>;
@group(0) @binding(7) var<storage, read> qw: array<f32>;
// Each workgroup's weights of its tile, [16 queries][KT keys], hi then lo (REGION halves):
// f16 written by lanes and read by a cooperative load, through a buffer as the kernel that
// ran right on the H200 did (bench/logs/h200-2026-12-03a).
@group(0) @binding(8) var<storage, read_write> scratch: array<f16>;
// kv_parts.wgsl's parts of the span.
@group(0) @binding(9) var<storage, read> kv: array<f16>;

// Rows of a block (attend.rs's COOP_BLOCK).
const BR: u32 = 4u;
// Keys of a tile.
const KT: u32 = 32u;
// The lowest score: finite, so that exp(NONE − m) is 0 and never NaN.
const NONE: f32 = -1.0e30;
// How far a score may pass its query's m before the sums are rescaled: 8 ln 2.
const RISE: f32 = 5.5451774;
// The weights' power of two above the values' scale, and how far below e a key's e_j may
// fall before the sums are rescaled.
const VB: i32 = 3;
const SLACK: i32 = 4;
// e before any key: above every e_j, so that the first one sets it.
const NO_E: i32 = 1000;
const REGION: u32 = 2u * 16u * KT;

// The tile's scores [16 queries][KT keys], then a 16 × 16 tile of sums being rescaled or
// written out.
var<workgroup> s_sh: array<f32, 768>;
const SUMS: u32 = 512u;
// Each query's factor on its sums as they are written, and its m and l for the partials.
var<workgroup> f_sh: array<f32, 16>;
var<workgroup> ml_sh: array<vec2<f32>, 16>;
// Whether a query of the block rescales at this tile.
var<workgroup> rise_sh: u32;

alias FragA = coop_mat16x16<f16, A>;
alias FragB = coop_mat16x16<f16, B>;
alias Acc = coop_mat16x16<f32, C>;

// c + hi_a·hi_b + hi_a·lo_b + lo_a·hi_b
fn mma3(ah: FragA, al: FragA, bh: FragB, bl: FragB, c: Acc) -> Acc {
    return coopMultiplyAdd(ah, bh, coopMultiplyAdd(ah, bl, coopMultiplyAdd(al, bh, c)));
}

// What the subgroup works on: KV head c, its queries' parts from qa (lo parts ql halves
// on), the span's first position, len and a part's halves, and its weights' region in the
// scratch.
struct Work {
    c: u32,
    base: u32,
    qa: u32,
    ql: u32,
    len: u32,
    part: u32,
    pa: u32,
}

// An accumulator of zeros.
fn zero_acc(lane: u32) -> Acc {
    for (var i = lane; i < 256u; i = i + 32u) {
        s_sh[SUMS + i] = 0.0;
    }
    workgroupBarrier();
    let zero = coopLoad<Acc>(&s_sh[SUMS], 16u);
    workgroupBarrier();
    return zero;
}

// The scores of the tile of keys g … g + 31 into s_sh, [16 queries][KT keys].
fn scores(w: Work, g: u32, zero: Acc) {
    let d = p.d;
    let k0 = kv_tile(w.len, w.c, g, 0u);
    let k1 = kv_tile(w.len, w.c, g + 16u, 0u);
    var s0 = zero;
    var s1 = zero;
    for (var k = 0u; k < d / 16u; k = k + 1u) {
        let ah = coopLoadT<FragA>(&qh[w.qa + 16u * k], d);
        let al = coopLoadT<FragA>(&qh[w.ql + w.qa + 16u * k], d);
        let bh0 = coopLoad<FragB>(&kv[k0 + 256u * k], 16u);
        let bl0 = coopLoad<FragB>(&kv[w.part + k0 + 256u * k], 16u);
        let bh1 = coopLoad<FragB>(&kv[k1 + 256u * k], 16u);
        let bl1 = coopLoad<FragB>(&kv[w.part + k1 + 256u * k], 16u);
        s0 = mma3(ah, al, bh0, bl0, s0);
        s1 = mma3(ah, al, bh1, bl1, s1);
    }
    let at = 0u;
    let next = 16u;
    let stride = KT;
    let t0 = s0;
    coopStoreT(t0, &s_sh[at], stride);
    let t1 = s1;
    coopStoreT(t1, &s_sh[next], stride);
}

// A query's online softmax: its maximum m, its values' scale e, and (this lane's half of)
// its sum of weights.
struct Soft {
    m: f32,
    e: i32,
    l: f32,
}

// Which of the lane's 16 keys of the tile (from global key u0) its query sees: in the
// chunk's keys [lo, hi) of the span and seen by the row at `pos` (sees `sn`).
fn visible(w: Work, u0: u32, lo: u32, hi: u32, sn: Seen, pos: u32, valid: bool) -> u32 {
    var bits = 0u;
    for (var j = 0u; j < 16u; j = j + 1u) {
        let u = u0 + j;
        let seen = u >= lo && u < hi && sees(sn, pos, w.base + u);
        bits |= select(0u, 1u << j, seen && valid);
    }
    return bits;
}

// e_j of key u of the subgroup's KV head.
fn key_exp(w: Work, u: u32) -> i32 {
    return i32(f32(kv[4u * w.part + w.c * w.len + u]));
}

// The tile's largest score and smallest e_j among the lane's visible keys (`bits`), its
// query's over both halves of the tile.
fn tile_top(w: Work, at: u32, u0: u32, bits: u32, ks: f32) -> Soft {
    var top = NONE;
    var e = NO_E;
    for (var j = 0u; j < 16u; j = j + 1u) {
        if ((bits >> j & 1u) != 0u) {
            top = max(top, s_sh[at + j] * ks);
            e = min(e, key_exp(w, u0 + j));
        }
    }
    top = max(top, subgroupShuffleXor(top, 1u));
    e = min(e, subgroupShuffleXor(e, 1u));
    return Soft(top, e, 0.0);
}

// The lane's weights of the tile into the scratch as f16 parts P = w · 2^{e − e_j + VB},
// w = e^{s − m}; returns the sum of its w.
fn weigh(w: Work, lane: u32, at: u32, u0: u32, bits: u32, ks: f32, soft: Soft) -> f32 {
    let to = w.pa + (lane / 2u) * KT + 16u * (lane % 2u);
    var sum = 0.0;
    for (var j = 0u; j < 16u; j = j + 1u) {
        var pw = 0.0;
        if ((bits >> j & 1u) != 0u) {
            let wt = exp(s_sh[at + j] * ks - soft.m);
            sum += wt;
            pw = ldexp(wt, soft.e - key_exp(w, u0 + j) + VB);
        }
        let hi = hi11(vec4<f32>(pw)).x;
        scratch[to + j] = f16(hi);
        scratch[to + 16u * KT + j] = f16(pw - hi);
    }
    return sum;
}

// The value sums of dims 16 n … 16 n + 15 plus the tile's weights (hi, lo of keys 0–15,
// then 16–31) times its values (their tile of dims 0–15 at vt).
fn value_sums(acc: Acc, ph0: FragA, pl0: FragA, ph1: FragA, pl1: FragA, w: Work, vt: u32, n: u32) -> Acc {
    let t0 = vt + 256u * n;
    let t1 = t0 + 16u * p.d;
    let bh0 = coopLoadT<FragB>(&kv[t0], 16u);
    let bl0 = coopLoadT<FragB>(&kv[w.part + t0], 16u);
    let bh1 = coopLoadT<FragB>(&kv[t1], 16u);
    let bl1 = coopLoadT<FragB>(&kv[w.part + t1], 16u);
    return mma3(ph1, pl1, bh1, bl1, mma3(ph0, pl0, bh0, bl0, acc));
}

// The sums times each query's factor (lane l's query's in `f`), through s_sh.
fn rescaled(acc: Acc, lane: u32, f: f32) -> Acc {
    let at = SUMS;
    let stride = 16u;
    let t = acc;
    coopStoreT(t, &s_sh[at], stride);
    workgroupBarrier();
    let mine = SUMS + (lane / 2u) * 16u + 8u * (lane % 2u);
    for (var i = 0u; i < 8u; i = i + 1u) {
        s_sh[mine + i] *= f;
    }
    workgroupBarrier();
    let r = coopLoadT<Acc>(&s_sh[at], stride);
    workgroupBarrier();
    return r;
}

// Dims 16 n … 16 n + 15 of the block's sums, each query's times f_sh, written: with
// `direct` gated into z, else into the partials at `base` (row r0 + i's `step` · i on).
fn put_sums(acc: Acc, lane: u32, c: u32, r0: u32, last: u32, n: u32, base: u32, step: u32) {
    let at = SUMS;
    let stride = 16u;
    let t = acc;
    coopStoreT(t, &s_sh[at], stride);
    workgroupBarrier();
    if (p.direct != 0u) {
        let q = lane / 2u;
        let r = r0 + q / GROUP;
        if (r <= last) {
            for (var i = 0u; i < 8u; i = i + 1u) {
                let dim = 8u * (lane % 2u) + i;
                let v = s_sh[SUMS + q * 16u + dim] * f_sh[q];
                gate_one(r, c, q % GROUP, p.kv_heads, p.d, 16u * n + dim, v);
            }
        }
    } else {
        // Lane l writes dims 2 (l mod 8) and the next of row l / 8, the four heads a vec4.
        let row = lane / 8u;
        if (r0 + row <= last) {
            for (var i = 0u; i < 2u; i = i + 1u) {
                let dim = 2u * (lane % 8u) + i;
                var v: vec4<f32>;
                for (var h = 0u; h < GROUP; h = h + 1u) {
                    let q = GROUP * row + h;
                    v[h] = s_sh[SUMS + q * 16u + dim] * f_sh[q];
                }
                part[base + row * step + 2u + 16u * n + dim] = v;
            }
        }
    }
    workgroupBarrier();
}

// A block's value sums, 16 dims each (d ≤ 128; those past d unused).
struct Sums {
    o0: Acc,
    o1: Acc,
    o2: Acc,
    o3: Acc,
    o4: Acc,
    o5: Acc,
    o6: Acc,
    o7: Acc,
}

// A tile's weights: hi and lo parts of keys 0–15, then of keys 16–31.
struct Weights {
    h0: FragA,
    l0: FragA,
    h1: FragA,
    l1: FragA,
}

// Every sum times its query's factor (`rescaled`).
fn sums_rescaled(s: Sums, lane: u32, f: f32) -> Sums {
    let d16 = p.d / 16u;
    var r = s;
    r.o0 = rescaled(s.o0, lane, f);
    if (d16 > 1u) {
        r.o1 = rescaled(s.o1, lane, f);
    }
    if (d16 > 2u) {
        r.o2 = rescaled(s.o2, lane, f);
    }
    if (d16 > 3u) {
        r.o3 = rescaled(s.o3, lane, f);
    }
    if (d16 > 4u) {
        r.o4 = rescaled(s.o4, lane, f);
    }
    if (d16 > 5u) {
        r.o5 = rescaled(s.o5, lane, f);
    }
    if (d16 > 6u) {
        r.o6 = rescaled(s.o6, lane, f);
    }
    if (d16 > 7u) {
        r.o7 = rescaled(s.o7, lane, f);
    }
    return r;
}

// Every sum plus the tile's weights times its values (`value_sums`).
fn sums_added(s: Sums, pw: Weights, w: Work, vt: u32) -> Sums {
    let d16 = p.d / 16u;
    var r = s;
    r.o0 = value_sums(s.o0, pw.h0, pw.l0, pw.h1, pw.l1, w, vt, 0u);
    if (d16 > 1u) {
        r.o1 = value_sums(s.o1, pw.h0, pw.l0, pw.h1, pw.l1, w, vt, 1u);
    }
    if (d16 > 2u) {
        r.o2 = value_sums(s.o2, pw.h0, pw.l0, pw.h1, pw.l1, w, vt, 2u);
    }
    if (d16 > 3u) {
        r.o3 = value_sums(s.o3, pw.h0, pw.l0, pw.h1, pw.l1, w, vt, 3u);
    }
    if (d16 > 4u) {
        r.o4 = value_sums(s.o4, pw.h0, pw.l0, pw.h1, pw.l1, w, vt, 4u);
    }
    if (d16 > 5u) {
        r.o5 = value_sums(s.o5, pw.h0, pw.l0, pw.h1, pw.l1, w, vt, 5u);
    }
    if (d16 > 6u) {
        r.o6 = value_sums(s.o6, pw.h0, pw.l0, pw.h1, pw.l1, w, vt, 6u);
    }
    if (d16 > 7u) {
        r.o7 = value_sums(s.o7, pw.h0, pw.l0, pw.h1, pw.l1, w, vt, 7u);
    }
    return r;
}

// Every sum written (`put_sums`).
fn sums_out(s: Sums, lane: u32, c: u32, r0: u32, last: u32, base: u32, step: u32) {
    let d16 = p.d / 16u;
    put_sums(s.o0, lane, c, r0, last, 0u, base, step);
    if (d16 > 1u) {
        put_sums(s.o1, lane, c, r0, last, 1u, base, step);
    }
    if (d16 > 2u) {
        put_sums(s.o2, lane, c, r0, last, 2u, base, step);
    }
    if (d16 > 3u) {
        put_sums(s.o3, lane, c, r0, last, 3u, base, step);
    }
    if (d16 > 4u) {
        put_sums(s.o4, lane, c, r0, last, 4u, base, step);
    }
    if (d16 > 5u) {
        put_sums(s.o5, lane, c, r0, last, 5u, base, step);
    }
    if (d16 > 6u) {
        put_sums(s.o6, lane, c, r0, last, 6u, base, step);
    }
    if (d16 > 7u) {
        put_sums(s.o7, lane, c, r0, last, 7u, base, step);
    }
}

// The block's results out: the sums times 2^{−(e + VB)}, and 1/l when direct; else the
// queries' m and l first (every invocation of the workgroup calls it).
fn finish(sums: Sums, soft: Soft, lane: u32, c: u32, ch: u32, r0: u32, last: u32) {
    let q = lane / 2u;
    let l = soft.l + subgroupShuffleXor(soft.l, 1u);
    var f = exp2(-f32(soft.e + VB));
    if (p.direct != 0u) {
        f /= l;
    }
    if (lane % 2u == 0u) {
        f_sh[q] = f;
        ml_sh[q] = vec2<f32>(soft.m, l);
    }
    workgroupBarrier();
    let base = ((r0 * p.kv_heads + c) * p.chunks + ch) * (2u + p.d);
    let step = p.kv_heads * p.chunks * (2u + p.d);
    // Lanes 0–3: each row's m and l, the four heads a vec4.
    if (p.direct == 0u && lane < BR && r0 + lane <= last) {
        let h = GROUP * lane;
        let m = vec4<f32>(ml_sh[h].x, ml_sh[h + 1u].x, ml_sh[h + 2u].x, ml_sh[h + 3u].x);
        let l4 = vec4<f32>(ml_sh[h].y, ml_sh[h + 1u].y, ml_sh[h + 2u].y, ml_sh[h + 3u].y);
        part[base + lane * step] = m;
        part[base + lane * step + 1u] = l4;
    }
    sums_out(sums, lane, c, r0, last, base, step);
}

// The workgroup's weights of its tile, from the scratch at pa.
fn weights(pa: u32) -> Weights {
    let h0 = coopLoadT<FragA>(&scratch[pa], KT);
    let l0 = coopLoadT<FragA>(&scratch[pa + 16u * KT], KT);
    let h1 = coopLoadT<FragA>(&scratch[pa + 16u], KT);
    let l1 = coopLoadT<FragA>(&scratch[pa + 16u * KT + 16u], KT);
    return Weights(h0, l0, h1, l1);
}

@compute @workgroup_size(32)
fn attend_coop(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let ch = wid.x;
    let c = wid.y;
    let r0 = (wid.z + p.block0) * BR;
    let last = min(r0 + BR, p.rows) - 1u;
    let s = span();
    // The chunk's keys: of the block's walk from its first row's first position, as global
    // keys of the span [lo, hi).
    let walk = block_walk(r0, last);
    let first = walk.lo - s.base;
    let lo = first + min(ch * p.per, walk.n);
    let hi = first + min(ch * p.per + p.per, walk.n);
    // The lane's query: row r0 + q / 4 (past the prompt's end: nothing seen, nothing
    // written), head q % 4.
    let q = lane / 2u;
    let rq = r0 + q / GROUP;
    let valid = rq <= last;
    let pos = p.pos0 + min(rq, last);
    let sn = seen(pos);
    let rows16 = (p.rows + 15u) / 16u * 16u;
    let queries = GROUP * p.kv_heads * rows16;
    let qa = (c * rows16 + r0) * GROUP * p.d;
    let ks = p.scale * qw[queries * p.d + (c * rows16 + rq) * GROUP + q % GROUP] / 4096.0;
    let pa = ((wid.z * p.kv_heads + c) * p.chunks + ch) * REGION;
    let w = Work(c, s.base, qa, queries * p.d, s.len, p.kv_heads * s.len * p.d, pa);
    let zero = zero_acc(lane);
    var sums = Sums(zero, zero, zero, zero, zero, zero, zero, zero);
    var soft = Soft(NONE, NO_E, 0.0);
    var started = false;
    let at = q * KT + 16u * (lane % 2u);
    for (var g = lo / KT * KT; g < hi; g = g + KT) {
        if (lane == 0u) {
            rise_sh = 0u;
        }
        scores(w, g, zero);
        let u0 = g + 16u * (lane % 2u);
        let bits = visible(w, u0, lo, hi, sn, pos, valid);
        workgroupBarrier();
        let top = tile_top(w, at, u0, bits, ks);
        let rise = top.m > soft.m + RISE || top.e < soft.e - SLACK;
        let any = subgroupAny(rise);
        if (lane == 0u && any) {
            rise_sh = 1u;
        }
        if (workgroupUniformLoad(&rise_sh) != 0u) {
            let m = max(soft.m, top.m);
            let e = min(soft.e, top.e);
            let f = exp(soft.m - m) * exp2(f32(e - soft.e));
            soft = Soft(m, e, soft.l * exp(soft.m - m));
            if (started) {
                sums = sums_rescaled(sums, lane, f);
            }
        }
        soft.l += weigh(w, lane, at, u0, bits, ks, soft);
        storageBarrier();
        workgroupBarrier();
        let vt = 2u * w.part + kv_tile(s.len, c, g, 0u);
        sums = sums_added(sums, weights(pa), w, vt);
        started = true;
    }
    finish(sums, soft, lane, c, ch, r0, last);
}
