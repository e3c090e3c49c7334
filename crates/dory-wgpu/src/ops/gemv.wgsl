// out[r, row0 + j] ← Σ_i x[xr0 + r, i] · W[j, i]: a projection of one row (XROWS = 1) or
// up to four (XROWS = 4), bound by reading W once. 32 invocations share each row of W,
// reading it in 16-byte pieces, UNROLL in flight each; a workgroup covers 8 rows of W.
// `gemv_scaled` also multiplies column j by scale[row0 + j] (the head's scale). With
// SWIGLU = 1 (the down projection), x is formed on the way in from the gate and up halves
// of the row bound as x, gu = [rows, k | k], and scale = [gate_scale | up_scale]: x_i =
// silu(gu_i · gs_i) · (gu_{k+i} · us_i), which spares SwiGLU its own dispatch and pass.
// The parameters and bindings are matmul.wgsl's.

override XROWS: u32 = 1u;
override SWIGLU: u32 = 0u;
// Pieces of a row in flight per invocation: 4 or 8. A row's last round is masked rather
// than walked piece by piece, so a row of P pieces per invocation costs ⌈P / UNROLL⌉ waits
// for memory.
override UNROLL: u32 = 4u;

const LANES: u32 = 32u;

// x[xr0 + r, 8g … 8g + 7], zero past k.
fn x8(r: u32, g: u32) -> W8 {
    let row = p.xr0 + min(r, p.rows - 1u);
    let has_hi = 8u * g + 4u < p.k;
    if (SWIGLU == 1u) {
        var hi = vec4<f32>(0.0);
        if (has_hi) {
            hi = swiglu4(row, 2u * g + 1u);
        }
        return W8(swiglu4(row, 2u * g), hi);
    }
    let at = row * (p.k / 4u) + 2u * g;
    var hi = vec4<f32>(0.0);
    if (has_hi) {
        hi = x[at + 1u];
    }
    return W8(x[at], hi);
}

// SwiGLU of x[row, 4e … 4e + 3], from gu bound as x and the scales as scale.
fn swiglu4(row: u32, e: u32) -> vec4<f32> {
    let k4 = p.k / 4u;
    let a = x[2u * row * k4 + e] * scale[e];
    let u = x[2u * row * k4 + k4 + e] * scale[k4 + e];
    return a * (1.0 / (1.0 + exp(-a))) * u;
}

struct Row {
    j: u32,
    sums: vec4<f32>,
}

// Piece g of the row at `base`, read inside the row when g is past its end (`share` then
// masks it), so that every load of a round is valid and issued before any is used.
fn piece(base: u32, g: u32) -> W8 {
    return load8(base + min(g, p.g8 - 1u));
}

// Piece g's share of row r's sum: zero past the row's end.
fn share(w: W8, r: u32, g: u32) -> f32 {
    return select(0.0, dot8(w, x8(r, g)), g < p.g8);
}

// Row j of W (this run of 32 invocations') against the rows of x; every invocation of the
// workgroup must call it (it reduces).
fn gemv_row(lid: u32, j: u32) -> Row {
    let lane = lid % LANES;
    var acc = vec4<f32>(0.0);
    if (j < p.rows_w) {
        let base = j * p.g8;
        for (var g = lane; g < p.g8; g = g + UNROLL * LANES) {
            // Named pieces, not an array: the loads must stay in registers.
            let w0 = piece(base, g);
            let w1 = piece(base, g + LANES);
            let w2 = piece(base, g + 2u * LANES);
            let w3 = piece(base, g + 3u * LANES);
            var w4 = w0;
            var w5 = w0;
            var w6 = w0;
            var w7 = w0;
            if (UNROLL == 8u) {
                w4 = piece(base, g + 4u * LANES);
                w5 = piece(base, g + 5u * LANES);
                w6 = piece(base, g + 6u * LANES);
                w7 = piece(base, g + 7u * LANES);
            }
            for (var r = 0u; r < XROWS; r = r + 1u) {
                var s = share(w0, r, g) + share(w1, r, g + LANES) + share(w2, r, g + 2u * LANES)
                    + share(w3, r, g + 3u * LANES);
                if (UNROLL == 8u) {
                    s += share(w4, r, g + 4u * LANES) + share(w5, r, g + 5u * LANES) + share(w6, r, g + 6u * LANES)
                        + share(w7, r, g + 7u * LANES);
                }
                acc[r] += s;
            }
        }
    }
    return Row(j, seg_sum4(acc, lid, LANES));
}

@compute @workgroup_size(256)
fn gemv(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let row = gemv_row(lid, wid.x * 8u + lid / LANES);
    if (row.j < p.rows_w && lid % LANES == 0u) {
        for (var r = 0u; r < p.rows; r = r + 1u) {
            out[(p.yr0 + r) * p.n + p.row0 + row.j] = row.sums[r];
        }
    }
}

@compute @workgroup_size(256)
fn gemv_scaled(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let row = gemv_row(lid, wid.x * 8u + lid / LANES);
    if (row.j < p.rows_w && lid % LANES == 0u) {
        let i = p.row0 + row.j;
        let s = scale_at(i);
        for (var r = 0u; r < p.rows; r = r + 1u) {
            out[(p.yr0 + r) * p.n + p.row0 + row.j] = row.sums[r] * s;
        }
    }
}

var<workgroup> glu_sh: array<f32, 8>;

// SwiGLU on the way out of gate|up, for one row: W = [gate; up] (rows_w = 2F, one part),
// scale = [gate_scale | up_scale]. The workgroup's runs 0–3 take gate rows 4w … 4w + 3 and
// runs 4–7 the same rows of up, so that out[i] = silu(g_i · gs_i) · (u_i · us_i) is formed
// where the two sums meet, and the down projection reads x as it is.
@compute @workgroup_size(256)
fn gemv_glu(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let f = p.rows_w / 2u;
    let t = lid / LANES;
    let i = min(wid.x * 4u + t % 4u, f - 1u);
    let row = gemv_row(lid, select(i, f + i, t >= 4u));
    if (lid % LANES == 0u) {
        glu_sh[t] = row.sums[0];
    }
    workgroupBarrier();
    let at = wid.x * 4u + lid;
    if (lid < 4u && at < f) {
        let g = glu_sh[lid] * scale_at(at);
        let u = glu_sh[lid + 4u] * scale_at(f + at);
        out[p.yr0 * p.n + at] = g * (1.0 / (1.0 + exp(-g))) * u;
    }
}
