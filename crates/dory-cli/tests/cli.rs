//! The `dory` command end to end: the binary spawned as a user would.

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn dory(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dory")).args(args).env_remove("DORY_MODEL").output().expect("spawn dory")
}

fn ok(args: &[&str]) -> String {
    let out = dory(args);
    assert!(out.status.success(), "dory {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The command fails with one line on stderr that contains `want`.
fn fails(args: &[&str], want: &str) {
    let out = dory(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "dory {args:?} should fail");
    assert!(err.contains(want), "dory {args:?}: {err:?} should mention {want:?}");
    assert!(!err.contains("panicked"), "dory {args:?} panicked: {err}");
}

fn model(dir: &Path) -> String {
    let config = dir.join("config.json");
    std::fs::write(
        &config,
        r#"{"architecture":"dory","vocab_size":400,"hidden":32,"heads":4,"kv_heads":1,"head_dim":16,
            "ffn":64,"layers":["sliding","full"],"passes":3,"window":8,"max_context":64}"#,
    )
    .unwrap();
    let out = dir.join("model");
    ok(&["init", "--config", config.to_str().unwrap(), "--seed", "5", "--out", out.to_str().unwrap()]);
    out.to_str().unwrap().to_string()
}

fn read_npy(path: &Path) -> (String, Vec<u8>) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..6], b"\x93NUMPY");
    let n = u16::from_le_bytes([b[8], b[9]]) as usize;
    (String::from_utf8(b[10..10 + n].to_vec()).unwrap(), b[10 + n..].to_vec())
}

#[test]
fn generate_streams_deterministic_text_and_writes_logits() {
    let dir = tempfile::tempdir().unwrap();
    let m = model(dir.path());
    let npy = dir.path().join("out.npy");
    let args = [
        "generate",
        "--model",
        &m,
        "-n",
        "12",
        "--temperature",
        "0",
        "--no-echo",
        "--logits",
        npy.to_str().unwrap(),
        "hello there",
    ];
    let a = ok(&args);
    assert_eq!(a, ok(&args), "greedy decoding is deterministic");
    assert!(!a.trim().is_empty());
    let (header, data) = read_npy(&npy);
    assert!(header.contains("'descr': '<f4'") && header.contains("'shape': (12, 400)"), "{header}");
    assert_eq!(data.len(), 12 * 400 * 4);
    let (header, data) = read_npy(&dir.path().join("out.tokens.npy"));
    assert!(header.contains("'<i4'") && header.contains("(12,)"), "{header}");
    // Each token is the argmax of its logits row (greedy).
    let (_, lb) = read_npy(&npy);
    let rows: Vec<f32> = lb.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let toks: Vec<i32> = data.chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    for (row, &t) in rows.chunks(400).zip(&toks) {
        assert_eq!(dory::sampler::argmax(row) as i32, t);
    }
    // The prompt from stdin, echoed, with sampling and stats.
    let mut child = Command::new(env!("CARGO_BIN_EXE_dory"))
        .args(["generate", "--model", &m, "-n", "5", "--seed", "3", "--stats", "--exit", "confidence:0.01"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"from stdin").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("from stdin"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tokens/s") && err.contains("passes per token: 1.") && err.contains("peak memory"), "{err}");
}

#[test]
fn info_ppl_and_bench() {
    let dir = tempfile::tempdir().unwrap();
    let m = model(dir.path());
    let info = ok(&["info", "--model", &m, "--context", "100"]);
    assert!(info.contains("parameters") && info.contains("[sliding, full] × 3 passes"), "{info}");
    // 8 (window) + 100 positions of K·d = 16 keys and values in f32.
    assert!(
        info.contains(&format!("caches exact {:.1} KiB at context 100", (108 * 2 * 16 * 4) as f64 / 1024.0)),
        "{info}"
    );
    // O(1) with the default settings seals at 4 + 512 + 256 = 772.
    assert!(info.contains("caches o1") && info.contains("grows until the seal at 772"), "{info}");
    let far = ok(&[
        "info",
        "--model",
        &m,
        "--context",
        "100000",
        "--o1",
        "window=16,landmarks=4,seal_at=100",
        "--attention",
        "o1",
    ]);
    assert!(far.contains("sealed at 100: constant from there"), "{far}");
    let text = dir.path().join("text.txt");
    std::fs::write(&text, "the quick brown fox jumps over the lazy dog. ".repeat(20)).unwrap();
    let ppl = ok(&["ppl", text.to_str().unwrap(), "--model", &m, "--context", "50"]);
    assert!(ppl.starts_with("perplexity "), "{ppl}");
    let value: f64 = ppl.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(value > 1.0 && value.is_finite(), "{ppl}");
    // The chunk size does not change the result.
    let ppl2 = ok(&["ppl", text.to_str().unwrap(), "--model", &m, "--context", "50", "--chunk", "7"]);
    let value2: f64 = ppl2.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!((value - value2).abs() / value < 1e-4, "{ppl} vs {ppl2}");
    // Decode-semantics perplexity, exact and O(1) sealed early.
    let text2 = dir.path().join("long.txt");
    std::fs::write(&text2, "a b c d e f g h i j k l m n o p ".repeat(20)).unwrap();
    let exact = ok(&["ppl", text2.to_str().unwrap(), "--model", &m, "--decode", "--attention", "exact"]);
    assert!(exact.contains("decode semantics, exact attention"), "{exact}");
    let fast = ok(&[
        "ppl",
        text2.to_str().unwrap(),
        "--model",
        &m,
        "--decode",
        "--attention",
        "o1",
        "--o1",
        "sinks=2,window=16,landmarks=4,stride=2,seal_at=40",
    ]);
    assert!(fast.contains("decode semantics, o1 attention"), "{fast}");
    let value = |s: &str| -> f64 { s.split_whitespace().nth(1).unwrap().parse().unwrap() };
    assert!((value(&exact) - value(&fast)).abs() / value(&exact) < 0.5, "{exact} vs {fast}");
    assert_ne!(value(&exact), value(&fast));
    let bench = ok(&["bench", "--model", &m, "--prompt", "16", "--gen", "4", "--reps", "2", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&bench).unwrap();
    assert!(v["pp"]["median"].as_f64().unwrap() > 0.0 && v["tg"]["median"].as_f64().unwrap() > 0.0, "{bench}");
}

#[test]
fn bad_input_is_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let m = model(dir.path());
    fails(&["generate", "--model", &m, "--temperature", "-1", "hi"], "temperature must be");
    fails(&["generate", "--model", &m, "--top-p", "1.5", "hi"], "top-p must be in (0, 1]");
    fails(&["generate", "--model", &m, "--min-p", "2", "hi"], "min-p");
    fails(&["generate", "--model", &m, "--repeat-penalty", "-1", "hi"], "repetition penalty");
    fails(&["generate", "--model", &m, "--exit", "kl", "hi"], "--exit");
    fails(&["generate", "--model", &m, "--attention", "linear", "hi"], "--attention must be exact or o1");
    fails(&["generate", "--model", &m, "--attention", "o1", "--o1", "landmarks=99", "hi"], "o1.landmarks");
    fails(&["generate", "--model", &m, "--o1", "landmarks=8", "hi"], "--o1 needs --attention o1");
    fails(&["generate", "--model", "/nonexistent/model", "hi"], "no such model folder");
    fails(&["ppl", "/nonexistent.txt", "--model", &m], "cannot read /nonexistent.txt");
    fails(&["init", "--config", "/nonexistent.json", "--out", "x"], "/nonexistent.json");
    fails(&["init", "--config", &format!("{m}/config.json"), "--out", "x", "--dtype", "f64"], "--dtype");
    // With no model anywhere, the error says how to get one.
    let out = Command::new(env!("CARGO_BIN_EXE_dory"))
        .args(["info"])
        .current_dir(dir.path())
        .env("DORY_MODEL", dir.path().join("missing"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing"));
}

#[test]
fn the_backend_flag_picks_where_the_model_runs() {
    let dir = tempfile::tempdir().unwrap();
    let m = model(dir.path());
    let backend = |args: &[&str]| {
        let info = ok(&[&["info", "--model", &m][..], args].concat());
        info.lines().find(|l| l.starts_with("backend")).expect("a backend line").to_string()
    };
    assert!(backend(&["--backend", "cpu"]).contains("cpu"));
    fails(&["info", "--model", &m, "--backend", "gpu"], "the backend must be cpu, wgpu or auto");
    // auto never picks a software adapter (lavapipe): the CPU unless there is a GPU.
    let hardware = dory_wgpu::choose(dory_wgpu::Pick::Hardware).is_some();
    assert_eq!(backend(&[]).contains("wgpu"), hardware, "{}", backend(&[]));
    if dory_wgpu::choose(dory_wgpu::Pick::Any).is_none() {
        assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "CI=true needs a GPU adapter");
        eprintln!("SKIPPED: no GPU adapter for --backend wgpu");
        return;
    }
    assert!(backend(&["--backend", "wgpu"]).contains("wgpu"));
    // The same greedy generation on both: logits within spec §8 until the tokens part
    // (a near-tie may legitimately flip; the rows after it are not comparable).
    let run = |b: &str| {
        let npy = dir.path().join(format!("{b}.npy"));
        let args = ["generate", "--model", &m, "--backend", b, "-n", "6", "-t", "0", "--no-echo", "--logits"];
        ok(&[&args[..], &[npy.to_str().unwrap(), "It was"]].concat());
        let logits: Vec<f32> =
            read_npy(&npy).1.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        (logits, read_npy(&dir.path().join(format!("{b}.tokens.npy"))).1)
    };
    let ((lc, tc), (lg, tg)) = (run("cpu"), run("wgpu"));
    for (i, (a, b)) in lg.chunks_exact(400).zip(lc.chunks_exact(400)).enumerate() {
        let num: f64 = a.iter().zip(b).map(|(x, y)| (*x as f64 - *y as f64).powi(2)).sum();
        let den: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
        assert!((num / den).sqrt() < 1e-4, "step {i}: relative error {}", (num / den).sqrt());
        if tc[i * 4..][..4] != tg[i * 4..][..4] {
            break;
        }
    }
}

#[test]
fn quantize_writes_a_model_the_cpu_runs() {
    let dir = tempfile::tempdir().unwrap();
    let m = model(dir.path());
    let q = dir.path().join("q8").to_str().unwrap().to_string();
    assert!(ok(&["quantize", "--model", &m, "--out", &q]).starts_with("wrote q8_0"));
    let info = ok(&["info", "--model", &q, "--backend", "cpu"]);
    assert!(info.contains("q8_0 in groups of 32"), "{info}");
    let text = ok(&["generate", "--model", &q, "-n", "4", "-t", "0", "It was"]);
    assert!(!text.is_empty());
    let held = |model: &str| {
        let bench = ok(&[
            "bench",
            "--model",
            model,
            "--backend",
            "cpu",
            "--prompt",
            "8",
            "--gen",
            "2",
            "--reps",
            "1",
            "--json",
        ]);
        serde_json::from_str::<serde_json::Value>(&bench).unwrap()["weight_bytes"].as_u64().unwrap()
    };
    // int8 and a 2-byte scale per 32 against 4 bytes per weight.
    assert!((held(&q) as f64) < 0.3 * held(&m) as f64, "{} vs {}", held(&q), held(&m));
    fails(&["quantize", "--model", &m, "--out", &q, "--format", "q4_0"], "--format must be q8_0");
    fails(&["quantize", "--model", &q, "--out", &format!("{q}2")], "quantized already");
    let out = Command::new(env!("CARGO_BIN_EXE_dory"))
        .args(["info", "--model", &q, "--backend", "cpu"])
        .env("DORY_CPU_KERNELS", "sse")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("DORY_CPU_KERNELS must be auto, avx2 or portable"));
    let portable = Command::new(env!("CARGO_BIN_EXE_dory"))
        .args(["generate", "--model", &q, "-n", "4", "-t", "0", "It was"])
        .env("DORY_CPU_KERNELS", "portable")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&portable.stdout), text, "the same greedy text on the portable kernels");
    if dory_wgpu::choose(dory_wgpu::Pick::Any).is_some() {
        fails(&["info", "--model", &q, "--backend", "wgpu"], "not supported by the wgpu backend");
    }
}
