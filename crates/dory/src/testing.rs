//! Helpers for tests: random inputs and the spec's error measure.

use crate::rng::Rng;

/// `n` values uniform in [−1, 1), from `seed`.
pub fn rand_vec(n: usize, seed: u64) -> Vec<f32> {
    let mut r = Rng::new(seed);
    (0..n).map(|_| (2.0 * r.uniform() - 1.0) as f32).collect()
}

/// ‖a − b‖ / ‖b‖ (spec §8), NaN-aware: a NaN anywhere gives infinity.
pub fn rel_err(a: &[f32], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "lengths differ");
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (&x, &y) in a.iter().zip(b) {
        if !x.is_finite() {
            return f64::INFINITY;
        }
        num += (x as f64 - y).powi(2);
        den += y * y;
    }
    if den == 0.0 {
        return num.sqrt();
    }
    (num / den).sqrt()
}

/// The repository's root: `DORY_REPO` where set (a test binary carried to another machine,
/// beside a copy of the repository), else the checkout this crate was built in.
pub fn repo() -> std::path::PathBuf {
    std::env::var_os("DORY_REPO")
        .map_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."), std::path::PathBuf::from)
}

/// The golden replay cases of `tests/fixtures/` (spec §8), for every backend's tests.
pub mod fixtures {
    use std::path::{Path, PathBuf};

    use serde_json::Value;

    use crate::backend::Backend;
    use crate::forward::Want;
    use crate::sampler::argmax;
    use crate::session::Session;

    /// The repository's copy of the fixtures.
    pub fn dir() -> PathBuf {
        super::repo().join("tests/fixtures")
    }

    /// Every case's folder, sorted.
    pub fn cases() -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir())
            .expect("tests/fixtures")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.join("case.json").exists())
            .collect();
        v.sort();
        v
    }

    pub struct Case {
        pub json: Value,
        pub expected: std::collections::HashMap<String, (Vec<usize>, Vec<u8>)>,
    }

    impl Case {
        pub fn load(dir: &Path) -> Case {
            let json: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("case.json")).expect("case.json"))
                .expect("json");
            let bytes = std::fs::read(dir.join("expected.safetensors")).expect("expected");
            let st = safetensors::SafeTensors::deserialize(&bytes).expect("expected.safetensors");
            let expected =
                st.tensors().into_iter().map(|(n, t)| (n, (t.shape().to_vec(), t.data().to_vec()))).collect();
            Case { json, expected }
        }

        pub fn attention(&self) -> &str {
            self.json["attention"].as_str().expect("attention")
        }

        pub fn ids(&self, field: &str) -> Option<Vec<u32>> {
            self.json[field].as_array().map(|a| a.iter().map(|v| v.as_u64().expect("id") as u32).collect())
        }

        fn f32s(&self, name: &str) -> Vec<f32> {
            self.expected[name].1.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
        }

        fn i32s(&self, name: &str) -> Vec<usize> {
            self.expected[name]
                .1
                .chunks_exact(4)
                .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
                .collect()
        }

        /// The bound on a row at `pos`.
        fn tolerance(&self, pos: usize) -> f64 {
            let seal = self.json["seal_pos"].as_u64().map(|p| p as usize);
            match seal {
                Some(s) if pos < s => self.json["tolerance_before_seal"].as_f64().expect("tolerance_before_seal"),
                _ => self.json["tolerance"].as_f64().expect("tolerance"),
            }
        }
    }

    /// What a replay measured.
    #[derive(Debug, Default)]
    pub struct Replay {
        /// The largest error over rows, relative to each row's bound.
        pub worst: f64,
        pub rows: usize,
        pub failures: Vec<String>,
    }

    impl Replay {
        fn compare(&mut self, what: &str, pos: usize, got: &[f32], want: &[f32], bound: f64) {
            let want64: Vec<f64> = want.iter().map(|&x| x as f64).collect();
            let err = super::rel_err(got, &want64);
            self.rows += 1;
            self.worst = self.worst.max(err / bound);
            if err > bound {
                self.failures.push(format!("{what} at position {pos}: relative error {err:.3e} > {bound:.0e}"));
            }
            // The ids are the greedy chain: a correct replay's argmax agrees.
            if argmax(got) != argmax(want) {
                self.failures.push(format!("{what} at position {pos}: argmax {} ≠ {}", argmax(got), argmax(want)));
            }
        }
    }

    /// Replays `case` on `session` (fresh, configured with the case's attention mode and
    /// exit rule), feeding prompts as the session's segments.
    pub fn replay<B: Backend>(case: &Case, session: &mut Session<B>) -> crate::Result<Replay> {
        let v = session.forward().config().vocab_size;
        let mut r = Replay::default();
        let mut pos = 0;
        let phases = [
            ("prompt", "steps", "prefill_logits", "step_logits", "passes"),
            ("prompt2", "steps2", "prefill2_logits", "step2_logits", "passes2"),
        ];
        for (prompt, steps, pre, stp, passes) in phases {
            let Some(ids) = case.ids(prompt) else {
                continue;
            };
            let got = session.prompt(&ids, false, Want::All)?.logits;
            let want = case.f32s(pre);
            for (i, (g, w)) in got.chunks_exact(v).zip(want.chunks_exact(v)).enumerate() {
                r.compare(prompt, pos + i, g, w, case.tolerance(pos + i));
            }
            pos += ids.len();
            let want = case.f32s(stp);
            let want_passes = case.i32s(passes);
            for (i, &id) in case.ids(steps).unwrap_or_default().iter().enumerate() {
                let out = session.step(id)?;
                r.compare(steps, pos, &out.logits, &want[i * v..][..v], case.tolerance(pos));
                if out.passes != want_passes[i] {
                    r.failures.push(format!(
                        "{steps}[{i}] at position {pos}: {} passes, expected {}",
                        out.passes, want_passes[i]
                    ));
                }
                pos += 1;
            }
        }
        Ok(r)
    }
}
