//! Writes the seed corpus of every fuzz target into `fuzz/corpus/` (run once; the
//! corpus is committed): `cargo run -p dory-fuzz --example seeds`.

use std::path::Path;

use dory::weights::DType;
use dory_fuzz::{corpus, files::small_config};
use serde_json::json;

fn put(target: &str, name: &str, bytes: &[u8]) {
    let dir = corpus(target);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), bytes).unwrap();
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    put("config", "dory-tiny.json", &std::fs::read(root.join("models/dory-tiny/config.json")).unwrap());
    put("config", "small.json", small_config().to_json().to_string().as_bytes());
    let hub = json!({"architecture": "dory", "vocab_size": 264, "hidden": 32, "heads": 8, "kv_heads": 2,
        "head_dim": 16, "ffn": 64, "layers": ["full"], "passes": 3, "window": 4, "eos_token_id": [1, 2],
        "bos_token_id": null, "o1": {"window": 6, "landmarks": 4}, "exit": {"criterion": "confidence",
        "threshold": 0.9, "min_passes": 2}, "torch_dtype": "bfloat16"});
    put("config", "hub-extras.json", hub.to_string().as_bytes());

    let tmp = tempfile::tempdir().unwrap();
    for (dtype, name) in [(DType::F32, "f32"), (DType::BF16, "bf16"), (DType::F16, "f16")] {
        let dir = tmp.path().join(name);
        dory::init::write_random_model(&dir, &small_config(), 1, dtype, 1).unwrap();
        put(
            "safetensors",
            &format!("small-{name}.safetensors"),
            &std::fs::read(dir.join("model.safetensors")).unwrap(),
        );
    }
    let sharded = tmp.path().join("sharded");
    dory::init::write_random_model(&sharded, &small_config(), 1, DType::BF16, 2).unwrap();
    put("index", "two-shards.json", &std::fs::read(sharded.join("model.safetensors.index.json")).unwrap());

    put("tokenizer", "byte-level-300.json", dory::init::tokenizer_json(300).as_bytes());
    let word = json!({"version": "1.0", "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "a": 1, "b": 2},
        "unk_token": "[UNK]"}, "pre_tokenizer": {"type": "Whitespace"}});
    put("tokenizer", "word-level.json", word.to_string().as_bytes());

    for (i, text) in ["none", "kl:0.05", "confidence:0.9:2", "kl:1", "confidence:1e-3:4"].iter().enumerate() {
        put("exit", &format!("rule-{i}"), text.as_bytes());
    }
    for (i, text) in
        ["landmarks=16,rect=false", "sinks=2,window=8,seal_at=40", "rcond=0.5,stride=1", ""].iter().enumerate()
    {
        put("o1", &format!("overrides-{i}"), text.as_bytes());
    }
    put("sampling", "greedy", &[0; 40]);
    put("sampling", "warm", &(0u8..80).map(|b| b.wrapping_mul(37)).collect::<Vec<_>>());

    let bodies = [
        json!({"model": "m", "prompt": "Once upon a time", "max_tokens": 4, "temperature": 0}),
        json!({"model": "m", "prompt": [0, 5, 9], "max_tokens": 3, "stream": true, "seed": 3, "exit": "kl:0.5"}),
        json!({"model": "m", "prompt": "x", "stop": ["a", "b"], "top_k": 5, "top_p": 0.5, "min_p": 0.1,
               "repetition_penalty": 1.3, "stream_options": {"include_usage": true}, "stream": true}),
    ];
    for (i, body) in bodies.iter().enumerate() {
        put("request", &format!("completion-{i}"), &[&[0u8][..], body.to_string().as_bytes()].concat());
    }
    let chat = json!({"model": "m", "messages": [{"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]}], "max_completion_tokens": 3});
    put("request", "chat-0", &[&[1u8][..], chat.to_string().as_bytes()].concat());

    for (i, seed) in [[0u8; 64], [255; 64], [1; 64]].iter().enumerate() {
        put("generate", &format!("pattern-{i}"), seed);
    }
    put("generate", "mixed", &(0u8..96).map(|b| b.wrapping_mul(73).wrapping_add(11)).collect::<Vec<_>>());
}
