// The tensor cores' ceiling as wgpu reaches them: every subgroup multiplies fragments it
// holds (loaded once) into 8 independent accumulators, ITERS times, f16 in and f32
// accumulated as gemm_coop.wgsl does, and stores them (so that nothing is left out).

enable f16;
enable wgpu_cooperative_matrix;

// Set by the benchmark (lib.rs), which counts the operations by it.
override ITERS: u32;

@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

alias FragA = coop_mat16x16<f16, A>;
alias FragB = coop_mat16x16<f16, B>;
alias Acc = coop_mat16x16<f32, C>;

// One accumulator to `out`, as naga 30 takes it (the offset and stride as `let`s).
fn put(t: Acc, i: u32) {
    let at = 256u * i;
    let stride = 16u;
    coopStoreT(t, &out[at], stride);
}

fn frag_a(at: u32) -> FragA {
    let stride = 16u;
    return coopLoadT<FragA>(&a[at], stride);
}

fn frag_b(at: u32) -> FragB {
    let stride = 16u;
    return coopLoadT<FragB>(&a[at], stride);
}

@compute @workgroup_size(128)
fn peak() {
    let x0 = frag_a(0u);
    let x1 = frag_a(256u);
    let b0 = frag_b(512u);
    let b1 = frag_b(768u);
    let b2 = frag_b(1024u);
    let b3 = frag_b(1280u);
    let at = 2048u;
    let stride = 16u;
    let zero = coopLoadT<Acc>(&out[at], stride);
    // The first of the ITERS products start the chains.
    var c0 = coopMultiplyAdd(x0, b0, zero);
    var c1 = coopMultiplyAdd(x0, b1, zero);
    var c2 = coopMultiplyAdd(x0, b2, zero);
    var c3 = coopMultiplyAdd(x0, b3, zero);
    var c4 = coopMultiplyAdd(x1, b0, zero);
    var c5 = coopMultiplyAdd(x1, b1, zero);
    var c6 = coopMultiplyAdd(x1, b2, zero);
    var c7 = coopMultiplyAdd(x1, b3, zero);
    for (var i = 1u; i < ITERS; i = i + 1u) {
        c0 = coopMultiplyAdd(x0, b0, c0);
        c1 = coopMultiplyAdd(x0, b1, c1);
        c2 = coopMultiplyAdd(x0, b2, c2);
        c3 = coopMultiplyAdd(x0, b3, c3);
        c4 = coopMultiplyAdd(x1, b0, c4);
        c5 = coopMultiplyAdd(x1, b1, c5);
        c6 = coopMultiplyAdd(x1, b2, c6);
        c7 = coopMultiplyAdd(x1, b3, c7);
    }
    put(c0, 0u);
    put(c1, 1u);
    put(c2, 2u);
    put(c3, 3u);
    put(c4, 4u);
    put(c5, 5u);
    put(c6, 6u);
    put(c7, 7u);
}
