//! Bounds (docs/RELIABILITY.md): every sized config field at and just past its bound,
//! sizes past memory refused before allocating, and model files that are not regular
//! files or are too large refused with the file named.

mod common;

use std::path::Path;

use dory::config::O1;
use dory::limits::{self, MAX_FFN, MAX_HIDDEN, MAX_KV_HEADS, MAX_LAYERS, MAX_PASSES, MAX_POSITIONS, MAX_VOCAB};
use dory::{Attention, Config, Model, Want};
use serde_json::{json, Value};

fn config_with(edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> dory::Result<Config> {
    let Value::Object(mut m) = json!({"architecture":"dory","vocab_size":264,"hidden":32,"heads":8,
        "kv_heads":2,"head_dim":16,"ffn":64,"layers":["sliding","full"],"passes":3,"window":4})
    else {
        unreachable!()
    };
    edit(&mut m);
    Config::parse(&Value::Object(m).to_string(), Path::new("config.json"))
}

/// (field, the edit at the bound, the edit just past it, the bound)
fn cases() -> Vec<(&'static str, Value, Value, usize)> {
    let layers = |n: usize| json!({"layers": vec!["sliding"; n]});
    let exit = |k: usize| json!({"exit": {"criterion": "none", "min_passes": k}});
    let o1 = |key: &str, n: usize| json!({"o1": {key: n, "seal_at": MAX_POSITIONS}});
    vec![
        ("vocab_size", json!({"vocab_size": MAX_VOCAB}), json!({"vocab_size": MAX_VOCAB + 1}), MAX_VOCAB),
        ("hidden", json!({"hidden": MAX_HIDDEN}), json!({"hidden": MAX_HIDDEN + 4}), MAX_HIDDEN),
        ("ffn", json!({"ffn": MAX_FFN}), json!({"ffn": MAX_FFN + 4}), MAX_FFN),
        (
            "kv_heads",
            json!({"kv_heads": MAX_KV_HEADS, "heads": 4 * MAX_KV_HEADS}),
            json!({"kv_heads": MAX_KV_HEADS + 1}),
            MAX_KV_HEADS,
        ),
        (
            "heads",
            json!({"kv_heads": MAX_KV_HEADS, "heads": 4 * MAX_KV_HEADS}),
            json!({"kv_heads": MAX_KV_HEADS, "heads": 4 * MAX_KV_HEADS + 4}),
            4 * MAX_KV_HEADS,
        ),
        ("layers", layers(MAX_LAYERS), layers(MAX_LAYERS + 1), MAX_LAYERS),
        ("passes", json!({"passes": MAX_PASSES}), json!({"passes": MAX_PASSES + 1}), MAX_PASSES),
        ("window", json!({"window": MAX_POSITIONS}), json!({"window": MAX_POSITIONS + 1}), MAX_POSITIONS),
        (
            "max_context",
            json!({"max_context": MAX_POSITIONS}),
            json!({"max_context": MAX_POSITIONS + 1}),
            MAX_POSITIONS,
        ),
        ("exit.min_passes", exit(MAX_PASSES), exit(MAX_PASSES + 1), MAX_PASSES),
        ("o1.sinks", o1("sinks", MAX_POSITIONS - 256), o1("sinks", MAX_POSITIONS + 1), MAX_POSITIONS),
        ("o1.window", o1("window", MAX_POSITIONS), o1("window", MAX_POSITIONS + 1), MAX_POSITIONS),
        (
            "o1.stride",
            json!({"o1": {"stride": MAX_POSITIONS / 32, "sinks": 0, "seal_at": MAX_POSITIONS}}),
            o1("stride", MAX_POSITIONS + 1),
            MAX_POSITIONS,
        ),
        (
            "o1.seal_at",
            json!({"o1": {"seal_at": MAX_POSITIONS}}),
            json!({"o1": {"seal_at": MAX_POSITIONS + 1}}),
            MAX_POSITIONS,
        ),
    ]
}

fn apply(edit: &Value) -> dory::Result<Config> {
    config_with(|m| m.extend(edit.as_object().unwrap().clone()))
}

#[test]
fn every_sized_field_is_bounded_at_load() {
    for (field, at, past, bound) in cases() {
        apply(&at).unwrap_or_else(|e| panic!("{field} at its bound {bound} must load: {e}"));
        let e = apply(&past).expect_err(field).to_string();
        assert!(e.contains(&format!("field `{field}`: must be ≤ {bound}, got")), "{field}: {e}");
    }
}

#[test]
fn absurd_sizes_are_refused_without_overflow() {
    // Values whose products (heads × head_dim, 4 × kv_heads, …) would overflow a usize.
    for (field, value) in [("kv_heads", u64::MAX / 2), ("heads", u64::MAX), ("window", u64::MAX), ("passes", u64::MAX)]
    {
        let e = config_with(|m| {
            m.insert(field.into(), value.into());
        })
        .expect_err(field)
        .to_string();
        assert!(e.contains(&format!("field `{field}`: must be ≤")), "{field}: {e}");
    }
    let e = O1::default().with_overrides("window=18446744073709551615").unwrap_err().to_string();
    assert!(e.contains("o1.window") && e.contains("must be ≤"), "{e}");
}

#[test]
fn a_huge_window_costs_only_the_context() {
    // A sliding ring needs no more slots than positions: the largest window is exact
    // attention over a short prompt, as any window longer than the prompt is.
    let small = common::config(&["sliding", "full"], 2, 16, 1, 16);
    let mut huge = small.clone();
    huge.window = MAX_POSITIONS;
    let (_d1, m1) = common::random_model(&small, 3);
    let (_d2, m2) = common::random_model(&huge, 3);
    let ids = common::random_ids(12, small.vocab_size, 4);
    let run = |m: &Model| {
        let mut s = common::cpu_session(m, 5);
        let logits = s.prompt(&ids, false, Want::All).unwrap().logits;
        (logits, s.forward().cache_bytes())
    };
    let ((a, bytes_a), (b, bytes_b)) = (run(&m1), run(&m2));
    assert_eq!(a, b);
    assert_eq!(bytes_b, bytes_a, "the huge window's rings hold only the 12 positions");
    assert_eq!(Attention::Exact.cache_bytes(&huge, 12), Attention::Exact.cache_bytes(&small, 12));
    assert_eq!(Attention::Exact.cache_bytes(&huge, usize::MAX), None, "no overflow");
}

#[test]
fn memory_past_the_machine_is_refused_before_allocating() {
    let e = limits::zeros(usize::MAX / 2, "a test buffer").unwrap_err().to_string();
    assert!(e.contains("a test buffer") && e.contains("would need"), "{e}");
    let mut v = vec![1.0f32; 3];
    assert!(limits::resize(&mut v, 1 << 60, "keys").is_err());
    assert_eq!(v, [1.0; 3], "a refused growth leaves the buffer as it was");
    assert!(limits::fits("x", Some(1 << 20)).is_ok());
    assert!(limits::fits("x", None).unwrap_err().to_string().contains("2^64"));
}

#[test]
fn an_o1_window_past_memory_fails_the_seal_not_the_process() {
    // Sealing allocates sinks + window slots: 2^32 × 256 floats is 4 TiB per store.
    let c = common::config(&["full"], 1, 4, 1, 256);
    let (_dir, model) = common::random_model(&c, 1);
    let mut s = common::cpu_session(&model, 8);
    let o1 = O1 { sinks: 0, window: MAX_POSITIONS, landmarks: 2, stride: 1, seal_at: 2, ..O1::default() };
    s.set_attention(Attention::O1(o1)).unwrap();
    s.prompt(&[5, 6, 7], false, Want::Last).unwrap();
    let e = s.prompt(&[8], false, Want::Last).err().expect("the seal cannot fit").to_string();
    assert!(e.contains("would need") || e.contains("cannot allocate"), "{e}");
}

#[cfg(unix)]
#[test]
fn model_files_must_be_regular_files_of_bounded_size() {
    let c = common::config(&["sliding"], 1, 4, 1, 16);
    let (dir, _) = common::random_model(&c, 1);
    let d = dir.path();
    let refused = |file: &str, want: &str| {
        let e = Model::load(d).err().expect("refused").to_string();
        assert!(e.contains(file) && e.contains(want), "{file}: {e}");
    };
    // A link to a regular file is followed.
    let config = std::fs::read(d.join("config.json")).unwrap();
    std::fs::write(d.join("real.json"), &config).unwrap();
    std::fs::remove_file(d.join("config.json")).unwrap();
    std::os::unix::fs::symlink(d.join("real.json"), d.join("config.json")).unwrap();
    Model::load(d).expect("a symlink to a regular config");
    // A FIFO would block a reader for ever; a device never ends.
    std::fs::remove_file(d.join("config.json")).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(d.join("config.json")).status().unwrap().success());
    refused("config.json", "not a regular file (a FIFO)");
    std::fs::remove_file(d.join("config.json")).unwrap();
    let mut big = config.clone();
    big.resize(limits::MAX_CONFIG_BYTES as usize + 1, b' ');
    std::fs::write(d.join("config.json"), &big).unwrap();
    refused("config.json", "more than the 1.0 MiB");
    big.truncate(limits::MAX_CONFIG_BYTES as usize);
    std::fs::write(d.join("config.json"), &big).unwrap();
    Model::load(d).expect("a config of exactly the cap");
    std::fs::rename(d.join("tokenizer.json"), d.join("tok")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", d.join("tokenizer.json")).unwrap();
    refused("tokenizer.json", "not a regular file (a device)");
    std::fs::rename(d.join("model.safetensors"), d.join("w")).unwrap();
    std::fs::create_dir(d.join("model.safetensors")).unwrap();
    refused("model.safetensors", "not a regular file (a folder)");
}
