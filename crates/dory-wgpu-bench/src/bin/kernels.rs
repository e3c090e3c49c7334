//! `dory-wgpu-kernels [--config CONFIG.json | --model DIR] [--dtypes f16,bf16,q8_0] [--quick | --gemm]`:
//! kernel benchmarks on the best adapter, as JSON lines, then a table. First the floors
//! of a decoded token: a copy's bandwidth and a dependent dispatch's cost (GPU and CPU;
//! on the GPU also indirect, as after an exit test, and emptied, as where its rule holds);
//! with a model, its weight bytes and dispatches per token and the floors they give, and
//! the time of its chain of stages when each only streams its bytes (`decode_chain`). Then
//! every projection of the config's shapes, timed alone on the GPU: one row (a decoded
//! token; with the prologue the backend fuses into it) in every single-row kernel shape,
//! and 512 rows (a prompt) in every GEMM shape the device can run (`--gemm`: those alone,
//! at the default chunk's rows too).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use dory::weights::{DType, Stored};
use dory_wgpu::kernels::{kernel_shapes, Options};
use dory_wgpu::{GpuDevice, GpuModel, Pick};
use dory_wgpu_bench::{self as bench, Prologue, Timing};
use serde_json::json;

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Weight bytes and dispatches of one decoded token (no early exit, after a one-token prompt
/// and a first token).
fn per_token(dev: &Arc<GpuDevice>, dir: &str) -> Result<(usize, u64), String> {
    let model = dory::Model::load(&PathBuf::from(dir)).map_err(err)?;
    let gm = GpuModel::new(dev.clone(), &model.config, &model.weights).map_err(err)?;
    let mut session = dory_wgpu::session(&gm, dory_wgpu::DEFAULT_CHUNK).map_err(err)?;
    session.exit = dory::ExitRule::NONE;
    session.prompt(&[3], false, dory::Want::Last).map_err(err)?;
    // The second step: a step records the next one ahead of its token.
    session.step(5 % model.config.vocab_size as u32).map_err(err)?;
    let before = session.forward().backend.dispatches();
    session.step(7 % model.config.vocab_size as u32).map_err(err)?;
    Ok((gm.bytes_per_token(model.config.passes), session.forward().backend.dispatches() - before))
}

fn print(t: &Timing, shape: &str) {
    let j = json!({"kernel": t.kernel, "shape": shape, "n": t.n, "k": t.k, "rows": t.rows, "dtype": t.dtype,
        "us": t.seconds * 1e6, "weight_bytes_per_s": t.bytes_per_s, "flops_per_s": t.flops});
    println!("{j}");
}

/// The floors: a copy's bandwidth and a dispatch's cost, and with a model its bytes and
/// dispatches per token; prints them and returns the config whose shapes to time.
fn floors(dev: &Arc<GpuDevice>) -> Result<Option<dory::Config>, String> {
    bench::warm_up(dev, Duration::from_millis(700)).map_err(err)?;
    let bandwidth = bench::copy_bandwidth(dev).map_err(err)?;
    let (dispatch_gpu, dispatch_cpu) = bench::dispatch_cost(dev).map_err(err)?;
    let (indirect_gpu, emptied_gpu) = bench::indirect_dispatch_cost(dev).map_err(err)?;
    use bench::Encode;
    let forms = [1, 8].map(|b| (b, Encode::Same)).into_iter().chain(
        [
            Encode::Groups,
            Encode::Pipelines,
            Encode::SharedLayout,
            Encode::Immediates,
            Encode::Indirect,
            Encode::Step,
            Encode::StepShared,
        ]
        .map(|f| (6, f)),
    );
    let encode: Vec<_> = forms
        .map(|(b, form)| {
            bench::encode_cost(dev, b, form)
                .map(|[pass, finish, submit]| {
                    json!({"bindings": b, "form": format!("{form:?}"), "pass_s": pass, "finish_s": finish, "submit_s": submit})
                })
                .map_err(err)
        })
        .collect();
    let fma = bench::fma_peak(dev).map_err(err)?;
    let steps = bench::step_rates(dev).map_err(err)?;
    let l2 = bench::l2_bandwidth(dev).map_err(err)?;
    // One workgroup an SM of the H200 (132), and two.
    let sync = [132, 264].map(|g| bench::grid_sync_cost(dev, g).map(|s| json!({"groups": g, "s": s})).map_err(err));
    let forms = [(132, (false, false)), (264, (false, false)), (264, (true, false)), (264, (true, true))];
    let mlp = forms.map(|(g, (coherent, staged))| {
        bench::mlp_fused(dev, g, (coherent, staged)).map(|r| {
            r.map(|(split, fused, diff)| {
                json!({"groups": g, "coherent": coherent, "staged": staged, "two_s": split, "fused_s": fused, "diff": diff})
            })
        })
    });
    let mut floors = json!({"adapter": dev.describe(), "copy_bytes_per_s": bandwidth, "l2_read_bytes_per_s": l2,
        "mlp_fused": mlp.into_iter().collect::<dory::Result<Vec<_>>>().map_err(err)?,
        "grid_sync": sync.into_iter().collect::<Result<Vec<_>, _>>()?,
        "dispatch_gpu_s": dispatch_gpu, "dispatch_cpu_s": dispatch_cpu,
        "encode_per_dispatch": encode.into_iter().collect::<Result<Vec<_>, _>>()?,
        "dispatch_indirect_gpu_s": indirect_gpu, "dispatch_emptied_gpu_s": emptied_gpu, "tensor_f16_flops_per_s": steps.map(|s| s[0]),
        "f32_flops_per_s": fma, "gemm_step_flops_per_s": steps.map(|[held, shared, buffer, staged]|
            json!({"held": held, "workgroup": shared, "buffer": buffer, "staged": staged}))});
    let config = match (arg("--model"), arg("--config")) {
        (Some(dir), _) => {
            let (bytes, dispatches) = per_token(dev, &dir)?;
            let (bw, ds) = (bytes as f64 / bandwidth, dispatches as f64 * dispatch_gpu.max(dispatch_cpu));
            floors["model"] = json!({"dir": dir, "weight_bytes_per_token": bytes, "dispatches_per_token": dispatches,
                "bandwidth_floor_s": bw, "dispatch_floor_s": ds, "floor_tokens_per_s": 1.0 / (bw + ds)});
            Some(dory::Model::load(&PathBuf::from(&dir)).map_err(err)?.config)
        }
        (None, Some(path)) => {
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
            Some(dory::Config::parse(&text, std::path::Path::new(&path)).map_err(err)?)
        }
        (None, None) => None,
    };
    if let Some(c) = &config {
        // The sweep's decoded rows: after a prompt of 512 at depths 0, 4096 and 32768.
        let mut chain = vec![];
        for (keys, residuals) in [(528, false), (528, true), (4096 + 528, false), (32768 + 528, false)] {
            let stages = bench::token_stages(c, keys, residuals);
            let (dispatches, one) = bench::decode_chain(dev, &stages, 264).map_err(err)?;
            chain.push(json!({"keys": keys, "stages": stages.len(), "bytes": stages.iter().map(|s| s.1).sum::<u64>(),
                "dispatches_s": dispatches, "one_dispatch_264_s": one}));
        }
        floors["chain"] = json!(chain);
    }
    println!("{floors}");
    Ok(config)
}

/// The dtypes `--dtypes` names (default f16 and bf16; q8_0 too).
fn dtypes() -> Result<Vec<Stored>, String> {
    arg("--dtypes")
        .unwrap_or_else(|| "f16,bf16".into())
        .split(',')
        .map(|d| match d {
            "f32" => Ok(Stored::Float(DType::F32)),
            "f16" => Ok(Stored::Float(DType::F16)),
            "bf16" => Ok(Stored::Float(DType::BF16)),
            "q8_0" => Ok(Stored::I8),
            other => Err(format!("--dtypes: unknown dtype {other:?}")),
        })
        .collect()
}

/// Times each projection of `c`'s shapes in each kernel shape; returns the timings.
fn projections(dev: &Arc<GpuDevice>, c: &dory::Config) -> Result<Vec<(&'static str, Timing)>, String> {
    let quick = std::env::args().any(|a| a == "--quick");
    let gemm_only = std::env::args().any(|a| a == "--gemm");
    let (d, f) = (c.hidden, c.ffn);
    // Each projection of a layer-pass with the prologue the decode step fuses into it, and the head.
    let shapes = [
        ("qkvg", (c.qkvg_width(), d), Prologue::Residual),
        ("out", (d, c.q_width()), Prologue::None),
        ("gate_up", (2 * f, d), Prologue::Residual),
        ("down", (d, f), Prologue::Swiglu),
        ("head", (c.vocab_size, d), Prologue::None),
    ];
    let checks = dev.kernels.options.checks;
    let base = Options { q8: true, checks, ..Options::new(dev.caps.reduce, dev.caps.coop, dev.caps.workgroup_bytes) };
    let variants = if quick { vec![base] } else { kernel_shapes(base, dev.caps.workgroup_bytes) };
    let mut weights = vec![];
    for dtype in dtypes()? {
        for &(name, nk, prologue) in &shapes {
            weights.push((name, prologue, bench::matrices(dev, nk, dtype).map_err(err)?));
        }
    }
    let mut table = vec![];
    for options in variants {
        let vdev = Arc::new(dev.with_options(options).map_err(err)?);
        // Single rows where the variant changes them, prompts where it changes the GEMM.
        let one = (options.gemv1 != base.gemv1 || options == base) && !gemm_only;
        let many = options.coop != base.coop
            || options.coop_tile != base.coop_tile
            || options.coop_unroll != base.coop_unroll
            || options.coop_slicing != base.coop_slicing
            || options == base;
        // Building the variant's pipelines leaves the GPU idle long enough for its clocks to
        // drop (the first kernel timed after it ran 4× slow on the H200); and even after the
        // copies, the first products timed ran slow (the larger q|k|v|gate's row 27.0 µs
        // against 12.6, its 512 rows 172.6 against 104.6: bench/logs/h200-2026-12-02f/call-5),
        // so the first matrix's prompt is run once untimed too.
        if one || many {
            bench::warm_up(&vdev, Duration::from_millis(300)).map_err(err)?;
            if let Some((_, _, mats)) = weights.first() {
                bench::projection(&vdev, mats, 512, Prologue::None).map_err(err)?;
            }
        }
        for (name, prologue, mats) in &weights {
            let mut runs = vec![];
            if one {
                runs.push((1, Prologue::None));
                if !matches!(prologue, Prologue::None) {
                    runs.push((1, *prologue));
                }
            }
            if many && *name != "head" {
                // A prompt's chunk (the default) and half it.
                if gemm_only {
                    runs.push((256, Prologue::None));
                }
                runs.push((512, Prologue::None));
            }
            for (rows, pro) in runs {
                match bench::projection(&vdev, mats, rows, pro) {
                    Ok(t) => {
                        print(&t, name);
                        table.push((*name, t));
                    }
                    Err(e) => eprintln!("{name} {rows} rows {pro:?}: {e}"),
                }
            }
        }
    }
    Ok(table)
}

fn run() -> Result<(), String> {
    let dev = GpuDevice::open_timed(Pick::Any).map_err(err)?;
    // With q8_0's kernels, which its matrices need.
    let dev = Arc::new(dev.with_options(Options { q8: true, ..dev.kernels.options }).map_err(err)?);
    eprintln!("{}", dev.describe());
    let Some(c) = floors(&dev)? else { return Ok(()) };
    let table = projections(&dev, &c)?;
    eprintln!(
        "\n{:<8}{:>6}{:>7}{:>6} {:<46}{:>9}{:>11}{:>11}",
        "matrix", "n", "k", "rows", "kernel", "µs", "GB/s", "TFLOP/s"
    );
    for (name, t) in &table {
        eprintln!(
            "{name:<8}{:>6}{:>7}{:>6} {:<46}{:>9.2}{:>11.0}{:>11.1}",
            t.n,
            t.k,
            t.rows,
            format!("{} {}", t.dtype, t.kernel),
            t.seconds * 1e6,
            t.bytes_per_s / 1e9,
            t.flops / 1e12
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
