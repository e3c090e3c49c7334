// A decoded row's exit rule tested on the device (spec §5's early exit), after a read-out it
// tests: the statistic of these logits (and, under KL, of the read-out before, kept row 0),
// and the rule's verdict. Where it holds, the pass is written after the logits and the
// greedy token's word (as a u32, 0 while the row goes on) and the step's later dispatches
// are emptied: each is indirect, its
// counts in `args` (the recorder's), which the rest of the step then reads as zeros. Where
// it does not, these logits become the next test's "before". A later test of a row that has
// left does nothing (this kernel itself is not skipped: it writes the counts that the
// skipped read). One workgroup: the statistic is the host's (exit.rs), in f32, so a verdict
// may differ from the host's only for a statistic within rounding of the threshold, which
// spec §8 allows.

// The parameters `p`: exit.rs's `Params` (kernels.rs declares their `struct P`).

@group(0) @binding(0) var<storage, read_write> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> kept: array<f32>;
@group(0) @binding(2) var<storage, read_write> args: array<u32>;

const WG: u32 = 256u;
// exit.rs's criteria.
const KL: u32 = 1u;

var<workgroup> gone: u32;

// log Σ e^{x_i} of the logits (`before`: of kept row 0).
fn log_sum_exp(lid: u32, before: bool) -> f32 {
    var m = -3.0e38;
    for (var i = lid; i < p.v; i = i + WG) {
        m = max(m, select(logits[i], kept[i], before));
    }
    m = seg_max(m, lid, WG);
    var s = 0.0;
    for (var i = lid; i < p.v; i = i + WG) {
        s += exp(select(logits[i], kept[i], before) - m);
    }
    return m + log(seg_sum(s, lid, WG));
}

@compute @workgroup_size(256)
fn exit_test(@builtin(local_invocation_index) lid: u32) {
    if (lid == 0u) {
        gone = select(bitcast<u32>(logits[p.v + 1u]), 0u, p.first != 0u);
    }
    if (workgroupUniformLoad(&gone) != 0u) {
        return;
    }
    let lse = log_sum_exp(lid, false);
    var stat: f32;
    if (p.criterion == KL) {
        let lse_before = log_sum_exp(lid, true);
        // Σ p (ln p − ln q), ln p as logit − log-sum-exp (never the log of an underflowed p).
        var s = 0.0;
        for (var i = lid; i < p.v; i = i + WG) {
            let a = logits[i] - lse;
            s += exp(a) * (a - (kept[i] - lse_before));
        }
        stat = seg_sum(s, lid, WG);
    } else {
        // Confidence: max p.
        var m = -3.0e38;
        for (var i = lid; i < p.v; i = i + WG) {
            m = max(m, logits[i]);
        }
        stat = exp(seg_max(m, lid, WG) - lse);
    }
    let holds = select(stat >= p.threshold, stat < p.threshold, p.criterion == KL);
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
