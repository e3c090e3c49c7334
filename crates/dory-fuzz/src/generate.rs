//! A short generation on a tiny random model, its config, ids and options all drawn
//! from the fuzzer's bytes.

use std::path::Path;

use dory::config::O1;
use dory::weights::DType;
use dory::{Attention, Config, Criterion, ExitRule, Model, Request, Sampling};
use serde_json::json;

use crate::Input;

/// A config of small sizes from `i`: any mix of layers, passes, windows, O(1) settings
/// and exit rule the spec allows at these sizes.
fn config(i: &mut Input) -> Option<Config> {
    let kinds = ["sliding", "full"];
    let layers: Vec<&str> = (0..i.pick(1, 3)).map(|_| kinds[i.pick(0, 1)]).collect();
    let kv = i.pick(1, 2);
    let criterion = ["none", "kl", "confidence"][i.pick(0, 2)];
    let json = json!({
        "architecture": "dory", "vocab_size": i.pick(258, 270), "hidden": 4 * i.pick(1, 4),
        "heads": 4 * kv, "kv_heads": kv, "head_dim": 8 * i.pick(1, 2), "ffn": 4 * i.pick(1, 4),
        "layers": layers, "passes": i.pick(1, 4), "window": i.pick(1, 12), "rope_full": i.byte() % 2 == 0,
        "rope_theta": 1.0 + i.pick(0, 20000) as f64, "max_context": 64,
        "exit": {"criterion": criterion, "threshold": f64::from(i.byte()) / 64.0, "min_passes": i.pick(1, 4)},
    });
    Config::parse(&json.to_string(), Path::new("fuzzed config")).ok()
}

fn o1(i: &mut Input) -> O1 {
    let (sinks, landmarks, stride) = (i.pick(0, 4), i.pick(1, 6), i.pick(1, 3));
    let least = sinks + stride * landmarks;
    O1 {
        sinks,
        window: i.pick(1, 10),
        landmarks,
        stride,
        rect: i.byte() % 2 == 0,
        rcond: [1e-4, 1e-2, 0.5][i.pick(0, 2)],
        seal_at: least + i.pick(0, 12),
    }
}

/// Generates up to 12 tokens after a fuzzed prompt: any named error is fine; a result
/// must hold tokens of the vocabulary, passes within 1…P and finite logits.
pub fn generate(data: &[u8]) {
    let mut i = Input(data);
    let Some(c) = config(&mut i) else { return };
    let dir = crate::scratch("generate");
    if dory::init::write_random_model(&dir, &c, u64::from(i.byte()), DType::F32, 1).is_err() {
        return;
    }
    let model = Model::load(&dir).expect("a model just written loads");
    let Ok(mut session) = dory::cpu::session(&model, i.pick(1, 9)) else { return };
    let attention = if i.byte() % 2 == 0 { Attention::Exact } else { Attention::O1(o1(&mut i)) };
    session.set_attention(attention).expect("a valid attention mode");
    let criterion = [Criterion::None, Criterion::Kl, Criterion::Confidence][i.pick(0, 2)];
    session.exit = ExitRule { criterion, threshold: f64::from(i.byte()) / 128.0, min_passes: i.pick(1, 4) };
    let ids: Vec<u32> = (0..i.pick(0, 30)).map(|_| i.pick(0, c.vocab_size - 1) as u32).collect();
    let sampling = Sampling {
        temperature: f32::from(i.byte()) / 64.0,
        top_k: i.pick(0, 300),
        top_p: (1 + i.pick(0, 99)) as f32 / 100.0,
        min_p: i.pick(0, 100) as f32 / 100.0,
        repetition_penalty: (1 + i.pick(0, 299)) as f32 / 100.0,
        seed: u64::from(i.byte()),
    };
    let req = Request { max_tokens: i.pick(1, 12), sampling, stop: vec![], bos: i.byte() % 2 == 0 };
    let mut logits_ok = true;
    let result = dory::generate(&mut session, &model.tokenizer, &ids, &req, |t| {
        logits_ok &= t.logits.iter().all(|x| x.is_finite());
        true
    });
    let Ok(g) = result else { return };
    assert!(logits_ok, "non-finite logits");
    assert!(g.tokens.iter().all(|&t| (t as usize) < c.vocab_size), "a token past the vocabulary");
    assert!(g.passes.iter().all(|&p| (1..=c.passes).contains(&p)), "passes {:?} of {}", g.passes, c.passes);
}
