//! The row-wise ops and projections against the CPU twin.

use dory::backend::{Backend, Edge, Mat, Mix, Part};
use dory::testing::rand_vec;
use dory::weights::{DType, Stored};
use dory::Model;
use dory_wgpu::kernels::Options;
use dory_wgpu::{GpuDevice, GpuModel, Pick, Wgpu};

use crate::common::{backends, check, config, config_with, devices, random_model, random_model_as, Io};

/// f32 sums in another order: well inside spec §8's 1e-4 for whole models. Tensor cores
/// add with truncation (x split in two f16 parts keeps ~22 bits; what their f32 adds lose
/// was measured at 2.8e-6 on the H200 for k = 1032): their projections get 1e-5, and the
/// whole-model tests hold them to spec §8 as they hold everything else.
fn op_bound(dev: &GpuDevice) -> f64 {
    if dev.caps.coop {
        1e-5
    } else {
        2e-6
    }
}

#[test]
fn projections_and_logits_match_the_cpu() {
    for dev in devices() {
        let bound = op_bound(dev);
        // hidden 44 and ffn 60 are not multiples of 8 (padded rows); 1032 runs the
        // unrolled loop of the matrix-vector kernel with a tail. q8_0 needs multiples of
        // 32, and the device pads its rows to blocks of 128 (all but 384 here).
        let floats = [DType::F32, DType::F16, DType::BF16].map(Stored::Float);
        let shapes = [
            ((44, 1, 8, 60), &floats[..]),
            ((1032, 2, 48, 1800), &floats[..]),
            ((96, 1, 8, 160), &[Stored::I8][..]),
            ((1056, 2, 48, 1600), &[Stored::I8][..]),
        ];
        for ((hidden, kv, d, ffn), dtypes) in shapes {
            for &dtype in dtypes {
                let c = config(hidden, kv, d, ffn, &["sliding"], 1, 4);
                let (_dir, model) = random_model_as(&c, 7, dtype);
                let (mut cpu, mut gpu) = backends(dev, &model);
                let mats = [
                    (Mat::Qkvg(0), c.hidden, c.qkvg_width()),
                    (Mat::Out(0), c.q_width(), c.hidden),
                    (Mat::GateUp(0), c.hidden, 2 * c.ffn),
                    (Mat::Down(0), c.ffn, c.hidden),
                ];
                for (seed, &rows) in [1usize, 2, 4, 5, 8, 9, 64, 70].iter().enumerate() {
                    for &(mat, k, n) in &mats {
                        let x = rand_vec(rows * k, seed as u64);
                        let (xc, xg) = (cpu.put(&x), gpu.put(&x));
                        let (mut oc, mut og) = (cpu.poisoned(rows * n), gpu.poisoned(rows * n));
                        cpu.project(&mut oc, mat, &xc, rows);
                        gpu.project(&mut og, mat, &xg, rows);
                        let what = format!("{} {mat:?} {dtype:?} D {hidden} rows {rows}", dev.describe());
                        check(&what, &gpu.get(&og, rows * n), &cpu.get(&oc, rows * n), bound);
                    }
                    // The down projection with SwiGLU formed on the way in (fused for up to
                    // GEMV_ROWS rows on the GPU, apart on the CPU and for more rows).
                    let gu = rand_vec(rows * 2 * ffn, 50 + seed as u64);
                    let (guc, gug) = (cpu.put(&gu), gpu.put(&gu));
                    let (mut mc, mut mg) = (cpu.poisoned(rows * ffn), gpu.poisoned(rows * ffn));
                    let (mut oc, mut og) = (cpu.poisoned(rows * hidden), gpu.poisoned(rows * hidden));
                    cpu.swiglu_down(0, &mut oc, &guc, &mut mc, rows);
                    gpu.swiglu_down(0, &mut og, &gug, &mut mg, rows);
                    let what = format!("{} swiglu_down {dtype:?} D {hidden} rows {rows}", dev.describe());
                    check(&what, &gpu.get(&og, rows * hidden), &cpu.get(&oc, rows * hidden), bound);

                    // The head, from a row other than the first.
                    let first = 3;
                    let h = rand_vec((first + rows) * hidden, 100 + seed as u64);
                    let (hc, hg) = (cpu.put(&h), gpu.put(&h));
                    let v = c.vocab_size;
                    let (mut lc, mut lg) = (cpu.poisoned(rows * v), gpu.poisoned(rows * v));
                    cpu.logits(&mut lc, &hc, first, rows);
                    gpu.logits(&mut lg, &hg, first, rows);
                    let what = format!("{} logits {dtype:?} D {hidden} rows {rows}", dev.describe());
                    check(&what, &gpu.get(&lg, rows * v), &cpu.get(&lc, rows * v), bound);
                }
            }
        }
    }
}

/// Every projection's output, run on `gpu` for `rows` rows from fresh inputs: each matrix
/// alone, the down projection with SwiGLU, the residual before a projection, the MLP, the
/// head.
fn projections(gpu: &mut Wgpu, model: &Model, rows: usize) -> Vec<Vec<f32>> {
    let c = &model.config;
    let (d, f) = (c.hidden, c.ffn);
    let mut outs = Vec::new();
    let mut run = |gpu: &mut Wgpu, n: usize, op: &mut dyn FnMut(&mut Wgpu, &mut dory_wgpu::GpuBuf)| {
        let mut out = gpu.poisoned(n);
        op(gpu, &mut out);
        outs.push(gpu.get(&out, n));
    };
    let mats = [
        (Mat::Qkvg(0), d, c.qkvg_width()),
        (Mat::Out(0), c.q_width(), d),
        (Mat::GateUp(0), d, 2 * f),
        (Mat::Down(0), f, d),
    ];
    for (mat, k, n) in mats {
        let x = gpu.put(&rand_vec(rows * k, k as u64));
        run(gpu, rows * n, &mut |g, out| g.project(out, mat, &x, rows));
    }
    let gu = gpu.put(&rand_vec(rows * 2 * f, 1));
    let mut m = gpu.poisoned(rows * f);
    run(gpu, rows * d, &mut |g, out| g.swiglu_down(0, out, &gu, &mut m, rows));
    let (h, o) = (rand_vec(rows * d, 2), rand_vec(rows * d, 3));
    for (part, mat, n) in [(Part::Attn, Mat::GateUp(0), 2 * f), (Part::Mlp, Mat::Qkvg(0), c.qkvg_width())] {
        let (mut hg, og) = (gpu.put(&h), gpu.put(&o));
        run(gpu, rows * n, &mut |g, out| g.residual_project((0, part), &mut hg, &og, mat, out, rows));
    }
    let hg = gpu.put(&h);
    run(gpu, rows * c.vocab_size, &mut |g, out| g.logits(out, &hg, 0, rows));
    let (mut hg, mut og) = (gpu.put(&h), gpu.put(&o));
    let (mut gu, mut m) = (gpu.poisoned(rows * 2 * f), gpu.poisoned(rows * f));
    gpu.mlp(0, &mut hg, &mut og, &mut gu, &mut m, rows);
    outs.extend([gpu.get(&hg, rows * d), gpu.get(&og, rows * d)]);
    outs
}

/// A bf16 model held as f16 times a power of two (model.rs's `bf16_as_f16`, the tensor
/// cores' way in) projects exactly as held as stored, bit for bit, where both run the same
/// kernels in the same order: with the f16 in rows, as bf16 is (in tiles the tensor-core
/// GEMM and the matrix-vector kernels add in another order, and are held to the CPU by the
/// tests above; the device's defaults convert and tile where it has tensor cores).
#[test]
fn bf16_held_as_f16_projects_bit_for_bit() {
    for dev in devices() {
        let o = Options { tiles: false, ..dev.kernels.options };
        let flipped = dev.with_options(Options { bf16_as_f16: !o.bf16_as_f16, ..o }).expect("the same device");
        let c = config(1032, 2, 48, 1800, &["sliding"], 1, 4);
        let (_dir, model) = random_model(&c, 9, DType::BF16);
        let rows = [1, 4, 9, 70];
        let run = |d: GpuDevice| {
            let gm = GpuModel::new(std::sync::Arc::new(d), &model.config, &model.weights).expect("upload");
            let want = if gm.dev.kernels.options.bf16_as_f16 { DType::F16 } else { DType::BF16 };
            assert!([Mat::Qkvg(0), Mat::Out(0), Mat::GateUp(0), Mat::Down(0)]
                .iter()
                .all(|&m| gm.matrix(m).dtype == Stored::Float(want)));
            let mut gpu = Wgpu::new(&gm).expect("backend");
            rows.iter().map(|&r| projections(&mut gpu, &model, r)).collect::<Vec<_>>()
        };
        let (a, b) = (run(flipped), run(dev.with_options(o).expect("the same device")));
        for (r, (a, b)) in rows.iter().zip(a.iter().zip(&b)) {
            for (i, (a, b)) in a.iter().zip(b).enumerate() {
                let same = a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "{}: output {i} of {r} rows differs between bf16 and f16 held", dev.describe());
            }
        }
    }
}

#[test]
fn the_greedy_token_is_the_samplers_and_enters_the_loop() {
    // The device's choice for a greedy decoder's next step: sampler::argmax's, ties, NaNs,
    // signed zeros and infinities included, left after the logits, embedded, and the loop
    // entered on it (x, s and h); a vocabulary of 5,003, so that the kernel's walk takes its
    // logits eight at a time and then the rest.
    for dev in devices() {
        let bound = op_bound(dev);
        let c = config_with(40, 1, 8, 64, &["sliding"], 1, 4, serde_json::json!({ "vocab_size": 5003 }));
        let (_dir, model) = random_model(&c, 3, DType::BF16);
        let (mut cpu, mut gpu) = backends(dev, &model);
        let v = c.vocab_size;
        let mut cases = vec![rand_vec(v, 1), vec![0.5; v], vec![-f32::INFINITY; v], vec![f32::NAN; v]];
        let mut tie = rand_vec(v, 2);
        (tie[v - 3], tie[7], tie[v - 1]) = (9.0, 9.0, 9.0);
        let mut nan_first = rand_vec(v, 3);
        nan_first[0] = f32::NAN;
        let mut nans = rand_vec(v, 4).iter().map(|x| x - 10.0).collect::<Vec<f32>>();
        (nans[1], nans[5], nans[v - 2]) = (f32::NAN, -0.0, 0.0);
        let mut inf = rand_vec(v, 5);
        (inf[0], inf[v / 2]) = (f32::NEG_INFINITY, f32::INFINITY);
        cases.extend([tie, nan_first, nans, inf]);
        // The largest at each of the eight loads an invocation has in flight.
        for k in 0..8 {
            let mut peak = rand_vec(v, 10 + k as u64);
            peak[2048 + 256 * k + 3] = 9.0;
            cases.push(peak);
        }
        for (i, logits) in cases.into_iter().enumerate() {
            let want = dory::sampler::argmax(&logits);
            let mut lg = gpu.put(&[logits.as_slice(), &[f32::NAN]].concat());
            let d = c.hidden;
            let [mut hg, mut xg, mut sg] = [0, 1, 2].map(|_| gpu.poisoned(d));
            assert!(gpu.chooses(), "a GPU chooses");
            gpu.enter_greedy([&mut hg, &mut xg, &mut sg], &mut lg, v);
            let got = gpu.get(&lg, v + 1)[v].to_bits();
            assert_eq!(got, want, "{} case {i}: the greedy token", dev.describe());
            let [mut hc, mut xc, mut sc] = [0, 1, 2].map(|_| cpu.poisoned(d));
            cpu.embed(&mut xc, &[want]);
            cpu.mix(Mix::Enter, &mut hc, &xc, &mut sc, 1);
            let what = |b: &str| format!("{} case {i}: {b}", dev.describe());
            check(&what("its embedding"), &gpu.get(&xg, d), &cpu.get(&xc, d), 0.0);
            check(&what("s"), &gpu.get(&sg, d), &cpu.get(&sc, d), 0.0);
            check(&what("h"), &gpu.get(&hg, d), &cpu.get(&hc, d), bound);
        }
    }
}

#[test]
fn the_exit_test_on_the_device_is_the_hosts_and_skips_the_rest() {
    // exit.wgsl's verdict against exit.rs's statistic, for KL and confidence, with
    // thresholds a hundredth on either side of the statistic (a verdict may flip only
    // within rounding of it, spec §8): where it holds, the pass after the logits and the
    // greedy token's word, and the step's later ops skipped (a copy over the logits after it); where it does not, 0
    // there and the logits the next test's "before" (kept row 0).
    use dory::exit::{log_softmax, Criterion, ExitRule};
    for dev in devices() {
        let c = config(40, 1, 8, 64, &["sliding"], 1, 4);
        let (_dir, model) = random_model(&c, 3, DType::BF16);
        let (_cpu, mut gpu) = backends(dev, &model);
        for v in [7usize, 300, 5000] {
            let logits = rand_vec(v, v as u64);
            let before: Vec<f32> = logits.iter().zip(rand_vec(v, 9)).map(|(a, b)| a + 0.3 * b).collect();
            let (lp, lq) = (log_softmax(&logits), log_softmax(&before));
            for criterion in [Criterion::Kl, Criterion::Confidence] {
                let rule = |threshold| ExitRule { criterion, threshold, min_passes: 1 };
                let stat = rule(0.0).statistic(&lp, Some(&lq));
                for threshold in [stat * 0.99, stat * 1.01] {
                    let rule = rule(threshold);
                    let holds = rule.holds(stat);
                    let mut lg = gpu.put(&[logits.as_slice(), &[f32::NAN, f32::NAN]].concat());
                    let mut kept = gpu.put(&before);
                    let other = gpu.put(&vec![-1.0; v]);
                    // The kernel runs on every device; the option says whether steps take it.
                    assert_eq!(gpu.tests_exit(), dev.kernels.options.exit_on_device, "DORY_WGPU_EXIT says where");
                    gpu.exit_test(&rule, 3, &mut lg, &mut kept, v);
                    gpu.copy_rows(&mut lg, 0, &other, 0, 1, v);
                    let got = gpu.get(&lg, v + 2);
                    let what = format!("{} V {v} {criterion:?} at {threshold} (statistic {stat})", dev.describe());
                    assert_eq!(got[v + 1].to_bits(), if holds { 3 } else { 0 }, "{what}: the pass it left at");
                    assert!(got[v].is_nan(), "{what}: the greedy token's word untouched");
                    let after = if holds { &logits } else { &vec![-1.0; v] };
                    assert_eq!(&got[..v], after.as_slice(), "{what}: the ops after it");
                    let want_kept = if holds { &before } else { &logits };
                    assert_eq!(&gpu.get(&kept, v), want_kept, "{what}: the read-out kept");
                }
            }
        }
    }
}

#[test]
fn embed_mix_residual_swiglu_and_copies_match_the_cpu() {
    for dev in devices() {
        let bound = op_bound(dev);
        for (hidden, ffn, dtype) in [(44, 60, DType::BF16), (1032, 1792, DType::F16), (48, 96, DType::F32)] {
            let c = config(hidden, 1, 8, ffn, &["sliding"], 1, 4);
            let (_dir, model) = random_model(&c, 3, dtype);
            let (mut cpu, mut gpu) = backends(dev, &model);
            let name = |op: &str, rows: usize| format!("{} {op} {dtype:?} D {hidden} rows {rows}", dev.describe());
            for (seed, rows) in [1usize, 5, 64].into_iter().enumerate() {
                let seed = 10 * seed as u64;
                let ids: Vec<u32> = (0..rows).map(|i| ((i * 37 + 11) % c.vocab_size) as u32).collect();
                let (mut xc, mut xg) = (cpu.poisoned(rows * hidden), gpu.poisoned(rows * hidden));
                cpu.embed(&mut xc, &ids);
                gpu.embed(&mut xg, &ids);
                check(&name("embed", rows), &gpu.get(&xg, rows * hidden), &cpu.get(&xc, rows * hidden), 0.0);
                // The embedding and the loop's entry (one dispatch for one row on the GPU).
                let n = rows * hidden;
                let [mut hc, mut xc, mut sc] = [0, 1, 2].map(|_| cpu.poisoned(n));
                let [mut hg, mut xg, mut sg] = [0, 1, 2].map(|_| gpu.poisoned(n));
                cpu.enter([&mut hc, &mut xc, &mut sc], &ids);
                gpu.enter([&mut hg, &mut xg, &mut sg], &ids);
                check(&name("enter: x", rows), &gpu.get(&xg, n), &cpu.get(&xc, n), 0.0);
                check(&name("enter: s", rows), &gpu.get(&sg, n), &cpu.get(&sc, n), 0.0);
                check(&name("enter: h", rows), &gpu.get(&hg, n), &cpu.get(&hc, n), bound);

                for mix in [Mix::Enter, Mix::Between, Mix::Leave, Mix::ReadOut, Mix::Resume] {
                    let (h, x, s) = (
                        rand_vec(rows * hidden, seed),
                        rand_vec(rows * hidden, seed + 1),
                        rand_vec(rows * hidden, seed + 2),
                    );
                    let (mut hc, xc, mut sc) = (cpu.put(&h), cpu.put(&x), cpu.put(&s));
                    let (mut hg, xg, mut sg) = (gpu.put(&h), gpu.put(&x), gpu.put(&s));
                    cpu.mix(mix, &mut hc, &xc, &mut sc, rows);
                    gpu.mix(mix, &mut hg, &xg, &mut sg, rows);
                    let n = rows * hidden;
                    check(&name(&format!("mix {mix:?} h"), rows), &gpu.get(&hg, n), &cpu.get(&hc, n), bound);
                    check(&name(&format!("mix {mix:?} s"), rows), &gpu.get(&sg, n), &cpu.get(&sc, n), bound);
                }

                // A pass's last residual and the edge after it (one dispatch on the GPU).
                for (part, mix) in [(Part::Mlp, Mix::Between), (Part::Attn, Mix::Leave), (Part::Mlp, Mix::ReadOut)] {
                    let (h, o) = (rand_vec(rows * hidden, seed + 5), rand_vec(rows * hidden, seed + 6));
                    let (x, s) = (rand_vec(rows * hidden, seed + 1), rand_vec(rows * hidden, seed + 2));
                    let (mut hc, oc, xc, mut sc) = (cpu.put(&h), cpu.put(&o), cpu.put(&x), cpu.put(&s));
                    let (mut hg, og, xg, mut sg) = (gpu.put(&h), gpu.put(&o), gpu.put(&x), gpu.put(&s));
                    cpu.residual_mix((0, part), &mut hc, &oc, Edge { mix, x: &xc, s: &mut sc }, rows);
                    gpu.residual_mix((0, part), &mut hg, &og, Edge { mix, x: &xg, s: &mut sg }, rows);
                    let n = rows * hidden;
                    let what = |b: &str| name(&format!("residual_mix {part:?} {mix:?} {b}"), rows);
                    check(&what("h"), &gpu.get(&hg, n), &cpu.get(&hc, n), bound);
                    check(&what("s"), &gpu.get(&sg, n), &cpu.get(&sc, n), bound);
                }

                // A pass closed by the next pass's first projection (fused for one row where
                // the options say), twice, so that the GPU's h changes buffers in between.
                let (h, o) = (rand_vec(n, seed + 5), rand_vec(n, seed + 6));
                let (x, s) = (rand_vec(n, seed + 1), rand_vec(n, seed + 2));
                let (oc, xc, og, xg) = (cpu.put(&o), cpu.put(&x), gpu.put(&o), gpu.put(&x));
                let [mut hc, mut sc] = [cpu.put(&h), cpu.put(&s)];
                let [mut hg, mut sg] = [gpu.put(&h), gpu.put(&s)];
                let (width, mix) = (c.qkvg_width(), Mix::Between);
                for round in 0..2 {
                    let (mut pc, mut pg) = (cpu.poisoned(rows * width), gpu.poisoned(rows * width));
                    let (ec, eg) = (Edge { mix, x: &xc, s: &mut sc }, Edge { mix, x: &xg, s: &mut sg });
                    cpu.residual_mix_project((0, Part::Mlp), &mut hc, &oc, ec, Mat::Qkvg(0), &mut pc, rows);
                    gpu.residual_mix_project((0, Part::Mlp), &mut hg, &og, eg, Mat::Qkvg(0), &mut pg, rows);
                    let what = |b: &str| name(&format!("pass closed by the next, round {round}: {b}"), rows);
                    check(&what("h"), &gpu.get(&hg, n), &cpu.get(&hc, n), bound);
                    check(&what("s"), &gpu.get(&sg, n), &cpu.get(&sc, n), bound);
                    check(&what("out"), &gpu.get(&pg, rows * width), &cpu.get(&pc, rows * width), bound);
                }

                for part in [Part::Attn, Part::Mlp] {
                    let (h, o) = (rand_vec(rows * hidden, seed + 3), rand_vec(rows * hidden, seed + 4));
                    let (mut hc, oc) = (cpu.put(&h), cpu.put(&o));
                    let (mut hg, og) = (gpu.put(&h), gpu.put(&o));
                    cpu.residual(0, part, &mut hc, &oc, rows);
                    gpu.residual(0, part, &mut hg, &og, rows);
                    let n = rows * hidden;
                    check(&name(&format!("residual {part:?}"), rows), &gpu.get(&hg, n), &cpu.get(&hc, n), bound);
                    // The residual and the projection after it (fused for one row on the GPU),
                    // twice, so that the GPU's hidden state has changed buffers in between.
                    let (mut hc, mut hg) = (cpu.put(&h), gpu.put(&h));
                    let mat = if part == Part::Attn { Mat::GateUp(0) } else { Mat::Qkvg(0) };
                    let width = if part == Part::Attn { 2 * ffn } else { c.qkvg_width() };
                    for round in 0..2 {
                        let (mut pc, mut pg) = (cpu.poisoned(rows * width), gpu.poisoned(rows * width));
                        cpu.residual_project((0, part), &mut hc, &oc, mat, &mut pc, rows);
                        gpu.residual_project((0, part), &mut hg, &og, mat, &mut pg, rows);
                        let what = |x: &str| name(&format!("residual_project {part:?} round {round}: {x}"), rows);
                        check(&what("h"), &gpu.get(&hg, n), &cpu.get(&hc, n), bound);
                        check(&what("out"), &gpu.get(&pg, rows * width), &cpu.get(&pc, rows * width), bound);
                    }
                }

                // The MLP after the attention (SwiGLU formed where gate and up meet, for one
                // row on the GPU), twice, so that the GPU's hidden state has changed buffers
                // in between.
                let (h, o) = (rand_vec(rows * hidden, seed + 7), rand_vec(rows * hidden, seed + 8));
                let (mut hc, mut oc) = (cpu.put(&h), cpu.put(&o));
                let (mut hg, mut og) = (gpu.put(&h), gpu.put(&o));
                let (mut guc, mut gug) = (cpu.poisoned(rows * 2 * ffn), gpu.poisoned(rows * 2 * ffn));
                let (mut mc, mut mg) = (cpu.poisoned(rows * ffn), gpu.poisoned(rows * ffn));
                let n = rows * hidden;
                for round in 0..2 {
                    cpu.mlp(0, &mut hc, &mut oc, &mut guc, &mut mc, rows);
                    gpu.mlp(0, &mut hg, &mut og, &mut gug, &mut mg, rows);
                    let what = |x: &str| name(&format!("mlp round {round}: {x}"), rows);
                    check(&what("h"), &gpu.get(&hg, n), &cpu.get(&hc, n), bound);
                    check(&what("out"), &gpu.get(&og, n), &cpu.get(&oc, n), bound);
                }
                // The residual that closes the MLP with the next q|k|v|gate (fused for one
                // row of at most `residual_max_k` on the GPU), reading the MLP's outputs.
                let width = c.qkvg_width();
                let (mut pc, mut pg) = (cpu.poisoned(rows * width), gpu.poisoned(rows * width));
                cpu.residual_project((0, Part::Mlp), &mut hc, &oc, Mat::Qkvg(0), &mut pc, rows);
                gpu.residual_project((0, Part::Mlp), &mut hg, &og, Mat::Qkvg(0), &mut pg, rows);
                let what = |x: &str| name(&format!("residual_project after the mlp: {x}"), rows);
                check(&what("h"), &gpu.get(&hg, n), &cpu.get(&hc, n), bound);
                check(&what("out"), &gpu.get(&pg, rows * width), &cpu.get(&pc, rows * width), bound);

                let gu = rand_vec(rows * 2 * ffn, seed + 5);
                let (guc, gug) = (cpu.put(&gu), gpu.put(&gu));
                let (mut mc, mut mg) = (cpu.poisoned(rows * ffn), gpu.poisoned(rows * ffn));
                cpu.swiglu(0, &mut mc, &guc, rows);
                gpu.swiglu(0, &mut mg, &gug, rows);
                check(&name("swiglu", rows), &gpu.get(&mg, rows * ffn), &cpu.get(&mc, rows * ffn), bound);

                // Rows 2.. of a source into rows 1.. of a poisoned destination.
                let src = rand_vec((rows + 2) * hidden, seed + 6);
                let (sc, sg) = (cpu.put(&src), gpu.put(&src));
                let (mut dc, mut dg) = (cpu.poisoned((rows + 1) * hidden), gpu.poisoned((rows + 1) * hidden));
                cpu.copy_rows(&mut dc, 1, &sc, 2, rows, hidden);
                gpu.copy_rows(&mut dg, 1, &sg, 2, rows, hidden);
                let (got, want) = (gpu.get(&dg, (rows + 1) * hidden), cpu.get(&dc, (rows + 1) * hidden));
                assert!(got[..hidden].iter().all(|x| x.is_nan()), "copy_rows wrote outside its rows");
                check(&name("copy_rows", rows), &got[hidden..], &want[hidden..], 0.0);
            }
        }
    }
}

/// q8_0's kernels are built only where a q8_0 model goes: its upload onto a device without
/// them builds them, and a q8_0 matrix alone is refused there.
#[test]
fn q8_0_kernels_are_built_where_a_q8_0_model_goes() {
    let Some(dev) = devices().first() else { return };
    let bare = std::sync::Arc::new(dev.with_options(Options { q8: false, ..dev.kernels.options }).expect("rebuilt"));
    let c = config(96, 1, 8, 160, &["sliding"], 1, 4);
    let (_dir, model) = random_model_as(&c, 7, Stored::I8);
    let gm = GpuModel::new(bare.clone(), &model.config, &model.weights).expect("upload");
    assert!(gm.dev.kernels.options.q8 && !bare.kernels.options.q8);
    let rows = [dory_wgpu::hooks::Q8Rows { n: 1, k: 32, values: &[1; 32], scales: vec![0.5] }];
    let refused = dory_wgpu::hooks::upload_q8(&bare, "q", &rows).err().expect("refused");
    assert!(refused.to_string().contains("without their kernels"), "{refused}");
    // A device opened for the model builds them at once (the CLI's way): no rebuild.
    let adapter = dory_wgpu::choose(Pick::Any).expect("the adapter the tests run on");
    let opened = std::sync::Arc::new(GpuDevice::from_adapter_for(adapter, &model.config).expect("opened"));
    let gm = GpuModel::new(opened.clone(), &model.config, &model.weights).expect("upload");
    assert!(opened.kernels.options.q8 && std::sync::Arc::ptr_eq(&gm.dev, &opened));
}

/// q8_tiles.wgsl copies a slice of a q8_0 matrix's rows in f16 where the tensor cores read
/// it: each weight times 2^q8_shift as hi (its top 11 bits) and lo (the rest), each row
/// [hi | lo] in 16 × 16 tiles, rows past the part zeros. Bit for bit, on every adapter
/// (only those with tensor cores multiply the copy, in the projection tests).
#[test]
fn q8_0_rows_are_copied_in_f16_where_the_tensor_cores_read_them() {
    use dory_wgpu::hooks::{q8_tiles, upload_q8, Q8Rows, Recorder};
    let Some(dev) = devices().first() else { return };
    let (n, k) = (37, 96);
    let values: Vec<u8> = rand_vec(n * k, 3).iter().map(|v| (v * 127.0).round() as i8 as u8).collect();
    // Scales an f16 holds (as the format stores them), spread over three binades.
    let scales: Vec<f32> =
        rand_vec(n * k / 32, 4).iter().map(|v| half::f16::from_f32(1e-3 * 2f32.powf(3.0 * v)).to_f32()).collect();
    let m = upload_q8(dev, "w", &[Q8Rows { n, k, values: &values, scales: scales.clone() }]).expect("upload");
    let weight = |j: usize, i: usize| f32::from(values[j * k + i] as i8) * scales[(j * k + i) / 32];
    let largest = (0..n * k).map(|e| weight(e / k, e % k).abs()).fold(0f32, f32::max);
    let scale = 2f32.powi(m.q8_shift);
    assert!((16384.0..32768.0).contains(&(largest * scale)), "shift {} for {largest}", m.q8_shift);
    let mut rec = Recorder::new(dev.clone()).expect("recorder");
    for (j0, slice) in [(0, 64), (16, 16), (32, 16)] {
        let rows = slice.min(n - j0);
        let copy = q8_tiles(&mut rec, &m, &m.parts[0], j0, rows).expect("copied");
        let bands = rows.div_ceil(16);
        let got = rec.submit(Some((&copy, (bands * 16 * 2 * k * 2) as u64))).expect("read").expect("words");
        let half = |e: usize| (got[e / 2] >> (16 * (e % 2))) as u16;
        for (band, r, c) in (0..bands).flat_map(|b| (0..16).flat_map(move |r| (0..2 * k).map(move |c| (b, r, c)))) {
            let j = j0 + 16 * band + r;
            let v = if j < n { weight(j, c % k) * scale } else { 0.0 };
            let hi = f32::from_bits(v.to_bits() & 0xffff_e000);
            let want = half::f16::from_f32(if c < k { hi } else { v - hi });
            let at = band * 16 * 2 * k + (c / 16) * 256 + r * 16 + c % 16;
            assert_eq!(half(at), want.to_bits(), "row {j} input {c} (slice from {j0}): want {want}");
        }
    }
}
