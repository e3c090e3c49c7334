//! attend (with its prep) against the CPU twin over sequences of steps: head dims 8 … 256,
//! multi-row and single-row steps, rings that wrap and are laid out anew between steps,
//! exact full layers past any window, and O(1) layers sealed with and without a far span.

use dory::backend::{Backend, Layer};
use dory::cache::{Keys, Near, Rows};
use dory::config::{LayerKind, O1};
use dory::testing::rand_vec;
use dory::weights::DType;

use crate::common::{backends, check, config, devices, random_model, Io};

const BOUND: f64 = 1e-5;

/// Layer 0 of a block of one `kind`, with an empty cache laid out as `keys`.
fn layer<B: Backend>(b: &mut B, kind: LayerKind, keys: Keys) -> Layer<B::Cache> {
    Layer { index: 0, kind, keys, cache: b.cache(0).expect("cache"), sealed_at: None }
}

/// One step of one layer on either backend: lay the cache out, then attend (prep
/// included). Returns (q, z).
fn step<B: Io>(
    b: &mut B,
    c: &dory::Config,
    l: &mut Layer<B::Cache>,
    next: Option<Keys>,
    at: Rows,
    qkvg: &[f32],
    rotate: bool,
) -> (Vec<f32>, Vec<f32>) {
    if let Some(next) = next {
        let moves = l.keys.moves(&next, at.pos0);
        b.relayout(&mut l.cache, &next, at.end(), &moves).expect("relayout");
        l.keys = next;
    }
    let qd = c.q_width();
    let rope = dory::rope::table(c.rope_theta, c.head_dim, at.pos0, at.rows);
    let y = b.put(qkvg);
    let (mut q, mut z) = (b.poisoned(at.rows * qd), b.poisoned(at.rows * qd));
    b.attend(l, &mut z, &mut q, &y, at, rotate.then_some(&rope[..]));
    (b.get(&q, at.rows * qd), b.get(&z, at.rows * qd))
}

#[test]
fn exact_attention_matches_the_cpu() {
    for dev in devices() {
        for d in [8, 48, 64, 128, 256] {
            // A ring that wraps (window 5), one wider than most steps, and a full layer
            // with and without rotation.
            for (kind, window, rotate) in [
                (LayerKind::Sliding, 5, true),
                (LayerKind::Sliding, 100, true),
                (LayerKind::Full, 7, true),
                (LayerKind::Full, 7, false),
            ] {
                let name = if kind == LayerKind::Sliding { "sliding" } else { "full" };
                let c = config(4 * d, 2, d, 64, &[name], 1, window);
                let (_dir, model) = random_model(&c, d as u64, DType::F32);
                let (mut cpu, mut gpu) = backends(dev, &model);
                let first = Keys::for_step(kind, window, 1, None);
                let (mut lc, mut lg) = (layer(&mut cpu, kind, first), layer(&mut gpu, kind, first));
                let mut pos = 0;
                for (i, rows) in [5usize, 64, 1, 1, 70, 1, 3, 1].into_iter().enumerate() {
                    let at = Rows { pos0: pos, rows };
                    let next = Keys::for_step(kind, window, rows, None);
                    let y = rand_vec(rows * c.qkvg_width(), 1000 * d as u64 + i as u64);
                    let (qc, zc) = step(&mut cpu, &c, &mut lc, Some(next), at, &y, rotate);
                    let (qg, zg) = step(&mut gpu, &c, &mut lg, Some(next), at, &y, rotate);
                    let what = format!(
                        "{} {name} W {window} d {d} rotate {rotate} step {i} ({rows} rows at {pos})",
                        dev.describe()
                    );
                    check(&format!("{what}: q"), &qg, &qc, BOUND);
                    check(&format!("{what}: z"), &zg, &zc, BOUND);
                    pos += rows;
                }
            }
        }
    }
}

/// Single rows deep enough to be cut into dozens of chunks (1,100 keys: 33), which
/// combine.wgsl joins in slices of a head's dims, each over groups of chunks four at a
/// time: against the CPU, for heads it slices (128) and does not (48); and rows whose
/// chunks are cut to whole tiles (4,200 keys: 66 chunks of one tile of 64, not 64 of 66).
#[test]
fn deep_rows_join_many_chunks_as_the_cpu_does() {
    for dev in devices() {
        for (d, depth) in [(48, 1100), (128, 1100), (8, 4200)] {
            let c = config(4 * d, 2, d, 64, &["full"], 1, 7);
            let (_dir, model) = random_model(&c, 90 + d as u64, DType::F32);
            let (mut cpu, mut gpu) = backends(dev, &model);
            let keys = Keys::Full { sample: None };
            let (mut lc, mut lg) = (layer(&mut cpu, LayerKind::Full, keys), layer(&mut gpu, LayerKind::Full, keys));
            let mut pos = 0;
            for (i, rows) in [depth, 1, 1].into_iter().enumerate() {
                let at = Rows { pos0: pos, rows };
                let y = rand_vec(rows * c.qkvg_width(), 5000 + i as u64);
                let (qc, zc) = step(&mut cpu, &c, &mut lc, Some(keys), at, &y, true);
                let (qg, zg) = step(&mut gpu, &c, &mut lg, Some(keys), at, &y, true);
                let what = format!("{} d {d} step {i} ({rows} rows at {pos})", dev.describe());
                check(&format!("{what}: q"), &qg, &qc, BOUND);
                check(&format!("{what}: z"), &zg, &zc, BOUND);
                pos += rows;
            }
        }
    }
}

/// Values have no bound (spec §4): rows whose values span 2⁻²⁴ … 2²⁴ from position to
/// position, in prompts whose blocks see up to a few hundred of them, against the CPU
/// (attend_coop.wgsl scales each position's values by its own power of two).
#[test]
fn values_of_any_magnitude_keep_their_precision() {
    for dev in devices() {
        for (d, kind, window) in [(64, LayerKind::Full, 7), (48, LayerKind::Sliding, 100)] {
            let name = if kind == LayerKind::Sliding { "sliding" } else { "full" };
            let c = config(4 * d, 2, d, 64, &[name], 1, window);
            let (_dir, model) = random_model(&c, 70 + d as u64, DType::F32);
            let (mut cpu, mut gpu) = backends(dev, &model);
            let first = Keys::for_step(kind, window, 1, None);
            let (mut lc, mut lg) = (layer(&mut cpu, kind, first), layer(&mut gpu, kind, first));
            let mut pos = 0;
            for (i, rows) in [150usize, 170].into_iter().enumerate() {
                let at = Rows { pos0: pos, rows };
                let next = Keys::for_step(kind, window, rows, None);
                let mut y = rand_vec(rows * c.qkvg_width(), 7000 + i as u64);
                let v0 = c.q_width() + c.kv_width();
                for (r, row) in y.chunks_mut(c.qkvg_width()).enumerate() {
                    let scale = 2f32.powi(6 * ((pos + r) as i32 % 9 - 4));
                    row[v0..v0 + c.kv_width()].iter_mut().for_each(|v| *v *= scale);
                }
                let (qc, zc) = step(&mut cpu, &c, &mut lc, Some(next), at, &y, true);
                let (qg, zg) = step(&mut gpu, &c, &mut lg, Some(next), at, &y, true);
                let what = format!("{} {name} d {d} step {i} ({rows} rows at {pos})", dev.describe());
                check(&format!("{what}: q"), &qg, &qc, BOUND);
                check(&format!("{what}: z"), &zg, &zc, BOUND);
                pos += rows;
            }
        }
    }
}

#[test]
fn o1_attention_matches_the_cpu_with_and_without_a_far_span() {
    for dev in devices() {
        for (d, seal, landmarks) in [(8, 12, 4), (64, 12, 4), (128, 30, 4), (48, 40, 16)] {
            // Far span [3, p − 12]: empty when sealing at 12 (until position 15), not at 30 or 40.
            let o1 = O1 { sinks: 3, window: 12, landmarks, stride: 2, rect: true, rcond: 1e-4, seal_at: 11 };
            let c = config(4 * d, 2, d, 64, &["full"], 1, 7);
            let (_dir, model) = random_model(&c, 40 + d as u64, DType::F32);
            let (mut cpu, mut gpu) = backends(dev, &model);
            let sampled = Keys::Full { sample: Some(o1.stride) };
            let (mut lc, mut lg) =
                (layer(&mut cpu, LayerKind::Full, sampled), layer(&mut gpu, LayerKind::Full, sampled));
            let what = |s: &str| format!("{} o1 d {d} sealed at {seal}: {s}", dev.describe());
            // Before the seal: exact, keeping the sampled queries.
            let at = Rows { pos0: 0, rows: seal };
            let y = rand_vec(seal * c.qkvg_width(), 7);
            let (qc, zc) = step(&mut cpu, &c, &mut lc, Some(sampled), at, &y, true);
            let (qg, zg) = step(&mut gpu, &c, &mut lg, Some(sampled), at, &y, true);
            check(&what("q before"), &qg, &qc, BOUND);
            check(&what("z before"), &zg, &zc, BOUND);
            // The seal, from the CPU's export, after checking the GPU's.
            let (ec, eg) = (cpu.export(&lc.cache, seal).unwrap(), gpu.export(&lg.cache, seal).unwrap());
            check(&what("exported keys"), &eg.keys, &ec.keys, BOUND);
            check(&what("exported values"), &eg.values, &ec.values, 0.0);
            check(&what("exported queries"), &eg.queries, &ec.queries, BOUND);
            let lm = dory::nystrom::seal(&c, &o1, seal, &ec);
            let near = Near { sinks: o1.sinks, window: o1.window };
            let moves = lc.keys.moves(&Keys::Sealed(near), seal);
            cpu.seal(&mut lc.cache, &near, &moves, &lm).unwrap();
            gpu.seal(&mut lg.cache, &near, &moves, &lm).unwrap();
            (lc.keys, lg.keys) = (Keys::Sealed(near), Keys::Sealed(near));
            let mut far_seen = false;
            for p in seal..seal + 30 {
                if let Some(e) = near.leaving(p).filter(|_| p > seal) {
                    cpu.push(&mut lc.cache, &near, e);
                    gpu.push(&mut lg.cache, &near, e);
                }
                far_seen |= !near.far(p).is_empty();
                let y = rand_vec(c.qkvg_width(), 100 + p as u64);
                let at = Rows { pos0: p, rows: 1 };
                let (qc, zc) = step(&mut cpu, &c, &mut lc, None, at, &y, true);
                let (qg, zg) = step(&mut gpu, &c, &mut lg, None, at, &y, true);
                let far = if near.far(p).is_empty() { "no far span" } else { "far span" };
                check(&what(&format!("q at {p}")), &qg, &qc, BOUND);
                check(&what(&format!("z at {p} ({far})")), &zg, &zc, 1e-4);
            }
            assert!(far_seen);
            let (bc, bg) = (cpu.cache_bytes(&lc.cache), gpu.cache_bytes(&lg.cache));
            assert_eq!(bg, bc.next_multiple_of(16).max(bg));
        }
    }
}

/// The attention, then the out projection (`attend_out`), whose split keys the wgpu
/// backend joins on the way in to the projection: a decoded row's where its partials are
/// few (`Options::combine_bytes`), a prompt's where the tensor cores take the projection
/// (split.wgsl's join, as it cuts x's parts: f16 weights). Against the CPU's two ops, over
/// a prompt and then rows deep enough to be cut into several chunks (64 keys or more), for
/// head dims whose partials fit the join and d 256, whose stop fitting as the chunks grow,
/// in a full layer and a ring. Where a decoded row's join runs, it takes two dispatches
/// (attention and projection) where its own join would take three; it must have run where
/// it can. Then the MLP after them, whose residual reads the projection's output (at one
/// hidden width wider than the GPU's fused residual takes).
#[test]
fn attention_the_out_projection_and_the_mlp_match_the_cpu() {
    for dev in devices() {
        // Hidden widths of 4 d, and one wider than a decoded row's projection forms the
        // residual on the way in on the third test device (its `residual_max_k`, 1,024).
        for (d, hidden, kind, window, dtype) in [
            (8, 32, LayerKind::Full, 7, DType::F32),
            (48, 192, LayerKind::Full, 7, DType::F16),
            (48, 192, LayerKind::Sliding, 100, DType::F32),
            (128, 1160, LayerKind::Full, 7, DType::F16),
            (256, 1024, LayerKind::Full, 7, DType::F32),
        ] {
            let name = if kind == LayerKind::Sliding { "sliding" } else { "full" };
            let c = config(hidden, 2, d, 64, &[name], 1, window);
            let (_dir, model) = random_model(&c, 70 + d as u64, dtype);
            let (mut cpu, mut gpu) = backends(dev, &model);
            let first = Keys::for_step(kind, window, 70, None);
            let (mut lc, mut lg) = (layer(&mut cpu, kind, first), layer(&mut gpu, kind, first));
            let o = gpu.model().dev.kernels.options;
            // The join's two dispatches, then the MLP's two (a row of at most
            // `residual_max_k`: the residual formed by gate|up) or three.
            let joining = if o.fuse_residual { 4 } else { 5 };
            let mut joined = 0;
            let mut pos = 0;
            // At d 128 the rows go deep enough (≥ 160 keys: 5 chunks) that the join's
            // single lane a (head, dim) walks more chunks than it loads at once.
            let decoded = if d == 128 { 100 } else { 40 };
            for (i, rows) in std::iter::once(70).chain(std::iter::repeat_n(1, decoded)).enumerate() {
                let at = Rows { pos0: pos, rows };
                let next = Keys::for_step(kind, window, rows, None);
                let y = rand_vec(rows * c.qkvg_width(), 3000 + i as u64);
                let h = rand_vec(rows * c.hidden, 4000 + i as u64);
                let oc = out_step(&mut cpu, &c, &mut lc, next, at, (&y, &h));
                let before = gpu.dispatches();
                let og = out_step(&mut gpu, &c, &mut lg, next, at, (&y, &h));
                joined += usize::from(rows == 1 && pos >= 64 && gpu.dispatches() - before == joining);
                let what = format!("{} {name} d {d} {dtype:?} step {i} ({rows} rows at {pos})", dev.describe());
                for (part, (g, c)) in ["o", "the MLP's h", "the MLP's o"].into_iter().zip(og.iter().zip(&oc)) {
                    check(&format!("{what}: {part}"), g, c, BOUND);
                }
                pos += rows;
            }
            // Unless the options keep it off, or the single-row kernel (gemv1, which holds x
            // of k / 4 vec4s up to `xs`) takes the projection.
            if d <= 48 && o.combine_bytes > 0 && c.q_width() / 4 > o.gemv1.xs as usize {
                assert!(joined > 0, "{} d {d}: the out projection never joined the chunks", dev.describe());
            }
        }
    }
}

/// One step of `attend_out` on either backend, the cache laid out first, then the MLP
/// after it (whose residual reads h and the attention's o): o, then the MLP's h and o.
fn out_step<B: Io>(
    b: &mut B,
    c: &dory::Config,
    l: &mut Layer<B::Cache>,
    next: Keys,
    at: Rows,
    (qkvg, h): (&[f32], &[f32]),
) -> [Vec<f32>; 3] {
    let moves = l.keys.moves(&next, at.pos0);
    b.relayout(&mut l.cache, &next, at.end(), &moves).expect("relayout");
    l.keys = next;
    let rope = dory::rope::table(c.rope_theta, c.head_dim, at.pos0, at.rows);
    let (y, mut h) = (b.put(qkvg), b.put(h));
    let (qd, n) = (c.q_width(), at.rows * c.hidden);
    let (mut q, mut z, mut o) = (b.poisoned(at.rows * qd), b.poisoned(at.rows * qd), b.poisoned(n));
    b.attend_out(l, (&mut z, &mut o), &mut q, &y, at, Some(&rope[..]));
    let attended = b.get(&o, n);
    let (mut gu, mut m) = (b.poisoned(at.rows * 2 * c.ffn), b.poisoned(at.rows * c.ffn));
    b.mlp(l.index, &mut h, &mut o, &mut gu, &mut m, at.rows);
    [attended, b.get(&h, n), b.get(&o, n)]
}
