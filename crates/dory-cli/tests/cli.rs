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
    model_of(dir, 16)
}

/// A random model whose heads are `head_dim` wide.
fn model_of(dir: &Path, head_dim: usize) -> String {
    let config = dir.join("config.json");
    let json = serde_json::json!({"architecture":"dory","vocab_size":400,"hidden":32,"heads":4,"kv_heads":1,
        "head_dim":head_dim,"ffn":64,"layers":["sliding","full"],"passes":3,"window":8,"max_context":64});
    std::fs::write(&config, json.to_string()).unwrap();
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
fn options_past_their_bounds_are_refused_with_what_they_would_need() {
    let dir = tempfile::tempdir().unwrap();
    // Heads 64 wide: a full layer keeps 512 bytes a position, 2 TB at 4·10⁹.
    let m = model_of(dir.path(), 64);
    let (past, big) = ("4294967297", "4000000000");
    fails(&["--threads", "100000", "info", "--model", &m], "--threads must be in 1…1024, got 100000");
    fails(&["--threads", "0", "info", "--model", &m], "--threads must be in 1…1024, got 0");
    fails(&["info", "--model", &m, "--context", past], "--context must be in 1…4294967296");
    fails(&["info", "--model", &m, "--chunk", "65537"], "--chunk must be in 1…65536, got 65537");
    fails(&["bench", "--model", &m, "--depth", past], "--depth must be ≤ 4294967296");
    fails(&["bench", "--model", &m, "--depth", "4294967296", "--prompt", "1"], "more than 4294967296 positions");
    fails(&["bench", "--model", &m, "--depth", big, "--prompt", "4", "--gen", "0"], "would need");
    fails(&["generate", "--model", &m, "-n", past, "hi"], "--max-tokens must be ≤ 4294967296");
    let npy = dir.path().join("x.npy");
    let logits = ["generate", "--model", &m, "-n", big, "--logits", npy.to_str().unwrap(), "hi"];
    fails(&logits, "--logits with --max-tokens 4000000000 (4000000000 steps × 400 logits): would need");
    fails(&["ppl", "x.txt", "--model", &m, "--context", "0"], "--context must be in 1…");
    fails(&["serve", "--model", &m, "--parallel", "100000"], "--parallel must be in 1…256, got 100000");
    fails(&["serve", "--model", &m, "--queue", "0"], "--queue must be in 1…65536");
    fails(&["serve", "--model", &m, "--body-timeout", "1e300"], "--body-timeout must be in (0, 86400]");
    fails(&["serve", "--model", &m, "--max-context", past], "--max-context must be in 2…4294967296");
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

/// Runs `dory ARGS` under `umask 022`, as a login shell would.
#[cfg(unix)]
fn dory_umask(args: &[&str]) -> Output {
    let script =
        format!("umask 022; exec \"$0\" {}", args.iter().map(|a| format!("'{a}'")).collect::<Vec<_>>().join(" "));
    Command::new("sh").arg("-c").arg(script).arg(env!("CARGO_BIN_EXE_dory")).output().expect("spawn sh")
}

#[cfg(unix)]
#[test]
fn init_loses_nothing_and_leaves_nothing_that_shadows_the_new_weights() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let m = model(dir.path());
    let config = format!("{m}/config.json");
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    let generate = |seed: &str| ok(&["generate", "--model", o, "-n", "6", "--temperature", "0", "--no-echo", seed]);
    // A non-empty folder is refused, and left as it was.
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    fails(&["init", "--config", &config, "--out", o], "the folder is not empty (it holds notes.txt)");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
    // --force: shards over a single file leave no single file to shadow them; other
    // files stay; every file is 0644 under umask 022, none a partial leftover.
    let single = dory_umask(&["init", "--config", &config, "--out", o, "--force", "--seed", "1"]);
    assert!(single.status.success(), "{}", String::from_utf8_lossy(&single.stderr));
    let one_file = generate("hi");
    let sharded = dory_umask(&["init", "--config", &config, "--out", o, "--force", "--seed", "2", "--shards", "2"]);
    assert!(sharded.status.success(), "{}", String::from_utf8_lossy(&sharded.stderr));
    assert!(!out.join("model.safetensors").exists(), "the old single file would shadow the shards");
    assert_eq!(std::fs::read_to_string(out.join("notes.txt")).unwrap(), "mine");
    for entry in std::fs::read_dir(&out).unwrap() {
        let e = entry.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with('.'), "a partial file was left: {name}");
        assert_eq!(e.metadata().unwrap().permissions().mode() & 0o777, 0o644, "{name}");
    }
    let fresh = dir.path().join("fresh");
    ok(&["init", "--config", &config, "--out", fresh.to_str().unwrap(), "--seed", "2"]);
    let want =
        ok(&["generate", "--model", fresh.to_str().unwrap(), "-n", "6", "--temperature", "0", "--no-echo", "hi"]);
    assert_eq!(generate("hi"), want, "the folder runs the new weights");
    assert_ne!(one_file, want);
    // And back: a single file over shards removes the shards and their index.
    ok(&["init", "--config", &config, "--out", o, "--force", "--seed", "1"]);
    assert!(
        !out.join("model.safetensors.index.json").exists() && !out.join("model-00001-of-00002.safetensors").exists()
    );
    assert_eq!(generate("hi"), one_file);
    // A symlinked file is replaced, never written through.
    let outside = dir.path().join("outside.json");
    std::fs::write(&outside, "precious").unwrap();
    std::fs::remove_file(out.join("tokenizer.json")).unwrap();
    std::os::unix::fs::symlink(&outside, out.join("tokenizer.json")).unwrap();
    ok(&["init", "--config", &config, "--out", o, "--force"]);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
    assert!(!std::fs::symlink_metadata(out.join("tokenizer.json")).unwrap().file_type().is_symlink());
}

#[test]
fn logits_that_cannot_be_written_leave_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let m = model(dir.path());
    let missing = dir.path().join("no-such-folder/out.npy");
    fails(
        &["generate", "--model", &m, "-n", "3", "--logits", missing.to_str().unwrap(), "hi"],
        "no-such-folder/out.npy",
    );
    // A folder where the file goes: the write fails at the rename, and leaves nothing.
    let blocked = dir.path().join("blocked.npy");
    std::fs::create_dir(&blocked).unwrap();
    fails(&["generate", "--model", &m, "-n", "3", "--logits", blocked.to_str().unwrap(), "hi"], "blocked.npy");
    let left: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(left.iter().all(|n| !n.contains("partial")), "{left:?}");
}

#[test]
fn quantize_writes_a_model_the_cpu_and_the_gpu_run() {
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
        let gpu = ok(&["generate", "--model", &q, "-n", "4", "-t", "0", "--backend", "wgpu", "It was"]);
        assert_eq!(gpu, text, "the same greedy text on the GPU");
    }
}
