// Stored weights, widened to f32 in the shader. A matrix is bound as `w`, an array of
// 16-byte words; its dtype is the pipeline constant DTYPE (0 f32, 1 f16, 2 bf16) and its
// rows are padded to a multiple of 8 elements, so that 8 weights are one 16-byte load
// in f16 and bf16 and two in f32.

override DTYPE: u32 = 0u;

struct W8 {
    lo: vec4<f32>,
    hi: vec4<f32>,
}

// Two 16-bit weights of one 32-bit word, the first in the low half (little-endian).
fn pair16(u: u32) -> vec2<f32> {
    if (DTYPE == 1u) {
        return unpack2x16float(u);
    }
    // bf16 is the top half of an f32.
    return vec2<f32>(bitcast<f32>(u << 16u), bitcast<f32>(u & 0xffff0000u));
}

// Weights 8g … 8g + 7 of the buffer.
fn load8(g: u32) -> W8 {
    if (DTYPE == 0u) {
        return W8(bitcast<vec4<f32>>(w[2u * g]), bitcast<vec4<f32>>(w[2u * g + 1u]));
    }
    let u = w[g];
    return W8(vec4<f32>(pair16(u.x), pair16(u.y)), vec4<f32>(pair16(u.z), pair16(u.w)));
}

// Weight e of the buffer.
fn load1(e: u32) -> f32 {
    if (DTYPE == 0u) {
        return bitcast<f32>(w[e / 4u][e % 4u]);
    }
    let u = w[e / 8u][(e % 8u) / 2u];
    return pair16(u)[e % 2u];
}

// Where weights 8g … 8g + 7 of row j are, in 16-byte words: rows of g8 words one after
// another, or, `tiled` (model.rs's `Matrix::tiled`), in
// 16 × 16 tiles of 32 words, band by band of 16 rows, each row of a tile 2 words.
fn piece(j: u32, g: u32, g8: u32, tiled: bool) -> u32 {
    if (!tiled) {
        return j * g8 + g;
    }
    return ((j / 16u) * ((g8 + 1u) / 2u) + g / 2u) * 32u + (j % 16u) * 2u + g % 2u;
}

fn dot8(a: W8, b: W8) -> f32 {
    return dot(a.lo, b.lo) + dot(a.hi, b.hi);
}
