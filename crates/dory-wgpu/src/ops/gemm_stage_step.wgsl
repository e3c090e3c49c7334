// One step of a stage of gemm_staged (gemm_coop.wgsl): step $d of the stage in half $h of
// st_sh, its fragments loaded and multiplied into the block's accumulators, where the step
// is within the inputs. A fragment pasted, not a loop, since a loop over a stage's steps
// ran its cooperative matrices slowly on the H200.
if ($d < STAGE && k0 + 16u * $d < p.k16) {
    let h0 = stage_a(ga, $d, $h);
    let l0 = stage_a(ga + 1u, $d, $h);
    let h1 = stage_a(ga + 2u, $d, $h);
    let l1 = stage_a(ga + 3u, $d, $h);
    let b0 = stage_b(gb, $d, $h);
    let b1 = stage_b(gb + 1u, $d, $h);
    let b2 = stage_b(gb + 2u, $d, $h);
    let b3 = stage_b(gb + 3u, $d, $h);
    c00 = mma2(h0, l0, b0, c00);
    c01 = mma2(h0, l0, b1, c01);
    c02 = mma2(h0, l0, b2, c02);
    c03 = mma2(h0, l0, b3, c03);
    c10 = mma2(h1, l1, b0, c10);
    c11 = mma2(h1, l1, b1, c11);
    c12 = mma2(h1, l1, b2, c12);
    c13 = mma2(h1, l1, b3, c13);
}
