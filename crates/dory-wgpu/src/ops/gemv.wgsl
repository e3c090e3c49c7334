// out[r, row0 + j] ← Σ_i x[xr0 + r, i] · W[j, i]: a projection of one row (XROWS = 1) or
// up to four (XROWS = 4), bound by reading W once. 32 invocations share each row of W,
// reading it in 16-byte pieces, four in flight each; a workgroup covers 8 rows of W.
// `gemv_scaled` also multiplies column j by scale[row0 + j] (the head's scale). With
// SWIGLU = 1 (the down projection), x is formed on the way in from the gate and up halves
// of the row bound as x, gu = [rows, k | k], and scale = [gate_scale | up_scale]: x_i =
// silu(gu_i · gs_i) · (gu_{k+i} · us_i), which spares SwiGLU its own dispatch and pass.
// With RES = 1 (one row, `gemv` and `gemv_glu`), x is the nGPT residual (spec §4) of h, the
// row bound as x, and o: y = N(h) + alpha ⊙ (N(o) − N(h)), formed on the way in from the
// norms that every workgroup first reduces (ngpt.wgsl), y held in workgroup memory for its
// runs to read, the final N applied to the sums; workgroup 0 also writes N(y), the new
// hidden state, to h_next. That spares the residual its own dispatch where the reductions
// repeated per workgroup cost less (rows of at most RES_K4 vec4s: matmul.rs). With
// COMBINE = 1 (one row, the out projection), x is the gated attention output that
// combine.wgsl would have formed from the chunks' partials, bound as x, formed the same
// way into y_sh; that spares the combine its dispatch where a row's partials are few.
// Where x is formed in y_sh (RES, COMBINE), each invocation's first round of W is loaded
// before, so that the prologue's loads and reductions wait beside those loads.
// The parameters are matmul.rs's `Params`, bindings 0–3 matmul.wgsl's.

override XROWS: u32 = 1u;
override SWIGLU: u32 = 0u;
override RES: u32 = 0u;
override COMBINE: u32 = 0u;
// With RES = 1 and EDGE = 1, the residual that closes a pass and the loop's edge after it
// (spec §4, mix.wgsl's mode 1), formed by the next pass's first projection so that the edge
// needs no dispatch of its own: h' = N(y), the residual's; s ← N(h'); h ← N(s + x), x the
// token's (`xt`), which the projection reads. Workgroup 0 writes the new h to h_next and s
// to `s_out`.
override EDGE: u32 = 0u;
// Bands of W a workgroup takes at most (matmul.rs's `band_share`), forming x once for all
// of them: bands wid, wid + groups, … of a launch of `groups` workgroups.
override BANDS: u32 = 1u;

// Pieces of a row each invocation has in flight (8 measured no faster on the H200).
const UNROLL: u32 = 4u;

const LANES: u32 = 32u;

// Bindings 4–6 are ngpt_in.wgsl's, `o`, `alpha` and `h_next`: RES = 1 (bound to x, x and a
// stand-in elsewhere): the sub-layer output, the residual's alpha, and where workgroup 0
// writes the new hidden state; COMBINE = 1: the row of qkvg (its gates) and the gates'
// scale, and the stand-in. Bindings 7 and 8 are the edge's x and s (x and a stand-in where
// EDGE = 0). Every entry point reaches all five (wgpu derives a pipeline's layout from what
// its entry point reaches), so that matmul.rs binds every variant alike.
@group(0) @binding(7) var<storage, read> xt: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> s_out: array<vec4<f32>>;

// The residual's factors (RES = 1): 1/‖h‖, 1/‖o‖, 1/‖y‖.
var<private> res: vec3<f32>;
// y (RES = 1) or the attention output (COMBINE = 1), formed once per workgroup: matmul.rs's
// X_SHARED_MAX floats, or `Options::residual_max_k` where the residual is wider.
override RES_K4: u32 = 256u;
var<workgroup> y_sh: array<vec4<f32>, RES_K4>;

// The residual's writes (ngpt_in.wgsl's residual_row): y, unnormalised, goes
// to y_sh.
fn res_put(base: u32, e: u32, y: vec4<f32>) {
    y_sh[e] = y;
}

// The residual's norms (RES = 1), and in workgroup 0 the new hidden state; every
// invocation of the workgroup must call it.
fn residual_prologue(lid: u32, wid: u32) {
    let k4 = p.k / 4u;
    let base = p.xr0 * k4;
    if (EDGE == 1u) {
        edge_prologue(lid, wid, base, k4);
    } else {
        res = residual_row(base, k4, lid, p.eps);
    }
    if (wid == 0u) {
        // Each invocation reads the part of y it wrote.
        for (var e = lid; e < k4; e = e + 256u) {
            h_next[base + e] = y_sh[e] * res.z;
        }
    }
    workgroupBarrier();
}

// The token's input where the edge follows the residual (ngpt.wgsl's residual_sums).
fn res_x(base: u32, e: u32) -> vec4<f32> {
    if (EDGE == 1u) {
        return xt[base + e];
    }
    return vec4<f32>(0.0);
}

// The residual and the edge after it (EDGE = 1) over the row at `base`: y_sh holds s + x
// and res.z its 1/‖s + x‖, which the projection reads (and residual_prologue writes, as the
// new h); workgroup 0 writes s. Both norms come from the residual's one reduction
// (ngpt.wgsl's close_factors).
fn edge_prologue(lid: u32, wid: u32, base: u32, k4: u32) {
    let f = close_factors(residual_sums(base, k4, lid, false), p.eps);
    for (var e = lid; e < k4; e = e + 256u) {
        let sv = residual_y(res_h(base, e), res_o(base, e), alpha[e], f.x, f.y) * f.z;
        y_sh[e] = sv + xt[base + e];
        if (wid == 0u) {
            s_out[base + e] = sv;
        }
    }
    res = f.xyw;
}

// COMBINE = 1: join.wgsl's hooks; qkvg is bound as o, the gates' scale as alpha.
fn join_part(at: u32) -> vec4<f32> {
    return x[at];
}

fn join_gate(at: u32, i: u32) -> f32 {
    return sigmoid(o[at / 4u][at % 4u] * alpha[i / 4u][i % 4u]);
}

fn join_put(i: u32, v: f32) {
    y_sh[i / 4u][i % 4u] = v;
}

// x formed in y_sh where the variant forms it; every invocation of the workgroup must call it.
fn prologue(lid: u32, wid: u32) {
    if (RES == 1u) {
        residual_prologue(lid, wid);
    }
    if (COMBINE == 1u) {
        join_row(lid, 0u, p.kv_heads, p.d, p.chunks);
    }
}

// x[xr0 + r, 8g … 8g + 7], zero past k (rows of W may be padded further: q8_0's).
fn x8(r: u32, g: u32) -> W8 {
    if (8u * g >= p.k) {
        return W8(vec4<f32>(0.0), vec4<f32>(0.0));
    }
    let row = p.xr0 + min(r, p.rows - 1u);
    let has_hi = 8u * g + 4u < p.k;
    if (SWIGLU == 1u) {
        var hi = vec4<f32>(0.0);
        if (has_hi) {
            hi = swiglu4(row, 2u * g + 1u, p.k / 4u);
        }
        return W8(swiglu4(row, 2u * g, p.k / 4u), hi);
    }
    if (RES == 1u || COMBINE == 1u) {
        var hi = vec4<f32>(0.0);
        if (has_hi) {
            hi = y_sh[2u * g + 1u];
        }
        return W8(y_sh[2u * g], hi);
    }
    let at = row * (p.k / 4u) + 2u * g;
    var hi = vec4<f32>(0.0);
    if (has_hi) {
        hi = x[at + 1u];
    }
    return W8(x[at], hi);
}

struct Row {
    j: u32,
    sums: vec4<f32>,
}

// Row j of W (this run of 32 invocations') against the rows of x, formed first by the
// prologue where `pro` (a workgroup's first band); every invocation of the workgroup must
// call it (it reduces). Each invocation loads UNROLL pieces of the row before it uses any,
// so that one round trip to memory brings them all; pieces past the row's end are loaded
// as its last and weighed 0 (a tail of single loads would cost a round trip each), a row
// past the matrix as its last and dropped. The pieces are named, not an array: the H200's
// driver kept an array indexed in a loop in memory, and the kernel ran 3–5× slower.
fn gemv_row(lid: u32, wid: u32, pro: bool, j: u32) -> Row {
    let lane = lid % LANES;
    let jr = min(j, p.rows_w - 1u);
    var g = lane;
    var w0 = load_piece(jr, g);
    var w1 = load_piece(jr, g + LANES);
    var w2 = load_piece(jr, g + 2u * LANES);
    var w3 = load_piece(jr, g + 3u * LANES);
    if (pro) {
        prologue(lid, wid);
    }
    var acc = vec4<f32>(0.0);
    loop {
        acc = add_piece(acc, w0, g);
        acc = add_piece(acc, w1, g + LANES);
        acc = add_piece(acc, w2, g + 2u * LANES);
        acc = add_piece(acc, w3, g + 3u * LANES);
        g = g + UNROLL * LANES;
        if (g >= p.g8) {
            break;
        }
        w0 = load_piece(jr, g);
        w1 = load_piece(jr, g + LANES);
        w2 = load_piece(jr, g + 2u * LANES);
        w3 = load_piece(jr, g + 3u * LANES);
    }
    acc = select(vec4<f32>(0.0), acc, j < p.rows_w);
    return Row(j, seg_sum4(acc, lid, LANES) * select(1.0, res.z, RES == 1u) * p.unshift);
}

// Piece g of row j of W, or its last piece past the end.
fn load_piece(j: u32, g: u32) -> W8 {
    return load8(piece(j, min(g, p.g8 - 1u), p.g8, p.tiled != 0u));
}

// acc + piece g of W (w) against piece g of each row of x, where g is in the row.
fn add_piece(acc: vec4<f32>, w: W8, g: u32) -> vec4<f32> {
    var a = acc;
    if (g < p.g8) {
        for (var r = 0u; r < XROWS; r = r + 1u) {
            a[r] += dot8(w, x8(r, g));
        }
    }
    return a;
}

// Eight rows of W held in tiles (model.rs's `Matrix::tiled`), from j0 (a multiple of 8:
// half a band), against the rows of x, by `runs` runs of 32 invocations from run `first`
// on (all of them must call it; the whole workgroup must, for the barrier). Half a tile
// is the eight rows' 256 contiguous bytes: invocation `lane` reads row (lane % 16) / 2's
// half lane % 2 of tile 2r + lane / 16 + 2 runs i of run r, so that a run's load is two
// such runs of bytes (a run on one row would read 32 bytes a tile), and each invocation
// reads as many pieces as it would on one row. UNROLL tiles in flight, as gemv_row, the
// first round before the prologue (where `pro`, a workgroup's first band; on a later band
// a barrier keeps its sums from the last band's, which may still be read). The sums meet
// in band_sh: row j0 + i's (i < 8) are at band_sums(first, runs, i) after the barrier.
var<workgroup> band_sh: array<vec4<f32>, 256>;

fn gemv_band(lid: u32, wid: u32, pro: bool, j0: u32, first: u32, runs: u32) {
    let lane = lid % LANES;
    let tiles = (p.g8 + 1u) / 2u;
    let at = (j0 / 16u) * tiles * 32u + (j0 % 16u) * 2u + lane % 16u;
    let step = 2u * runs;
    var t = 2u * (lid / LANES - first) + lane / 16u;
    var w0 = load_tile(at, t, tiles);
    var w1 = load_tile(at, t + step, tiles);
    var w2 = load_tile(at, t + 2u * step, tiles);
    var w3 = load_tile(at, t + 3u * step, tiles);
    if (pro) {
        prologue(lid, wid);
    }
    var acc = vec4<f32>(0.0);
    loop {
        acc = add_tile(acc, w0, t, tiles, lane);
        acc = add_tile(acc, w1, t + step, tiles, lane);
        acc = add_tile(acc, w2, t + 2u * step, tiles, lane);
        acc = add_tile(acc, w3, t + 3u * step, tiles, lane);
        t = t + UNROLL * step;
        if (t >= tiles) {
            break;
        }
        w0 = load_tile(at, t, tiles);
        w1 = load_tile(at, t + step, tiles);
        w2 = load_tile(at, t + 2u * step, tiles);
        w3 = load_tile(at, t + 3u * step, tiles);
    }
    if (!pro) {
        workgroupBarrier();
    }
    band_sh[lid] = acc;
    workgroupBarrier();
}

// The invocation's piece of tile t of the rows (`at`: where its piece of tile 0 is), or of
// the last tile past the end.
fn load_tile(at: u32, t: u32, tiles: u32) -> W8 {
    return load8(at + 32u * min(t, tiles - 1u));
}

// acc + the piece w of tile t (weights 16t + 8 (lane % 2) on) against the same weights of
// each row of x, where the tile and the piece are in the row.
fn add_tile(acc: vec4<f32>, w: W8, t: u32, tiles: u32, lane: u32) -> vec4<f32> {
    let g = 2u * t + lane % 2u;
    return select(acc, add_piece(acc, w, g), t < tiles);
}

// Row j0 + i's sums of gemv_band(…, first, runs): the pieces of its four invocations of
// each run.
fn band_sums(first: u32, runs: u32, i: u32) -> vec4<f32> {
    var sums = vec4<f32>(0.0);
    for (var r = first; r < first + runs; r = r + 1u) {
        let at = r * LANES + 2u * i;
        sums += (band_sh[at] + band_sh[at + 1u]) + (band_sh[at + 16u] + band_sh[at + 17u]);
    }
    return sums * select(1.0, res.z, RES == 1u) * p.unshift;
}

// The workgroup's bands of 8 rows of W (BANDS) against the rows of x, written out (times
// the column's scale when `scaled`); every invocation of the workgroup must call it.
fn gemv_out(lid: u32, wid: u32, groups: u32, scaled: bool) {
    let bands = (p.rows_w + 7u) / 8u;
    for (var n = 0u; n < BANDS; n = n + 1u) {
        let b = wid + n * groups;
        if (b >= bands) {
            break;
        }
        let pro = n == 0u;
        var row: Row;
        var writes: bool;
        if (p.tiled != 0u) {
            gemv_band(lid, wid, pro, b * 8u, 0u, 8u);
            writes = lid < 8u;
            if (writes) {
                row = Row(b * 8u + lid, band_sums(0u, 8u, lid));
            }
        } else {
            row = gemv_row(lid, wid, pro, b * 8u + lid / LANES);
            writes = lid % LANES == 0u;
        }
        if (writes && row.j < p.rows_w) {
            let i = p.row0 + row.j;
            var s = 1.0;
            if (scaled) {
                s = scale_at(i);
            }
            for (var r = 0u; r < p.rows; r = r + 1u) {
                out[(p.yr0 + r) * p.n + i] = row.sums[r] * s;
            }
        }
    }
}

@compute @workgroup_size(256)
fn gemv(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    gemv_out(lid, wid.x, groups.x, false);
}

@compute @workgroup_size(256)
fn gemv_scaled(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    gemv_out(lid, wid.x, groups.x, true);
}

// Runs 0–3's sums of gate rows, runs 4–7's of up.
var<workgroup> glu_sh: array<f32, 8>;

// SwiGLU on the way out of gate|up, for one row: W = [gate; up] (rows_w = 2F, one part),
// scale = [gate_scale | up_scale]. Band b's runs 0–3 take gate rows 4b … 4b + 3 and runs
// 4–7 the same rows of up (in tiles: gate rows 8b … 8b + 7 and the same of up, F a
// multiple of 8), so that out[i] = silu(g_i · gs_i) · (u_i · us_i) is formed where the two
// sums meet, and the down projection reads x as it is. The workgroup takes BANDS bands at
// most.
@compute @workgroup_size(256)
fn gemv_glu(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let f = p.rows_w / 2u;
    let t = lid / LANES;
    let up = t >= 4u;
    let rows = select(4u, 8u, p.tiled != 0u);
    let bands = (f + rows - 1u) / rows;
    for (var n = 0u; n < BANDS; n = n + 1u) {
        let b = wid.x + n * groups.x;
        if (b >= bands) {
            break;
        }
        let pro = n == 0u;
        let at = b * rows + lid;
        if (p.tiled != 0u) {
            // Every invocation reaches the barrier: the runs of the gate band and of the up
            // band each call gemv_band for their own.
            gemv_band(lid, wid.x, pro, select(0u, f, up) + b * 8u, select(0u, 4u, up), 4u);
            if (lid < 8u && at < f) {
                glu_out(at, band_sums(0u, 4u, lid)[0], band_sums(4u, 4u, lid)[0]);
            }
        } else {
            let i = min(b * 4u + t % 4u, f - 1u);
            let row = gemv_row(lid, wid.x, pro, select(i, f + i, up));
            // On a later band, the last band's sums may still be read.
            if (!pro) {
                workgroupBarrier();
            }
            if (lid % LANES == 0u) {
                glu_sh[t] = row.sums[0];
            }
            workgroupBarrier();
            if (lid < 4u && at < f) {
                glu_out(at, glu_sh[lid], glu_sh[lid + 4u]);
            }
        }
    }
}

// out[at] from gate row at's sum g and up row at's u.
fn glu_out(at: u32, g_sum: f32, u_sum: f32) {
    let f = p.rows_w / 2u;
    let g = g_sum * scale_at(at);
    let u = u_sum * scale_at(f + at);
    out[p.yr0 * p.n + at] = g * (1.0 / (1.0 + exp(-g))) * u;
}
