//! The O(1) full layer (spec §6) on the CPU: its relations to exact attention, constant
//! memory, degenerate landmarks, and position invariance.

mod common;

use std::collections::BTreeMap;

use common::{config, cpu_session, random_ids, random_model, rel};
use dory::config::O1;
use dory::init::{random_tensors, write_weights};
use dory::weights::{expected_tensors, DType};
use dory::{Attention, Model, Want};

fn o1(sinks: usize, window: usize, landmarks: usize, stride: usize, seal_at: usize) -> Attention {
    Attention::O1(O1 { sinks, window, landmarks, stride, rect: true, rcond: 1e-4, seal_at })
}

#[test]
fn equals_exact_while_the_far_span_is_empty() {
    // Sealed at 10 with sinks 2 and window 16: the far span [2, p − 16] stays empty until
    // p = 18, so O(1) decoding equals exact decoding up to there, then departs.
    let c = config(&["sliding", "full"], 3, 4, 2, 16);
    let (_d, model) = random_model(&c, 3);
    let mut exact = cpu_session(&model, 8);
    let mut fast = cpu_session(&model, 8);
    exact.set_attention(Attention::Exact).unwrap();
    fast.set_attention(o1(2, 16, 2, 2, 10)).unwrap();
    let prompt = random_ids(6, c.vocab_size, 1);
    let a = exact.prompt(&prompt, false, Want::All).unwrap().logits;
    let b = fast.prompt(&prompt, false, Want::All).unwrap().logits;
    assert!(rel(&b, &a) < 1e-6);
    let mut departed = false;
    for (i, id) in random_ids(30, c.vocab_size, 2).into_iter().enumerate() {
        let p = 6 + i;
        let (x, y) = (exact.step(id).unwrap(), fast.step(id).unwrap());
        let e = rel(&y.logits, &x.logits);
        assert_eq!(fast.forward().sealed(), p >= 10, "sealed at the first step at or after seal_at");
        if p < 18 {
            assert!(e < 1e-5, "position {p}: O(1) with an empty far span differs from exact by {e:.2e}");
        } else {
            departed |= e > 1e-4;
        }
    }
    assert!(departed, "a non-empty far span changes the logits");
}

#[test]
fn a_later_prompt_after_the_seal_runs_row_by_row() {
    let c = config(&["full", "sliding"], 2, 3, 1, 8);
    let (_d, model) = random_model(&c, 4);
    let mut s = cpu_session(&model, 4);
    s.set_attention(o1(1, 4, 3, 2, 12)).unwrap();
    s.prompt(&random_ids(14, c.vocab_size, 3), false, Want::Last).unwrap();
    assert!(!s.forward().sealed(), "the first segment never seals");
    let later = random_ids(5, c.vocab_size, 4);
    let rows = s.prompt(&later, false, Want::All).unwrap().logits;
    assert!(s.forward().sealed());
    // The same rows fed as single steps give the same logits.
    let mut t = cpu_session(&model, 4);
    t.set_attention(o1(1, 4, 3, 2, 12)).unwrap();
    t.prompt(&random_ids(14, c.vocab_size, 3), false, Want::Last).unwrap();
    for (r, &id) in later.iter().enumerate() {
        let d = t.step(id).unwrap();
        assert!(rel(&d.logits, &rows[r * c.vocab_size..][..c.vocab_size]) < 1e-6);
    }
}

#[test]
fn memory_stops_growing_after_the_seal() {
    let c = config(&["sliding", "full", "sliding"], 2, 8, 1, 16);
    let (_d, model) = random_model(&c, 5);
    let attention = o1(4, 16, 8, 4, 60);
    let mut s = cpu_session(&model, 16);
    s.set_attention(attention.clone()).unwrap();
    s.prompt(&random_ids(40, c.vocab_size, 5), false, Want::Last).unwrap();
    let mut sizes = vec![];
    for (i, id) in random_ids(160, c.vocab_size, 6).into_iter().enumerate() {
        s.step(id).unwrap();
        let p = 40 + i;
        if p >= 60 {
            sizes.push(s.forward().cache_bytes());
            assert_eq!(
                s.forward().cache_bytes(),
                attention.cache_bytes(&c, p + 1).unwrap(),
                "the analytic count at {p}"
            );
        }
    }
    assert!(sizes.windows(2).all(|w| w[0] == w[1]), "cache bytes after the seal: {sizes:?}");
    // Exact mode keeps growing.
    let mut e = cpu_session(&model, 16);
    e.set_attention(Attention::Exact).unwrap();
    e.prompt(&random_ids(40, c.vocab_size, 5), false, Want::Last).unwrap();
    e.step(3).unwrap();
    let before = e.forward().cache_bytes();
    for id in random_ids(49, c.vocab_size, 6) {
        e.step(id).unwrap();
    }
    assert!(e.forward().cache_bytes() > before);
    assert_eq!(e.forward().cache_bytes(), Attention::Exact.cache_bytes(&c, 90).unwrap());
}

/// A model whose tensors `edit` changes, in a fresh folder.
fn edited_model(
    c: &dory::Config,
    seed: u64,
    edit: impl FnOnce(&mut BTreeMap<String, Vec<f32>>),
) -> (tempfile::TempDir, Model) {
    let (dir, _) = random_model(c, seed);
    let mut t = random_tensors(c, seed);
    edit(&mut t);
    let shapes = expected_tensors(c).into_iter().collect();
    write_weights(dir.path(), &t, &shapes, DType::F32, 1).unwrap();
    let m = Model::load(dir.path()).unwrap();
    (dir, m)
}

#[test]
fn relative_positions_only_when_q_scale_is_equal_on_each_pair() {
    // Sliding layers only, q_scale equal on both dimensions of every rotated pair:
    // attention depends on relative positions alone, so shifting every position by 2^24
    // changes nothing — if the RoPE angles are precise there (spec §3).
    let c = config(&["sliding", "sliding"], 2, 5, 1, 16);
    let d = c.head_dim;
    let (_dir, model) = edited_model(&c, 7, |t| {
        for i in 0..2 {
            let qs = t.get_mut(&format!("layers.{i}.attn.q_scale")).unwrap();
            for head in qs.chunks_mut(d) {
                let (lo, hi) = head.split_at_mut(d / 2);
                hi.copy_from_slice(lo);
            }
        }
    });
    let ids = random_ids(12, c.vocab_size, 8);
    let steps = random_ids(10, c.vocab_size, 9);
    let run = |start: usize| {
        let mut s = cpu_session(&model, 4);
        s.forward_mut().set_rope_offset(start);
        let mut out = s.prompt(&ids, false, Want::All).unwrap().logits;
        for &id in &steps {
            out.extend(s.step(id).unwrap().logits);
        }
        out
    };
    let (a, b) = (run(0), run(1 << 24));
    let v = c.vocab_size;
    for (r, (x, y)) in b.chunks(v).zip(a.chunks(v)).enumerate() {
        let e = rel(x, y);
        assert!(e <= 1e-4, "row {r}: shifted by 2^24 the logits move by {e:.2e}");
    }
}

#[test]
fn degenerate_landmarks_give_finite_output() {
    // No rotation on the full layer and one token repeated: every key and query of the
    // full layer is the same, the landmark kernel has rank one.
    let mut c = config(&["sliding", "full"], 2, 3, 1, 8);
    c.rope_full = false;
    let dir = tempfile::tempdir().unwrap();
    dory::init::write_random_model(dir.path(), &c, 10, DType::F32, 1).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let mut s = cpu_session(&model, 8);
    s.set_attention(o1(2, 4, 4, 2, 16)).unwrap();
    s.prompt(&[7; 20], false, Want::Last).unwrap();
    let mut exact = cpu_session(&model, 8);
    exact.set_attention(Attention::Exact).unwrap();
    exact.prompt(&[7; 20], false, Want::Last).unwrap();
    for _ in 0..12 {
        let (a, b) = (s.step(7).unwrap(), exact.step(7).unwrap());
        assert!(a.logits.iter().all(|x| x.is_finite()));
        // Every far key equals every near key: the estimate is exact here too.
        assert!(rel(&a.logits, &b.logits) < 1e-3, "{:.2e}", rel(&a.logits, &b.logits));
    }
}
