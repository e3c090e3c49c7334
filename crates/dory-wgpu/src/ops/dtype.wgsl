// Stored weights, widened to f32 in the shader. A matrix is bound as `w`, an array of
// 16-byte words; its dtype is the pipeline constant DTYPE (0 f32, 1 f16, 2 bf16, 3 q8_0) and
// its rows are padded to a multiple of 8 elements, so that 8 weights are one 16-byte load
// in f16 and bf16, two in f32 and half of one in q8_0.
//
// q8_0 (docs/SEMANTICS.md) is held in blocks of 128 weights of a row, 9 words each
// (model.rs's `upload_q8`): the f32 scales of its four groups of 32, then its 128 int8
// values. A weight is its int8 times its group's scale, exactly (an f16 times an int8 fits
// f32), as the CPU reads it.

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

// The four signed bytes of a word, the first in the low byte.
fn i8x4(u: u32) -> vec4<f32> {
    let b = vec4<i32>(bitcast<i32>(u << 24u), bitcast<i32>(u << 16u), bitcast<i32>(u << 8u), bitcast<i32>(u));
    return vec4<f32>(b >> vec4<u32>(24u));
}

// Weights 8g … 8g + 7 of the buffer.
fn load8(g: u32) -> W8 {
    if (DTYPE == 0u) {
        return W8(bitcast<vec4<f32>>(w[2u * g]), bitcast<vec4<f32>>(w[2u * g + 1u]));
    }
    if (DTYPE == 3u) {
        // Piece t of the 16 of block g / 16: half a word of its values, one group's scale.
        let b = 9u * (g / 16u);
        let t = g % 16u;
        let u = w[b + 1u + t / 2u];
        let s = bitcast<f32>(w[b][t / 4u]);
        let q = select(u.xy, u.zw, t % 2u == 1u);
        return W8(i8x4(q.x) * s, i8x4(q.y) * s);
    }
    let u = w[g];
    return W8(vec4<f32>(pair16(u.x), pair16(u.y)), vec4<f32>(pair16(u.z), pair16(u.w)));
}

// Weight e of the buffer.
fn load1(e: u32) -> f32 {
    if (DTYPE == 0u) {
        return bitcast<f32>(w[e / 4u][e % 4u]);
    }
    if (DTYPE == 3u) {
        let b = 9u * (e / 128u);
        let i = e % 128u;
        let u = w[b + 1u + i / 16u][(i % 16u) / 4u];
        return f32(bitcast<i32>(u << (24u - 8u * (i % 4u))) >> 24u) * bitcast<f32>(w[b][i / 32u]);
    }
    let u = w[e / 8u][(e % 8u) / 2u];
    return pair16(u)[e % 2u];
}

// Where weights 8g … 8g + 7 of row j are, as load8 indexes them (16-byte words, or
// q8_0's pieces of 8 bytes): rows of g8 one after another, or, `tiled` (model.rs's
// `Matrix::tiled`), in 16 × 16 tiles of 32 words, band by band of 16 rows, each row of a
// tile 2 words.
fn piece(j: u32, g: u32, g8: u32, tiled: bool) -> u32 {
    if (!tiled) {
        return j * g8 + g;
    }
    return ((j / 16u) * ((g8 + 1u) / 2u) + g / 2u) * 32u + (j % 16u) * 2u + g % 2u;
}

fn dot8(a: W8, b: W8) -> f32 {
    return dot(a.lo, b.lo) + dot(a.hi, b.hi);
}
