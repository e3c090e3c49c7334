//! Model files: config.json, a safetensors file against a config, the shard index,
//! tokenizer.json.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use dory::limits::MAX_POSITIONS;
use dory::tokenizer::{TextStream, Tokenizer};
use dory::weights::{expected_tensors, DType, Weights};
use dory::{Attention, Config};

/// config.json: refused with a named error, or a config that survives its own JSON and
/// whose sizes compute without overflow.
pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(c) = Config::parse(&text, Path::new("config.json")) else { return };
    let again = Config::parse(&c.to_json().to_string(), Path::new("again")).expect("a config reads its own JSON");
    assert_eq!(again, c, "a config's JSON round trip");
    let _ = c.parameters();
    for (_, shape) in expected_tensors(&c) {
        assert!(shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)).is_some(), "a tensor's size overflows");
    }
    let o1 = c.o1.clone().unwrap_or_default();
    for attention in [Attention::Exact, Attention::O1(o1)] {
        for context in [0, 1, 4096, MAX_POSITIONS] {
            let _ = attention.cache_bytes(&c, context);
        }
    }
}

/// The small model the weight targets read: 258 ids (the tiny tokenizer's least),
/// 8 wide, a sliding and a full layer.
pub fn small_config() -> Config {
    let text = r#"{"architecture":"dory","vocab_size":258,"hidden":8,"heads":4,"kv_heads":1,"head_dim":8,
        "ffn":8,"layers":["sliding","full"],"passes":2,"window":4,"bos_token_id":0,"eos_token_id":1}"#;
    Config::parse(text, Path::new("small")).expect("a valid config")
}

/// A loaded model's promises: every tensor of the config, with its shape, finite.
fn check_weights(w: &Weights, c: &Config) {
    for (name, shape) in expected_tensors(c) {
        let t = w.get(&name);
        assert_eq!(t.shape, shape.as_slice(), "{name}");
        let values = t.to_f32();
        assert_eq!(values.len(), shape.iter().product::<usize>(), "{name}");
        assert!(values.iter().all(|x| x.is_finite()), "{name} holds a non-finite value after the check");
    }
}

/// A safetensors file read as model.safetensors of `small_config`.
pub fn safetensors(data: &[u8]) {
    let dir = crate::scratch("safetensors");
    std::fs::write(dir.join("model.safetensors"), data).expect("write");
    let c = small_config();
    if let Ok(w) = Weights::load(&dir, &c) {
        check_weights(&w, &c);
    }
}

/// A folder holding `small_config`'s weights in two shards, written once.
fn sharded() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = crate::scratch("sharded");
        dory::init::write_random_model(&dir, &small_config(), 1, DType::BF16, 2).expect("a sharded model");
        dir
    })
}

/// model.safetensors.index.json over two real shards.
pub fn index(data: &[u8]) {
    let dir = sharded();
    std::fs::write(dir.join("model.safetensors.index.json"), data).expect("write");
    let c = small_config();
    if let Ok(w) = Weights::load(dir, &c) {
        check_weights(&w, &c);
    }
}

/// tokenizer.json: refused, or a tokenizer whose ids fit the vocabulary, which decodes
/// what it encodes and streams it.
pub fn tokenizer(data: &[u8]) {
    let path = crate::scratch("tokenizer").join("tokenizer.json");
    std::fs::write(&path, data).expect("write");
    let vocab = 300;
    let Ok(tok) = Tokenizer::load(&path, vocab) else { return };
    for text in ["", "Once upon a time", "héllo wörld 🐟\n\t", "\u{0}\u{fffd}"] {
        let Ok(ids) = tok.encode(text) else { continue };
        assert!(ids.iter().all(|&id| (id as usize) < vocab), "an id past the vocabulary");
        tok.decode(&ids).expect("decoding encoded ids");
        let mut stream = TextStream::new();
        for &id in &ids {
            stream.push(&tok, id).expect("a streamed piece");
        }
        stream.finish(&tok).expect("the end of a stream");
    }
    let _ = tok.byte_lengths();
}
