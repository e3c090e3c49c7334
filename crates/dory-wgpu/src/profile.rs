//! GPU time per kernel, when `DORY_WGPU_PROFILE=1`: a timestamp before and after every
//! dispatch (the adapter needs timestamp queries inside passes), summed by kernel name.
//! Each submission then waits for its timestamps, so wall-clock speed under profiling is
//! not the engine's; the GPU times are, and `report` sets them beside each other.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

/// Timestamps one submission can hold (wgpu's limit on a query set is 4096).
pub const MAX_DISPATCHES: usize = 2048;

pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("DORY_WGPU_PROFILE").is_ok_and(|v| v == "1"))
}

/// Kernel name → (dispatches, GPU nanoseconds).
static TOTALS: Mutex<BTreeMap<&'static str, (u64, f64)>> = Mutex::new(BTreeMap::new());

pub fn add(kernel: &'static str, ns: f64) {
    let mut t = TOTALS.lock().expect("profile lock");
    let e = t.entry(kernel).or_default();
    e.0 += 1;
    e.1 += ns;
}

/// The table so far (kernels by falling GPU time), or None when nothing was profiled.
pub fn report() -> Option<String> {
    let t = TOTALS.lock().expect("profile lock");
    if t.is_empty() {
        return None;
    }
    let total: f64 = t.values().map(|v| v.1).sum();
    let mut rows: Vec<_> = t.iter().collect();
    rows.sort_by(|a, b| b.1 .1.total_cmp(&a.1 .1));
    let mut out = format!("GPU time by kernel (DORY_WGPU_PROFILE): {:.3} ms in all\n", total / 1e6);
    for (name, (n, ns)) in rows {
        out += &format!(
            "  {name:<24} {n:>8} dispatches {:>10.3} ms {:>6.1} % {:>8.2} µs each\n",
            ns / 1e6,
            100.0 * ns / total,
            ns / 1e3 / *n as f64
        );
    }
    Some(out)
}
