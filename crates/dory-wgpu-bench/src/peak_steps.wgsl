// The tensor-core GEMM's step (gemm_steps.wgsl: eight fragments, x's hi and lo parts of two
// tiles of rows and W's four tiles of columns, into 16 products on 8 accumulators) with its
// fragments from each place a kernel could take them, nothing else in the way, ITERS steps
// a subgroup, four subgroups a workgroup:
// FROM = 0: loaded once, held (the products' own ceiling in this shape);
// FROM = 1: loaded every step from workgroup memory, filled once;
// FROM = 2: loaded every step from the buffer (a few KiB every workgroup reads: cache-hot);
// FROM = 3: staged every step, as a GEMM staging its operands would: each subgroup loads
//           four of the step's 16 fragments from the buffer and stores them to workgroup
//           memory (one of two halves, by the step's parity), a barrier, then every
//           subgroup loads its eight from there.
// (A loop over several steps a stage inside the loop over stages ran every form slower,
// the buffer's 1.35×: bench/logs/h200-2026-12-03i/call-2.)

enable f16;
enable wgpu_cooperative_matrix;

// Set by the benchmark (lib.rs), which counts the operations by it.
override ITERS: u32;
override FROM: u32;

@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

// Two halves of 16 fragments of 256 halves.
var<workgroup> sh: array<f16, 8192>;

alias FragA = coop_mat16x16<f16, A>;
alias FragB = coop_mat16x16<f16, B>;
alias Acc = coop_mat16x16<f32, C>;

fn put(t: Acc, i: u32) {
    let at = 256u * i;
    let stride = 16u;
    coopStoreT(t, &out[at], stride);
}

// Fragment f (0 … 15) of half `half`: from the buffer or workgroup memory.
fn frag_a(f: u32, half: u32) -> FragA {
    let at = 256u * f + 4096u * half;
    let stride = 16u;
    if (FROM == 2u) {
        return coopLoadT<FragA>(&a[at], stride);
    }
    return coopLoadT<FragA>(&sh[at], stride);
}

fn frag_b(f: u32, half: u32) -> FragB {
    let at = 256u * f + 4096u * half;
    let stride = 16u;
    if (FROM == 2u) {
        return coopLoadT<FragB>(&a[at], stride);
    }
    return coopLoadT<FragB>(&sh[at], stride);
}

// FROM = 3: the subgroup's four fragments of the step into its half of workgroup memory.
fn stage(sg: u32, half: u32) {
    let stride = 16u;
    let s0 = 256u * (4u * sg) + 4096u * half;
    let f0 = coopLoadT<FragA>(&a[s0], stride);
    let f1 = coopLoadT<FragA>(&a[s0 + 256u], stride);
    let f2 = coopLoadT<FragA>(&a[s0 + 512u], stride);
    let f3 = coopLoadT<FragA>(&a[s0 + 768u], stride);
    let s1 = s0 + 256u;
    let s2 = s0 + 512u;
    let s3 = s0 + 768u;
    coopStoreT(f0, &sh[s0], stride);
    coopStoreT(f1, &sh[s1], stride);
    coopStoreT(f2, &sh[s2], stride);
    coopStoreT(f3, &sh[s3], stride);
}

@compute @workgroup_size(128)
fn peak(@builtin(local_invocation_index) lid: u32) {
    let sg = lid / 32u;
    // Workgroup memory from the buffer once (both halves).
    for (var e = lid; e < 8192u; e = e + 128u) {
        sh[e] = a[e];
    }
    workgroupBarrier();
    // The subgroup's tiles: rows (sg / 2) of four, columns (sg % 2) of four.
    let ra = 4u * (sg / 2u);
    let rb = 8u + 4u * (sg % 2u);
    let at = 16384u;
    let stride = 16u;
    let zero = coopLoadT<Acc>(&out[at], stride);
    var c00 = zero;
    var c01 = zero;
    var c02 = zero;
    var c03 = zero;
    var c10 = zero;
    var c11 = zero;
    var c12 = zero;
    var c13 = zero;
    var h0 = frag_a(ra, 0u);
    var l0 = frag_a(ra + 1u, 0u);
    var h1 = frag_a(ra + 2u, 0u);
    var l1 = frag_a(ra + 3u, 0u);
    var b0 = frag_b(rb, 0u);
    var b1 = frag_b(rb + 1u, 0u);
    var b2 = frag_b(rb + 2u, 0u);
    var b3 = frag_b(rb + 3u, 0u);
    for (var i = 0u; i < ITERS; i = i + 1u) {
        let half = i % 2u;
        if (FROM == 3u) {
            stage(sg, half);
            workgroupBarrier();
        }
        if (FROM != 0u) {
            h0 = frag_a(ra, half);
            l0 = frag_a(ra + 1u, half);
            h1 = frag_a(ra + 2u, half);
            l1 = frag_a(ra + 3u, half);
            b0 = frag_b(rb, half);
            b1 = frag_b(rb + 1u, half);
            b2 = frag_b(rb + 2u, half);
            b3 = frag_b(rb + 3u, half);
        }
        c00 = coopMultiplyAdd(l0, b0, coopMultiplyAdd(h0, b0, c00));
        c01 = coopMultiplyAdd(l0, b1, coopMultiplyAdd(h0, b1, c01));
        c02 = coopMultiplyAdd(l0, b2, coopMultiplyAdd(h0, b2, c02));
        c03 = coopMultiplyAdd(l0, b3, coopMultiplyAdd(h0, b3, c03));
        c10 = coopMultiplyAdd(l1, b0, coopMultiplyAdd(h1, b0, c10));
        c11 = coopMultiplyAdd(l1, b1, coopMultiplyAdd(h1, b1, c11));
        c12 = coopMultiplyAdd(l1, b2, coopMultiplyAdd(h1, b2, c12));
        c13 = coopMultiplyAdd(l1, b3, coopMultiplyAdd(h1, b3, c13));
    }
    put(c00, 0u);
    put(c01, 1u);
    put(c02, 2u);
    put(c03, 3u);
    put(c10, 4u);
    put(c11, 5u);
    put(c12, 6u);
    put(c13, 7u);
}
