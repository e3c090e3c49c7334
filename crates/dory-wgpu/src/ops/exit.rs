//! A decoded row's exit rule tested on the device (`exit.wgsl`), so that a step with
//! read-outs runs to its end without waiting on the host: the passes after a test are
//! emptied where the rule holds (`Recorder::skip_from`).

use std::sync::Arc;

use dory::exit::{Criterion, ExitRule};

use crate::record::{Bind, Recorder, Store};

params! {
    /// exit.wgsl's parameters.
    pub struct Params {
        v: u32,
        k: u32,         // the pass just read out
        first: u32,     // 1: the step's first test (the word after the logits is stale)
        criterion: u32, // 1 KL, 2 confidence
        threshold: f32,
    }
}

/// Tests `rule` on the read-out of pass `k` (`logits`: V of them, the greedy token's word,
/// then a word for the pass the row leaves at), KL against kept row 0. The rest of the step is skipped where it holds.
pub fn record(rec: &mut Recorder, rule: &ExitRule, k: usize, logits: &Arc<Store>, kept: &Arc<Store>, v: usize) {
    let first = !rec.skipping();
    let args = rec.skip_args();
    let criterion = match rule.criterion {
        Criterion::Kl => 1,
        Criterion::Confidence => 2,
        Criterion::None => unreachable!("a rule that never holds is never tested"),
    };
    let p = Params { v: v as u32, k: k as u32, first: u32::from(first), criterion, threshold: rule.threshold as f32 };
    let binds = [(0, Bind::Buf(logits.clone())), (1, Bind::Buf(kept.clone())), (2, Bind::Buf(args))];
    rec.dispatch_always(rec.dev().kernels.exit_test, &binds, &p, [1, 1, 1]);
    rec.skip_from();
}

/// The first dispatch of a decoded step recorded ahead of one recorded to fewer than all its
/// passes (`logits` that step's, as `record` leaves them): the rest of this step is emptied
/// where that row went on past them, so that the host can run its later passes first.
pub fn gate(rec: &mut Recorder, logits: &Arc<Store>, v: usize) {
    let args = rec.skip_args();
    let p = Params { v: v as u32, k: 0, first: 0, criterion: 0, threshold: 0.0 };
    let binds = [(0, Bind::Buf(logits.clone())), (2, Bind::Buf(args))];
    rec.dispatch_always(rec.dev().kernels.exit_gate, &binds, &p, [1, 1, 1]);
    rec.skip_from();
}
