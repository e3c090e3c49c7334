//! A slow, plain f64 re-implementation of spec §4–§5, written from the spec's text
//! alone: caches as maps from position to the last pass's key and value, segments that
//! write every row's pass-k entry before any row attends, decoding one pass at a time.

use std::collections::HashMap;

use dory::{Config, Criterion, ExitRule, LayerKind, Model};

type Vec64 = Vec<f64>;
/// A position's keys and values, one vector per KV head.
type Entry = (Vec<Vec64>, Vec<Vec64>);

struct Layer {
    q: Vec<Vec64>,
    k: Vec<Vec64>,
    v: Vec<Vec64>,
    gate: Vec<Vec64>,
    out: Vec<Vec64>,
    q_scale: Vec64,
    gate_scale: Vec64,
    attn_alpha: Vec64,
    mlp_gate: Vec<Vec64>,
    mlp_up: Vec<Vec64>,
    mlp_down: Vec<Vec64>,
    mlp_gate_scale: Vec64,
    mlp_up_scale: Vec64,
    mlp_alpha: Vec64,
}

pub struct Naive {
    c: Config,
    embed: Vec<Vec64>,
    head: Vec<Vec64>,
    head_scale: Vec64,
    layers: Vec<Layer>,
    /// Per layer: position → (keys per KV head, values per KV head).
    cache: Vec<HashMap<usize, Entry>>,
    pub pos: usize,
}

fn norm(x: &[f64], eps: f64) -> Vec64 {
    let r = 1.0 / (x.iter().map(|v| v * v).sum::<f64>() + eps).sqrt();
    x.iter().map(|v| v * r).collect()
}

fn matvec(w: &[Vec64], x: &[f64]) -> Vec64 {
    w.iter().map(|row| row.iter().zip(x).map(|(a, b)| a * b).sum()).collect()
}

fn add(a: &[f64], b: &[f64]) -> Vec64 {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

impl Naive {
    pub fn new(model: &Model) -> Naive {
        let c = model.config.clone();
        let vec = |n: &str| -> Vec64 { model.weights.get(n).to_f32().into_iter().map(f64::from).collect() };
        let mat = |n: &str| -> Vec<Vec64> {
            let t = model.weights.get(n);
            let cols = t.shape[1];
            vec(n).chunks(cols).map(|r| r.to_vec()).collect()
        };
        let layers = (0..c.layers.len())
            .map(|i| {
                let p = |n: &str| format!("layers.{i}.{n}");
                Layer {
                    q: mat(&p("attn.q")),
                    k: mat(&p("attn.k")),
                    v: mat(&p("attn.v")),
                    gate: mat(&p("attn.gate")),
                    out: mat(&p("attn.out")),
                    q_scale: vec(&p("attn.q_scale")),
                    gate_scale: vec(&p("attn.gate_scale")),
                    attn_alpha: vec(&p("attn.alpha")),
                    mlp_gate: mat(&p("mlp.gate")),
                    mlp_up: mat(&p("mlp.up")),
                    mlp_down: mat(&p("mlp.down")),
                    mlp_gate_scale: vec(&p("mlp.gate_scale")),
                    mlp_up_scale: vec(&p("mlp.up_scale")),
                    mlp_alpha: vec(&p("mlp.alpha")),
                }
            })
            .collect();
        let cache = vec![HashMap::new(); c.layers.len()];
        Naive { embed: mat("embed"), head: mat("head"), head_scale: vec("head_scale"), layers, cache, pos: 0, c }
    }

    fn rope(&self, x: &[f64], p: usize) -> Vec64 {
        let d = x.len();
        let mut out = x.to_vec();
        for i in 0..d / 2 {
            let a = p as f64 * self.c.rope_theta.powf(-2.0 * i as f64 / d as f64);
            let (cos, sin) = (a.cos() as f32 as f64, a.sin() as f32 as f64);
            out[i] = x[i] * cos - x[i + d / 2] * sin;
            out[i + d / 2] = x[i + d / 2] * cos + x[i] * sin;
        }
        out
    }

    /// q per query head, and writes this row's key and value at `p` into the cache.
    fn prep(&mut self, i: usize, h: &[f64], p: usize) -> Vec<Vec64> {
        let (d, eps) = (self.c.head_dim, self.c.eps as f64);
        let rot = self.c.layers[i] == LayerKind::Sliding || self.c.rope_full;
        let l = &self.layers[i];
        let (yq, yk, yv) = (matvec(&l.q, h), matvec(&l.k, h), matvec(&l.v, h));
        let maybe = |x: &[f64]| if rot { self.rope(x, p) } else { x.to_vec() };
        let q = (0..self.c.heads)
            .map(|a| {
                norm(&maybe(&yq[a * d..(a + 1) * d]), eps).iter().zip(&l.q_scale[a * d..]).map(|(x, s)| x * s).collect()
            })
            .collect();
        let k = (0..self.c.kv_heads).map(|c| norm(&maybe(&yk[c * d..(c + 1) * d]), eps)).collect();
        let v = (0..self.c.kv_heads).map(|c| yv[c * d..(c + 1) * d].to_vec()).collect();
        self.cache[i].insert(p, (k, v));
        q
    }

    /// The attention sub-layer's output o = Wout z for the row at `p` with queries `q`.
    fn attend(&self, i: usize, h: &[f64], q: &[Vec64], p: usize) -> Vec64 {
        let d = self.c.head_dim;
        let l = &self.layers[i];
        let lo = match self.c.layers[i] {
            LayerKind::Sliding => (p + 1).saturating_sub(self.c.window),
            LayerKind::Full => 0,
        };
        let yg = matvec(&l.gate, h);
        let mut z = vec![0.0; self.c.heads * d];
        for (a, qa) in q.iter().enumerate() {
            let c = a / 4;
            let scores: Vec<f64> = (lo..=p)
                .map(|j| {
                    self.c.attn_scale as f64 * qa.iter().zip(&self.cache[i][&j].0[c]).map(|(x, y)| x * y).sum::<f64>()
                })
                .collect();
            let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let w: Vec<f64> = scores.iter().map(|s| (s - m).exp()).collect();
            let total: f64 = w.iter().sum();
            for (wj, j) in w.iter().zip(lo..=p) {
                for e in 0..d {
                    z[a * d + e] += wj / total * self.cache[i][&j].1[c][e];
                }
            }
            for e in 0..d {
                z[a * d + e] *= sigmoid(yg[a * d + e] * l.gate_scale[a * d + e]);
            }
        }
        matvec(&l.out, &z)
    }

    fn residual(&self, h: &[f64], o: &[f64], alpha: &[f64]) -> Vec64 {
        let eps = self.c.eps as f64;
        let (nh, no) = (norm(h, eps), norm(o, eps));
        let y: Vec64 = nh.iter().zip(&no).zip(alpha).map(|((a, b), al)| a + al * (b - a)).collect();
        norm(&y, eps)
    }

    fn mlp(&self, i: usize, h: &[f64]) -> Vec64 {
        let l = &self.layers[i];
        let g = matvec(&l.mlp_gate, h);
        let u = matvec(&l.mlp_up, h);
        let m: Vec64 = (0..self.c.ffn)
            .map(|j| {
                let a = g[j] * l.mlp_gate_scale[j];
                a * sigmoid(a) * u[j] * l.mlp_up_scale[j]
            })
            .collect();
        self.residual(h, &matvec(&l.mlp_down, &m), &l.mlp_alpha)
    }

    fn logits(&self, h: &[f64]) -> Vec64 {
        matvec(&self.head, h).iter().zip(&self.head_scale).map(|(x, s)| x * s).collect()
    }

    /// A segment with the parallel semantics: every row's logits.
    pub fn segment(&mut self, ids: &[u32]) -> Vec<Vec64> {
        let eps = self.c.eps as f64;
        let p0 = self.pos;
        let xs: Vec<Vec64> = ids.iter().map(|&t| self.embed[t as usize].clone()).collect();
        let mut hs: Vec<Vec64> = xs.iter().map(|x| norm(&add(x, x), eps)).collect();
        for k in 1..=self.c.passes {
            for i in 0..self.c.layers.len() {
                // Every row writes its pass-k key before any row attends.
                let qs: Vec<Vec<Vec64>> = hs.iter().enumerate().map(|(r, h)| self.prep(i, h, p0 + r)).collect();
                let os: Vec<Vec64> =
                    hs.iter().zip(&qs).enumerate().map(|(r, (h, q))| self.attend(i, h, q, p0 + r)).collect();
                hs = hs.iter().zip(&os).map(|(h, o)| self.residual(h, o, &self.layers[i].attn_alpha)).collect();
                hs = hs.iter().map(|h| self.mlp(i, h)).collect();
            }
            hs = hs
                .iter()
                .zip(&xs)
                .map(|(h, x)| if k < self.c.passes { norm(&add(&norm(h, eps), x), eps) } else { norm(h, eps) })
                .collect();
        }
        self.pos += ids.len();
        hs.iter().map(|h| self.logits(h)).collect()
    }

    /// One decoded token: its logits and passes.
    pub fn decode(&mut self, id: u32, exit: &ExitRule) -> (Vec64, usize) {
        let eps = self.c.eps as f64;
        let p = self.pos;
        self.pos += 1;
        let x = self.embed[id as usize].clone();
        let mut h = norm(&add(&x, &x), eps);
        let mut prev: Option<Vec64> = None;
        let passes = self.c.passes;
        for k in 1..=passes {
            for i in 0..self.c.layers.len() {
                let q = self.prep(i, &h, p);
                let o = self.attend(i, &h, &q, p);
                h = self.residual(&h, &o, &self.layers[i].attn_alpha);
                h = self.mlp(i, &h);
            }
            if k == passes {
                return (self.logits(&norm(&h, eps)), passes);
            }
            let s = norm(&h, eps);
            if exit.criterion != Criterion::None && k >= exit.min_passes.saturating_sub(1).max(1) {
                let logits = self.logits(&s);
                let m = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let lse = m + logits.iter().map(|l| (l - m).exp()).sum::<f64>().ln();
                let logp: Vec64 = logits.iter().map(|l| l - lse).collect();
                let tested = k >= exit.min_passes && (exit.criterion != Criterion::Kl || k >= 2);
                if tested {
                    let stat = match exit.criterion {
                        Criterion::Kl => logp.iter().zip(prev.as_ref().unwrap()).map(|(a, b)| a.exp() * (a - b)).sum(),
                        _ => logp.iter().cloned().fold(f64::NEG_INFINITY, f64::max).exp(),
                    };
                    let leave = match exit.criterion {
                        Criterion::Kl => stat < exit.threshold,
                        _ => stat >= exit.threshold,
                    };
                    if leave {
                        return (logits, k);
                    }
                }
                prev = Some(logp);
            }
            h = norm(&add(&s, &x), eps);
        }
        unreachable!()
    }
}
