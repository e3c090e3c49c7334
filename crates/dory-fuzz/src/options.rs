//! The option parsers: `--exit` (and a request's `exit`), `--o1`, sampling.

use std::collections::VecDeque;

use dory::config::O1;
use dory::{ExitRule, Sampler, Sampling};

use crate::Input;

/// `--exit` and a request's `exit`: the same rule from both, which prints as it reads.
pub fn exit(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let rule = text.parse::<ExitRule>();
    let served = dory_server::params::parse_exit(&text);
    assert_eq!(rule.is_ok(), served.is_ok(), "--exit and a request's exit disagree on {text:?}");
    if let Ok(rule) = rule {
        assert!(rule.threshold >= 0.0 && rule.min_passes >= 1, "{rule:?}");
        let again: ExitRule = rule.to_string().parse().expect("a rule reads its own text");
        assert_eq!(again.criterion, rule.criterion);
    }
}

/// `--o1`: refused, or settings within the spec's bounds.
pub fn o1(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(o) = O1::default().with_overrides(&text) else { return };
    assert!((1..=32).contains(&o.landmarks) && o.stride >= 1 && o.window >= 1, "{o:?}");
    assert!(o.rcond > 0.0 && o.rcond < 1.0, "{o:?}");
    assert!(o.seal_at >= o.sinks + o.stride * o.landmarks, "{o:?}");
}

/// Sampling options of any values: refused, or a sampler that picks a token of the
/// vocabulary from any logits, the same one again from the same seed.
pub fn sampling(data: &[u8]) {
    let mut i = Input(data);
    let opts = Sampling {
        temperature: i.f32(),
        top_k: i.pick(0, 400),
        top_p: i.f32(),
        min_p: i.f32(),
        repetition_penalty: i.f32(),
        seed: u64::from(i.byte()),
    };
    let vocab = i.pick(1, 64);
    let logits: Vec<f32> = (0..vocab).map(|_| i.f32()).collect();
    let recent: VecDeque<u32> = (0..i.pick(0, 8)).map(|_| i.pick(0, 80) as u32).collect();
    let Ok(mut a) = Sampler::new(opts.clone()) else { return };
    let mut b = Sampler::new(opts).expect("the same options");
    let (x, y) = (a.sample(&logits, &recent), b.sample(&logits, &recent));
    assert!((x as usize) < vocab, "token {x} past the vocabulary of {vocab}");
    assert_eq!(x, y, "the same seed draws the same token");
}
