// The top 11 significant bits of each value, an f16's, cut with a mask: a rounding
// conversion and its way back can be folded into nothing by a compiler, the mask cannot,
// and v − hi11(v) is then exact in f32 and holds the rest (an f16 part hi and its lo).
fn hi11(v: vec4<f32>) -> vec4<f32> {
    return bitcast<vec4<f32>>(bitcast<vec4<u32>>(v) & vec4<u32>(0xffffe000u));
}
