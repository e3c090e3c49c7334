//! Each CPU op against a naive f64 formula, on fresh random inputs, with outputs
//! poisoned (NaN) before each run, at several shapes.

#![allow(clippy::too_many_arguments)]

mod common;

use dory::backend::{Backend, Layer, Mat, Mix, Part};
use dory::cache::{Keys, Rows};
use dory::cpu::Cpu;
use dory::testing::{rand_vec, rel_err};
use dory::{LayerKind, Model};

fn norm64(x: &[f64], eps: f64) -> Vec<f64> {
    let r = 1.0 / (x.iter().map(|v| v * v).sum::<f64>() + eps).sqrt();
    x.iter().map(|v| v * r).collect()
}

fn w64(m: &Model, name: &str) -> Vec<f64> {
    m.weights.get(name).to_f32().into_iter().map(f64::from).collect()
}

fn poison(n: usize) -> Vec<f32> {
    vec![f32::NAN; n]
}

fn f64s(x: &[f32]) -> Vec<f64> {
    x.iter().map(|&v| v as f64).collect()
}

/// (kv_heads, head_dim, window) shapes.
const SHAPES: [(usize, usize, usize); 3] = [(1, 8, 3), (2, 16, 5), (1, 48, 7)];

#[test]
fn mix_modes() {
    let c = common::config(&["sliding"], 2, 4, 1, 8);
    let (_d, m) = common::random_model(&c, 1);
    let mut b = Cpu::new(&m.config, &m.weights);
    let (d, rows, eps) = (c.hidden, 5, c.eps as f64);
    for (seed, mix) in [Mix::Enter, Mix::Between, Mix::Leave, Mix::ReadOut, Mix::Resume].into_iter().enumerate() {
        let (h0, x, s0) = (
            rand_vec(rows * d, seed as u64),
            rand_vec(rows * d, 50 + seed as u64),
            rand_vec(rows * d, 90 + seed as u64),
        );
        let (mut h, mut s) = (h0.clone(), s0.clone());
        b.mix(mix, &mut h, &x, &mut s, rows);
        for r in 0..rows {
            let (h0, x, s0) = (f64s(&h0[r * d..][..d]), f64s(&x[r * d..][..d]), f64s(&s0[r * d..][..d]));
            let add = |a: &[f64], b: &[f64]| -> Vec<f64> { a.iter().zip(b).map(|(p, q)| p + q).collect() };
            let (want_h, want_s) = match mix {
                Mix::Enter => (norm64(&add(&x, &x), eps), x.clone()),
                Mix::Between => (norm64(&add(&norm64(&h0, eps), &x), eps), norm64(&h0, eps)),
                Mix::Leave => (norm64(&h0, eps), s0.clone()),
                Mix::ReadOut => (norm64(&h0, eps), norm64(&h0, eps)),
                Mix::Resume => (norm64(&add(&s0, &x), eps), s0.clone()),
            };
            assert!(rel_err(&h[r * d..][..d], &want_h) < 1e-6, "{mix:?} h");
            assert!(rel_err(&s[r * d..][..d], &want_s) < 1e-6, "{mix:?} s");
        }
    }
}

#[test]
fn projections_residual_swiglu_and_logits() {
    for (i, &(kv, hd, w)) in SHAPES.iter().enumerate() {
        let c = common::config(&["sliding", "full"], 2, w, kv, hd);
        let (_d, m) = common::random_model(&c, 2 + i as u64);
        let mut b = Cpu::new(&m.config, &m.weights);
        for rows in [1, 5, 64] {
            let seed = (i * 100 + rows) as u64;
            let h = rand_vec(rows * c.hidden, seed);
            // Projections: out = x · Wᵀ with the fused weights in spec order.
            let checks = [
                (Mat::Qkvg(1), vec!["attn.q", "attn.k", "attn.v", "attn.gate"], c.hidden),
                (Mat::Out(0), vec!["attn.out"], c.q_width()),
                (Mat::GateUp(1), vec!["mlp.gate", "mlp.up"], c.hidden),
                (Mat::Down(0), vec!["mlp.down"], c.ffn),
            ];
            for (mat, names, k) in checks {
                let layer = match mat {
                    Mat::Qkvg(l) | Mat::Out(l) | Mat::GateUp(l) | Mat::Down(l) => l,
                };
                let wt: Vec<f64> = names.iter().flat_map(|n| w64(&m, &format!("layers.{layer}.{n}"))).collect();
                let n = wt.len() / k;
                let x = rand_vec(rows * k, seed + 7);
                let mut out = poison(rows * n);
                b.project(&mut out, mat, &x, rows);
                let want: Vec<f64> =
                    (0..rows * n).map(|t| (0..k).map(|e| x[t / n * k + e] as f64 * wt[t % n * k + e]).sum()).collect();
                assert!(rel_err(&out, &want) < 1e-5, "{mat:?} rows {rows}");
            }
            // The residual, both parts.
            for (part, name) in [(Part::Attn, "attn.alpha"), (Part::Mlp, "mlp.alpha")] {
                let o = rand_vec(rows * c.hidden, seed + 3);
                let alpha = w64(&m, &format!("layers.0.{name}"));
                let mut got = h.clone();
                b.residual(0, part, &mut got, &o, rows);
                for r in 0..rows {
                    let d = c.hidden;
                    let (nh, no) = (norm64(&f64s(&h[r * d..][..d]), 1e-6), norm64(&f64s(&o[r * d..][..d]), 1e-6));
                    let y: Vec<f64> = (0..d).map(|e| nh[e] + alpha[e] * (no[e] - nh[e])).collect();
                    assert!(rel_err(&got[r * d..][..d], &norm64(&y, 1e-6)) < 1e-6);
                }
            }
            // SwiGLU.
            let f = c.ffn;
            let gu = rand_vec(rows * 2 * f, seed + 4);
            let mut out = poison(rows * f);
            b.swiglu(1, &mut out, &gu, rows);
            let (gs, us) = (w64(&m, "layers.1.mlp.gate_scale"), w64(&m, "layers.1.mlp.up_scale"));
            let want: Vec<f64> = (0..rows * f)
                .map(|t| {
                    let (r, j) = (t / f, t % f);
                    let a = gu[r * 2 * f + j] as f64 * gs[j];
                    a / (1.0 + (-a).exp()) * gu[r * 2 * f + f + j] as f64 * us[j]
                })
                .collect();
            assert!(rel_err(&out, &want) < 1e-6);
            // Logits of rows 1.. (the first skipped).
            let v = c.vocab_size;
            let sel = rows.saturating_sub(1).max(1);
            let first = rows - sel;
            let mut out = poison(sel * v);
            b.logits(&mut out, &h, first, sel);
            let (head, hs) = (w64(&m, "head"), w64(&m, "head_scale"));
            let want: Vec<f64> = (0..sel * v)
                .map(|t| {
                    hs[t % v]
                        * (0..c.hidden)
                            .map(|e| head[t % v * c.hidden + e] * h[(first + t / v) * c.hidden + e] as f64)
                            .sum::<f64>()
                })
                .collect();
            assert!(rel_err(&out, &want) < 1e-5);
        }
    }
}

/// Prep then attend for `rows` rows at `pos0`, on a cache that already holds the
/// positions before (random keys and values written through prep), against the
/// formulas of spec §4.
fn check_attention(
    kind: LayerKind,
    rope_full: bool,
    kv: usize,
    hd: usize,
    w: usize,
    pos0: usize,
    rows: usize,
    seed: u64,
) {
    let mut c = common::config(&["sliding", "full"], 2, w, kv, hd);
    c.rope_full = rope_full;
    let (_d, m) = common::random_model(&c, seed);
    let layer = if kind == LayerKind::Sliding { 0 } else { 1 };
    let mut b = Cpu::new(&m.config, &m.weights);
    let cache = b.cache(layer).unwrap();
    let mut l = Layer { index: layer, kind, keys: Keys::for_step(kind, w, 1, None), cache, sealed_at: None };
    let width = c.qkvg_width();
    let (qd, kd, d, eps) = (c.q_width(), c.kv_width(), hd, c.eps as f64);
    // Earlier positions one at a time (single-row steps), then the step under test.
    let mut history: Vec<(Vec<f32>, usize)> = vec![];
    let run = |b: &mut Cpu, l: &mut Layer<dory::cpu::CpuCache>, at: Rows, y: &[f32]| -> (Vec<f32>, Vec<f32>) {
        let next = Keys::for_step(kind, w, at.rows, None);
        let moves = l.keys.moves(&next, at.pos0);
        b.relayout(&mut l.cache, &next, at.end(), &moves).unwrap();
        l.keys = next;
        let rotate = kind == LayerKind::Sliding || rope_full;
        let rope = dory::rope::table(c.rope_theta, d, at.pos0, at.rows);
        let (mut q, mut z) = (poison(at.rows * qd), poison(at.rows * qd));
        b.attend(l, &mut z, &mut q, &y.to_vec(), at, rotate.then_some(&rope[..]));
        (q, z)
    };
    for p in 0..pos0 {
        let y = rand_vec(width, seed * 1000 + p as u64);
        run(&mut b, &mut l, Rows { pos0: p, rows: 1 }, &y);
        history.push((y, p));
    }
    let y = rand_vec(rows * width, seed * 7 + 1);
    let (q, z) = run(&mut b, &mut l, Rows { pos0, rows }, &y);
    for r in 0..rows {
        history.push((y[r * width..][..width].to_vec(), pos0 + r));
    }
    // The reference: rotate, normalise, scale; softmax over the visible positions.
    let rot = |x: &[f64], p: usize| -> Vec<f64> {
        if kind == LayerKind::Full && !rope_full {
            return x.to_vec();
        }
        let t = dory::rope::table(c.rope_theta, d, p, 1);
        (0..d)
            .map(|i| {
                if i < d / 2 {
                    x[i] * t[i] as f64 - x[i + d / 2] * t[d / 2 + i] as f64
                } else {
                    x[i] * t[i - d / 2] as f64 + x[i - d / 2] * t[i] as f64
                }
            })
            .collect()
    };
    let qs = w64(&m, &format!("layers.{layer}.attn.q_scale"));
    let gs = w64(&m, &format!("layers.{layer}.attn.gate_scale"));
    let key = |p: usize, ch: usize| norm64(&rot(&f64s(&history[p].0[qd + ch * d..][..d]), p), eps);
    let val = |p: usize, ch: usize| f64s(&history[p].0[qd + kd + ch * d..][..d]);
    for r in 0..rows {
        let p = pos0 + r;
        let yr = &y[r * width..][..width];
        for a in 0..c.heads {
            let qa: Vec<f64> =
                norm64(&rot(&f64s(&yr[a * d..][..d]), p), eps).iter().zip(&qs[a * d..]).map(|(x, s)| x * s).collect();
            assert!(rel_err(&q[r * qd + a * d..][..d], &qa) < 1e-6, "q");
            let lo = if kind == LayerKind::Sliding { (p + 1).saturating_sub(w) } else { 0 };
            let sc: Vec<f64> = (lo..=p)
                .map(|j| c.attn_scale as f64 * qa.iter().zip(key(j, a / 4)).map(|(x, k)| x * k).sum::<f64>())
                .collect();
            let mx = sc.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let total: f64 = sc.iter().map(|s| (s - mx).exp()).sum();
            let want: Vec<f64> = (0..d)
                .map(|e| {
                    let o: f64 = (lo..=p).zip(&sc).map(|(j, s)| (s - mx).exp() / total * val(j, a / 4)[e]).sum();
                    let g = yr[qd + 2 * kd + a * d + e] as f64 * gs[a * d + e];
                    o / (1.0 + (-g).exp())
                })
                .collect();
            let e = rel_err(&z[r * qd + a * d..][..d], &want);
            assert!(e < 1e-5, "{kind:?} kv {kv} d {hd} w {w} at {pos0}+{r} head {a}: {e:.2e}");
        }
    }
}

#[test]
fn prep_and_attention() {
    for (i, &(kv, hd, w)) in SHAPES.iter().enumerate() {
        let s = 10 + i as u64;
        for &(pos0, rows) in &[(0, 1), (0, 5), (3, 1), (2 * w + 1, 1), (w + 2, 5), (1, 12)] {
            check_attention(LayerKind::Sliding, true, kv, hd, w, pos0, rows, s);
            check_attention(LayerKind::Full, true, kv, hd, w, pos0, rows, s);
            check_attention(LayerKind::Full, false, kv, hd, w, pos0, rows, s);
        }
    }
    check_attention(LayerKind::Sliding, true, 2, 256, 4, 9, 3, 40);
    check_attention(LayerKind::Full, true, 1, 128, 4, 70, 64, 41);
}
