//! Whole models: the GPU's logits against the CPU's (spec §8: 1e-4 exact, 1e-3 in O(1)
//! mode after the seal), in prompts of several chunk sizes, decoding with early exit,
//! continued sessions, two sessions sharing one device and its weights, the shipped
//! model, and every golden fixture.

use dory::backend::Backend;
use dory::exit::Cap;
use dory::forward::Attention;
use dory::testing::fixtures::{cases, replay, Case};
use dory::weights::{DType, Stored};
use dory::{ExitRule, Forward, Model, Session, Want};
use dory_wgpu::{GpuModel, Wgpu};

use crate::common::{check, config, config_with, devices, random_model, random_model_as};

/// Early-exit rules whose decisions cannot flip between backends: always after pass 2, and
/// never (a confidence above 1).
const ALWAYS: ExitRule = ExitRule { criterion: dory::Criterion::Confidence, threshold: 0.0, min_passes: 2 };
const NEVER: ExitRule = ExitRule { criterion: dory::Criterion::Confidence, threshold: 2.0, min_passes: 1 };

fn cpu_session(model: &Model, chunk: usize) -> Session<dory::cpu::Cpu> {
    let b = dory::cpu::Cpu::new(&model.config, &model.weights);
    Session::new(Forward::new(b, &model.config, chunk).expect("forward"))
}

fn gpu_session(gm: &std::sync::Arc<GpuModel>, chunk: usize) -> Session<Wgpu> {
    dory_wgpu::session(gm, chunk).expect("session")
}

/// Feeds both sessions the same prompt and steps; compares every row's logits and the
/// passes. `bound(pos)` is the spec's bound at a position.
fn agree(
    what: &str,
    cpu: &mut Session<dory::cpu::Cpu>,
    gpu: &mut Session<Wgpu>,
    prompt: &[u32],
    steps: &[u32],
    bound: impl Fn(usize) -> f64,
) {
    let v = cpu.forward().config().vocab_size;
    let pos0 = cpu.position();
    let lc = cpu.prompt(prompt, false, Want::All).expect("cpu prompt").logits;
    let lg = gpu.prompt(prompt, false, Want::All).expect("gpu prompt").logits;
    for (r, (a, b)) in lg.chunks_exact(v).zip(lc.chunks_exact(v)).enumerate() {
        check(&format!("{what}: prompt row {r}"), a, b, bound(pos0 + r));
    }
    for &id in steps {
        let p = cpu.position();
        let (dc, dg) = (cpu.step(id).expect("cpu step"), gpu.step(id).expect("gpu step"));
        assert_eq!(dg.passes, dc.passes, "{what}: passes at {p}");
        check(&format!("{what}: step at {p} ({} passes)", dc.passes), &dg.logits, &dc.logits, bound(p));
    }
}

fn ids(n: usize, seed: u64) -> Vec<u32> {
    let mut r = dory::rng::Rng::new(seed);
    (0..n).map(|_| 2 + (r.next_u64() % 298) as u32).collect()
}

#[test]
fn random_models_agree_with_the_cpu() {
    // Early exit by rules whose decisions cannot flip between backends (always after
    // pass 2; never), so that every read-out and resume is compared.
    for dev in devices() {
        for (i, (layers, dtype, exit)) in [
            (&["sliding", "full"][..], Stored::Float(DType::F32), ExitRule::NONE),
            (&["full", "sliding", "sliding"][..], Stored::Float(DType::BF16), ALWAYS),
            (&["sliding"][..], Stored::Float(DType::F16), NEVER),
            (&["sliding", "full"][..], Stored::I8, ALWAYS),
        ]
        .into_iter()
        .enumerate()
        {
            let c = config(64, 2, 16, 96, layers, 3, 6);
            let (_dir, model) = random_model_as(&c, 20 + i as u64, dtype);
            let gm = GpuModel::new(dev.clone(), &model.config, &model.weights).expect("upload");
            for chunk in [1, 7, 64] {
                let mut cpu = cpu_session(&model, 64);
                let mut gpu = gpu_session(&gm, chunk);
                cpu.exit = exit;
                gpu.exit = exit;
                let what = format!("{} {layers:?} {dtype:?} chunk {chunk} exit {exit:?}", dev.describe());
                agree(&what, &mut cpu, &mut gpu, &ids(40, 1), &ids(12, 2), |_| 1e-4);
                // A later segment of the same session.
                agree(&format!("{what}, continued"), &mut cpu, &mut gpu, &ids(9, 3), &ids(5, 4), |_| 1e-4);
            }
        }
    }
}

#[test]
fn steps_recorded_ahead_run_or_are_dropped() {
    // A step records the next one ahead of its token; whatever comes instead (another
    // exit rule, a prompt, a reset) drops it unrun. A step whose rule the device tests is
    // read once, at its end, even where it leaves early: the next one is recorded ahead
    // there, whole. One whose rule the host tests records it at each read-out tested, up
    // to its own first test, dropped where the row goes on.
    for dev in devices() {
        let c = config(64, 2, 16, 96, &["sliding", "full"], 3, 6);
        let (_dir, model) = random_model(&c, 31, DType::F16);
        let gm = GpuModel::new(dev.clone(), &model.config, &model.weights).expect("upload");
        let mut cpu = cpu_session(&model, 64);
        let mut gpu = gpu_session(&gm, 64);
        let what = dev.describe();
        for (round, exit) in [ExitRule::NONE, NEVER, ExitRule::NONE, ALWAYS, NEVER].into_iter().enumerate() {
            (cpu.exit, gpu.exit) = (exit, exit);
            agree(&format!("{what} round {round}"), &mut cpu, &mut gpu, &ids(5, round as u64), &ids(4, 9), |_| 1e-4);
            let ahead = gpu.forward().recorded_ahead();
            assert_eq!(ahead.is_some(), gpu.forward().backend.holds(), "{what} round {round}: {ahead:?}");
            // Up to the host's first read: where the device tests the rule, the end or a
            // read-out tested before it (the recent tokens' cap).
            let on_host = !gpu.forward().backend.tests_exit();
            let first = (1..3).find(|&k| on_host && exit.tested(k, 3)).unwrap_or(3);
            let fits =
                |(pos, upto): (usize, usize)| pos == gpu.position() && (upto == first || !on_host && upto < first);
            assert!(ahead.is_none_or(fits), "{what} round {round}: ahead {ahead:?}");
        }
        // A new rule between two steps, with no prompt between them.
        for (i, exit) in [ExitRule::NONE, NEVER, NEVER, ExitRule::NONE, ALWAYS, ExitRule::NONE].into_iter().enumerate()
        {
            (cpu.exit, gpu.exit) = (exit, exit);
            let id = ids(1, 40 + i as u64)[0];
            let (dc, dg) = (cpu.step(id).unwrap(), gpu.step(id).unwrap());
            assert_eq!(dg.passes, dc.passes, "{what}: rule {i}");
            check(&format!("{what}: rule {i}"), &dg.logits, &dc.logits, 1e-4);
        }
        cpu.reset().unwrap();
        gpu.reset().unwrap();
        assert_eq!(gpu.forward().recorded_ahead(), None);
        agree(&format!("{what} after a reset"), &mut cpu, &mut gpu, &ids(3, 7), &ids(6, 8), |_| 1e-4);
        // Cleared, the GPU's caches keep their buffers (what they hold is never read), and
        // a context longer than the one they were sized for grows them.
        let held = gpu.forward().cache_bytes();
        cpu.clear().unwrap();
        gpu.clear().unwrap();
        assert_eq!((gpu.forward().recorded_ahead(), gpu.position()), (None, 0));
        assert_eq!(gpu.forward().cache_bytes(), held, "{what}: the buffers kept");
        agree(&format!("{what} after a clear"), &mut cpu, &mut gpu, &ids(40, 10), &ids(6, 11), |_| 1e-4);
    }
}

#[test]
fn a_benchmarks_cycle_reuses_the_caches_storage() {
    // `dory bench`'s repetition: cleared, a fill of W rows, a prompt (whose kept positions
    // stay in their ring slots), then decoded rows (which move them). The first repetition
    // allocates; the second takes the buffers the first let go, and agrees with the CPU.
    let Some(dev) = devices().first() else { return };
    let c = config(64, 2, 16, 96, &["sliding", "full"], 3, 6);
    let (_dir, model) = random_model(&c, 32, DType::F16);
    let gm = GpuModel::new(dev.clone(), &model.config, &model.weights).expect("upload");
    let mut cpu = cpu_session(&model, 64);
    let mut gpu = gpu_session(&gm, 64);
    let mut made = vec![];
    for rep in 0..2u64 {
        cpu.clear().unwrap();
        gpu.clear().unwrap();
        let what = format!("{} repetition {rep}", dev.describe());
        agree(&format!("{what}, fill"), &mut cpu, &mut gpu, &ids(6, 50 + rep), &[], |_| 1e-4);
        agree(&what, &mut cpu, &mut gpu, &ids(4, 60 + rep), &ids(3, 70 + rep), |_| 1e-4);
        made.push(gpu.forward().backend.cache_buffers_made());
    }
    assert!(made[0] > 0 && made[1] == made[0], "cache buffers made by each repetition's end: {made:?}");
}

#[test]
fn greedy_steps_run_on_the_device_token() {
    // A greedy decoder's steps run ahead on the device's own token; a step fed another
    // runs again, so every step agrees with the CPU either way. Under exit rules too, where
    // the device tests them (the step is then read once): rules whose decisions cannot flip
    // between backends (always after pass 2, never).
    for dev in devices() {
        let c = config(64, 2, 16, 96, &["sliding", "full"], 3, 6);
        let (_dir, model) = random_model(&c, 32, DType::F16);
        let gm = GpuModel::new(dev.clone(), &model.config, &model.weights).expect("upload");
        for exit in [ExitRule::NONE, ALWAYS, NEVER] {
            let mut cpu = cpu_session(&model, 64);
            let mut gpu = gpu_session(&gm, 64);
            (cpu.exit, gpu.exit) = (exit, exit);
            gpu.forward_mut().set_greedy(true);
            let what = format!("{} exit {exit}", dev.describe());
            let prompt = ids(5, 3);
            cpu.prompt(&prompt, false, Want::Last).unwrap();
            let mut logits = gpu.prompt(&prompt, false, Want::Last).unwrap().logits;
            let read_once = exit == ExitRule::NONE || dev.kernels.options.exit_on_device;
            for step in 0..12 {
                let greedy = dory::sampler::argmax(&logits);
                // Every fourth token is not the greedy one.
                let id = if step % 4 == 3 { (greedy + 1) % c.vocab_size as u32 } else { greedy };
                let (dc, dg) = (cpu.step(id).unwrap(), gpu.step(id).unwrap());
                check(&format!("{what}: step {step}"), &dg.logits, &dc.logits, 1e-4);
                assert_eq!(dg.passes, dc.passes, "{what}: step {step}");
                assert_eq!(dg.logits.len(), c.vocab_size, "{what}: the token is not among the logits");
                let ahead = gpu.forward().running_ahead();
                let runs_ahead = read_once && gpu.forward().backend.holds();
                assert_eq!(ahead, runs_ahead, "{what}: step {step} runs the next ahead");
                logits = dg.logits;
            }
        }
    }
}

#[test]
fn steps_recorded_to_fewer_passes_go_on_where_their_rows_do() {
    // A step whose rule the device tests, recorded to fewer than all its passes, runs the
    // rest where its row goes on past them; the step recorded after it is gated on it:
    // emptied on the device (a greedy decoder's, every fourth token here not the greedy
    // one) or dropped unrun, and recorded again. Every step misses (NEVER under caps 1 and
    // 2: the rest with a test, or only the last pass), none does (ALWAYS under 2), and the
    // recent tokens' cap misses once as the rule changes to one that needs more passes.
    let c = config(64, 2, 16, 96, &["sliding", "full"], 3, 6);
    let (_dir, model) = random_model(&c, 34, DType::F16);
    for dev in devices().iter().filter(|d| d.kernels.options.exit_on_device) {
        let gm = GpuModel::new(dev.clone(), &model.config, &model.weights).expect("upload");
        let runs = [
            (Cap::Fixed(1), [NEVER; 2], 1),
            (Cap::Fixed(2), [NEVER; 2], 2),
            (Cap::Fixed(2), [ALWAYS; 2], 2),
            (Cap::Recent(16), [ALWAYS, NEVER], 3),
        ];
        for (greedy, (cap, rules, upto)) in [false, true].into_iter().flat_map(|g| runs.map(|r| (g, r))) {
            let mut cpu = cpu_session(&model, 64);
            let mut gpu = gpu_session(&gm, 64);
            gpu.forward_mut().set_greedy(greedy);
            gpu.forward_mut().set_cap(cap);
            let what = format!("{} greedy {greedy} cap {cap:?} rules {rules:?}", dev.describe());
            let prompt = ids(5, 17);
            cpu.prompt(&prompt, false, Want::Last).unwrap();
            let mut logits = gpu.prompt(&prompt, false, Want::Last).unwrap().logits;
            for step in 0..16 {
                let exit = rules[step / 8];
                (cpu.exit, gpu.exit) = (exit, exit);
                let greedy = dory::sampler::argmax(&logits);
                let id = if step % 4 == 3 { (greedy + 1) % c.vocab_size as u32 } else { greedy };
                let (dc, dg) = (cpu.step(id).unwrap(), gpu.step(id).unwrap());
                check(&format!("{what}: step {step}"), &dg.logits, &dc.logits, 1e-4);
                assert_eq!(dg.passes, dc.passes, "{what}: step {step}");
                logits = dg.logits;
            }
            let ahead = gpu.forward().recorded_ahead().map(|a| a.1);
            assert_eq!(ahead, Some(upto), "{what}: the passes the next step is recorded to");
        }
    }
}

#[test]
fn o1_models_agree_with_the_cpu_across_the_seal() {
    for (i, dev) in devices().iter().enumerate() {
        let o1 = serde_json::json!({"o1": {"sinks": 2, "window": 8, "landmarks": 4, "stride": 2, "seal_at": 24}});
        let c = config_with(64, 2, 16, 96, &["sliding", "full"], 3, 6, o1);
        let (_dir, model) = random_model(&c, 5, DType::F32);
        let gm = GpuModel::new(dev.clone(), &model.config, &model.weights).expect("upload");
        let mut cpu = cpu_session(&model, 16);
        let mut gpu = gpu_session(&gm, 16);
        assert_eq!(gpu.forward().attention().name(), "o1");
        // The seal comes with the first step at or after 24; the far span fills later.
        let bound = |p: usize| if p < 24 { 1e-4 } else { 1e-3 };
        agree(&format!("{} o1", dev.describe()), &mut cpu, &mut gpu, &ids(20, 5), &ids(40, 6), bound);
        assert!(gpu.forward().sealed());
        // Cleared after the seal: the full layer exact again in the sealed layer's buffers,
        // grown, and sealed anew (on one device: the kernels are the same).
        if i == 0 {
            cpu.clear().unwrap();
            gpu.clear().unwrap();
            assert!(!gpu.forward().sealed());
            agree(&format!("{} o1 after a clear", dev.describe()), &mut cpu, &mut gpu, &ids(30, 7), &ids(4, 8), bound);
            assert!(gpu.forward().sealed());
        }
    }
}

#[test]
fn greedy_steps_run_ahead_after_the_seal() {
    // After the seal each step pushes the position leaving the window into the far field
    // as the caches are laid out; so a step recorded ahead pushes it even where the step is
    // dropped (every fourth token here is not the greedy one), and the step at that
    // position again must not push it twice. The step that seals reads the caches back and
    // is never recorded ahead; nor, after the seal, is one at a read-out the host tests,
    // whose push would reach the rest of the row before it. A later segment's rows run
    // ahead on the next row's token.
    let o1 = serde_json::json!({"o1": {"sinks": 2, "window": 8, "landmarks": 4, "stride": 2, "seal_at": 24}});
    let c = config_with(64, 2, 16, 96, &["sliding", "full"], 3, 6, o1);
    let (_dir, model) = random_model(&c, 33, DType::F16);
    for dev in devices() {
        let gm = GpuModel::new(dev.clone(), &model.config, &model.weights).expect("upload");
        for exit in [ExitRule::NONE, ALWAYS, NEVER] {
            let mut cpu = cpu_session(&model, 16);
            let mut gpu = gpu_session(&gm, 16);
            (cpu.exit, gpu.exit) = (exit, exit);
            gpu.forward_mut().set_greedy(true);
            let what = format!("{} exit {exit}", dev.describe());
            let prompt = ids(20, 12);
            cpu.prompt(&prompt, false, Want::Last).unwrap();
            let mut logits = gpu.prompt(&prompt, false, Want::Last).unwrap().logits;
            let read_once = exit == ExitRule::NONE || dev.kernels.options.exit_on_device;
            for step in 0..24 {
                let pos = gpu.position();
                let greedy = dory::sampler::argmax(&logits);
                let id = if step % 4 == 3 { (greedy + 1) % c.vocab_size as u32 } else { greedy };
                let (dc, dg) = (cpu.step(id).unwrap(), gpu.step(id).unwrap());
                let bound = if pos < 24 { 1e-4 } else { 1e-3 };
                check(&format!("{what}: position {pos}"), &dg.logits, &dc.logits, bound);
                assert_eq!(dg.passes, dc.passes, "{what}: position {pos}");
                let runs_ahead = read_once && gpu.forward().backend.holds() && pos + 1 != 24;
                assert_eq!(gpu.forward().running_ahead(), runs_ahead, "{what}: position {pos} runs the next ahead");
                logits = dg.logits;
            }
            assert!(gpu.forward().sealed(), "{what}");
            // A later segment's rows, decoding steps after the seal, each run ahead on the
            // next row's token: every row's logits, then the last alone, then steps again.
            agree(&format!("{what}, a later segment"), &mut cpu, &mut gpu, &ids(9, 13), &ids(2, 14), |_| 1e-3);
            let later = ids(6, 15);
            let (lc, lg) = (cpu.prompt(&later, false, Want::Last), gpu.prompt(&later, false, Want::Last));
            check(&format!("{what}, a later segment's last row"), &lg.unwrap().logits, &lc.unwrap().logits, 1e-3);
            for id in ids(3, 16) {
                let (dc, dg) = (cpu.step(id).unwrap(), gpu.step(id).unwrap());
                check(&format!("{what}: a step after it"), &dg.logits, &dc.logits, 1e-3);
            }
        }
    }
}

#[test]
fn sessions_share_a_device_and_its_weights() {
    for dev in devices() {
        let c = config(64, 2, 16, 96, &["sliding", "full"], 2, 5);
        let (_dir, model) = random_model(&c, 9, DType::F16);
        let gm = GpuModel::new(dev.clone(), &model.config, &model.weights).expect("upload");
        let (mut c1, mut c2) = (cpu_session(&model, 64), cpu_session(&model, 64));
        let (mut g1, mut g2) = (gpu_session(&gm, 64), gpu_session(&gm, 64));
        // Interleaved: each session's caches and scratch are its own.
        let v = c.vocab_size;
        let (p1, p2) = (ids(11, 1), ids(17, 2));
        check(
            "session 1 prompt",
            &g1.prompt(&p1, false, Want::Last).unwrap().logits,
            &c1.prompt(&p1, false, Want::Last).unwrap().logits,
            1e-4,
        );
        check(
            "session 2 prompt",
            &g2.prompt(&p2, false, Want::Last).unwrap().logits,
            &c2.prompt(&p2, false, Want::Last).unwrap().logits,
            1e-4,
        );
        for (i, id) in ids(8, 3).into_iter().enumerate() {
            let (a, b) = (g1.step(id).unwrap().logits, c1.step(id).unwrap().logits);
            check(&format!("session 1 step {i}"), &a, &b, 1e-4);
            let (a, b) = (g2.step(id).unwrap().logits, c2.step(id).unwrap().logits);
            check(&format!("session 2 step {i}"), &a, &b, 1e-4);
            assert_eq!(a.len(), v);
        }
        // The server runs sessions on threads.
        std::thread::scope(|s| {
            for seed in [4, 5] {
                let gm = gm.clone();
                let model = &model;
                s.spawn(move || {
                    let (mut g, mut c) = (gpu_session(&gm, 64), cpu_session(model, 64));
                    let p = ids(13, seed);
                    let (a, b) = (
                        g.prompt(&p, false, Want::Last).unwrap().logits,
                        c.prompt(&p, false, Want::Last).unwrap().logits,
                    );
                    check(&format!("thread {seed}"), &a, &b, 1e-4);
                });
            }
        });
    }
}

#[test]
fn the_shipped_model_agrees_in_exact_and_o1_mode() {
    let dir = dory::testing::repo().join("models/dory-tiny");
    if !dir.join("model.safetensors").exists() {
        eprintln!("SKIPPED: no shipped model in {}", dir.display());
        return;
    }
    let model = Model::load(&dir).expect("the shipped model");
    for dev in devices().iter().take(1) {
        let gm = GpuModel::new(dev.clone(), &model.config, &model.weights).expect("upload");
        let o1 = model.config.o1.clone().expect("dory-tiny has an o1 section");
        // Sealing as early as the spec allows (ns + stride·m), so that a short run crosses it.
        let seal_at = o1.sinks + o1.stride * o1.landmarks + 3;
        let text =
            model.tokenizer.encode("It was the best of times, it was the worst of times, it was the age of").unwrap();
        let prompt: Vec<u32> = text.iter().copied().cycle().take(seal_at - 4).collect();
        let steps: Vec<u32> = ids(24, 8).into_iter().map(|t| t % model.config.vocab_size as u32).collect();
        // Early exit by a rule whose decisions cannot flip between backends (always after
        // pass 2), so that every read-out and resume is compared; then no exit.
        let o1 = Attention::O1(dory::config::O1 { seal_at, ..o1.clone() });
        for (attention, exit) in
            [(Attention::Exact, ALWAYS), (o1.clone(), ALWAYS), (Attention::Exact, ExitRule::NONE), (o1, ExitRule::NONE)]
        {
            let mut cpu = cpu_session(&model, 64);
            let mut gpu = gpu_session(&gm, 64);
            cpu.forward_mut().set_attention(attention.clone()).unwrap();
            gpu.forward_mut().set_attention(attention.clone()).unwrap();
            (cpu.exit, gpu.exit) = (exit, exit);
            let sealed = matches!(attention, Attention::O1(_));
            let bound = |p: usize| if sealed && p >= seal_at { 1e-3 } else { 1e-4 };
            let what = format!("dory-tiny {} exit {exit:?} on {}", attention.name(), dev.describe());
            agree(&what, &mut cpu, &mut gpu, &prompt, &steps, bound);
            assert_eq!(gpu.forward().sealed(), sealed);
        }
    }
}

#[test]
fn every_fixture_replays_within_the_spec() {
    for dev in devices() {
        let mut replayed = 0;
        for dir in cases() {
            let case = Case::load(&dir);
            let model = Model::load(&dir.join("model")).expect("model");
            let gm = GpuModel::new(dev.clone(), &model.config, &model.weights).expect("upload");
            for chunk in [1, 7, 64] {
                let mut session = gpu_session(&gm, chunk);
                assert_eq!(session.forward().attention().name(), case.attention());
                let r = replay(&case, &mut session).expect("replay");
                println!("{} on {} chunk {chunk}: worst {:.3} of the bound", dir.display(), dev.describe(), r.worst);
                assert!(r.failures.is_empty(), "{} (chunk {chunk}):\n{}", dir.display(), r.failures.join("\n"));
            }
            replayed += 1;
        }
        assert_eq!(replayed, 7, "seven cases");
    }
}
