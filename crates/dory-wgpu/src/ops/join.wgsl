// The chunks of one row's split attention joined and gated, as combine.wgsl joins them, by
// the prologue of the kernel that reads the result as its x (gemv.wgsl's and split.wgsl's
// COMBINE), through the including module's join_part(at) (a vec4 of the chunks' partials
// `part`), join_gate(at, i) (σ(qkvg[at] ⊙ gate_scale[i]): the gate at dim i of the row's
// query heads, at `at` in qkvg) and join_put(i, v) (x at i, in workgroup memory); the
// chunks are folded by chunks.wgsl's join_four.

// Query heads per KV head (attention.wgsl's GROUP; spec §1: H = 4K).
const GROUP: u32 = 4u;

// The most lanes that share a (KV head, dim)'s chunks.
const JOIN_LANES: u32 = 8u;

// Lanes that share each (KV head, dim) of a row `kd` wide: as many as the workgroup's 256
// invocations hold, up to JOIN_LANES (a power of two).
fn join_lanes(kd: u32) -> u32 {
    var lanes = 1u;
    while (lanes < JOIN_LANES && 2u * lanes * kd <= 256u) {
        lanes = 2u * lanes;
    }
    return lanes;
}

// x ← the gated attention output of row r, from `chunks` chunks of partials per KV head:
// for each KV head c and dim, the four query heads' M = max of the chunks' maxima, out =
// Σ acc e^{m − M} / Σ l e^{m − M}, times the gates. `join_lanes` lanes share each
// (head, dim), each walking every lanes-th chunk, four chunks' loads at a time (named, so
// that one round trip brings them all; an array indexed in a loop would live in memory on
// the H200), as an online softmax; the lanes' runs meet in a reduction. The gates are
// loaded first. Every invocation of the workgroup (256) must call it; x is complete after.
fn join_row(lid: u32, r: u32, kv_heads: u32, d: u32, chunks: u32) {
    let kd = kv_heads * d;
    let lanes = join_lanes(kd);
    // A row of qkvg: H·d + K·d + K·d + H·d with H = GROUP·K, the gates last.
    let gates = (2u * GROUP + 2u) * kd * r + (GROUP + 2u) * kd;
    let t = lid % lanes;
    for (var base = 0u; base < kd; base = base + 256u / lanes) {
        // Lanes past the row repeat its last (head, dim) and put nothing.
        let e = min(base + lid / lanes, kd - 1u);
        let c = e / d;
        let dim = e % d;
        var g: vec4<f32>;
        for (var h = 0u; h < GROUP; h = h + 1u) {
            let i = (GROUP * c + h) * d + dim;
            g[h] = join_gate(gates + i, i);
        }
        let first = (r * kv_heads + c) * chunks * (2u + d);
        var run = Joined(vec4<f32>(-3.0e38), vec4<f32>(0.0), vec4<f32>(0.0));
        for (var ch = t; ch < chunks; ch = ch + 4u * lanes) {
            run = join_four(run, first, ch, lanes, chunks, d, dim);
        }
        let top = seg_max4(run.top, lid, lanes);
        let w = exp(run.top - top);
        let sum = seg_sum4(run.sum * w, lid, lanes);
        let acc = seg_sum4(run.acc * w, lid, lanes);
        if (t == 0u && base + lid / lanes < kd) {
            let out = acc / sum;
            for (var h = 0u; h < GROUP; h = h + 1u) {
                join_put((GROUP * c + h) * d + dim, out[h] * g[h]);
            }
        }
    }
    workgroupBarrier();
}
