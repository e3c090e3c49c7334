//! Kernel benchmarks on one device: what bounds a decoded token from below (a copy's
//! bandwidth, a dependent dispatch's cost) and the projections alone, in every shape of
//! a model and every kernel shape the backend can be built with
//! (`dory_wgpu::kernels::kernel_shapes`), timed on the GPU (pass timestamps, so the CPU's
//! recording is not counted) after the clocks have ramped up. They drive the backend's
//! own kernels and buffers through `dory_wgpu::hooks`; the `dory-wgpu-kernels` binary
//! prints them. Not part of the engine: a benchmark tool beside the backend.

use std::sync::Arc;
use std::time::{Duration, Instant};

use dory::exit::{Criterion, ExitRule};
use dory::weights::{DType, Stored, TensorView};
use dory_wgpu::hooks::{self, gpu_err, upload_matrix, upload_q8, Input, Matrix, Q8Rows, Recorder, Store};
use dory_wgpu::GpuDevice;

/// Seconds of GPU time per run of `work`: the median of `rounds` passes of `reps` runs,
/// after unmeasured passes of at least 50 ms of GPU time in all, so that the clocks,
/// which fall whenever the GPU idles, are up again.
fn gpu_time(
    rec: &mut Recorder,
    rounds: usize,
    reps: usize,
    mut work: impl FnMut(&mut Recorder, usize),
) -> dory::Result<f64> {
    if !rec.dev().caps.pass_timestamps {
        return Err(gpu_err("this adapter has no timestamp queries: the kernels cannot be timed"));
    }
    rec.timed = true;
    rec.gpu_seconds = 0.0;
    for pass in 0.. {
        if rec.gpu_seconds > 0.05 || pass >= 200 {
            break;
        }
        for i in 0..reps {
            work(rec, i);
        }
        rec.submit(None)?;
    }
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        rec.gpu_seconds = 0.0;
        for i in 0..reps {
            work(rec, i);
        }
        rec.submit(None)?;
        times.push(rec.gpu_seconds / reps as f64);
    }
    rec.timed = false;
    times.sort_by(f64::total_cmp);
    Ok(times[rounds / 2])
}

/// Keeps the GPU busy copying for `warm`, so that its clocks are up before timing (they
/// ramp up only under sustained load).
pub fn warm_up(dev: &Arc<GpuDevice>, warm: Duration) -> dory::Result<()> {
    let bytes = (256u64 << 20).min(dev.caps.max_binding) & !15;
    let (src, dst) = (Store::new(dev, bytes, "warm-up")?, Store::new(dev, bytes, "warm-up")?);
    let mut rec = Recorder::new(dev.clone())?;
    let t0 = Instant::now();
    while t0.elapsed() < warm {
        copy4(&mut rec, &src, &dst, bytes);
        rec.submit(Some((&dst, 4)))?;
    }
    Ok(())
}

fn copy4(rec: &mut Recorder, src: &Arc<Store>, dst: &Arc<Store>, bytes: u64) {
    hooks::copy4(rec, dst, src, (bytes / 16) as usize);
}

/// Bytes per second moved (read plus written) by a 16-byte-per-invocation copy between
/// two buffers of up to 1 GiB each.
pub fn copy_bandwidth(dev: &Arc<GpuDevice>) -> dory::Result<f64> {
    let bytes = (1u64 << 30).min(dev.caps.max_binding) & !15;
    let (src, dst) = (Store::new(dev, bytes, "copy source")?, Store::new(dev, bytes, "copy target")?);
    let mut rec = Recorder::new(dev.clone())?;
    let secs = gpu_time(&mut rec, 5, 4, |rec, _| copy4(rec, &src, &dst, bytes))?;
    Ok(2.0 * bytes as f64 / secs)
}

/// GPU seconds one dispatch costs inside a compute pass when it depends on the one before
/// (it writes what the next reads) and does nearly nothing, and the CPU's seconds to
/// record and submit one (the two overlap while a step runs: batches are submitted as the
/// CPU goes on recording).
pub fn dispatch_cost(dev: &Arc<GpuDevice>) -> dory::Result<(f64, f64)> {
    let (src, buf) = (Store::new(dev, 1024, "dispatch probe source")?, Store::new(dev, 1024, "dispatch probe")?);
    let mut rec = Recorder::new(dev.clone())?;
    // buf[1] ← src[0]: one float, one workgroup.
    let probe = |rec: &mut Recorder| hooks::copy(rec, &buf, 1, &src, 0, 1);
    let many = 2000;
    let gpu = gpu_time(&mut rec, 5, many, |rec, _| probe(rec))?;
    let t0 = Instant::now();
    for _ in 0..many {
        probe(&mut rec);
    }
    rec.submit(None)?;
    let cpu = t0.elapsed().as_secs_f64() / many as f64;
    rec.submit(Some((&buf, 4)))?;
    Ok((gpu, cpu))
}

/// How `encode_cost`'s dispatches differ from one another, as a step's do.
#[derive(Clone, Copy, Debug)]
pub enum Encode {
    /// One pipeline and one bind group throughout.
    Same,
    /// A bind group of its own buffers each dispatch, from 16 in turn.
    Groups,
    /// Two pipelines in turn, each with its bind group.
    Pipelines,
    /// Two pipelines in turn made with one pipeline layout, each with its bind group.
    SharedLayout,
    /// As a step's: two pipelines in turn, a bind group of its own each dispatch, immediates.
    Step,
    /// `Step` with the two pipelines made with one layout.
    StepShared,
    /// 16 bytes of immediates set every dispatch.
    Immediates,
    /// Dispatched indirectly, its counts read from a buffer.
    Indirect,
}

/// Host seconds a dispatch costs wgpu and the driver, by phase, when its bind group holds
/// `bindings` storage buffers of its own (read-write, as a step's activations are), its
/// dispatches differing as `form` says: setting it and dispatching in the pass, finishing
/// the command buffer (where wgpu 30 tracks each binding's state and records the barriers),
/// and submitting it. Medians of 7 encoders of 1,000 dispatches each. A decoding step's host
/// time is mostly `finish` (2026-12-05: ~171 µs a submission of ~48 dispatches for
/// dory-tiny on the H100), so this says what each way its dispatches differ costs.
pub fn encode_cost(dev: &Arc<GpuDevice>, bindings: usize, form: Encode) -> dory::Result<[f64; 3]> {
    use Encode::*;
    let immediates = matches!(form, Immediates | Step | StepShared);
    let count = if matches!(form, Groups | Step | StepShared) { 16 } else { 1 };
    let mut steps = vec![];
    let shared = matches!(form, SharedLayout | StepShared).then(|| encode_probe_layout(dev, bindings, immediates));
    for variant in 0..if matches!(form, Pipelines | SharedLayout | Step | StepShared) { 2 } else { 1 } {
        let source = encode_probe_source(bindings, immediates, variant);
        for _ in 0..count {
            let stores =
                (0..bindings).map(|_| Store::new(dev, 256, "encode probe")).collect::<dory::Result<Vec<_>>>()?;
            let stores: Vec<_> = stores.iter().collect();
            steps.push(probe_pipeline_at(dev, &source, ("peak", shared.as_ref()), &[], &stores)?);
        }
    }
    let args = Store::indirect(dev, 16, "encode probe counts")?;
    dev.queue.write_buffer(&args.buffer, 0, bytemuck::cast_slice(&[1u32, 1, 1, 0]));
    let many = 1000;
    let mut phases = [vec![], vec![], vec![]];
    for _ in 0..7 {
        let t0 = Instant::now();
        let mut enc = dev.device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            for i in 0..many {
                let (pipeline, group) = &steps[i % steps.len()];
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, group, &[]);
                if immediates {
                    pass.set_immediates(0, bytemuck::cast_slice(&[i as u32, 1, 2, 3]));
                }
                match form {
                    Indirect => pass.dispatch_workgroups_indirect(&args.buffer, 0),
                    _ => pass.dispatch_workgroups(1, 1, 1),
                }
            }
        }
        let t1 = Instant::now();
        let buffer = enc.finish();
        let t2 = Instant::now();
        dev.queue.submit([buffer]);
        let t3 = Instant::now();
        dev.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| gpu_err(format!("waiting for the device: {e}")))?;
        for (phase, (a, b)) in phases.iter_mut().zip([(t0, t1), (t1, t2), (t2, t3)]) {
            phase.push((b - a).as_secs_f64() / f64::from(many as u32));
        }
    }
    Ok(phases.map(|mut p| {
        p.sort_by(f64::total_cmp);
        p[p.len() / 2]
    }))
}

/// `encode_cost`'s explicit layout: `bindings` read-write storage buffers, 16 bytes of
/// immediates or none.
fn encode_probe_layout(dev: &GpuDevice, bindings: usize, immediates: bool) -> wgpu::PipelineLayout {
    let entries: Vec<wgpu::BindGroupLayoutEntry> = (0..bindings as u32)
        .map(|binding| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only: false },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        })
        .collect();
    let groups =
        dev.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: None, entries: &entries });
    dev.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: None,
        bind_group_layouts: &[Some(&groups)],
        immediate_size: if immediates { 16 } else { 0 },
    })
}

/// `encode_cost`'s kernel: b0[0] += the other bindings' first floats (and an immediate),
/// `variant` making a pipeline of its own.
fn encode_probe_source(bindings: usize, immediates: bool, variant: usize) -> String {
    let mut text: String = (0..bindings)
        .map(|i| format!("@group(0) @binding({i}) var<storage, read_write> b{i}: array<f32>;\n"))
        .collect();
    let mut terms: Vec<String> = (1..bindings).map(|i| format!("b{i}[0]")).collect();
    terms.push(format!("{variant}.0"));
    if immediates {
        text.push_str("var<immediate> p: vec4<u32>;\n");
        terms.push("f32(p.x)".into());
    }
    let sum = terms.join(" + ");
    text + &format!(
        "@compute @workgroup_size(64)\nfn peak(@builtin(local_invocation_index) i: u32) {{\n    if (i == 0u) {{ b0[0] = b0[0] + {sum}; }}\n}}\n"
    )
}

/// GPU seconds a dependent dispatch costs as `dispatch_cost` times it, when it is indirect
/// as every dispatch of a decoding step after its first exit test is
/// (`Recorder::skip_from`): with the counts it was recorded with, and emptied, as exit.wgsl
/// empties them where the rule holds (here a rule that always holds: confidence ≥ 0).
pub fn indirect_dispatch_cost(dev: &Arc<GpuDevice>) -> dory::Result<(f64, f64)> {
    let (src, buf) = (Store::new(dev, 1024, "dispatch probe source")?, Store::new(dev, 1024, "dispatch probe")?);
    let v = 256;
    let (logits, kept) =
        (Store::new(dev, 4 * (v as u64 + 2), "exit probe logits")?, Store::new(dev, 4 * v as u64, "exit probe kept")?);
    let always = ExitRule { criterion: Criterion::Confidence, threshold: 0.0, min_passes: 1 };
    let mut rec = Recorder::new(dev.clone())?;
    let many = 2000;
    let mut time = |emptied: bool| {
        gpu_time(&mut rec, 5, many, |rec, i| {
            if i == 0 {
                match emptied {
                    true => hooks::exit_test(rec, &always, 1, &logits, &kept, v),
                    false => {
                        rec.skip_args();
                        rec.skip_from();
                    }
                }
            }
            hooks::copy(rec, &buf, 1, &src, 0, 1);
        })
    };
    Ok((time(false)?, time(true)?))
}

/// Where the tensor-core GEMM's step (8 fragments, 16 products of f16 × f16 → f32) can
/// take its fragments from (`peak_steps.wgsl`), as multiply-adds × 2 per second: held in
/// registers (the tensor cores' ceiling in the GEMM's shape, nothing waiting on memory),
/// loaded every step from workgroup memory, from the buffer (cache-hot), and staged
/// through workgroup memory every step. None where the device runs no cooperative
/// matrices.
pub fn step_rates(dev: &Arc<GpuDevice>) -> dory::Result<Option<[f64; 4]>> {
    if !dev.caps.coop {
        return Ok(None);
    }
    let operands: Vec<u8> = (0..8192).flat_map(|_| half::f16::from_f32(1.0 / 64.0).to_le_bytes()).collect();
    let mut rates = [0.0; 4];
    for (from, rate) in rates.iter_mut().enumerate() {
        *rate = probe_rate(dev, &STEPS_PROBE, &operands, 4 * (16384 + 256), &[("FROM", from as f64)])?;
    }
    Ok(Some(rates))
}

/// Bytes per second read from the L2 cache (`peak_l2.wgsl`): the ceiling of the
/// tensor-core GEMM's fragment reads.
pub fn l2_bandwidth(dev: &Arc<GpuDevice>) -> dory::Result<f64> {
    let operands: Vec<u8> = (0..16u32 << 20).map(|i| (i * 37 % 251) as u8).collect();
    probe_rate(dev, &L2_PROBE, &operands, 4096, &[])
}

/// Seconds one barrier across `groups` resident workgroups costs when they meet through a
/// counter in memory (`grid_sync.wgsl`): the wall time of 2001 rounds less that of one,
/// over 2000 (medians of 3 runs each). Against `dispatch_cost`: what a kernel that runs
/// several stages in one dispatch pays between them instead.
pub fn grid_sync_cost(dev: &Arc<GpuDevice>, groups: u32) -> dory::Result<f64> {
    let time = |rounds: u32| -> dory::Result<f64> {
        let count = Store::new(dev, 256, "grid sync counter")?;
        let constants = [("ITERS", f64::from(rounds)), ("GROUPS", f64::from(groups))];
        let probe = probe_pipeline(dev, &with_grid_barrier(include_str!("grid_sync.wgsl")), &constants, &[&count])?;
        settled(|| run_groups(dev, &[&probe], groups, 1))
    };
    Ok((time(2001)? - time(1)?) / 2000.0)
}

/// The median of three timings by `time`, after one untimed.
fn settled(mut time: impl FnMut() -> dory::Result<f64>) -> dory::Result<f64> {
    time()?;
    let mut times = [time()?, time()?, time()?];
    times.sort_by(f64::total_cmp);
    Ok(times[1])
}

/// A probe's text with grid_barrier.wgsl appended.
fn with_grid_barrier(source: &str) -> String {
    format!("{source}\n{}", include_str!("grid_barrier.wgsl"))
}

/// mlp_fused.wgsl's text with m (binding 3) declared `@coherent`.
fn with_coherent_m(source: &str) -> String {
    source.replace("@group(0) @binding(3) var", "@coherent @group(0) @binding(3) var")
}

/// A decoded row's MLP of the larger config's shape (f16, D = 2048, F = 5632) as two
/// dispatches and as one whose `groups` resident workgroups meet between its stages
/// (`mlp_fused.wgsl`): wall seconds of each (`settled`, submissions of 100), and the
/// largest difference between their outputs (the same arithmetic: 0 if both ran right).
/// None where the device has no subgroups (the probe reduces with them).
/// `coherent`: m declared `@coherent` (None where the device cannot), as a kernel whose
/// workgroups hand each other data must on the H200 (BENCHMARKS, 2026-12-04 third session);
/// `staged`: the one dispatch's workgroups copy m into workgroup memory after the barrier.
pub fn mlp_fused(
    dev: &Arc<GpuDevice>,
    groups: u32,
    (coherent, staged): (bool, bool),
) -> dory::Result<Option<(f64, f64, f32)>> {
    if dev.caps.subgroup.is_none() || coherent && !dev.caps.coherent {
        return Ok(None);
    }
    let (d, f) = (2048usize, 5632usize);
    let halves = |n: usize, seed: usize| -> Vec<u8> {
        (0..n).flat_map(|i| half::f16::from_f32(((i * 37 + seed) % 251) as f32 / 4096.0 - 0.03).to_le_bytes()).collect()
    };
    let gu = Store::with_data(dev, &halves(2 * f * d, 1), "mlp gate|up")?;
    let down = Store::with_data(dev, &halves(d * f, 2), "mlp down")?;
    let x: Vec<u8> = (0..d).flat_map(|i| (((i % 7) as f32 - 3.0) / 64.0).to_le_bytes()).collect();
    let x = Store::with_data(dev, &x, "mlp x")?;
    let (m, count) = (Store::new(dev, 4 * f as u64, "mlp m")?, Store::new(dev, 256, "mlp counter")?);
    let outs = [Store::new(dev, 4 * d as u64, "mlp out")?, Store::new(dev, 4 * d as u64, "mlp out")?];
    let g = ("GROUPS", f64::from(groups));
    let plain = with_grid_barrier(include_str!("mlp_fused.wgsl"));
    let source = &if coherent { with_coherent_m(&plain) } else { plain };
    let two = [0.0, 1.0].map(|stage| [g, ("FUSED", 0.0), ("STAGE", stage)]);
    let mut pipes = vec![];
    let one = [g, ("FUSED", 1.0), ("STAGED", f64::from(u8::from(staged)))];
    for (constants, out) in [(&two[0][..], &outs[0]), (&two[1][..], &outs[0]), (&one[..], &outs[1])] {
        pipes.push(probe_pipeline(dev, source, constants, &[&gu, &down, &x, &m, out, &count])?);
    }
    let time = |which: &[usize]| {
        settled(|| run_groups(dev, &which.iter().map(|&i| &pipes[i]).collect::<Vec<_>>(), groups, 100))
    };
    let (split, fused) = (time(&[0, 1])?, time(&[2])?);
    let mut rec = Recorder::new(dev.clone())?;
    let mut read = |s: &Arc<Store>| -> dory::Result<Vec<f32>> {
        Ok(rec.submit(Some((s, 4 * d as u64)))?.unwrap_or_default().into_iter().map(f32::from_bits).collect())
    };
    let (a, b) = (read(&outs[0])?, read(&outs[1])?);
    let diff = a.iter().zip(&b).map(|(p, q)| (p - q).abs()).fold(0.0f32, f32::max);
    let diff = if a.iter().all(|v| *v == 0.0) || a.iter().any(|v| !v.is_finite()) { f32::NAN } else { diff };
    Ok(Some((split, fused, diff)))
}

/// Each dependent stage of one decoded token of `c` with `keys` keys before it, as what it
/// reads at the least (weights held in 2 bytes, the cache in f32): a layer-pass's q|k|v|gate
/// projection, its attention (keys and values, a sliding layer's within its window), its
/// out projection, gate|up and down (every residual, SwiGLU and join taken on the way into
/// a projection), then the head. Each stage is named by its layer and its place in the
/// layer (the head by the layer count), since every pass reads the same layer's tensors.
/// `residuals`: with the larger config's three more stages a layer-pass as the engine runs
/// it, the split attention's join and the residuals after the out and down projections
/// (each reading a row of h and of o, 16 KB where D = 2048).
pub fn token_stages(c: &dory::Config, keys: usize, residuals: bool) -> Vec<((usize, usize), u64)> {
    let d = c.hidden as u64;
    let ffn = c.ffn as u64;
    let mut stages = vec![];
    for _ in 0..c.passes {
        for (layer, kind) in c.layers.iter().enumerate() {
            let seen = match kind {
                dory::config::LayerKind::Sliding => keys.min(c.window),
                dory::config::LayerKind::Full => keys,
            } as u64;
            let kv = seen * (c.kv_heads * c.head_dim) as u64 * 2 * 4;
            let bytes = [2 * d * c.qkvg_width() as u64, kv, 2 * d * c.q_width() as u64, 4 * d * ffn, 2 * d * ffn];
            let row = 2 * 4 * d;
            // The join reads each chunk of 32 keys' partials: maxima, sums, d value sums.
            let join = seen.div_ceil(32) * (c.kv_heads * (2 + c.head_dim) * 16) as u64;
            let more: &[(usize, u64)] = if residuals { &[(1, join), (2, row), (4, row)] } else { &[] };
            for (i, b) in bytes.into_iter().enumerate() {
                stages.push(((layer, i), b));
                if let Some(&(_, b)) = more.iter().find(|&&(after, _)| after == i) {
                    stages.push(((layer, 5 + i), b));
                }
            }
        }
    }
    stages.push(((c.layers.len(), 0), 2 * d * c.vocab_size as u64));
    stages
}

/// Where each of `stages` reads in one buffer (first byte and bytes, in whole 256 bytes),
/// a region a name, and the buffer's bytes.
fn chain_regions(stages: &[((usize, usize), u64)]) -> (u64, Vec<(u64, u64)>) {
    let size = |bytes: u64| bytes.max(16).next_multiple_of(256);
    let mut names: Vec<((usize, usize), u64, u64)> = vec![];
    let mut total = 0;
    for &(name, bytes) in stages {
        if !names.iter().any(|(n, _, _)| *n == name) {
            // Every stage of a name reads the same bytes (its layer's tensor).
            names.push((name, total, size(bytes)));
            total += size(bytes);
        }
    }
    let regions = stages
        .iter()
        .map(|&(name, bytes)| {
            let &(_, first, most) = names.iter().find(|(n, _, _)| *n == name).expect("named above");
            (first, size(bytes).min(most))
        })
        .collect();
    (total, regions)
}

/// Wall seconds a token's `stages` take when each only streams its bytes from memory
/// (`stream.wgsl`), one after another: as one dispatch a stage (meeting at dispatch
/// barriers), and as one dispatch of `groups` resident workgroups that meet between stages
/// at a barrier in memory (None where the device has no subgroups; the barrier is
/// `grid_sync_cost`'s). Stages of one name read one region of a buffer, the others' regions
/// after it, as a model's passes read its layers' tensors: what the L2 holds of them is
/// what it would hold of the model's. Medians (`settled`) of submissions of 20 tokens,
/// after the clocks have ramped up.
pub fn decode_chain(
    dev: &Arc<GpuDevice>,
    stages: &[((usize, usize), u64)],
    groups: u32,
) -> dory::Result<(f64, Option<f64>)> {
    const WORDS: u32 = 2048;
    let (total, regions) = chain_regions(stages);
    if total > dev.caps.max_binding {
        return Err(gpu_err(format!("the chain's {total} bytes are more than one binding takes")));
    }
    let w = Store::new(dev, total, "chain weights")?;
    let (out, count) = (Store::new(dev, 4 * 65536, "chain sums")?, Store::new(dev, 256, "chain counter")?);
    warm_up(dev, Duration::from_millis(500))?;
    let tokens = 20;
    let source = with_grid_barrier(include_str!("stream.wgsl"));
    let words = ("WORDS", f64::from(WORDS));
    let (per_stage, _) = probe_pipeline(dev, &source, &[words], &[&w, &out])?;
    let groups_of = regions.iter().map(|&(_, bytes)| (bytes / 16).div_ceil(u64::from(WORDS)) as u32);
    let steps: Vec<(wgpu::BindGroup, u32)> = regions
        .iter()
        .zip(groups_of)
        .map(|(&(offset, bytes), groups)| {
            let range = wgpu::BufferBinding { buffer: &w.buffer, offset, size: std::num::NonZeroU64::new(bytes) };
            let entries = [
                wgpu::BindGroupEntry { binding: 0, resource: wgpu::BindingResource::Buffer(range) },
                wgpu::BindGroupEntry { binding: 1, resource: out.buffer.as_entire_binding() },
            ];
            let layout = per_stage.get_bind_group_layout(0);
            (
                dev.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: None,
                    layout: &layout,
                    entries: &entries,
                }),
                groups,
            )
        })
        .collect();
    let per_steps: Vec<_> = steps.iter().map(|(group, n)| (&per_stage, group, (*n).min(MAX_GROUPS))).collect();
    let dispatches = settled(|| run_steps(dev, &per_steps, tokens))?;
    if dev.caps.subgroup.is_none() {
        return Ok((dispatches, None));
    }
    let table: Vec<u8> =
        regions.iter().flat_map(|&(o, b)| [(o / 16) as u32, (b / 16) as u32]).flat_map(u32::to_le_bytes).collect();
    let table = Store::with_data(dev, &table, "chain stages")?;
    let constants = [("GROUPS", f64::from(groups)), ("STAGES", stages.len() as f64)];
    let chain = probe_pipeline_at(dev, &source, ("chain", None), &constants, &[&w, &out, &count, &table])?;
    let one = settled(|| run_groups(dev, &[&chain], groups, tokens))?;
    Ok((dispatches, Some(one)))
}

/// Multiply-adds × 2 per second of f32 (`peak_f32.wgsl`): the ceiling of the kernels that
/// multiply in f32 (attention), nothing waiting on memory.
pub fn fma_peak(dev: &Arc<GpuDevice>) -> dory::Result<f64> {
    let operands: Vec<u8> = [0.999f32, 1e-3, 0.5].iter().cycle().take(12).flat_map(|v| v.to_le_bytes()).collect();
    probe_rate(dev, &FMA_PROBE, &operands, 16 * 1024, &[])
}

/// A probe of a ceiling: its WGSL (entry point `peak`), the iterations of its loop (the
/// shader's ITERS, set from here) and the operations a workgroup does in one.
struct Probe {
    source: &'static str,
    iters: u32,
    per_iter: f64,
}

/// 16 products of 16³ a subgroup, 4 subgroups a workgroup.
const STEPS_PROBE: Probe =
    Probe { source: include_str!("peak_steps.wgsl"), iters: 256, per_iter: 4.0 * 16.0 * 2.0 * 4096.0 };
/// 64 KiB read a workgroup.
const L2_PROBE: Probe = Probe { source: include_str!("peak_l2.wgsl"), iters: 64, per_iter: 65536.0 };
/// 8 vec4 multiply-adds an invocation, 256 invocations a workgroup.
const FMA_PROBE: Probe =
    Probe { source: include_str!("peak_f32.wgsl"), iters: 1024, per_iter: 256.0 * 8.0 * 4.0 * 2.0 };

/// The most workgroups one dimension of a grid takes.
const MAX_GROUPS: u32 = 65_535;

/// Operations per second of `probe` (binding 0: `operands`, binding 1: `out_bytes` of
/// zeros; its overrides besides ITERS set to `constants`) in one dispatch of enough
/// workgroups to take 50 ms or more (or as many as one dimension of a grid takes), timed
/// on the wall clock: the median of 5.
fn probe_rate(
    dev: &Arc<GpuDevice>,
    probe: &Probe,
    operands: &[u8],
    out_bytes: u64,
    constants: &[(&str, f64)],
) -> dory::Result<f64> {
    let constants: Vec<(&str, f64)> =
        [("ITERS", f64::from(probe.iters))].into_iter().chain(constants.iter().copied()).collect();
    let a = Store::with_data(dev, operands, "peak operands")?;
    let out = Store::new(dev, out_bytes, "peak sums")?;
    let pipe = probe_pipeline(dev, probe.source, &constants, &[&a, &out])?;
    let mut groups = 16;
    while groups < MAX_GROUPS && run_groups(dev, &[&pipe], groups, 1)? < 0.05 {
        groups = (groups * 4).min(MAX_GROUPS);
    }
    let mut times = (0..5).map(|_| run_groups(dev, &[&pipe], groups, 1)).collect::<dory::Result<Vec<f64>>>()?;
    times.sort_by(f64::total_cmp);
    Ok(f64::from(groups) * f64::from(probe.iters) * probe.per_iter / times[2])
}

/// A probe's pipeline (entry point `peak`, its overrides set to `constants`) and its bind
/// group, `buffers` bound in order from 0.
fn probe_pipeline(
    dev: &Arc<GpuDevice>,
    source: &str,
    constants: &[(&str, f64)],
    buffers: &[&Arc<Store>],
) -> dory::Result<(wgpu::ComputePipeline, wgpu::BindGroup)> {
    probe_pipeline_at(dev, source, ("peak", None), constants, buffers)
}

/// `probe_pipeline` of the entry point `entry`, made with `layout` (None: derived from it).
fn probe_pipeline_at(
    dev: &Arc<GpuDevice>,
    source: &str,
    (entry, layout): (&str, Option<&wgpu::PipelineLayout>),
    constants: &[(&str, f64)],
    buffers: &[&Arc<Store>],
) -> dory::Result<(wgpu::ComputePipeline, wgpu::BindGroup)> {
    let device = &dev.device;
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("peak"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("peak"),
        layout,
        module: &module,
        entry_point: Some(entry),
        compilation_options: wgpu::PipelineCompilationOptions { constants, ..Default::default() },
        cache: None,
    });
    let entries: Vec<wgpu::BindGroupEntry> = buffers
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32, resource: b.buffer.as_entire_binding() })
        .collect();
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    });
    if let Some(e) = pollster::block_on(scope.pop()) {
        return Err(gpu_err(format!("a peak probe does not build: {e}")));
    }
    Ok((pipeline, group))
}

/// Wall seconds per round of one submission of `rounds` rounds of `steps` (pipelines and
/// their bind groups), each step a dispatch of `groups` workgroups, waited for.
fn run_groups(
    dev: &Arc<GpuDevice>,
    steps: &[&(wgpu::ComputePipeline, wgpu::BindGroup)],
    groups: u32,
    rounds: u32,
) -> dory::Result<f64> {
    let steps: Vec<_> = steps.iter().map(|(pipeline, group)| (pipeline, group, groups)).collect();
    run_steps(dev, &steps, rounds)
}

/// `run_groups` where each step (pipeline, bind group, workgroups) has its own workgroups.
fn run_steps(
    dev: &Arc<GpuDevice>,
    steps: &[(&wgpu::ComputePipeline, &wgpu::BindGroup, u32)],
    rounds: u32,
) -> dory::Result<f64> {
    let t0 = Instant::now();
    let mut enc = dev.device.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        for _ in 0..rounds {
            for &(pipeline, group, groups) in steps {
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, group, &[]);
                pass.dispatch_workgroups(groups, 1, 1);
            }
        }
    }
    dev.queue.submit([enc.finish()]);
    dev.device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| gpu_err(format!("waiting for the device: {e}")))?;
    Ok(t0.elapsed().as_secs_f64() / f64::from(rounds))
}

/// Copies of an [n, k] matrix stored as `stored` with random values, as the model would
/// upload them, enough that together they do not fit in the GPU's cache (so that a
/// benchmark reads its weights from memory, as a model does).
pub fn matrices(dev: &GpuDevice, (n, k): (usize, usize), stored: Stored) -> dory::Result<Vec<Matrix>> {
    let values = dory::testing::rand_vec(n * k, (n * k) as u64);
    let size = match stored {
        Stored::Float(dtype) => dtype.size(),
        Stored::I8 => 1,
    };
    let copies = ((256 << 20) / (n * k * size).max(1) + 1).min(64);
    let Stored::Float(dtype) = stored else {
        let (q, scales) = dory::quant::quantize_q8_0(&values, k)
            .ok_or_else(|| gpu_err(format!("[{n}, {k}]: random values that q8_0 cannot hold")))?;
        let bytes: Vec<u8> = q.iter().map(|&v| v as u8).collect();
        let scales: Vec<f32> = scales.iter().map(|s| s.to_f32()).collect();
        let rows = || [Q8Rows { n, k, values: &bytes, scales: scales.clone() }];
        return (0..copies).map(|_| upload_q8(dev, "benchmark", &rows())).collect();
    };
    let bytes: Vec<u8> = match dtype {
        DType::F32 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        DType::F16 => values.iter().flat_map(|v| half::f16::from_f32(*v).to_le_bytes()).collect(),
        DType::BF16 => values.iter().flat_map(|v| half::bf16::from_f32(*v).to_le_bytes()).collect(),
    };
    let shape = [n, k];
    (0..copies)
        .map(|_| upload_matrix(dev, "benchmark", &[TensorView { dtype, shape: &shape, bytes: &bytes }], true))
        .collect()
}

/// One projection's timing.
#[derive(Clone, Debug)]
pub struct Timing {
    pub kernel: String,
    pub n: usize,
    pub k: usize,
    pub rows: usize,
    pub dtype: String,
    pub seconds: f64,
    /// Bytes of weights read per second (one row), or multiply-adds × 2 per second.
    pub bytes_per_s: f64,
    pub flops: f64,
}

/// The prologue a single-row projection is timed with.
#[derive(Clone, Copy, Debug)]
pub enum Prologue {
    None,
    Residual,
    Swiglu,
}

/// Times `rows` rows of out ← x · Wᵀ over `mats` (copies of one [n, k] matrix, taken in
/// turn), with `prologue` for one row.
pub fn projection(dev: &Arc<GpuDevice>, mats: &[Matrix], rows: usize, prologue: Prologue) -> dory::Result<Timing> {
    let (n, k, dtype) = (mats[0].n, mats[0].k, mats[0].dtype);
    let width = if matches!(prologue, Prologue::Swiglu) { 2 * k } else { k };
    let upload = |len: usize, seed: u64| {
        Store::with_data(dev, bytemuck::cast_slice(&dory::testing::rand_vec(len, seed)), "input")
    };
    let x = upload(rows * width, 1)?;
    let o = upload(rows * width, 2)?;
    let scales = upload(2 * k, 3)?;
    let h_next = Store::new(dev, 4 * (rows * k) as u64, "h next")?;
    let out = Store::new(dev, 4 * (rows * n) as u64, "output")?;
    let input = match prologue {
        Prologue::None => Input::Plain,
        Prologue::Residual => Input::Residual { o: &o, alpha: &scales, h_next: &h_next, eps: 1e-6 },
        Prologue::Swiglu => Input::Swiglu(&scales),
    };
    let mut rec = Recorder::new(dev.clone())?;
    if !hooks::fuses(&rec, &mats[0], rows, input) {
        return Err(gpu_err(format!("{prologue:?} does not fuse with {rows} rows of [{n}, {k}]")));
    }
    let reps = 4 * mats.len();
    let secs =
        gpu_time(&mut rec, 5, reps, |rec, i| hooks::project(rec, &mats[i % mats.len()], &x, 0, &out, rows, input))?;
    let kernel = hooks::kernel_name(&rec, &mats[0], rows, input);
    Ok(Timing {
        kernel,
        n,
        k,
        rows,
        dtype: match dtype {
            Stored::Float(d) => format!("{d:?}"),
            Stored::I8 => "q8_0".into(),
        },
        seconds: secs,
        bytes_per_s: mats[0].bytes() as f64 / secs,
        flops: 2.0 * (n * k * rows) as f64 / secs,
    })
}

#[cfg(test)]
mod tests {
    use naga::back::PipelineConstants;
    use naga::valid::{Capabilities, ValidationFlags, Validator};

    use super::{with_coherent_m, with_grid_barrier, FMA_PROBE, L2_PROBE, STEPS_PROBE};

    #[test]
    fn the_peak_probes_translate_for_vulkan() {
        let caps = Capabilities::SHADER_FLOAT16
            | Capabilities::COOPERATIVE_MATRIX
            | Capabilities::SUBGROUP
            | Capabilities::SHADER_FLOAT16_IN_FLOAT32
            | Capabilities::MEMORY_DECORATION_COHERENT;
        let it = ("ITERS", 8.0);
        let steps = [0.0, 1.0, 2.0, 3.0]
            .map(|from| ("peak_steps.wgsl", STEPS_PROBE.source.to_string(), vec![it, ("FROM", from)]));
        let probes = [
            ("peak_f32.wgsl", FMA_PROBE.source.to_string(), vec![it]),
            ("peak_l2.wgsl", L2_PROBE.source.to_string(), vec![it]),
            ("grid_sync.wgsl", with_grid_barrier(include_str!("grid_sync.wgsl")), vec![it, ("GROUPS", 132.0)]),
            (
                "stream.wgsl",
                with_grid_barrier(include_str!("stream.wgsl")),
                vec![("WORDS", 2048.0), ("GROUPS", 264.0), ("STAGES", 161.0)],
            ),
            (
                "mlp_fused.wgsl",
                with_grid_barrier(include_str!("mlp_fused.wgsl")),
                vec![("GROUPS", 264.0), ("FUSED", 1.0)],
            ),
            (
                "mlp_fused.wgsl, m coherent and staged",
                with_coherent_m(&with_grid_barrier(include_str!("mlp_fused.wgsl"))),
                vec![("GROUPS", 264.0), ("FUSED", 1.0), ("STAGED", 1.0)],
            ),
        ]
        .into_iter()
        .chain(steps);
        for (name, source, extra) in probes {
            let module = naga::front::wgsl::parse_str(&source).unwrap_or_else(|e| panic!("{name}: {e}"));
            let info = Validator::new(ValidationFlags::all(), caps)
                .validate(&module)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let constants: PipelineConstants = extra.iter().map(|&(k, v)| (k.to_string(), v)).collect();
            let stage = Some((naga::ShaderStage::Compute, "peak"));
            let (module, info) = naga::back::pipeline_constants::process_overrides(&module, &info, stage, &constants)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            naga::back::spv::write_vec(&module, &info, &Default::default(), None)
                .unwrap_or_else(|e| panic!("{name} {extra:?}: {e}"));
        }
    }
}
