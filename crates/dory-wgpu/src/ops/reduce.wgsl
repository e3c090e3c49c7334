// What every kernel uses of the reductions, over either `seg_reduce4`
// (reduce_subgroup.wgsl or reduce_shared.wgsl, chosen per device).

fn seg_sum4(x: vec4<f32>, lid: u32, seg: u32) -> vec4<f32> {
    return seg_reduce4(x, lid, seg, false);
}

fn seg_max4(x: vec4<f32>, lid: u32, seg: u32) -> vec4<f32> {
    return seg_reduce4(x, lid, seg, true);
}

fn seg_sum(x: f32, lid: u32, seg: u32) -> f32 {
    return seg_reduce4(vec4<f32>(x, 0.0, 0.0, 0.0), lid, seg, false).x;
}

fn seg_max(x: f32, lid: u32, seg: u32) -> f32 {
    return seg_reduce4(vec4<f32>(x, 0.0, 0.0, 0.0), lid, seg, true).x;
}

// Two sums of a run at once (`seg_sum_pair`, in either file).
struct Pair {
    a: vec4<f32>,
    b: vec4<f32>,
}

fn sigmoid(x: f32) -> f32 {
    return 1.0 / (1.0 + exp(-x));
}
