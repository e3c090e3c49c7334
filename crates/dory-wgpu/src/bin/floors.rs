//! `dory-wgpu-floors [--model DIR] [--depth N]`: the floors of a decoded token on the best
//! adapter (issue 5), as one JSON object: the copy bandwidth and the empty-dispatch cost
//! measured here, and for a model its weight bytes and dispatches per token (one decoding
//! step with no early exit after a prompt of N + 1 tokens) and the two floors they give.

use std::path::PathBuf;
use std::process::ExitCode;

use dory_wgpu::{floors, GpuDevice, GpuModel, Pick};

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

fn run() -> Result<serde_json::Value, String> {
    let dev = GpuDevice::open(Pick::Any).map_err(|e| e.to_string())?;
    let bandwidth = floors::copy_bandwidth(&dev).map_err(|e| e.to_string())?;
    let dispatch = floors::dispatch_cost(&dev).map_err(|e| e.to_string())?;
    let mut out = serde_json::json!({
        "adapter": dev.describe(),
        "copy_bytes_per_s": bandwidth,
        "dispatch_s": dispatch,
    });
    if let Some(dir) = arg("--model") {
        let depth: usize = arg("--depth").map_or(Ok(0), |d| d.parse()).map_err(|_| "--depth must be a number")?;
        let model = dory::Model::load(&PathBuf::from(&dir)).map_err(|e| e.to_string())?;
        let gm = GpuModel::new(dev.clone(), &model.config, &model.weights).map_err(|e| e.to_string())?;
        let mut session = dory_wgpu::session(&gm, dory::DEFAULT_CHUNK).map_err(|e| e.to_string())?;
        session.exit = dory::ExitRule::NONE;
        let v = model.config.vocab_size as u32;
        let prompt: Vec<u32> = (0..depth as u32 + 1).map(|i| (i * 7919 + 3) % v).collect();
        session.prompt(&prompt, false, dory::Want::Last).map_err(|e| e.to_string())?;
        let before = session.forward().backend.dispatches();
        session.step(5 % v).map_err(|e| e.to_string())?;
        let per_token = session.forward().backend.dispatches() - before;
        let bytes = gm.bytes_per_token(model.config.passes);
        let (bw_floor, dispatch_floor) = (bytes as f64 / bandwidth, per_token as f64 * dispatch);
        out["model"] = serde_json::json!({
            "dir": dir,
            "depth": depth,
            "weight_bytes_per_token": bytes,
            "dispatches_per_token": per_token,
            "bandwidth_floor_s": bw_floor,
            "dispatch_floor_s": dispatch_floor,
            "floor_tokens_per_s": 1.0 / bw_floor.max(dispatch_floor),
            "within_2x_tokens_per_s": 0.5 / bw_floor.max(dispatch_floor),
        });
    }
    Ok(out)
}

fn main() -> ExitCode {
    match run() {
        Ok(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
