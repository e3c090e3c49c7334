//! Every exact-mode golden case (spec §8), on the CPU backend, at several chunk sizes.

use dory::testing::fixtures::{cases, replay, Case};
use dory::{Forward, Model, Session};

#[test]
fn exact_cases_replay_within_the_spec() {
    let mut replayed = 0;
    for dir in cases() {
        let case = Case::load(&dir);
        if case.attention() != "exact" {
            continue;
        }
        let model = Model::load(&dir.join("model")).expect("model");
        for chunk in [1, 7, 64] {
            let backend = dory::cpu::Cpu::new(&model.config, &model.weights);
            let mut session = Session::new(Forward::new(backend, &model.config, chunk).unwrap());
            let r = replay(&case, &mut session).expect("replay");
            println!("{} chunk {chunk}: {} rows, worst error {:.3} of the bound", dir.display(), r.rows, r.worst);
            assert!(r.failures.is_empty(), "{} (chunk {chunk}):\n{}", dir.display(), r.failures.join("\n"));
        }
        replayed += 1;
    }
    assert_eq!(replayed, 6, "six exact cases");
}
