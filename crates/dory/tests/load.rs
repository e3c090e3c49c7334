//! Every malformed model folder gives one clear error naming the file, field or tensor
//! and the rule broken — never a panic.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use dory::init::{random_tensors, write_weights};
use dory::weights::{expected_tensors, DType};
use dory::{Model, Want};

fn base() -> (tempfile::TempDir, dory::Config) {
    let c = common::config(&["sliding", "full"], 2, 4, 1, 8);
    let (dir, _) = common::random_model(&c, 1);
    (dir, c)
}

fn err_of(dir: &Path) -> String {
    match Model::load(dir) {
        Ok(_) => panic!("{} must be refused", dir.display()),
        Err(e) => e.to_string(),
    }
}

fn expect(dir: &Path, parts: &[&str]) {
    let e = err_of(dir);
    for p in parts {
        assert!(e.contains(p), "error {e:?} should mention {p:?}");
    }
}

fn rewrite_weights(
    dir: &Path,
    c: &dory::Config,
    edit: impl FnOnce(&mut BTreeMap<String, Vec<f32>>, &mut BTreeMap<String, Vec<usize>>),
) {
    let mut t = random_tensors(c, 1);
    let mut shapes: BTreeMap<String, Vec<usize>> = expected_tensors(c).into_iter().collect();
    edit(&mut t, &mut shapes);
    write_weights(dir, &t, &shapes, DType::F32, 1).unwrap();
}

fn edit_config(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let p = dir.join("config.json");
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(p, v.to_string()).unwrap();
}

#[test]
fn missing_files() {
    let (dir, _) = base();
    expect(&dir.path().join("nowhere"), &["nowhere", "no such model folder"]);
    std::fs::remove_file(dir.path().join("tokenizer.json")).unwrap();
    expect(dir.path(), &["tokenizer.json", "No such file"]);
    std::fs::remove_file(dir.path().join("model.safetensors")).unwrap();
    expect(dir.path(), &["model.safetensors", "no model.safetensors"]);
    std::fs::remove_file(dir.path().join("config.json")).unwrap();
    expect(dir.path(), &["config.json", "No such file"]);
}

#[test]
fn bad_configs() {
    let (dir, _) = base();
    std::fs::write(dir.path().join("config.json"), "{ not json").unwrap();
    expect(dir.path(), &["config.json", "invalid JSON"]);
    let (dir, _) = base();
    edit_config(dir.path(), |v| v["architecture"] = "llama".into());
    expect(dir.path(), &["config.json", "`architecture`", "\"dory\""]);
    let (dir, _) = base();
    edit_config(dir.path(), |v| v["heads"] = 6.into());
    expect(dir.path(), &["`heads`", "4 × kv_heads"]);
    let (dir, _) = base();
    edit_config(dir.path(), |v| v["head_dim"] = 12.into());
    expect(dir.path(), &["`head_dim`", "multiple of 8"]);
}

#[test]
fn bad_safetensors() {
    let (dir, _) = base();
    let p = dir.path().join("model.safetensors");
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() - 10]).unwrap();
    expect(dir.path(), &["model.safetensors", "not a valid safetensors file"]);
    std::fs::write(&p, b"\x10\x00\x00\x00\x00\x00\x00\x00{garbage").unwrap();
    expect(dir.path(), &["model.safetensors", "not a valid safetensors file"]);
    std::fs::write(&p, b"").unwrap();
    expect(dir.path(), &["model.safetensors", "not a valid safetensors file"]);
}

#[test]
fn bad_tensors() {
    let (dir, c) = base();
    rewrite_weights(dir.path(), &c, |t, s| {
        t.remove("layers.1.mlp.up");
        s.remove("layers.1.mlp.up");
    });
    expect(dir.path(), &["tensor `layers.1.mlp.up`", "missing"]);
    rewrite_weights(dir.path(), &c, |t, s| {
        t.insert("layers.2.attn.q".into(), vec![0.0; 4]);
        s.insert("layers.2.attn.q".into(), vec![2, 2]);
    });
    expect(dir.path(), &["tensor `layers.2.attn.q`", "not a tensor of this model"]);
    rewrite_weights(dir.path(), &c, |_, s| {
        s.insert("head_scale".into(), vec![c.vocab_size / 4, 4]);
    });
    expect(dir.path(), &["tensor `head_scale`", "shape must be [300]"]);
    rewrite_weights(dir.path(), &c, |t, _| t.get_mut("layers.0.attn.alpha").unwrap()[3] = f32::NAN);
    expect(dir.path(), &["model.safetensors", "tensor `layers.0.attn.alpha`", "NaN or an infinity"]);
    rewrite_weights(dir.path(), &c, |t, _| t.get_mut("embed").unwrap()[100] = f32::INFINITY);
    expect(dir.path(), &["tensor `embed`", "NaN or an infinity"]);
}

#[test]
fn bad_tokenizers() {
    let (dir, _) = base();
    std::fs::write(dir.path().join("tokenizer.json"), dory::init::tokenizer_json(400)).unwrap();
    expect(dir.path(), &["tokenizer.json", "ids up to 399", "vocab_size is 300"]);
    std::fs::write(dir.path().join("tokenizer.json"), "{\"model\": 3}").unwrap();
    expect(dir.path(), &["tokenizer.json", "not a valid tokenizer"]);
    // Found by fuzzing: a decoder that is not JSON made the tokenizers crate panic.
    let bad_decoder = dory::init::tokenizer_json(300).replace("\"use_regex\":true}", "\"use_regex\":trqe}");
    std::fs::write(dir.path().join("tokenizer.json"), bad_decoder).unwrap();
    expect(dir.path(), &["tokenizer.json", "invalid JSON"]);
    // And by libFuzzer: a key of the decoder that is not UTF-8.
    let mut bytes = dory::init::tokenizer_json(300).into_bytes();
    let at = bytes.windows(9).rposition(|w| w == b"use_regex").unwrap();
    bytes[at + 1] = 0x8d;
    std::fs::write(dir.path().join("tokenizer.json"), bytes).unwrap();
    expect(dir.path(), &["tokenizer.json", "invalid JSON"]);
}

#[test]
fn shards_load_and_agree_with_one_file() {
    let c = common::config(&["sliding", "full"], 2, 4, 1, 8);
    let (_one, single) = common::random_model(&c, 4);
    let sharded = tempfile::tempdir().unwrap();
    dory::init::write_random_model(sharded.path(), &c, 4, DType::F32, 3).unwrap();
    assert!(sharded.path().join("model-00002-of-00003.safetensors").exists());
    let model = Model::load(sharded.path()).unwrap();
    let ids = common::random_ids(9, c.vocab_size, 2);
    let a = common::cpu_session(&single, 4).prompt(&ids, false, Want::All).unwrap().logits;
    let b = common::cpu_session(&model, 4).prompt(&ids, false, Want::All).unwrap().logits;
    assert_eq!(a, b);
    // An index that names a shard which is not there.
    std::fs::remove_file(sharded.path().join("model-00002-of-00003.safetensors")).unwrap();
    expect(sharded.path(), &["model-00002-of-00003.safetensors", "No such file"]);
}

#[test]
fn half_precision_weights_load_exactly_widened() {
    let c = common::config(&["sliding", "full"], 2, 4, 1, 8);
    for dtype in [DType::F16, DType::BF16] {
        let dir = tempfile::tempdir().unwrap();
        dory::init::write_random_model(dir.path(), &c, 9, dtype, 1).unwrap();
        let m = Model::load(dir.path()).unwrap();
        assert_eq!(m.weights.dtype(), dtype);
        let embed = m.weights.get("embed").to_f32();
        let want = &random_tensors(&c, 9)["embed"];
        let round = |x: f32| match dtype {
            DType::F16 => half::f16::from_f32(x).to_f32(),
            _ => half::bf16::from_f32(x).to_f32(),
        };
        assert!(embed.iter().zip(want).all(|(&a, &b)| a == round(b)));
    }
}
