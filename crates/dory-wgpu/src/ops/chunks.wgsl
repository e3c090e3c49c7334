// Chunks of a row's split attention folded in, four at a time, as an online softmax
// (combine.wgsl, and join.wgsl's join_row in a projection's prologue), through the including
// module's join_part(at): a vec4 (a KV head's query heads) of the chunks' partials `part`,
// each chunk a maximum, a sum and d value sums.

// A run of chunks joined so far, for a KV head's four query heads at one dim: the
// greatest maximum `top`, and the sums and value sums rescaled to it.
struct Joined {
    top: vec4<f32>,
    sum: vec4<f32>,
    acc: vec4<f32>,
}

// A chunk's value sums v weighed by w, or zeros where its sum l is 0: a chunk that no key
// of the row lies in, whose value sums the block kernels (attend_rows.wgsl,
// attend_coop.wgsl) leave unwritten where it lies past their block's walk.
fn seen_sums(v: vec4<f32>, w: vec4<f32>, l: vec4<f32>) -> vec4<f32> {
    return select(vec4<f32>(0.0), v * w, l > vec4<f32>(0.0));
}

// `run` joined with chunks ch, ch + lanes, ch + 2 lanes and ch + 3 lanes (those below
// `chunks`; ch is) of the partials from `first`, at dim `dim`.
fn join_four(run: Joined, first: u32, ch: u32, lanes: u32, chunks: u32, d: u32, dim: u32) -> Joined {
    let stride = 2u + d;
    let c1 = ch + lanes;
    let c2 = ch + 2u * lanes;
    let c3 = ch + 3u * lanes;
    let a0 = first + ch * stride;
    let a1 = first + min(c1, chunks - 1u) * stride;
    let a2 = first + min(c2, chunks - 1u) * stride;
    let a3 = first + min(c3, chunks - 1u) * stride;
    let m0 = join_part(a0);
    let m1 = join_part(a1);
    let m2 = join_part(a2);
    let m3 = join_part(a3);
    let l0 = join_part(a0 + 1u);
    let l1 = join_part(a1 + 1u);
    let l2 = join_part(a2 + 1u);
    let l3 = join_part(a3 + 1u);
    let v0 = join_part(a0 + 2u + dim);
    let v1 = join_part(a1 + 2u + dim);
    let v2 = join_part(a2 + 2u + dim);
    let v3 = join_part(a3 + 2u + dim);
    let top = max(max(run.top, m0), max(max(m1, m2), m3));
    let k = exp(run.top - top);
    let w0 = exp(m0 - top);
    let w1 = select(vec4<f32>(0.0), exp(m1 - top), c1 < chunks);
    let w2 = select(vec4<f32>(0.0), exp(m2 - top), c2 < chunks);
    let w3 = select(vec4<f32>(0.0), exp(m3 - top), c3 < chunks);
    let sum = run.sum * k + ((l0 * w0 + l1 * w1) + (l2 * w2 + l3 * w3));
    let s01 = seen_sums(v0, w0, l0) + seen_sums(v1, w1, l1);
    let s23 = seen_sums(v2, w2, l2) + seen_sums(v3, w3, l3);
    let acc = run.acc * k + (s01 + s23);
    return Joined(top, sum, acc);
}
