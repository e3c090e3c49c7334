// A slice of a q8_0 matrix's rows copied for the tensor-core GEMM (gemm_coop.wgsl), which
// takes f16: each weight w times 2^shift (`p.scale`, the matrix's, which puts its largest
// magnitude in [2¹⁴, 2¹⁵)) as hi + lo, hi its top 11 significant bits and lo the rest, both
// exact in f16 (an int8 times an f16 scale has at most 19 significant bits). A row of the
// copy is [hi | lo], 2 k16 wide, so that x split in two copies ([x | x], split.wgsl's
// `copies`) meets hi and lo in one product: x·hi + x·lo = x·w. Laid out as `Matrix::tiled`
// says (bands of 16 rows, a band's 16 × 16 tiles in input order, a tile's rows one after
// another); rows past the part are zeros.
//
// Invocation e of the slice's band (wid.y) copies 8 weights: the band's tile e / 32, row
// (e % 32) / 2 of it, half e % 2 of that row, so that a run's hi (and lo) land in one
// contiguous tile of 512 bytes (the writes are 4 bytes a weight, the reads 1.125).

// The parameters `p`: matmul.rs's `Q8TileParams` (kernels.rs declares their `struct P`).

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> tiles: array<vec4<u32>>;

fn halves(v: vec4<f32>, u: vec4<f32>) -> vec4<u32> {
    return vec4<u32>(pack2x16float(v.xy), pack2x16float(v.zw), pack2x16float(u.xy), pack2x16float(u.zw));
}

@compute @workgroup_size(256)
fn q8_tiles(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let per_row = p.k16 / 8u;
    let e = wid.x * 256u + lid;
    if (e >= 16u * per_row) {
        return;
    }
    let r = (e % 32u) / 2u;
    let g = 2u * (e / 32u) + e % 2u;
    let j = p.j0 + 16u * wid.y + r;
    var lo = W8(vec4<f32>(0.0), vec4<f32>(0.0));
    var hi = lo;
    if (j < p.rows_w) {
        let v = load8(j * p.g8 + g);
        hi = W8(hi11(v.lo * p.scale), hi11(v.hi * p.scale));
        lo = W8(v.lo * p.scale - hi.lo, v.hi * p.scale - hi.hi);
    }
    // Tile g / 2 of the band (hi) and the same tile k16 / 16 on (lo), row r, half g % 2.
    let at = wid.y * 16u * (2u * p.k16) / 8u + e;
    tiles[at] = halves(hi.lo, hi.hi);
    tiles[at + 2u * p.k16] = halves(lo.lo, lo.hi);
}
