//! The engine side of the server: a fixed set of worker threads, each owning one
//! session, fed from one bounded queue of jobs. HTTP handlers only submit jobs and read
//! the events a job sends back; they never touch a session.
//!
//! Why threads and not async tasks: a generation step is seconds of CPU (or a GPU sync)
//! that must not block the async runtime. Why one session per worker, reused: a session
//! holds its backend's widened weights and scratch buffers, so building one per request
//! would cost a copy of the weights each time; `Session::reset` between requests gives
//! each request a fresh context (and frees the caches it grew).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use crossbeam_channel::{Receiver, Sender};
use dory::{Backend, ExitRule, Finish, Model, Session};
use tokio::sync::mpsc::UnboundedSender;

/// One request for a worker: the prompt's ids and how to generate.
pub struct Job {
    pub prompt: Vec<u32>,
    pub request: dory::Request,
    /// The early-exit rule; None keeps the model's.
    pub exit: Option<ExitRule>,
    pub events: UnboundedSender<Event>,
    pub queued_at: Instant,
}

/// What a worker tells the handler of a job. A job ends with exactly one `Done` or
/// `Failed`, unless the handler went away first.
#[derive(Debug)]
pub enum Event {
    Token { id: u32, passes: usize, text: String },
    Done(Summary),
    Failed(String),
}

#[derive(Clone, Debug)]
pub struct Summary {
    pub prompt_tokens: usize,
    pub passes: Vec<usize>,
    pub finish: Finish,
    pub queued: Duration,
    pub prefill: Duration,
    pub decode: Duration,
    pub cache_bytes: u64,
}

/// Every worker is busy and the queue is full.
#[derive(Debug)]
pub struct QueueFull;

/// Counters for `/health` and the tests.
#[derive(Default)]
pub struct Stats {
    pub busy: AtomicUsize,
    pub served: AtomicU64,
    pub cancelled: AtomicU64,
    pub failed: AtomicU64,
    pub tokens: AtomicU64,
}

pub struct Engine {
    jobs: Sender<Job>,
    pub stats: Arc<Stats>,
    pub workers: usize,
    pub queue: usize,
    /// The sessions' backend and attention mode, in words ("exact" or "o1").
    pub backend: String,
    pub attention: &'static str,
}

/// Builds a worker's session (backend, attention mode) from the shared model: `dory
/// serve` gives one for the backend `--backend` chose, the tests one for the CPU.
pub type MakeSession<B> = Arc<dyn Fn(&Model) -> anyhow::Result<Session<B>> + Send + Sync>;

/// A fault injected into the workers, for the tests of fault handling: called with each
/// job's prompt as its generation starts, where a panic is a panic of the worker.
pub type Fault = Arc<dyn Fn(&[u32]) + Send + Sync>;

impl Engine {
    /// Starts `workers` threads, each with a session from `make`, and a queue of at most
    /// `queue` waiting jobs. Returns once every session is built, or the first error.
    /// Sessions are built on their own threads, so a backend need not be `Send`.
    pub fn start<B: Backend + 'static>(
        model: Arc<Model>,
        workers: usize,
        queue: usize,
        make: MakeSession<B>,
        fault: Option<Fault>,
    ) -> anyhow::Result<Engine> {
        anyhow::ensure!(workers >= 1, "--parallel must be ≥ 1");
        let (jobs, rx) = crossbeam_channel::bounded::<Job>(queue);
        let stats = Arc::new(Stats::default());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        // Each worker's steps run on a pool of its share of the threads, its own loop one
        // of them (why: `dory::Cpu`).
        let threads = (rayon::current_num_threads() / workers).max(1);
        for i in 0..workers {
            let (model, rx, stats, make, ready, fault) =
                (model.clone(), rx.clone(), stats.clone(), make.clone(), ready_tx.clone(), fault.clone());
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(move |t| format!("dory-worker-{i}.{t}"))
                .build()
                .context("cannot start a worker's threads")?;
            std::thread::Builder::new()
                .name(format!("dory-worker-{i}"))
                .spawn(move || {
                    pool.install(move || {
                        let session = match make(&model) {
                            Ok(s) => {
                                let _ = ready.send(Ok((s.forward().backend.name(), s.forward().attention().name())));
                                s
                            }
                            Err(e) => {
                                let _ = ready.send(Err(e));
                                return;
                            }
                        };
                        drop(ready);
                        Worker { model, session, stats, make, fault }.run(rx);
                    })
                })
                .context("cannot start a worker thread")?;
        }
        drop(ready_tx);
        let (mut backend, mut attention) = (String::new(), "exact");
        for _ in 0..workers {
            match ready_rx.recv() {
                Ok(Ok(names)) => (backend, attention) = names,
                Ok(Err(e)) => return Err(e.context("cannot build a session for a worker")),
                Err(_) => return Err(anyhow!("a worker thread stopped before building its session")),
            }
        }
        Ok(Engine { jobs, stats, workers, queue, backend, attention })
    }

    /// Queues `job`, unless the queue is full (or, while shutting down, no worker is left).
    pub fn submit(&self, job: Job) -> Result<(), QueueFull> {
        self.jobs.try_send(job).map_err(|_| QueueFull)
    }

    /// Jobs waiting for a worker.
    pub fn queued(&self) -> usize {
        self.jobs.len()
    }
}

struct Worker<B: Backend> {
    model: Arc<Model>,
    session: Session<B>,
    stats: Arc<Stats>,
    make: MakeSession<B>,
    fault: Option<Fault>,
}

impl<B: Backend> Worker<B> {
    /// Serves jobs until the engine is dropped.
    fn run(mut self, rx: Receiver<Job>) {
        let default_exit = self.session.exit;
        while let Ok(job) = rx.recv() {
            // A client that left while its job waited costs nothing.
            if job.events.is_closed() {
                self.stats.cancelled.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            self.stats.busy.fetch_add(1, Ordering::SeqCst);
            self.session.exit = job.exit.unwrap_or(default_exit);
            let outcome = catch_unwind(AssertUnwindSafe(|| self.generate(&job)));
            // A panic may have left the session half way through a step: build a new one.
            let panicked = outcome.is_err();
            let event = match outcome {
                Ok(Ok(summary)) => {
                    let counter =
                        if summary.finish == Finish::Cancelled { &self.stats.cancelled } else { &self.stats.served };
                    counter.fetch_add(1, Ordering::Relaxed);
                    self.stats.tokens.fetch_add(summary.passes.len() as u64, Ordering::Relaxed);
                    Event::Done(summary)
                }
                Ok(Err(e)) => {
                    self.stats.failed.fetch_add(1, Ordering::Relaxed);
                    Event::Failed(format!("generation failed: {e}"))
                }
                Err(panic) => {
                    self.stats.failed.fetch_add(1, Ordering::Relaxed);
                    let what = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "unknown panic".into());
                    Event::Failed(format!("the engine panicked while generating: {what}"))
                }
            };
            // The worker is ready again before the client hears the end, so that /health
            // read after an answer counts it as done.
            self.fresh_session(panicked);
            self.stats.busy.fetch_sub(1, Ordering::SeqCst);
            let _ = job.events.send(event);
        }
    }

    fn generate(&mut self, job: &Job) -> dory::Result<Summary> {
        let queued = job.queued_at.elapsed();
        if let Some(fault) = &self.fault {
            fault(&job.prompt);
        }
        let mut sent_ok = true;
        let gen = dory::generate(&mut self.session, &self.model.tokenizer, &job.prompt, &job.request, |t| {
            // A closed channel means the client went away: stop generating.
            sent_ok = job.events.send(Event::Token { id: t.id, passes: t.passes, text: t.text.to_string() }).is_ok();
            sent_ok
        })?;
        // What the caches hold at the end, before the reset frees them.
        let cache_bytes = self.session.forward().cache_bytes() as u64;
        Ok(Summary {
            prompt_tokens: gen.prompt_tokens,
            passes: gen.passes,
            finish: gen.finish,
            queued,
            prefill: gen.prefill_time,
            decode: gen.decode_time,
            cache_bytes,
        })
    }

    /// Forgets the last request's context, freeing its caches; a session that panicked
    /// or cannot be reset is rebuilt (from the weights in memory: `dory serve` reads them
    /// whole, so that the folder changing on disk cannot reach a worker).
    fn fresh_session(&mut self, panicked: bool) {
        if !panicked && self.session.reset().is_ok() {
            return;
        }
        match (self.make)(&self.model) {
            Ok(mut s) => {
                s.exit = self.session.exit;
                self.session = s;
            }
            // Keep the old one: the next request will report the failure it meets.
            Err(e) => eprintln!("dory serve: cannot rebuild a worker's session: {e}"),
        }
    }
}
