// A decoded row's exit rule tested on the device (spec §5's early exit), after a read-out it
// tests: the statistic of these logits (and, under KL, of the read-out before, kept row 0),
// and the rule's verdict. Where it holds, the pass is written after the logits and the
// greedy token's word (as a u32, 0 while the row goes on) and the step's later dispatches
// are emptied: each is indirect, its
// counts in `args` (the recorder's), which the rest of the step then reads as zeros. Where
// it does not, these logits become the next test's "before". A later test of a row that has
// left does nothing (this kernel itself is not skipped: it writes the counts that the
// skipped read). One workgroup, one walk of the logits (five walks, one after another,
// took 17.5 µs a test on the H100): the statistic is the host's (exit.rs), in f32, so a
// verdict may differ from the host's only for a statistic within rounding of the threshold,
// which spec §8 allows.

// The parameters `p`: exit.rs's `Params` (kernels.rs declares their `struct P`).

@group(0) @binding(0) var<storage, read_write> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> kept: array<f32>;
@group(0) @binding(2) var<storage, read_write> args: array<u32>;

const WG: u32 = 256u;
// exit.rs's criteria.
const KL: u32 = 1u;

var<workgroup> gone: u32;

@compute @workgroup_size(256)
fn exit_test(@builtin(local_invocation_index) lid: u32) {
    if (lid == 0u) {
        gone = select(bitcast<u32>(logits[p.v + 1u]), 0u, p.first != 0u);
    }
    if (workgroupUniformLoad(&gone) != 0u) {
        return;
    }
    // One walk, online: over these logits a and (KL) the read-out before, b (else a again),
    // each invocation's maxima, Σ e^{a − ma}, Σ e^{a − ma} (a − b) and Σ e^{b − mb}.
    let kl = p.criterion == KL;
    var ma = -3.0e38;
    var mb = -3.0e38;
    var sums = vec3(0.0); // Σ e^{a − ma}, Σ e^{a − ma} (a − b), Σ e^{b − mb}
    for (var i = lid; i < p.v; i = i + WG) {
        let a = logits[i];
        let b = select(a, kept[i], kl);
        let na = max(ma, a);
        let nb = max(mb, b);
        let ea = exp(a - na);
        let ra = exp(ma - na);
        sums = vec3(sums.x * ra + ea, sums.y * ra + ea * (a - b), sums.z * exp(mb - nb) + exp(b - nb));
        ma = na;
        mb = nb;
    }
    // The invocations' runs met at the workgroup's maxima.
    let m = seg_max4(vec4(ma, mb, 0.0, 0.0), lid, WG);
    let ka = exp(ma - m.x);
    let s = seg_sum4(vec4(sums.x * ka, sums.y * ka, sums.z * exp(mb - m.y), 0.0), lid, WG);
    // KL: Σ p (a − b) − (lse_a − lse_b), p = e^{a − lse_a}; confidence: max p = e^{ma − lse_a}.
    let lse_a = m.x + log(s.x);
    let lse_b = m.y + log(s.z);
    let stat = select(1.0 / s.x, s.y / s.x - (lse_a - lse_b), kl);
    let holds = select(stat >= p.threshold, stat < p.threshold, kl);
    if (holds) {
        if (lid == 0u) {
            logits[p.v + 1u] = bitcast<f32>(p.k);
        }
        for (var i = lid; i < 3u * args[0]; i = i + WG) {
            args[1u + i] = 0u;
        }
    } else {
        if (lid == 0u) {
            logits[p.v + 1u] = 0.0;
        }
        for (var i = lid; i < p.v; i = i + WG) {
            kept[i] = logits[i];
        }
    }
}
