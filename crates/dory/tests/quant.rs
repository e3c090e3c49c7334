//! 8-bit (q8_0) model folders: `quant::quantize` writes them, the CPU backend runs them as
//! the f32 model of their dequantized values, and every malformed one is one named error.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use dory::cpu::{Cpu, Isa};
use dory::quant::Quantization;
use dory::weights::DType;
use dory::{Config, Forward, Model, Session, Want};
use safetensors::{Dtype, SafeTensors};

type Tensors = BTreeMap<String, (Dtype, Vec<usize>, Vec<u8>)>;

/// Every dimension a multiple of 32, as q8_0 needs.
fn config() -> Config {
    let json = serde_json::json!({
        "architecture": "dory", "vocab_size": 300, "hidden": 64, "heads": 4, "kv_heads": 1,
        "head_dim": 16, "ffn": 96, "layers": ["sliding", "full"], "passes": 2, "window": 4,
        "bos_token_id": 0, "eos_token_id": 1,
    });
    Config::parse(&json.to_string(), Path::new("test config")).expect("valid config")
}

/// A random bf16 model and its q8_0 copy.
fn models() -> (tempfile::TempDir, tempfile::TempDir) {
    let (src, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    dory::init::write_random_model(src.path(), &config(), 3, DType::BF16, 1).unwrap();
    let model = Model::load(src.path()).unwrap();
    dory::quant::quantize(&model, out.path(), &Quantization::q8_0()).unwrap();
    (src, out)
}

fn read(dir: &Path) -> Tensors {
    let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    st.tensors().into_iter().map(|(n, t)| (n, (t.dtype(), t.shape().to_vec(), t.data().to_vec()))).collect()
}

fn session(model: &Model, isa: Isa) -> Session<Cpu> {
    let backend = Cpu::with_kernels(&model.config, &model.weights, isa);
    Session::new(Forward::new(backend, &model.config, 3).unwrap())
}

#[test]
fn a_quantized_model_runs_as_its_dequantized_values() {
    let (_src, q8) = models();
    let quantized = Model::load(q8.path()).unwrap();
    assert_eq!(quantized.config.quantization, Some(Quantization::q8_0()));
    // The same model in f32, every matrix replaced by scale · q.
    let mut t = read(q8.path());
    let names: Vec<String> = t.keys().filter(|n| t[*n].0 == Dtype::I8).cloned().collect();
    for name in names {
        let (_, shape, q) = t.remove(&name).unwrap();
        let (_, _, s) = t.remove(&format!("{name}.scale")).unwrap();
        let value = |i: usize| {
            let scale = half::f16::from_le_bytes([s[2 * (i / 32)], s[2 * (i / 32) + 1]]).to_f32();
            scale * q[i] as i8 as f32
        };
        let bytes = (0..q.len()).flat_map(|i| value(i).to_le_bytes()).collect();
        t.insert(name, (Dtype::F32, shape, bytes));
    }
    let f32_dir = tempfile::tempdir().unwrap();
    dory::init::write_random_model(f32_dir.path(), &config(), 3, DType::F32, 1).unwrap();
    dory::init::write_safetensors(f32_dir.path(), &t, 1).unwrap();
    let reference = Model::load(f32_dir.path()).unwrap();
    let ids = common::random_ids(11, 300, 4);
    let want = common::cpu_session(&reference, 3).prompt(&ids, false, Want::All).unwrap().logits;
    for isa in Isa::available() {
        let mut s = session(&quantized, isa);
        let got = s.prompt(&ids, false, Want::All).unwrap().logits;
        assert!(common::rel(&got, &want) < 1e-5, "{isa:?}: {}", common::rel(&got, &want));
    }
}

/// Rewrites the q8_0 folder's tensors (or config) and expects one error naming `parts`.
fn refused(edit: impl FnOnce(&mut Tensors, &mut serde_json::Value), parts: &[&str]) {
    let (_src, q8) = models();
    let mut t = read(q8.path());
    let path = q8.path().join("config.json");
    let mut config: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut t, &mut config);
    std::fs::write(&path, config.to_string()).unwrap();
    dory::init::write_safetensors(q8.path(), &t, 1).unwrap();
    let e = Model::load(q8.path()).err().expect("a malformed folder must be refused").to_string();
    for p in parts {
        assert!(e.contains(p), "error {e:?} should mention {p:?}");
    }
}

#[test]
fn malformed_quantized_folders_are_named_errors() {
    refused(|t, _| t.get_mut("layers.0.attn.q").unwrap().0 = Dtype::U8, &["`layers.0.attn.q`", "got U8"]);
    let to_f32 = |t: &mut Tensors, name: &str| {
        let (_, shape, q) = t.remove(name).unwrap();
        t.insert(name.into(), (Dtype::F32, shape, q.iter().flat_map(|&v| (v as i8 as f32).to_le_bytes()).collect()));
    };
    refused(|t, _| to_f32(t, "layers.1.mlp.down"), &["`layers.1.mlp.down`", "must be I8", "got F32"]);
    refused(|t, _| drop(t.remove("layers.0.mlp.up.scale")), &["`layers.0.mlp.up.scale`", "missing"]);
    refused(
        |t, _| {
            let (_, shape, s) = t.remove("head.scale").unwrap();
            t.insert("head.scale".into(), (Dtype::BF16, shape, s));
        },
        &["`head.scale`", "must be F16", "got BF16"],
    );
    refused(
        |t, _| {
            let (_, _, s) = t.remove("embed.scale").unwrap();
            t.insert("embed.scale".into(), (Dtype::F16, vec![150, 4], s));
        },
        &["`embed.scale`", "shape must be [300, 2]"],
    );
    refused(|_, c| c["ffn"] = 80.into(), &["config.json", "`quantization`", "multiple of the group 32", "ffn is 80"]);
    refused(|_, c| c["quantization"]["group"] = 64.into(), &["`quantization.group`", "must be 32"]);
    refused(|_, c| c["quantization"]["format"] = "q4_0".into(), &["`quantization.format`", "q4_0"]);
    // Int8 matrices in a folder whose config does not say they are quantized.
    refused(|_, c| drop(c.as_object_mut().unwrap().remove("quantization")), &["`embed`", "I8 only in a quantized"]);
}

#[test]
fn quantizing_twice_is_refused() {
    let (_src, q8) = models();
    let model = Model::load(q8.path()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let e = dory::quant::quantize(&model, out.path(), &Quantization::q8_0()).unwrap_err().to_string();
    assert!(e.contains("quantized already"), "{e}");
}
