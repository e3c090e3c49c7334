//! Prompt processing (pp) and text generation (tg) speed at a pre-filled context depth,
//! with repetitions, as llama-bench measures them; `dory bench` prints the report.

use std::time::{Duration, Instant};

use crate::backend::Backend;
use crate::error::{invalid, Result};
use crate::forward::Want;
use crate::limits::{self, MAX_POSITIONS};
use crate::rng::Rng;
use crate::sampler::argmax;
use crate::session::Session;

/// What to measure.
#[derive(Clone, Debug)]
pub struct Options {
    /// Prompt tokens processed (pp), after `depth` tokens of context.
    pub prompt: usize,
    /// Tokens generated (tg, greedy) after the prompt.
    pub gen: usize,
    pub depth: usize,
    /// Measured repetitions, after the warm-up (`run`).
    pub reps: usize,
}

/// The median and the range of a measurement's repetitions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Stats {
    pub fn of(mut xs: Vec<f64>) -> Stats {
        xs.sort_by(f64::total_cmp);
        let n = xs.len();
        let median = if n % 2 == 1 { xs[n / 2] } else { (xs[n / 2 - 1] + xs[n / 2]) / 2.0 };
        Stats { median, min: xs[0], max: xs[n - 1] }
    }
}

#[derive(Clone, Debug)]
pub struct Report {
    /// Prompt tokens per second.
    pub pp: Stats,
    /// Generated tokens per second (none when `gen` is 0).
    pub tg: Option<Stats>,
    pub passes_per_token: f64,
    /// Passes recorded a token beyond those it ran (emptied on the device after it left),
    /// and the share of tokens that went on past the passes first recorded (`exit::Cap`).
    pub emptied_per_token: f64,
    pub went_on: f64,
    /// Bytes the caches hold at the end of the last repetition.
    pub cache_bytes: usize,
    /// Resident memory as the last repetition's generation starts and ends.
    pub tg_rss: (Option<u64>, Option<u64>),
}

/// The least work the warm-up runs: a GPU's clocks rise only under sustained load (the
/// H200's stay at 345 MHz for the first ~0.2 s), so one warm-up repetition of a small
/// model's short prompt left the first measured one up to a quarter slower.
const WARM_UP: Duration = Duration::from_millis(500);
/// And the most repetitions it takes to reach that.
const WARM_UP_MOST: usize = 50;

/// Runs warm-up repetitions (one at least, until `WARM_UP` has passed) and `reps`
/// measured ones on random tokens, each in a session started over with its caches'
/// storage kept (`Session::clear`, as llama-bench clears its KV cache): the warm-up pays
/// for allocating it, and a repetition's prompt times its steps, not a GPU allocator
/// taking a new block of memory (~6 ms in one of the larger config's pp512 repetitions on
/// the H100).
pub fn run<B: Backend>(session: &mut Session<B>, o: &Options) -> Result<Report> {
    if o.prompt == 0 || o.reps == 0 {
        return Err(invalid!("a benchmark needs a prompt of at least one token and at least one repetition"));
    }
    check_memory(session, o)?;
    let vocab = session.forward().config().vocab_size as u64;
    // The warm-up's tokens apart from the measured ones: how many warm-up repetitions run
    // depends on the speed, and the measured repetitions must see the same tokens (under an
    // exit rule a token's passes follow them) whatever the binary or the machine.
    let tokens = |seed: u64| {
        let mut rng = Rng::new(seed);
        move |n: usize| -> Vec<u32> { (0..n).map(|_| (rng.next_u64() % vocab) as u32).collect() }
    };
    let mut random = tokens(2);
    let warm = Instant::now();
    for _ in 0..WARM_UP_MOST {
        repetition(session, o, &mut random)?;
        if warm.elapsed() >= WARM_UP {
            break;
        }
    }
    let mut random = tokens(1);
    let (mut pp, mut tg, mut passes) = (vec![], vec![], vec![]);
    let (mut emptied, mut went_on) = (0, 0);
    let mut last = None;
    for _ in 0..o.reps {
        let r = repetition(session, o, &mut random)?;
        pp.push(o.prompt as f64 / r.pp_secs);
        if o.gen > 0 {
            tg.push(o.gen as f64 / r.tg_secs);
            passes.push(r.passes as f64 / o.gen as f64);
        }
        (emptied, went_on) = (emptied + r.recorded - r.passes, went_on + r.went_on);
        last = Some(r);
    }
    let last = last.expect("at least one repetition");
    let passes_per_token = passes.iter().sum::<f64>() / passes.len().max(1) as f64;
    let tokens = (o.gen * o.reps).max(1) as f64;
    let tg = (!tg.is_empty()).then(|| Stats::of(tg));
    Ok(Report {
        pp: Stats::of(pp),
        tg,
        passes_per_token,
        emptied_per_token: emptied as f64 / tokens,
        went_on: went_on as f64 / tokens,
        cache_bytes: last.cache_bytes,
        tg_rss: last.tg_rss,
    })
}

/// What one repetition measured.
struct Repetition {
    pp_secs: f64,
    tg_secs: f64,
    passes: usize,
    recorded: usize,
    went_on: usize,
    cache_bytes: usize,
    tg_rss: (Option<u64>, Option<u64>),
}

/// One repetition: the depth filled, the prompt timed, then `gen` greedy tokens timed.
fn repetition<B: Backend>(
    session: &mut Session<B>,
    o: &Options,
    random: &mut impl FnMut(usize) -> Vec<u32>,
) -> Result<Repetition> {
    session.clear()?;
    if o.depth > 0 {
        session.prompt(&random(o.depth), false, Want::Last)?;
    }
    let prompt = random(o.prompt);
    let t0 = Instant::now();
    let mut logits = session.prompt(&prompt, false, Want::Last)?.logits;
    let pp_secs = t0.elapsed().as_secs_f64();
    let rss_before = rss();
    let t1 = Instant::now();
    let (mut passes, mut recorded, mut went_on) = (0, 0, 0);
    for i in 0..o.gen {
        // The last token's step does not run the next one ahead: that step would be
        // dropped unread, and the next repetition's prompt would wait behind it on the
        // device (the larger config's pp512 ran 4-6 % slower on the H200).
        session.forward_mut().set_greedy(i + 1 < o.gen);
        session.sampled(argmax(&logits));
        let d = session.decode()?;
        passes += d.passes;
        recorded += d.recorded;
        went_on += usize::from(d.went_on);
        logits = d.logits;
    }
    let tg_secs = t1.elapsed().as_secs_f64();
    let cache_bytes = session.forward().cache_bytes();
    Ok(Repetition { pp_secs, tg_secs, passes, recorded, went_on, cache_bytes, tg_rss: (rss_before, rss()) })
}

/// Refuses, before any work, a context whose caches (in the session's attention mode)
/// and random tokens cannot fit.
fn check_memory<B: Backend>(session: &Session<B>, o: &Options) -> Result<()> {
    let what = format!("depth {} + prompt {} + gen {}", o.depth, o.prompt, o.gen);
    let context = o.depth.checked_add(o.prompt).and_then(|n| n.checked_add(o.gen));
    let context = context.filter(|&n| n <= MAX_POSITIONS);
    let context = context.ok_or_else(|| invalid!("{what}: more than {MAX_POSITIONS} positions"))?;
    let f = session.forward();
    let caches = f.attention().cache_bytes(f.config(), context);
    let bytes = caches.and_then(|b| b.checked_add(o.depth.max(o.prompt).checked_mul(4)?));
    limits::fits(&format!("{what}: the caches at context {context}"), bytes.map(|b| b as u64))
}

/// The process's peak resident memory in bytes, where the OS tells it.
pub fn peak_rss() -> Option<u64> {
    proc_status("VmHWM:")
}

/// The process's resident memory now.
pub fn rss() -> Option<u64> {
    proc_status("VmRSS:")
}

fn proc_status(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_range() {
        assert_eq!(Stats::of(vec![3.0, 1.0, 2.0]), Stats { median: 2.0, min: 1.0, max: 3.0 });
        assert_eq!(Stats::of(vec![4.0, 1.0, 2.0, 3.0]).median, 2.5);
    }
}
