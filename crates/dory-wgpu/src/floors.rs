//! What bounds a decoded token's time from below on this device (issue 5's floors):
//! the bandwidth floor, weight bytes per token over the bandwidth of a plain copy, and
//! the dispatch floor, dispatches per token times the cost of an empty dispatch. Both
//! are measured after a warm-up, since GPU clocks only ramp up under sustained load.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::device::GpuDevice;
use crate::error::gpu_err;
use crate::ops::copy::Params as CopyParams;
use crate::ops::MAX_GROUPS;
use crate::record::{Bind, Recorder, Store};

fn wait(rec: &mut Recorder, probe: &Arc<Store>) -> dory::Result<()> {
    rec.submit(Some((probe, 4))).map(|_| ())
}

/// Runs `work` until `warm` has passed, then `reps` more times, waiting for the device
/// after each run when `wait_each`, else once at the end; seconds per run.
fn timed(
    rec: &mut Recorder,
    probe: &Arc<Store>,
    warm: Duration,
    reps: usize,
    wait_each: bool,
    mut work: impl FnMut(&mut Recorder),
) -> dory::Result<f64> {
    let t0 = Instant::now();
    while t0.elapsed() < warm {
        work(rec);
        wait(rec, probe)?;
    }
    let t1 = Instant::now();
    for _ in 0..reps {
        work(rec);
        if wait_each {
            wait(rec, probe)?;
        }
    }
    wait(rec, probe)?;
    Ok(t1.elapsed().as_secs_f64() / reps as f64)
}

/// Bytes per second moved (read plus written) by a 16-byte-per-invocation copy between
/// two buffers of up to 1 GiB each.
pub fn copy_bandwidth(dev: &Arc<GpuDevice>) -> dory::Result<f64> {
    let bytes = (1u64 << 30).min(dev.caps.max_binding) & !15;
    let (src, dst) = (Store::new(dev, bytes, "copy source")?, Store::new(dev, bytes, "copy target")?);
    let mut rec = Recorder::new(dev.clone());
    let kernel = dev.kernels.copy4;
    let n = (bytes / 16) as usize;
    let groups = n.div_ceil(256);
    let x = groups.min(MAX_GROUPS);
    let y = groups.div_ceil(x);
    let p = CopyParams { len: n as u32, src_at: 0, dst_at: 0, moves_at: 0, moves: 0, span: 256 * x as u32 };
    let binds = [(3, Bind::Buf(src.clone())), (4, Bind::Buf(dst.clone()))];
    let secs = timed(&mut rec, &dst, Duration::from_millis(700), 20, false, |rec| {
        rec.dispatch(kernel, &binds, &p, [x as u32, y as u32, 1]);
        // One copy per submission, as a step would.
        if let Err(e) = rec.submit(None) {
            rec.fail(e);
        }
    })?;
    Ok(2.0 * bytes as f64 / secs)
}

/// Seconds one dispatch costs inside a compute pass when it depends on the one before
/// (it writes what the next reads) and does nearly nothing.
pub fn dispatch_cost(dev: &Arc<GpuDevice>) -> dory::Result<f64> {
    let (src, buf) = (Store::new(dev, 1024, "dispatch probe source")?, Store::new(dev, 1024, "dispatch probe")?);
    let mut rec = Recorder::new(dev.clone());
    let kernel = dev.kernels.copy;
    // Each dispatch writes what the one before wrote: the device must order them.
    let binds = [(0, Bind::Buf(src)), (1, Bind::Buf(buf.clone()))];
    let p = CopyParams { len: 1, src_at: 0, dst_at: 1, moves_at: 0, moves: 0, span: 256 };
    let run = |count: usize| {
        let binds = binds.clone();
        move |rec: &mut Recorder| {
            for _ in 0..count {
                rec.dispatch(kernel, &binds, &p, [1, 1, 1]);
            }
        }
    };
    // The cost of a submission and a wait, then of many dispatches in it.
    let one = timed(&mut rec, &buf, Duration::from_millis(300), 50, true, run(1))?;
    let many = 2000;
    let all = timed(&mut rec, &buf, Duration::from_millis(300), 5, true, run(many))?;
    if all <= one {
        return Err(gpu_err("the dispatch probe measured nothing"));
    }
    Ok((all - one) / (many - 1) as f64)
}
