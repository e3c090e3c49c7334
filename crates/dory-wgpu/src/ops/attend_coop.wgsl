// attend_rows.wgsl's work on the tensor cores: a block of 16 rows' four query heads of one
// KV head over one chunk of the positions the block sees, in four subgroups of 32, each 4
// rows (16 queries), the scores Q·Kᵀ and the value sums P·V as cooperative products (16 ×
// 16 × 16, f16 in, f32 accumulated), a tile of 32 keys at a time. Each tile's keys, then
// its values, are copied into workgroup memory by the four subgroups together (each a
// quarter of the fragments, all read before any is stored), so that a fragment leaves the
// L2 once a workgroup: read by each subgroup from the buffer, the fragments took the L2's
// whole bandwidth, 587 µs a dispatch at depth 4096 on an H100 against 489 staged
// (bench/logs/h200-2026-12-07e, call-1 and call-2). Between the copies each subgroup keeps
// its own pace: its scores, weights and sums go through regions of workgroup memory of its
// own, and it waits only on itself (subgroupBarrier). Its queries' fragments are held
// through the chunk (loaded each tile, the staged form ran 1.25× slower).
//
// Every operand is in f16 parts hi + lo that keep ~22 bits; a product of parts is hi·hi +
// hi·lo + lo·hi (lo·lo is below f32's precision), so that spec §8's bounds hold as with f32
// operands: the queries' parts from prep.wgsl's `prep_parts` (each query times its s_q,
// with 1/s_q), the keys' and values' from kv_parts.wgsl in span.wgsl's tiles (keys times
// 2¹², each value times its own 2^e_j). Where a tile of the span straddles two chunks, each
// walks it and masks the other's keys.
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
// Lane l of a subgroup keeps query l / 2 (row l / 8 of its four, head (l / 2) mod 4): its
// softmax over half l mod 2 of each tile's keys. The result is attend_rows.wgsl's: with
// `direct` normalised and gated into z, else the partials in `part` for combine.wgsl.
//
// naga 30 cannot hold cooperative matrices in arrays, nor store a `var` read in place:
// hence structs of one fragment or accumulator per 16 dims of the head (d ≤ 128), stored
// through `let`s.

enable f16;
enable wgpu_cooperative_matrix;
// A subgroup rescales its sums when one of its own queries must (subgroupAny), which
// naga's uniformity analysis takes for a decision the workgroup does not share: the
// cooperative operations and barriers under it are uniform in the subgroup, all they need.
diagnostic(off, derivative_uniformity);

// prep.wgsl's q parts, KV head by KV head ([K][rows16][4][d], hi then lo), and their 1/s_q
// after them (the same buffer, bound twice).
@group(0) @binding(0) var<storage, read> qh: array<f16>;
@group(0) @binding(7) var<storage, read> qw: array<f32>;
// kv_parts.wgsl's parts of the span.
@group(0) @binding(9) var<storage, read> kv: array<f16>;

// The head's dims, where a pipeline is made for one width (0: p.d), so that the loops over
// its tiles have a count the compiler knows.
override D: u32 = 0u;

// Rows of a subgroup, and subgroups of a workgroup (attend.rs's COOP_BLOCK is their product).
const BR: u32 = 4u;
const SG: u32 = 4u;
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

// Each subgroup's scores of its tile, [16 queries][KT keys] from 512 sg; once they are
// weighed, its 16 × 16 tile of sums being rescaled or written out.
var<workgroup> s_sh: array<f32, 2048>;
// The tile's keys' parts, then its values': hi of keys 0–15, of keys 16–31, then lo of
// both, each a run of d/16 fragments.
var<workgroup> kv_sh: array<f16, 8192>;
// Each subgroup's weights of its tile, hi then lo ([2][16 queries][KT keys] from 1024 sg).
var<workgroup> p_sh: array<f16, 4096>;
// The tile's keys' e_j, each subgroup's copy (from 32 sg).
var<workgroup> e_sh: array<i32, 128>;
// Each query's factor on its sums as they are written, and its m and l for the partials.
var<workgroup> f_sh: array<f32, 64>;
var<workgroup> ml_sh: array<vec2<f32>, 64>;

alias FragA = coop_mat16x16<f16, A>;
alias FragB = coop_mat16x16<f16, B>;
alias Acc = coop_mat16x16<f32, C>;

// c + hi_a·hi_b + hi_a·lo_b + lo_a·hi_b
fn mma3(ah: FragA, al: FragA, bh: FragB, bl: FragB, c: Acc) -> Acc {
    return coopMultiplyAdd(ah, bh, coopMultiplyAdd(ah, bl, coopMultiplyAdd(al, bh, c)));
}

// The head's tiles of 16 dims.
fn d16() -> u32 {
    if (D != 0u) {
        return D / 16u;
    }
    return p.d / 16u;
}

// 2^k for k ≤ 127, 0 below 2^−126 (f16's parts of what it scales are 0 there anyway).
fn pow2(k: i32) -> f32 {
    return bitcast<f32>(u32(max(k, -127) + 127) << 23u);
}

// What a subgroup works on: KV head c, the span's first position, its queries' parts from
// qa (lo parts ql halves on), a part's halves, and its lane's places:
// `sg` its subgroup, `q` its query (of 16), `half` its first key of a tile (0 or 16).
struct Work {
    c: u32,
    base: u32,
    qa: u32,
    ql: u32,
    part: u32,
    sg: u32,
    q: u32,
    half: u32,
}

// An accumulator of zeros, through the subgroup's region of s_sh.
fn zero_acc(w: Work, lane: u32) -> Acc {
    for (var i = lane; i < 256u; i = i + 32u) {
        s_sh[512u * w.sg + i] = 0.0;
    }
    subgroupBarrier();
    let zero = coopLoad<Acc>(&s_sh[512u * w.sg], 16u);
    subgroupBarrier();
    return zero;
}

// The subgroup's scores of the tile (staged in kv_sh) into its region of s_sh.
fn scores(w: Work, zero: Acc, qf: Query) {
    let s = held_steps(Scores(zero, zero), qf);
    let at = 512u * w.sg;
    put_scores(s.a, at);
    put_scores(s.b, at + 16u);
}

// A 16 × 16 tile of scores into s_sh from `at`.
fn put_scores(t: Acc, at: u32) {
    let stride = KT;
    let x = t;
    coopStoreT(x, &s_sh[at], stride);
}

// The tile's keys' or values' parts (hi from `src`, lo a part on) into kv_sh, fragment
// 4 j + sg by subgroup sg.
fn stage(w: Work, src: u32) {
    put_staged(fetch(w, src), w);
}

// Where the subgroup's fragment j of a tile's staged parts (hi from `src`) lies in kv: its
// place 4 j + sg in kv_sh.
fn staged_at(w: Work, src: u32, j: u32) -> u32 {
    let n = d16();
    let f = 4u * j + w.sg;
    return src + (f / (2u * n)) * w.part + (f % (2u * n)) * 256u;
}

// The subgroup's fragments of a tile's staged parts (those from d/16 on unused).
struct Staged {
    f0: FragB,
    f1: FragB,
    f2: FragB,
    f3: FragB,
    f4: FragB,
    f5: FragB,
    f6: FragB,
    f7: FragB,
}

fn fetch_one(w: Work, src: u32, j: u32) -> FragB {
    return coopLoad<FragB>(&kv[staged_at(w, src, select(0u, j, j < d16()))], 16u);
}

fn fetch(w: Work, src: u32) -> Staged {
    return Staged(
        fetch_one(w, src, 0u), fetch_one(w, src, 1u), fetch_one(w, src, 2u), fetch_one(w, src, 3u),
        fetch_one(w, src, 4u), fetch_one(w, src, 5u), fetch_one(w, src, 6u), fetch_one(w, src, 7u),
    );
}

// The fetched fragments into kv_sh, once every subgroup is done with what it holds.
fn put_staged(s: Staged, w: Work) {
    let n = d16();
    workgroupBarrier();
    put_frag(s.f0, w, 0u);
    if (n > 1u) {
        put_frag(s.f1, w, 1u);
    }
    if (n > 2u) {
        put_frag(s.f2, w, 2u);
    }
    if (n > 3u) {
        put_frag(s.f3, w, 3u);
    }
    if (n > 4u) {
        put_frag(s.f4, w, 4u);
    }
    if (n > 5u) {
        put_frag(s.f5, w, 5u);
    }
    if (n > 6u) {
        put_frag(s.f6, w, 6u);
    }
    if (n > 7u) {
        put_frag(s.f7, w, 7u);
    }
    workgroupBarrier();
}

fn put_frag(t: FragB, w: Work, j: u32) {
    let x = t;
    coopStore(x, &kv_sh[256u * (4u * j + w.sg)], 16u);
}

// The scores of keys 0–15 (a) and 16–31 (b) of a tile.
struct Scores {
    a: Acc,
    b: Acc,
}

// The scores plus the queries' dims 16 k … 16 k + 15 (parts ah, al) times the keys'.
fn score_step(s: Scores, ah: FragA, al: FragA, k: u32) -> Scores {
    let n = d16();
    let bh0 = coopLoad<FragB>(&kv_sh[256u * k], 16u);
    let bh1 = coopLoad<FragB>(&kv_sh[256u * (n + k)], 16u);
    let bl0 = coopLoad<FragB>(&kv_sh[256u * (2u * n + k)], 16u);
    let bl1 = coopLoad<FragB>(&kv_sh[256u * (3u * n + k)], 16u);
    return Scores(mma3(ah, al, bh0, bl0, s.a), mma3(ah, al, bh1, bl1, s.b));
}

// The subgroup's queries' fragments, hi and lo of each tile of 16 dims (those past d
// repeat the first).
struct Query {
    h0: FragA,
    h1: FragA,
    h2: FragA,
    h3: FragA,
    h4: FragA,
    h5: FragA,
    h6: FragA,
    h7: FragA,
    l0: FragA,
    l1: FragA,
    l2: FragA,
    l3: FragA,
    l4: FragA,
    l5: FragA,
    l6: FragA,
    l7: FragA,
}

// Tile k of the queries' dims, hi (at 0) or lo (at w.ql), or the first past d.
fn q_frag(w: Work, at: u32, k: u32) -> FragA {
    let i = select(0u, k, k < d16());
    return coopLoadT<FragA>(&qh[at + w.qa + 16u * i], p.d);
}

fn query(w: Work) -> Query {
    let l = w.ql;
    return Query(
        q_frag(w, 0u, 0u), q_frag(w, 0u, 1u), q_frag(w, 0u, 2u), q_frag(w, 0u, 3u),
        q_frag(w, 0u, 4u), q_frag(w, 0u, 5u), q_frag(w, 0u, 6u), q_frag(w, 0u, 7u),
        q_frag(w, l, 0u), q_frag(w, l, 1u), q_frag(w, l, 2u), q_frag(w, l, 3u),
        q_frag(w, l, 4u), q_frag(w, l, 5u), q_frag(w, l, 6u), q_frag(w, l, 7u),
    );
}

// The scores' steps over the tiles of dims.
fn held_steps(s: Scores, qf: Query) -> Scores {
    let n = d16();
    var r = score_step(s, qf.h0, qf.l0, 0u);
    if (n > 1u) {
        r = score_step(r, qf.h1, qf.l1, 1u);
    }
    if (n > 2u) {
        r = score_step(r, qf.h2, qf.l2, 2u);
    }
    if (n > 3u) {
        r = score_step(r, qf.h3, qf.l3, 3u);
    }
    if (n > 4u) {
        r = score_step(r, qf.h4, qf.l4, 4u);
    }
    if (n > 5u) {
        r = score_step(r, qf.h5, qf.l5, 5u);
    }
    if (n > 6u) {
        r = score_step(r, qf.h6, qf.l6, 6u);
    }
    if (n > 7u) {
        r = score_step(r, qf.h7, qf.l7, 7u);
    }
    return r;
}

// A query's online softmax: its maximum m, its values' scale e, and (this lane's half of)
// its sum of weights.
struct Soft {
    m: f32,
    e: i32,
    l: f32,
}

// The rows a subgroup's queries sit in: the first's position and the last's (of those in
// the prompt; below the first where none is), with what the last sees.
struct Rows {
    first: u32,
    last: u32,
    sn: Seen,
}

// Which of the lane's 16 keys of the tile of keys from g its query sees: all of them where
// every row of the subgroup sees the whole tile, else key by key (in the chunk's keys [lo,
// hi) of the span and seen by the row at `pos`, sees `sn`).
fn visible(w: Work, g: u32, lo: u32, hi: u32, rows: Rows, sn: Seen, pos: u32, valid: bool) -> u32 {
    let in_chunk = g >= lo && g + KT <= hi;
    let whole = in_chunk && w.base + g >= rows.sn.lo && w.base + g + KT - 1u <= rows.first;
    if (whole) {
        return select(0u, 0xffffu, valid);
    }
    var bits = 0u;
    let u0 = g + w.half;
    for (var j = 0u; j < 16u; j = j + 1u) {
        let u = u0 + j;
        let seen = u >= lo && u < hi && sees(sn, pos, w.base + u);
        bits |= select(0u, 1u << j, seen && valid);
    }
    return bits;
}

// Whether no row of `rows` sees a key of the tile from g (which is then skipped; the walk's
// tiles all hold keys of the chunk).
fn unseen(w: Work, g: u32, rows: Rows) -> bool {
    let before = w.base + g + KT - 1u < seen(rows.first).lo;
    return w.base + g > rows.last || before || rows.last < rows.first;
}

// The tile's largest score and smallest e_j among the lane's visible keys (`bits`; its
// scores from `at`), its query's over both halves of the tile.
fn tile_top(w: Work, at: u32, bits: u32, ks: f32) -> Soft {
    var top = NONE;
    var e = NO_E;
    let ej = 32u * w.sg + w.half;
    for (var j = 0u; j < 16u; j = j + 1u) {
        if ((bits >> j & 1u) != 0u) {
            top = max(top, s_sh[at + j] * ks);
            e = min(e, e_sh[ej + j]);
        }
    }
    top = max(top, subgroupShuffleXor(top, 1u));
    e = min(e, subgroupShuffleXor(e, 1u));
    return Soft(top, e, 0.0);
}

// The lane's weights of the tile into its subgroup's p_sh as f16 parts P = w · 2^{e − e_j
// + VB}, w = e^{s − m}; returns the sum of its w.
fn weigh(w: Work, at: u32, bits: u32, ks: f32, soft: Soft) -> f32 {
    let to = 1024u * w.sg + w.q * KT + w.half;
    let ej = 32u * w.sg + w.half;
    let scale = soft.e + VB;
    var sum = 0.0;
    for (var j = 0u; j < 16u; j = j + 1u) {
        var pw = 0.0;
        if ((bits >> j & 1u) != 0u) {
            let wt = exp(s_sh[at + j] * ks - soft.m);
            sum += wt;
            pw = wt * pow2(scale - e_sh[ej + j]);
        }
        let hi = bitcast<f32>(bitcast<u32>(pw) & 0xffffe000u);
        p_sh[to + j] = f16(hi);
        p_sh[to + 16u * KT + j] = f16(pw - hi);
    }
    return sum;
}

// The value sums of dims 16 n … 16 n + 15 plus the tile's weights times its values (staged
// in kv_sh).
fn value_sums(acc: Acc, pw: Weights, n: u32) -> Acc {
    let m = d16();
    let bh0 = coopLoadT<FragB>(&kv_sh[256u * n], 16u);
    let bh1 = coopLoadT<FragB>(&kv_sh[256u * (m + n)], 16u);
    let bl0 = coopLoadT<FragB>(&kv_sh[256u * (2u * m + n)], 16u);
    let bl1 = coopLoadT<FragB>(&kv_sh[256u * (3u * m + n)], 16u);
    return mma3(pw.h1, pw.l1, bh1, bl1, mma3(pw.h0, pw.l0, bh0, bl0, acc));
}

// The sums times each query's factor (lane l's query's in `f`), through the subgroup's
// region of s_sh.
fn rescaled(acc: Acc, w: Work, lane: u32, f: f32) -> Acc {
    let at = 512u * w.sg;
    let stride = 16u;
    let t = acc;
    coopStoreT(t, &s_sh[at], stride);
    subgroupBarrier();
    let mine = at + w.q * 16u + 8u * (lane % 2u);
    for (var i = 0u; i < 8u; i = i + 1u) {
        s_sh[mine + i] *= f;
    }
    subgroupBarrier();
    let r = coopLoadT<Acc>(&s_sh[at], stride);
    subgroupBarrier();
    return r;
}

// Where a subgroup writes its rows: rows r0 … last of the prompt, whose partials start at
// `base` (row r0 + i's `step` · i on).
struct Out {
    r0: u32,
    last: u32,
    base: u32,
    step: u32,
}

// Dims 16 n … 16 n + 15 of the subgroup's sums, each query's times its factor, written:
// with `direct` gated into z, else into the partials.
fn put_sums(acc: Acc, w: Work, lane: u32, o: Out, n: u32) {
    let at = 512u * w.sg;
    let fq = 16u * w.sg;
    let stride = 16u;
    let t = acc;
    coopStoreT(t, &s_sh[at], stride);
    subgroupBarrier();
    if (p.direct != 0u) {
        let r = o.r0 + w.q / GROUP;
        if (r <= o.last) {
            for (var i = 0u; i < 8u; i = i + 1u) {
                let dim = 8u * (lane % 2u) + i;
                let v = s_sh[at + w.q * 16u + dim] * f_sh[fq + w.q];
                gate_one(r, w.c, w.q % GROUP, p.kv_heads, p.d, 16u * n + dim, v);
            }
        }
    } else {
        // Lane l writes dims 2 (l mod 8) and the next of row l / 8, the four heads a vec4.
        let row = lane / 8u;
        if (o.r0 + row <= o.last) {
            for (var i = 0u; i < 2u; i = i + 1u) {
                let dim = 2u * (lane % 8u) + i;
                var v: vec4<f32>;
                for (var h = 0u; h < GROUP; h = h + 1u) {
                    let q = GROUP * row + h;
                    v[h] = s_sh[at + q * 16u + dim] * f_sh[fq + q];
                }
                part[o.base + row * o.step + 2u + 16u * n + dim] = v;
            }
        }
    }
    subgroupBarrier();
}

// A subgroup's value sums, 16 dims each (d ≤ 128; those past d unused).
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
fn sums_rescaled(s: Sums, w: Work, lane: u32, f: f32) -> Sums {
    let n = d16();
    var r = s;
    r.o0 = rescaled(s.o0, w, lane, f);
    if (n > 1u) {
        r.o1 = rescaled(s.o1, w, lane, f);
    }
    if (n > 2u) {
        r.o2 = rescaled(s.o2, w, lane, f);
    }
    if (n > 3u) {
        r.o3 = rescaled(s.o3, w, lane, f);
    }
    if (n > 4u) {
        r.o4 = rescaled(s.o4, w, lane, f);
    }
    if (n > 5u) {
        r.o5 = rescaled(s.o5, w, lane, f);
    }
    if (n > 6u) {
        r.o6 = rescaled(s.o6, w, lane, f);
    }
    if (n > 7u) {
        r.o7 = rescaled(s.o7, w, lane, f);
    }
    return r;
}

// Every sum plus the tile's weights times its values (`value_sums`).
fn sums_added(s: Sums, pw: Weights) -> Sums {
    let n = d16();
    var r = s;
    r.o0 = value_sums(s.o0, pw, 0u);
    if (n > 1u) {
        r.o1 = value_sums(s.o1, pw, 1u);
    }
    if (n > 2u) {
        r.o2 = value_sums(s.o2, pw, 2u);
    }
    if (n > 3u) {
        r.o3 = value_sums(s.o3, pw, 3u);
    }
    if (n > 4u) {
        r.o4 = value_sums(s.o4, pw, 4u);
    }
    if (n > 5u) {
        r.o5 = value_sums(s.o5, pw, 5u);
    }
    if (n > 6u) {
        r.o6 = value_sums(s.o6, pw, 6u);
    }
    if (n > 7u) {
        r.o7 = value_sums(s.o7, pw, 7u);
    }
    return r;
}

// Every sum written (`put_sums`).
fn sums_out(s: Sums, w: Work, lane: u32, o: Out) {
    let n = d16();
    put_sums(s.o0, w, lane, o, 0u);
    if (n > 1u) {
        put_sums(s.o1, w, lane, o, 1u);
    }
    if (n > 2u) {
        put_sums(s.o2, w, lane, o, 2u);
    }
    if (n > 3u) {
        put_sums(s.o3, w, lane, o, 3u);
    }
    if (n > 4u) {
        put_sums(s.o4, w, lane, o, 4u);
    }
    if (n > 5u) {
        put_sums(s.o5, w, lane, o, 5u);
    }
    if (n > 6u) {
        put_sums(s.o6, w, lane, o, 6u);
    }
    if (n > 7u) {
        put_sums(s.o7, w, lane, o, 7u);
    }
}

// The subgroup's results out: the sums times 2^{−(e + VB)}, and 1/l when direct; else its
// rows' m and l first.
fn finish(sums: Sums, soft: Soft, w: Work, lane: u32, ch: u32, r0: u32, last: u32) {
    let l = soft.l + subgroupShuffleXor(soft.l, 1u);
    var f = pow2(-(soft.e + VB));
    if (p.direct != 0u) {
        f /= l;
    }
    let fq = 16u * w.sg;
    if (lane % 2u == 0u) {
        f_sh[fq + w.q] = f;
        ml_sh[fq + w.q] = vec2<f32>(soft.m, l);
    }
    subgroupBarrier();
    let step = p.kv_heads * p.chunks * (2u + p.d);
    let o = Out(r0, last, ((r0 * p.kv_heads + w.c) * p.chunks + ch) * (2u + p.d), step);
    // Lanes 0–3: a row's m and l, the four heads a vec4.
    if (p.direct == 0u && lane < BR && r0 + lane <= last) {
        let h = fq + GROUP * lane;
        let m = vec4<f32>(ml_sh[h].x, ml_sh[h + 1u].x, ml_sh[h + 2u].x, ml_sh[h + 3u].x);
        let l4 = vec4<f32>(ml_sh[h].y, ml_sh[h + 1u].y, ml_sh[h + 2u].y, ml_sh[h + 3u].y);
        part[o.base + lane * step] = m;
        part[o.base + lane * step + 1u] = l4;
    }
    sums_out(sums, w, lane, o);
}

// The subgroup's weights of its tile, from its p_sh.
fn weights(w: Work) -> Weights {
    let at = 1024u * w.sg;
    let h0 = coopLoadT<FragA>(&p_sh[at], KT);
    let l0 = coopLoadT<FragA>(&p_sh[at + 16u * KT], KT);
    let h1 = coopLoadT<FragA>(&p_sh[at + 16u], KT);
    let l1 = coopLoadT<FragA>(&p_sh[at + 16u * KT + 16u], KT);
    return Weights(h0, l0, h1, l1);
}

// The softmax's state after the tile's top scores: m and e raised or lowered where a query
// of the subgroup must, with the factor its sums then take (f = 1: none of the subgroup's
// must).
fn risen(soft: Soft, top: Soft) -> Risen {
    if (!subgroupAny(top.m > soft.m + RISE || top.e < soft.e - SLACK)) {
        return Risen(soft, 1.0, false);
    }
    let m = max(soft.m, top.m);
    let e = min(soft.e, top.e);
    let f = exp(soft.m - m) * pow2(e - soft.e);
    return Risen(Soft(m, e, soft.l * exp(soft.m - m)), f, true);
}

struct Risen {
    soft: Soft,
    f: f32,
    rescale: bool,
}

@compute @workgroup_size(128)
fn attend_coop(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let ch = wid.x;
    let c = wid.y;
    let sg = lid / 32u;
    let lane = lid % 32u;
    let b0 = (wid.z + p.block0) * (BR * SG);
    let last = min(b0 + BR * SG, p.rows) - 1u;
    let s = span();
    // The chunk's keys: of the block's walk from its first row's first position, as keys
    // of the span [lo, hi).
    let walk = block_walk(b0, last);
    let first = walk.lo - s.base;
    let lo = first + min(ch * p.per, walk.n);
    let hi = first + min(ch * p.per + p.per, walk.n);
    let r0 = b0 + BR * sg;
    // A chunk past the block's walk: its rows marked empty, without its queries' loads and
    // its sums' stores.
    if (lo == hi) {
        if (lane < BR && r0 + lane <= last) {
            mark_empty(r0 + lane, c, ch);
        }
        return;
    }
    // The lane's query: row r0 + q / 4 (past the prompt's end: nothing seen, nothing
    // written), head q % 4; its half of each tile's keys.
    let q = lane / 2u;
    let rq = r0 + q / GROUP;
    let valid = rq <= last;
    let pos = p.pos0 + min(rq, last);
    let sn = seen(pos);
    let rows_last = p.pos0 + min(r0 + BR - 1u, last);
    let rows = Rows(p.pos0 + r0, rows_last, seen(rows_last));
    // The tiles no row of the block sees are skipped (its subgroups meet at every tile).
    let skip = Rows(p.pos0 + b0, p.pos0 + last, seen(p.pos0 + last));
    let rows16 = (p.rows + 15u) / 16u * 16u;
    let queries = GROUP * p.kv_heads * rows16;
    let qa = (c * rows16 + r0) * GROUP * p.d;
    let ks = p.scale * qw[queries * p.d + (c * rows16 + rq) * GROUP + q % GROUP] / 4096.0;
    let part_len = p.kv_heads * s.len * p.d;
    let w = Work(c, s.base, qa, queries * p.d, part_len, sg, q, 16u * (lane % 2u));
    let at = 512u * sg + q * KT + w.half;
    let zero = zero_acc(w, lane);
    var sums = Sums(zero, zero, zero, zero, zero, zero, zero, zero);
    var soft = Soft(NONE, NO_E, 0.0);
    var started = false;
    let qf = query(w);
    for (var g = lo / KT * KT; g < hi; g = g + KT) {
        if (unseen(w, g, skip)) {
            continue;
        }
        // The tile's e_j, read before the keys are copied and stored after the scores, so
        // that its wait hides behind them.
        let ej = kv[4u * part_len + c * s.len + g + lane];
        let keys = kv_tile(s.len, c, g, 0u);
        stage(w, keys);
        scores(w, zero, qf);
        e_sh[32u * sg + lane] = i32(f32(ej));
        let bits = visible(w, g, lo, hi, rows, sn, pos, valid);
        subgroupBarrier();
        let r = risen(soft, tile_top(w, at, bits, ks));
        soft = r.soft;
        soft.l += weigh(w, at, bits, ks, soft);
        subgroupBarrier();
        // The sums rescaled through s_sh, which the weights no longer read.
        if (r.rescale && started) {
            sums = sums_rescaled(sums, w, lane, r.f);
        }
        // The values' parts follow the keys' two.
        stage(w, 2u * part_len + keys);
        sums = sums_added(sums, weights(w));
        started = true;
    }
    finish(sums, soft, w, lane, ch, r0, last);
}
