//! The GPU backend against the CPU reference: every op on fresh random inputs with
//! poisoned outputs, whole models (exact and O(1), early exit, the shipped model), and
//! the golden fixtures. One test binary, so that it can travel to a GPU machine alone.
//! Without an adapter these tests are skipped with a note, except under CI=true, where
//! that is a failure.

mod attention;
mod common;
mod model;
mod ops;
