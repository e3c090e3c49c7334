//! Perplexity and bits per byte of a text against a hand count: the negative
//! log-likelihoods from a prompt's logits, and the bytes of the scored text.

mod common;

use common::{config, cpu_session, random_model};
use dory::exit::log_softmax;
use dory::perplexity::{score, windows, Semantics};
use dory::Want;

#[test]
fn bits_per_byte_are_the_nll_over_the_text_bytes() {
    // One pass: the prefill and decode semantics agree, so one hand count checks both.
    let (_dir, model) = random_model(&config(&["sliding", "full"], 1, 4, 1, 16), 3);
    let text = "héllo wörld, a fish 🐟";
    let ids = model.tokenizer.encode(text).unwrap();
    let bytes = model.tokenizer.byte_lengths();
    // A byte-level vocabulary: the tokens' bytes are the text's, bos counts none.
    assert_eq!(ids.iter().map(|&id| bytes[id as usize]).sum::<usize>(), text.len());
    assert_eq!(bytes[0], 0);
    // With bos, one window scores every token of the text: by hand, from the logits of
    // the whole window fed as one prompt.
    let w = windows(&ids, Some(0), 64).unwrap();
    assert_eq!(w, [[&[0], &ids[..]].concat()]);
    let v = model.config.vocab_size;
    let logits = cpu_session(&model, 8).prompt(&w[0], false, Want::All).unwrap().logits;
    let nll: f64 = ids.iter().enumerate().map(|(r, &next)| -log_softmax(&logits[r * v..][..v])[next as usize]).sum();
    for semantics in [Semantics::Prefill, Semantics::Decode] {
        let s = score(&mut cpu_session(&model, 8), semantics, &w, &bytes, |_| {}).unwrap();
        assert_eq!((s.tokens, s.bytes), (ids.len(), text.len()));
        let bpb = nll / (std::f64::consts::LN_2 * text.len() as f64);
        assert!((s.bits_per_byte() - bpb).abs() < 1e-5 * bpb, "{semantics:?}: {} vs {bpb}", s.bits_per_byte());
    }
    // Without bos the first token of each window is context only: its bytes do not count.
    let w = windows(&ids, None, 5).unwrap();
    let s = score(&mut cpu_session(&model, 8), Semantics::Prefill, &w, &bytes, |_| {}).unwrap();
    let first: usize = w.iter().map(|w| bytes[w[0] as usize]).sum();
    assert_eq!((s.tokens, s.bytes), (ids.len() - w.len(), text.len() - first));
}
