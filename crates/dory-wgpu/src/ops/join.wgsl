// The chunks of one row's split attention joined and gated, as combine.wgsl joins them, by
// the prologue of the kernel that reads the result as its x (gemv.wgsl's and split.wgsl's
// COMBINE), through the including module's join_part(at) (a vec4 of the chunks' partials
// `part`), join_gate(at, i) (σ(qkvg[at] ⊙ gate_scale[i]): the gate at dim i of the row's
// query heads, at `at` in qkvg) and join_put(i, v) (x at i, in workgroup memory).

// Query heads per KV head (attention.wgsl's GROUP; spec §1: H = 4K).
const GROUP: u32 = 4u;

// x ← the gated attention output of row r, from `chunks` chunks of partials per KV head:
// for each KV head c and dim, the four query heads' M = max of the chunks' maxima, out =
// Σ acc e^{m − M} / Σ l e^{m − M}, times the gates. Each invocation walks its (head,
// dim)'s chunks alone, the gates loaded first. Every invocation of the workgroup (256)
// must call it; x is complete after it.
fn join_row(lid: u32, r: u32, kv_heads: u32, d: u32, chunks: u32) {
    let kd = kv_heads * d;
    // A row of qkvg: H·d + K·d + K·d + H·d with H = GROUP·K, the gates last.
    let gates = (2u * GROUP + 2u) * kd * r + (GROUP + 2u) * kd;
    for (var e = lid; e < kd; e = e + 256u) {
        let c = e / d;
        let dim = e % d;
        var g: vec4<f32>;
        for (var h = 0u; h < GROUP; h = h + 1u) {
            let i = (GROUP * c + h) * d + dim;
            g[h] = join_gate(gates + i, i);
        }
        let first = (r * kv_heads + c) * chunks * (2u + d);
        var top = vec4<f32>(-3.0e38);
        for (var ch = 0u; ch < chunks; ch = ch + 1u) {
            top = max(top, join_part(first + ch * (2u + d)));
        }
        var sum = vec4<f32>(0.0);
        var acc = vec4<f32>(0.0);
        for (var ch = 0u; ch < chunks; ch = ch + 1u) {
            let at = first + ch * (2u + d);
            let s = exp(join_part(at) - top);
            sum += join_part(at + 1u) * s;
            acc += join_part(at + 2u + dim) * s;
        }
        let out = acc / sum;
        for (var h = 0u; h < GROUP; h = h + 1u) {
            join_put((GROUP * c + h) * d + dim, out[h] * g[h]);
        }
    }
    workgroupBarrier();
}
