// x's rows as the tensor-core GEMM reads them (gemm_coop.wgsl), written by split.wgsl and by
// the residual before a projection (residual.wgsl's residual_split): row r times s_r, a
// power of two that puts its largest magnitude in [2¹², 2¹³), as hi = s_r x cut to f16's 11
// significant bits and lo = f16(s_r x − hi), so that hi + lo keeps ~22 bits of every value
// and neither part leaves f16's range; rows widened from k to k16 with zeros, laid out in
// 16 × 16 tiles; 1/s_r beside. The including module binds `xa` (the parts' halves, two to a
// u32) and `xinv`.

// The exponent a unit row (the residual's new h: every |x_i| ≤ 1) is cut with in place of
// its maximum's, which then needs no reduction: s_r = 2¹² keeps every value within 2¹², 2⁴
// inside f16's range (a norm off by rounding cannot leave it), and puts the largest at
// 2¹²/√k or more (90 at 2,048 dims), where a lo below f16's normal range is off by at most
// 2⁻²⁵, 2⁻³¹ of it: the parts keep ~22 bits of every value that weighs in the sums.
const UNIT_EXP: i32 = 1;

// 0 drops the lo part (for measuring what it adds).
override LO: u32 = 1u;

// The exponent e of a row's scale s_r = 2^(13 − e), from its largest magnitudes, kept where
// s and 1/s are normal f32s.
fn parts_exp(most: vec4<f32>) -> i32 {
    return clamp(frexp(max(max(most.x, most.y), max(most.z, most.w))).exp, -100, 100);
}

// Row r's inputs 4i … 4i + 3, already times s_r (zeros past k), tile by tile (gemm_coop's
// load_a): they sit in tile (r / 16, i / 4), at row r % 16 of it, counted in groups of 4
// halves; lo parts from half `lo` on.
fn put_parts(r: u32, i: u32, v: vec4<f32>, k16: u32, lo: u32) {
    let at = (r / 16u) * (k16 / 16u) * 64u + (r % 16u) * 4u + (i / 4u) * 64u + i % 4u;
    let hi = hi11(v);
    let rest = (v - hi) * f32(LO);
    xa[at] = vec2<u32>(pack2x16float(hi.xy), pack2x16float(hi.zw));
    xa[lo / 4u + at] = vec2<u32>(pack2x16float(rest.xy), pack2x16float(rest.zw));
}

// Row r's 1/s_r.
fn put_inverse(r: u32, e: i32) {
    xinv[r] = ldexp(1.0, e - 13);
}
