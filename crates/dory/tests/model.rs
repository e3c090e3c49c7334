//! Whole-model relations the spec implies, on random models, against a slow f64
//! re-implementation (`common::naive`).

mod common;

use common::naive::Naive;
use common::{config, cpu_session, random_ids, random_model, rel};
use dory::{Criterion, ExitRule, Want};

#[test]
fn prefill_does_not_depend_on_the_chunk_size() {
    let c = config(&["sliding", "full", "sliding"], 3, 16, 2, 16);
    let (_dir, model) = random_model(&c, 11);
    let ids = random_ids(150, c.vocab_size, 5);
    let whole = cpu_session(&model, 150).prompt(&ids, false, Want::All).unwrap().logits;
    for chunk in [1, 7, 64] {
        let got = cpu_session(&model, chunk).prompt(&ids, false, Want::All).unwrap().logits;
        for (r, (a, b)) in got.chunks(c.vocab_size).zip(whole.chunks(c.vocab_size)).enumerate() {
            let e = rel(a, b);
            assert!(e <= 1e-4, "chunk {chunk}, row {r}: {e:.2e}");
        }
    }
    // Want::Last is the last row of Want::All.
    let last = cpu_session(&model, 7).prompt(&ids, false, Want::Last).unwrap().logits;
    assert!(rel(&last, &whole[149 * c.vocab_size..]) <= 1e-4);
}

#[test]
fn one_pass_prefill_rows_equal_decoding() {
    // With P = 1 and no exit, the parallel and step-wise semantics coincide.
    let c = config(&["sliding", "full"], 1, 6, 2, 16);
    let (_dir, model) = random_model(&c, 12);
    let ids = random_ids(20, c.vocab_size, 6);
    let rows = cpu_session(&model, 8).prompt(&ids, false, Want::All).unwrap().logits;
    let mut s = cpu_session(&model, 8);
    let first = s.prompt(&ids[..1], false, Want::Last).unwrap().logits;
    assert!(rel(&first, &rows[..c.vocab_size]) <= 1e-5);
    for (r, &id) in ids.iter().enumerate().skip(1) {
        let d = s.step(id).unwrap();
        let e = rel(&d.logits, &rows[r * c.vocab_size..][..c.vocab_size]);
        assert!(e <= 1e-5, "row {r}: {e:.2e}");
        assert_eq!(d.passes, 1);
    }
}

#[test]
fn many_passes_differ_from_one_fresh_prompt() {
    // With P > 1 a decoded token sees earlier positions' last-pass keys, not its own
    // pass's: decoding differs from re-running the text as one prompt.
    let c = config(&["sliding", "full"], 3, 6, 1, 16);
    let (_dir, model) = random_model(&c, 13);
    let ids = random_ids(12, c.vocab_size, 7);
    let rows = cpu_session(&model, 64).prompt(&ids, false, Want::All).unwrap().logits;
    let mut s = cpu_session(&model, 64);
    s.prompt(&ids[..11], false, Want::Last).unwrap();
    let d = s.step(ids[11]).unwrap();
    assert!(rel(&d.logits, &rows[11 * c.vocab_size..]) > 1e-3);
}

/// Feeds a prompt, decoding steps, a later prompt and more steps to both the engine and
/// the naive model, comparing every row and the passes of every step.
fn agree_with_naive(
    layers: &[&str],
    passes: usize,
    window: usize,
    kv: usize,
    d: usize,
    exit: ExitRule,
    seed: u64,
) -> Vec<usize> {
    let c = config(layers, passes, window, kv, d);
    let (_dir, model) = random_model(&c, seed);
    let v = c.vocab_size;
    let mut engine = cpu_session(&model, 5);
    engine.exit = exit;
    let mut naive = Naive::new(&model);
    let check = |what: &str, got: &[f32], want: &[f64]| {
        let e = dory::testing::rel_err(got, want);
        assert!(e <= 1e-5, "{what}: relative error {e:.2e}");
    };
    let mut used = vec![];
    let prompt = random_ids(13, v, seed + 1);
    let got = engine.prompt(&prompt, false, Want::All).unwrap().logits;
    for (r, want) in naive.segment(&prompt).iter().enumerate() {
        check(&format!("prompt row {r}"), &got[r * v..][..v], want);
    }
    let mut feed = random_ids(60, v, seed + 2).into_iter();
    for round in 0..2 {
        for i in 0..(window * 2 + 3) {
            let id = feed.next().unwrap();
            let got = engine.step(id).unwrap();
            let (want, want_passes) = naive.decode(id, &exit);
            check(&format!("round {round} step {i}"), &got.logits, &want);
            assert_eq!(got.passes, want_passes, "round {round} step {i}");
            used.push(got.passes);
        }
        if round == 0 {
            let later = random_ids(7, v, seed + 3);
            let got = engine.prompt(&later, false, Want::All).unwrap().logits;
            for (r, want) in naive.segment(&later).iter().enumerate() {
                check(&format!("later prompt row {r}"), &got[r * v..][..v], want);
            }
        }
    }
    used
}

#[test]
fn decoding_matches_a_step_by_step_reimplementation() {
    // The ring wraps (window 4, 11 steps a round), GQA with 2 KV heads, three passes.
    agree_with_naive(&["sliding", "full", "sliding"], 3, 4, 2, 16, ExitRule::NONE, 21);
    // head_dim 8, a window of 1, full layers first.
    agree_with_naive(&["full", "sliding"], 2, 1, 1, 8, ExitRule::NONE, 22);
}

#[test]
fn exit_rules_match_a_step_by_step_reimplementation() {
    let kl = ExitRule { criterion: Criterion::Kl, threshold: 0.02, min_passes: 1 };
    let used = agree_with_naive(&["sliding", "full"], 4, 4, 1, 16, kl, 31);
    println!("kl passes: {used:?}");
    assert!(used.iter().any(|&p| p < 4), "the kl rule never fired: {used:?}");
    let conf = ExitRule { criterion: Criterion::Confidence, threshold: 0.05, min_passes: 2 };
    let used = agree_with_naive(&["sliding", "full"], 4, 4, 1, 16, conf, 32);
    println!("confidence passes: {used:?}");
    assert!(used.iter().all(|&p| p >= 2), "min_passes 2: {used:?}");
    assert!(used.iter().any(|&p| p < 4), "the confidence rule never fired: {used:?}");
}
