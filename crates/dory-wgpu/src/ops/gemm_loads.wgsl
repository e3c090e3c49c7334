// One step's fragments, the 16 inputs from $k, for gemm_steps.wgsl (a fragment pasted
// as it is): x's hi and lo parts of the block's two tiles of rows ($hi0, $hi1, $lo0, $lo1)
// and W's four tiles of columns ($w0 … $w3), named by the prefixes the paste gives.
let $hi0 = load_a(a0, $k);
let $hi1 = load_a(a1, $k);
let $lo0 = load_a(p.lo + a0, $k);
let $lo1 = load_a(p.lo + a1, $k);
let $w0 = load_b(w.x, $k);
let $w1 = load_b(w.y, $k);
let $w2 = load_b(w.z, $k);
let $w3 = load_b(w.w, $k);
