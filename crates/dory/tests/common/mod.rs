//! What the integration tests share: random model folders and a slow reference.

#![allow(dead_code)]

pub mod naive;

use std::path::Path;

use dory::weights::DType;
use dory::{Config, Forward, Model, Session};

/// A config for tests: `layers` of "sliding"/"full", everything else small.
pub fn config(layers: &[&str], passes: usize, window: usize, kv_heads: usize, head_dim: usize) -> Config {
    let json = serde_json::json!({
        "architecture": "dory", "vocab_size": 300, "hidden": 48, "heads": 4 * kv_heads,
        "kv_heads": kv_heads, "head_dim": head_dim, "ffn": 96, "layers": layers,
        "passes": passes, "window": window, "bos_token_id": 0, "eos_token_id": 1,
    });
    Config::parse(&json.to_string(), Path::new("test config")).expect("valid config")
}

/// Writes a random model of `config` into a fresh temporary folder and loads it.
pub fn random_model(config: &Config, seed: u64) -> (tempfile::TempDir, Model) {
    let dir = tempfile::tempdir().expect("tempdir");
    dory::init::write_random_model(dir.path(), config, seed, DType::F32, 1).expect("write");
    let model = Model::load(dir.path()).expect("load");
    (dir, model)
}

pub fn cpu_session(model: &Model, chunk: usize) -> Session<dory::cpu::Cpu> {
    let backend = dory::cpu::Cpu::new(&model.config, &model.weights);
    Session::new(Forward::new(backend, &model.config, chunk).expect("forward"))
}

/// ‖a − b‖ / ‖b‖ of two f32 rows.
pub fn rel(a: &[f32], b: &[f32]) -> f64 {
    let b64: Vec<f64> = b.iter().map(|&x| x as f64).collect();
    dory::testing::rel_err(a, &b64)
}

/// Random ids in [2, vocab) (no bos or eos).
pub fn random_ids(n: usize, vocab: usize, seed: u64) -> Vec<u32> {
    let mut r = dory::rng::Rng::new(seed);
    (0..n).map(|_| 2 + (r.next_u64() % (vocab as u64 - 2)) as u32).collect()
}
