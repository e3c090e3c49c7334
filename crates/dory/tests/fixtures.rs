//! Every golden case (spec §8), on the CPU backend, at several chunk sizes, on every set of
//! kernels this CPU runs (the portable ones too).

use dory::testing::fixtures::{cases, replay, Case};
use dory::{Forward, Model, Session};

#[test]
fn every_case_replays_within_the_spec() {
    let mut replayed = 0;
    for dir in cases() {
        let case = Case::load(&dir);
        let model = Model::load(&dir.join("model")).expect("model");
        let runs = dory::cpu::Isa::available().into_iter().flat_map(|isa| [1, 7, 64].map(|chunk| (isa, chunk)));
        for (isa, chunk) in runs {
            let backend = dory::cpu::Cpu::with_kernels(&model.config, &model.weights, isa);
            let mut session = Session::new(Forward::new(backend, &model.config, chunk).unwrap());
            // A config with an `o1` section defaults to the O(1) mode, as the case asks.
            assert_eq!(session.forward().attention().name(), case.attention());
            let r = replay(&case, &mut session).expect("replay");
            println!(
                "{} {isa:?} chunk {chunk}: {} rows, worst error {:.3} of the bound",
                dir.display(),
                r.rows,
                r.worst
            );
            assert!(r.failures.is_empty(), "{} ({isa:?}, chunk {chunk}):\n{}", dir.display(), r.failures.join("\n"));
        }
        replayed += 1;
    }
    assert_eq!(replayed, 7, "seven cases");
}
