//! GPU time per kernel, when `DORY_WGPU_PROFILE=1`: a timestamp before and after every
//! dispatch (the adapter needs timestamp queries inside passes), summed by kernel name.
//! Each submission then waits for its timestamps, so wall-clock speed under profiling is
//! not the engine's; the GPU times are, and `report` sets them beside each other.
//! With `DORY_WGPU_PROFILE=host` the submissions run as always and the host's wall time
//! is split instead: recording (between submissions), the encoding's steps (uploads, bind
//! groups, the compute pass, finishing the command buffer), submitting, recording ahead
//! of a read-back and encoding held ops (the next decoding step, while the device runs this
//! one), and waiting for read-backs — where a small model's token goes when the GPU is not
//! the bound.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

/// Timestamps one submission can hold (wgpu's limit on a query set is 4096).
pub const MAX_DISPATCHES: usize = 2048;

pub fn enabled() -> bool {
    mode() == Some("1")
}

/// Whether the host's time is split (`DORY_WGPU_PROFILE=host`).
pub fn host() -> bool {
    mode() == Some("host")
}

fn mode() -> Option<&'static str> {
    static MODE: OnceLock<Option<String>> = OnceLock::new();
    MODE.get_or_init(|| std::env::var("DORY_WGPU_PROFILE").ok()).as_deref()
}

/// A host phase of a submission.
#[derive(Clone, Copy)]
pub enum Phase {
    Record,
    Uploads,
    BindGroups,
    Pass,
    Finish,
    Submit,
    /// Recording while a read-back is on its way (the next decoding step, held or run
    /// ahead), up to the wait or the held ops' encoding.
    Ahead,
    /// Encoding the held ops (`Recorder::hold`) into their command buffer.
    Held,
    Wait,
}

const PHASES: [&str; 9] = [
    "recording (between submissions)",
    "encoding: uploads",
    "encoding: bind groups",
    "encoding: the compute pass",
    "encoding: finishing",
    "submitting",
    "recording ahead of a read-back",
    "encoding held ops",
    "waiting for read-backs",
];

/// Per phase: (times, nanoseconds).
static HOST: Mutex<[(u64, f64); PHASES.len()]> = Mutex::new([(0, 0.0); PHASES.len()]);

pub fn add_host(phase: Phase, ns: f64) {
    let mut h = HOST.lock().expect("profile lock");
    h[phase as usize].0 += 1;
    h[phase as usize].1 += ns;
}

/// Kernel name → (dispatches, GPU nanoseconds).
static TOTALS: Mutex<BTreeMap<&'static str, (u64, f64)>> = Mutex::new(BTreeMap::new());

pub fn add(kernel: &'static str, ns: f64) {
    let mut t = TOTALS.lock().expect("profile lock");
    let e = t.entry(kernel).or_default();
    e.0 += 1;
    e.1 += ns;
}

/// The table so far (kernels by falling GPU time, or the host's phases), or None when
/// nothing was profiled.
pub fn report() -> Option<String> {
    if host() {
        return Some(host_report());
    }
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

fn host_report() -> String {
    let h = HOST.lock().expect("profile lock");
    let total: f64 = h.iter().map(|p| p.1).sum();
    let mut out = format!("host time by phase (DORY_WGPU_PROFILE=host): {:.3} ms in all\n", total / 1e6);
    for (name, (n, ns)) in PHASES.iter().zip(h.iter()) {
        out += &format!(
            "  {name:<34} {n:>8} times {:>10.3} ms {:>6.1} % {:>8.2} µs each\n",
            ns / 1e6,
            100.0 * ns / total.max(1.0),
            ns / 1e3 / (*n).max(1) as f64
        );
    }
    out
}
