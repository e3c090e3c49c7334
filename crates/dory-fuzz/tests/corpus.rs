//! Every fuzz target over its committed corpus (`fuzz/corpus/<target>`, the crashes
//! libFuzzer found included) and a bounded number of mutations of it: CI's share of the
//! fuzzing, on stable (docs/RELIABILITY.md). DORY_FUZZ_MUTATIONS sets how many
//! mutations per target (default 300; the generation target runs a tenth).

use std::panic::{catch_unwind, AssertUnwindSafe};

use dory::rng::Rng;
use dory_fuzz::{corpus, GENERATE, TARGETS};

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = corpus(target);
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    let seeds: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert!(!seeds.is_empty(), "{}: no seeds", dir.display());
    seeds
}

/// Bytes a parser treats specially.
const SPECIAL: &[&[u8]] =
    &[b"0", b"-1", b"1e309", b"18446744073709551615", b"4294967297", b"null", b"\"", b"{", b"]", b"\xff", b"\0"];

/// One libFuzzer-like mutation of `seed`: a flipped bit, a special token written over or
/// into it, a range deleted or repeated, a cut, or a splice with another seed.
fn mutate(rng: &mut Rng, seed: &[u8], other: &[u8]) -> Vec<u8> {
    let mut b = seed.to_vec();
    let mut at = |n: usize| if n == 0 { 0 } else { (rng.next_u64() % n as u64) as usize };
    match at(6) {
        0 if !b.is_empty() => {
            let i = at(b.len());
            b[i] ^= 1 << at(8);
        }
        1 => {
            let i = at(b.len() + 1);
            let token = SPECIAL[at(SPECIAL.len())];
            b.splice(i..i, token.iter().copied());
        }
        2 if !b.is_empty() => {
            let i = at(b.len());
            let n = at(b.len() - i) + 1;
            b.drain(i..i + n);
        }
        3 if !b.is_empty() => {
            let i = at(b.len());
            let part: Vec<u8> = b[i..(i + 64).min(b.len())].to_vec();
            b.splice(i..i, part);
        }
        4 => b.truncate(at(b.len() + 1)),
        _ => {
            let cut = at(b.len() + 1);
            b.truncate(cut);
            b.extend_from_slice(&other[at(other.len() + 1)..]);
        }
    }
    b
}

/// Runs `body` on every seed, then on `mutations` mutations; a panic names the target
/// and keeps the input under target/fuzz-findings for a regression test.
fn run(target: &str, body: fn(&[u8]), mutations: usize) {
    let seeds = seeds(target);
    let mut rng = Rng::new(7);
    let inputs = seeds.iter().cloned().chain((0..mutations).map(|k| {
        let (a, b) = (&seeds[k % seeds.len()], &seeds[(k * 7 + 3) % seeds.len()]);
        let once = mutate(&mut rng, a, b);
        mutate(&mut rng, &once, b)
    }));
    for (k, input) in inputs.enumerate() {
        if catch_unwind(AssertUnwindSafe(|| body(&input))).is_err() {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz-findings");
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join(format!("{target}-{k}"));
            std::fs::write(&path, &input).unwrap();
            panic!("fuzz target {target} failed on input {k}, kept in {}", path.display());
        }
    }
}

fn mutations() -> usize {
    std::env::var("DORY_FUZZ_MUTATIONS").ok().and_then(|n| n.parse().ok()).unwrap_or(300)
}

#[test]
fn every_target_over_its_corpus_and_mutations() {
    for (target, body) in TARGETS {
        run(target, body, mutations());
    }
}

#[test]
fn generation_over_its_corpus_and_mutations() {
    run(GENERATE.0, GENERATE.1, mutations() / 10);
}
