// The subgroup's 32 × 64 block of sums (accumulators c00 … c13, from `zero`) over the
// inputs from k = $k0 up to $end, for gemm_coop.wgsl: a fragment, not a library. The module
// assembler (kernels.rs, `paste`) writes it into each function that names it, with $k0 and
// $end replaced, since the H200's compiler kept the loop's speed only where it stands
// written out in each entry point's function (gemm_coop.wgsl's header gives the forms that
// lost). It reads the function's r0 and j0 (the block's first row and column) and p.
var c00 = zero;
var c01 = zero;
var c02 = zero;
var c03 = zero;
var c10 = zero;
var c11 = zero;
var c12 = zero;
var c13 = zero;
let a0 = r0 * p.k16;
let a1 = (r0 + 16u) * p.k16;
let w = w_bands(j0);
var k = $k0;
if (UNROLL == 2u) {
    for (; k + 16u < $end; k = k + 32u) {
        // paste: gemm_loads.wgsl, $k = k, $hi = h, $lo = l, $w = b
        // paste: gemm_loads.wgsl, $k = k + 16u, $hi = g, $lo = m, $w = d
        c00 = mma2(g0, m0, d0, mma2(h0, l0, b0, c00));
        c01 = mma2(g0, m0, d1, mma2(h0, l0, b1, c01));
        c02 = mma2(g0, m0, d2, mma2(h0, l0, b2, c02));
        c03 = mma2(g0, m0, d3, mma2(h0, l0, b3, c03));
        c10 = mma2(g1, m1, d0, mma2(h1, l1, b0, c10));
        c11 = mma2(g1, m1, d1, mma2(h1, l1, b1, c11));
        c12 = mma2(g1, m1, d2, mma2(h1, l1, b2, c12));
        c13 = mma2(g1, m1, d3, mma2(h1, l1, b3, c13));
    }
}
for (; k < $end; k = k + 16u) {
    // paste: gemm_loads.wgsl, $k = k, $hi = h, $lo = l, $w = b
    c00 = mma2(h0, l0, b0, c00);
    c01 = mma2(h0, l0, b1, c01);
    c02 = mma2(h0, l0, b2, c02);
    c03 = mma2(h0, l0, b3, c03);
    c10 = mma2(h1, l1, b0, c10);
    c11 = mma2(h1, l1, b1, c11);
    c12 = mma2(h1, l1, b2, c12);
    c13 = mma2(h1, l1, b3, c13);
}
