//! The step, written once for every backend (spec §4–§5): embed, enter the loop, the
//! layers, between passes, read out, the exit rule, leave, the head.
//!
//! A segment of T rows runs pass-major: pass 1 for every chunk, then pass 2, … . At pass
//! k the cache then holds the pass-k keys of the segment's earlier chunks (written this
//! pass) and the last-pass keys of earlier segments (never touched), which is exactly
//! the parallel semantics, with one cache per layer whatever the chunk size. What it
//! costs: each row's state s between passes ([T, D], `carry`), and sliding rings of
//! W + T − 1 slots while the segment runs (shrunk back at the next step).
//!
//! In O(1) mode a full layer runs exactly, keeping stride-sampled queries, until a step
//! other than the session's first segment starts at or after `seal_at`; it is then
//! sealed (spec §6) and every later step is a single row that first pushes the position
//! leaving the window.

use crate::backend::{Backend, Edge, Layer, Mat, Mix, Part};
use crate::cache::{Keys, Near, Rows};
use crate::config::{Config, LayerKind, O1};
use crate::error::{invalid, Error, Result};
use crate::exit::{self, Cap, ExitRule, Recent};
use crate::nystrom;
use crate::rope;
use crate::sampler::argmax;

/// The default number of rows a prompt chunk runs at once on the CPU. 512 against 256:
/// pp512 1.04–1.08× in every format on an Intel Xeon VM (four interleaved rounds; peak RSS
/// of the benchmark config's bf16 54 → 60 MiB) and 1.02–1.10× on a Zen 4 VM within its noise
/// (docs/BENCHMARKS.md, 2026-12-03 and -04).
pub const DEFAULT_CHUNK: usize = 512;

/// The tokens `Cap::Recent` looks back at by default. The shipped model under its rule on
/// the CPU (2,394 tokens) left after 2 passes 65.2 %, 3 passes 33.7 %, 4 passes 1.1 %:
/// replayed, the most of the last 16 empties 0.84 passes a token (all four recorded: 1.64)
/// and misses 0.9 % of tokens (docs/BENCHMARKS.md, 2026-12-07).
pub const RECENT: usize = 16;

/// How full layers attend.
#[derive(Clone, Debug, PartialEq)]
pub enum Attention {
    /// Every earlier position (spec §4).
    Exact,
    /// Sinks and a window exactly, the far field through landmarks, after the seal (§6).
    O1(O1),
}

impl Attention {
    /// The model's default: O(1) when its config has an `o1` section.
    pub fn default_for(config: &Config) -> Attention {
        config.o1.clone().map_or(Attention::Exact, Attention::O1)
    }

    pub fn name(&self) -> &'static str {
        match self {
            Attention::Exact => "exact",
            Attention::O1(_) => "o1",
        }
    }

    /// Bytes of f32 caches while decoding at `context` positions (None past usize): up
    /// to W per sliding layer; per full layer every position (and, in O(1) mode before
    /// the seal, the sampled queries), or after the seal the sinks, the window and the
    /// landmark state.
    pub fn cache_bytes(&self, c: &Config, context: usize) -> Option<usize> {
        let kv = 2 * c.kv_width();
        let (nh, nk, d) = (c.heads, c.kv_heads, c.head_dim);
        let floats = |kind: &LayerKind| match (kind, self) {
            (LayerKind::Sliding, _) => c.window.min(context).checked_mul(kv),
            (LayerKind::Full, Attention::Exact) => context.checked_mul(kv),
            (LayerKind::Full, Attention::O1(o)) if context <= o.seal_at => {
                context.checked_mul(kv)?.checked_add(context.div_ceil(o.stride).checked_mul(c.q_width())?)
            }
            (LayerKind::Full, Attention::O1(o)) => {
                let m = o.landmarks;
                let state = nk * m * d + 2 * nh * m * d + nh * m * m + 3 * nh * m;
                o.sinks.checked_add(o.window)?.checked_mul(kv)?.checked_add(state)
            }
        };
        c.layers.iter().try_fold(0usize, |sum, kind| sum.checked_add(floats(kind)?))?.checked_mul(4)
    }
}

/// Which rows of a segment need logits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// The last row only (generation).
    Last,
    /// Every row (perplexity, replays).
    All,
}

/// What one decoding step produced.
#[derive(Clone, Debug)]
pub struct Decoded {
    /// [V]: the logits the token is sampled from (a read-out's, if it exited).
    pub logits: Vec<f32>,
    /// Passes the token ran.
    pub passes: usize,
    /// Passes recorded for it: where the device tests the exit rule, those it ran and those
    /// emptied after it left (`Cap`); else those it ran.
    pub recorded: usize,
    /// Whether it went on past the passes first recorded, after a read (`Cap`).
    pub went_on: bool,
}

/// A decoding step recorded ahead of its token (`Forward::read_last`): at position `pos`,
/// under the exit rule `exit`, up to its first read (`Forward::first_read`), and to pass
/// `upto` at most (`Forward::upto`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Ahead {
    pos: usize,
    exit: ExitRule,
    token: Token,
    upto: usize,
}

/// How a step recorded ahead gets its token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    /// At `release`, its embedding among the held ops.
    Held,
    /// The device's own greedy choice (`Forward::set_greedy`), `token` by the host's
    /// reckoning: the step runs already.
    Greedy { token: u32 },
    /// A token known ahead (a segment's next row after the seal): the step runs already.
    Fed { token: u32 },
}

/// Working buffers for up to `rows` rows.
struct Scratch<B> {
    rows: usize,
    logit_rows: usize,
    x: B,      // [rows, D] the token's input
    s: B,      // [rows, D] the state between passes
    h: B,      // [rows, D] the hidden state
    qkvg: B,   // [rows, H·d + 2·K·d + H·d]
    q: B,      // [rows, H·d] prepared queries
    z: B,      // [rows, H·d] gated attention output
    o: B,      // [rows, D] a sub-layer's output
    gu: B,     // [rows, 2F]
    m: B,      // [rows, F]
    logits: B, // [logit_rows, V], a greedy token and an exit's pass (`enter_greedy`, `exit_test`)
    kept: B,   // [2, V]: an untested read-out's logits, then the next read-out's (`decode`)
}

pub struct Forward<B: Backend> {
    pub backend: B,
    config: Config,
    layers: Vec<Layer<B::Cache>>,
    scratch: Option<Scratch<B::Buf>>,
    /// The most rows one chunk of a segment runs at once.
    chunk: usize,
    attention: Attention,
    /// Whether a step has run since the session started: the first segment never seals.
    fed: bool,
    /// Added to every position where the model's math sees it (the RoPE angles), so
    /// that tests can shift a whole session (spec §3: precise at positions in the
    /// millions); 0 otherwise.
    rope_offset: usize,
    ahead: Option<Ahead>,
    /// The last position whose step pushed (spec §6) into the sealed layers' far field:
    /// a step at that position again, after the one recorded ahead there ran and was not
    /// taken, must not push the same position twice.
    pushed: Option<usize>,
    /// Whether each decoded step is fed the greedy token of the one before (`set_greedy`).
    greedy: bool,
    /// The passes a decoded step whose rule the device tests is recorded to (`set_cap`),
    /// and the passes of the last tokens decoded, which `Cap::Recent` reads.
    cap: Cap,
    recent: Recent,
}

impl<B: Backend> Forward<B> {
    pub fn new(mut backend: B, config: &Config, chunk: usize) -> Result<Self> {
        if chunk == 0 {
            return Err(invalid!("the chunk size must be ≥ 1"));
        }
        let layers = (0..config.layers.len())
            .map(|i| {
                let kind = config.layers[i];
                let keys = Keys::for_step(kind, 1, 1, None);
                Ok(Layer { index: i, kind, keys, cache: backend.cache(i)?, sealed_at: None })
            })
            .collect::<Result<_>>()?;
        let attention = Attention::default_for(config);
        let mut f = Forward {
            backend,
            config: config.clone(),
            layers,
            scratch: None,
            chunk,
            attention,
            fed: false,
            rope_offset: 0,
            ahead: None,
            pushed: None,
            greedy: false,
            cap: Cap::Recent(RECENT),
            recent: Recent::default(),
        };
        f.reset()?;
        Ok(f)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn attention(&self) -> &Attention {
        &self.attention
    }

    /// Chooses how full layers attend; starts a new session.
    pub fn set_attention(&mut self, attention: Attention) -> Result<()> {
        self.attention = attention;
        self.reset()
    }

    /// Shifts every position the model's math sees by `offset` (see `rope_offset`).
    pub fn set_rope_offset(&mut self, offset: usize) {
        self.drop_ahead();
        self.rope_offset = offset;
    }

    /// Forgets every position: a new session.
    pub fn reset(&mut self) -> Result<()> {
        self.restart(false)
    }

    /// `reset`, keeping the caches' storage for the next context where the backend would
    /// allocate it again (GPU buffers): a benchmark's repetitions then time their steps,
    /// not the allocator, as llama-bench's cleared KV cache does. The storage stays held
    /// until a `reset` or the session's end.
    pub fn clear(&mut self) -> Result<()> {
        self.restart(true)
    }

    fn restart(&mut self, keep: bool) -> Result<()> {
        self.drop_ahead();
        let sample = self.sample();
        for (i, layer) in self.layers.iter_mut().enumerate() {
            layer.keys = Keys::for_step(layer.kind, self.config.window, 1, sample);
            if keep {
                self.backend.clear(i, &mut layer.cache)?;
            } else {
                layer.cache = self.backend.cache(i)?;
            }
            layer.sealed_at = None;
        }
        self.fed = false;
        self.pushed = None;
        Ok(())
    }

    /// Says that each decoded step will be fed the greedy token of the step before (the
    /// lowest id of its largest logit): a backend that chooses it on the device then starts
    /// each step before the host has read the logits it follows. Any other token still
    /// decodes right, at the price of that step run again.
    pub fn set_greedy(&mut self, greedy: bool) {
        self.greedy = greedy;
    }

    /// How many passes a decoded step whose rule the device tests is recorded to, by
    /// default the most of the last 16 tokens (`Cap`).
    pub fn set_cap(&mut self, cap: Cap) {
        self.cap = cap;
    }

    /// Whether the step recorded ahead runs already, on the device's greedy token or a
    /// token fed ahead.
    pub fn running_ahead(&self) -> bool {
        self.ahead.is_some_and(|a| matches!(a.token, Token::Greedy { .. } | Token::Fed { .. }))
    }

    /// A step recorded ahead of its token (`read_last`), if any: its position and the pass
    /// it is recorded to (its first read).
    pub fn recorded_ahead(&self) -> Option<(usize, usize)> {
        self.ahead.map(|a| (a.pos, self.first_read(&a.exit).min(a.upto)))
    }

    /// Whether any full layer is sealed.
    pub fn sealed(&self) -> bool {
        self.layers.iter().any(|l| l.sealed_at.is_some())
    }

    /// Bytes every layer's cache holds now.
    pub fn cache_bytes(&self) -> usize {
        self.layers.iter().map(|l| self.backend.cache_bytes(&l.cache)).sum()
    }

    /// The stride at which unsealed full layers keep queries (O(1) mode only).
    fn sample(&self) -> Option<usize> {
        match &self.attention {
            Attention::O1(o) => Some(o.stride),
            Attention::Exact => None,
        }
    }

    /// Whether a decoded step at `pos0` may be recorded ahead of its token, after the
    /// last read of the row before: any but the one that seals, which reads the caches
    /// back first. A step after the seal pushes a position into the far field, but as it
    /// lays the caches out (unheld, so that even a dropped step's push runs) and once a
    /// position (`pushed`).
    fn may_run_ahead(&self, pos0: usize) -> bool {
        !self.row_by_row(pos0) || self.layers.iter().all(|l| l.kind != LayerKind::Full || l.sealed_at.is_some())
    }

    /// Whether a step starting at `pos0` seals a layer or runs after a seal: such steps
    /// are single rows (spec §5).
    fn row_by_row(&self, pos0: usize) -> bool {
        match &self.attention {
            Attention::O1(o) => {
                self.sealed() || (self.fed && pos0 >= o.seal_at && self.config.layers.contains(&LayerKind::Full))
            }
            Attention::Exact => false,
        }
    }

    /// Runs `ids` at positions `pos0..` as one segment: every row all P passes, the
    /// rows seeing one another with the parallel semantics. Returns the logits of the
    /// wanted rows, [1 or T, V].
    pub fn segment(&mut self, ids: &[u32], pos0: usize, want: Want) -> Result<Vec<f32>> {
        let mut out = Vec::new();
        self.segment_each(ids, pos0, want, |_, rows| out.extend_from_slice(rows), |_| {})?;
        Ok(out)
    }

    /// `segment`, handing the wanted logits to `sink` chunk by chunk (the first row's
    /// index in the segment, then [rows, V]) so that a long text's logits need not all
    /// be held at once, and reporting each chunk-pass done to `progress` (of
    /// chunks × P).
    pub fn segment_each(
        &mut self,
        ids: &[u32],
        pos0: usize,
        want: Want,
        mut sink: impl FnMut(usize, &[f32]),
        mut progress: impl FnMut(usize),
    ) -> Result<()> {
        let t = ids.len();
        if t == 0 {
            return Err(invalid!("a segment needs at least one token"));
        }
        if self.row_by_row(pos0) {
            // After a seal, a segment's rows are decoding steps (all passes, no exit), each
            // run ahead of the read of the row before.
            for (r, &id) in ids.iter().enumerate() {
                let out = self.decode_fed(id, pos0 + r, &ExitRule::NONE, ids.get(r + 1).copied())?;
                if want == Want::All || r + 1 == t {
                    sink(r, &out.logits);
                }
                progress(self.config.passes);
            }
            return Ok(());
        }
        let (d, v, passes) = (self.config.hidden, self.config.vocab_size, self.config.passes);
        let chunk = self.chunk.min(t);
        let chunks = t.div_ceil(chunk);
        let logit_rows = match want {
            Want::Last => 1,
            Want::All => chunk,
        };
        self.prepare(Rows { pos0, rows: t }, chunk, logit_rows)?;
        // Rows' states between passes, when the segment does not fit one chunk.
        let mut carry = if chunks > 1 { Some(self.backend.alloc(t * d)?) } else { None };
        let ropes: Vec<Vec<f32>> = (0..chunks)
            .map(|c| {
                let rows = chunk.min(t - c * chunk);
                rope::table(self.config.rope_theta, self.config.head_dim, self.rope_offset + pos0 + c * chunk, rows)
            })
            .collect();
        for k in 1..=passes {
            for (c, rope) in ropes.iter().enumerate() {
                let first = c * chunk;
                let at = Rows { pos0: pos0 + first, rows: chunk.min(t - first) };
                let sc = self.scratch.as_mut().expect("prepared");
                if k == 1 {
                    self.backend.enter([&mut sc.h, &mut sc.x, &mut sc.s], &ids[first..at.end() - pos0]);
                } else if let Some(carry) = &carry {
                    self.backend.embed(&mut sc.x, &ids[first..at.end() - pos0]);
                    self.backend.copy_rows(&mut sc.s, 0, carry, first, at.rows, d);
                    self.backend.mix(Mix::Resume, &mut sc.h, &sc.x, &mut sc.s, at.rows);
                }
                // Rows carried to the next chunk are read out: s is what they carry.
                let closing = self.layers_pass(at, rope, None);
                self.close_pass(closing, Mix::after(k, passes, carry.is_some()), at.rows);
                let sc = self.scratch.as_mut().expect("prepared");
                if k < passes {
                    if let Some(carry) = &mut carry {
                        self.backend.copy_rows(carry, first, &sc.s, 0, at.rows, d);
                    }
                    progress(1);
                    continue;
                }
                let (row, rows) = match want {
                    Want::All => (0, at.rows),
                    Want::Last if c + 1 == chunks => (at.rows - 1, 1),
                    Want::Last => {
                        progress(1);
                        continue;
                    }
                };
                self.backend.logits(&mut sc.logits, &sc.h, row, rows);
                sink(first + row, &self.backend.read(&sc.logits, rows * v)?);
                progress(1);
            }
        }
        Ok(())
    }

    /// One decoded token at `pos`, with the exit rule `exit`.
    pub fn decode(&mut self, id: u32, pos: usize, exit: &ExitRule) -> Result<Decoded> {
        let d = self.decode_fed(id, pos, exit, None)?;
        if let Cap::Recent(n) = self.cap {
            self.recent.push(d.passes, n);
        }
        Ok(d)
    }

    /// `decode`, and where the token of the step after is known (`next`), that step run
    /// on it ahead of this one's read.
    fn decode_fed(&mut self, id: u32, pos: usize, exit: &ExitRule, next: Option<u32>) -> Result<Decoded> {
        let (v, passes) = (self.config.vocab_size, self.config.passes);
        let at = Rows { pos0: pos, rows: 1 };
        let first = self.first_read(exit);
        let mut check = None;
        let upto = match self.ahead.take_if(|a| a.pos == pos && a.exit == *exit) {
            Some(a @ Ahead { token: Token::Greedy { token }, .. }) if token == id => {
                check = Some(id);
                a.upto
            }
            Some(a @ Ahead { token: Token::Fed { token }, .. }) if token == id => a.upto,
            Some(a @ Ahead { token: Token::Held, .. }) => {
                self.backend.release(id)?;
                a.upto
            }
            // Drops a step recorded ahead for another position or rule. One that ran on
            // another token (the caller's was not the greedy one) wrote only its own
            // position, which this step writes again.
            _ => self.start(id, at, exit)?,
        };
        let mut previous: Option<Vec<f64>> = None;
        // Each k here is a read-out the host tests.
        let mut k = first;
        while k < passes {
            // The read-out before, if untested, kept its logits on the device for this test.
            let both = exit.reads_out(k - 1, passes) && !exit.tested(k - 1, passes);
            let sc = self.scratch.as_mut().expect("prepared");
            if both {
                self.backend.copy_rows(&mut sc.kept, 1, &sc.logits, 0, 1, v);
            }
            // The next step is recorded while this read-out comes back, as at a step's last
            // read: where the rule holds, this is that read. Not after the seal: its push
            // would reach this row's later passes.
            let ahead = self.backend.holds() && !self.row_by_row(at.pos0 + 1);
            if ahead {
                let sc = self.scratch.as_ref().expect("prepared");
                let (buf, len) = if both { (&sc.kept, 2 * v) } else { (&sc.logits, v) };
                self.backend.read_begin(buf, len);
                self.record_next(at, exit, Token::Held, false);
            }
            let sc = self.scratch.as_ref().expect("prepared");
            let logits = if both {
                let mut both = self.backend.read(&sc.kept, 2 * v)?;
                let logits = both.split_off(v);
                previous = Some(exit::log_softmax(&both));
                logits
            } else {
                self.backend.read(&sc.logits, v)?
            };
            let logp = exit::log_softmax(&logits);
            if exit.holds(exit.statistic(&logp, previous.as_deref())) {
                return Ok(Decoded { logits, passes: k, recorded: k, went_on: false });
            }
            previous = Some(logp);
            // The row goes on: the step recorded ahead is dropped unrun. The caches stay
            // laid out for it, which serves this row too (a single row's layout does not
            // move, and only grows with the end). Its recording may have moved h to the
            // other of its buffers (a fused residual writes there), so h is formed again
            // from s and x, which it left alone.
            if ahead {
                self.drop_ahead();
                let sc = self.scratch.as_mut().expect("prepared");
                self.backend.mix(Mix::Resume, &mut sc.h, &sc.x, &mut sc.s, 1);
            }
            k = self.passes_to_read(at, k + 1, passes, exit);
        }
        let tested = self.backend.tests_exit() && (1..passes).any(|k| exit.tested(k, passes));
        let (mut logits, mut left) = self.read_last(at, exit, check, tested, next, upto < passes)?;
        let went_on = upto < passes && left.is_none();
        if went_on {
            (logits, left) = self.go_on(at, upto, exit, next)?;
        }
        let recorded = if went_on { passes } else { upto };
        Ok(Decoded { logits, passes: left.unwrap_or(passes), recorded, went_on })
    }

    /// The passes after `upto` of a decoded row that went on past those recorded, and their
    /// read (`read_last`'s): the step after it, gated on it, was emptied (or is dropped
    /// unrun), and h is formed again from the read-out's state, as after a read-out the host
    /// tests.
    fn go_on(
        &mut self,
        at: Rows,
        upto: usize,
        exit: &ExitRule,
        next: Option<u32>,
    ) -> Result<(Vec<f32>, Option<usize>)> {
        let passes = self.config.passes;
        self.drop_ahead();
        let sc = self.scratch.as_mut().expect("prepared");
        self.backend.mix(Mix::Resume, &mut sc.h, &sc.x, &mut sc.s, 1);
        self.passes_to_read(at, upto + 1, passes, exit);
        let tested = self.backend.tests_exit() && (upto + 1..passes).any(|k| exit.tested(k, passes));
        self.read_last(at, exit, None, tested, next, false)
    }

    /// The pass after which the host first reads a decoded row under `exit`: its first
    /// read-out the host tests, else its last pass.
    fn first_read(&self, exit: &ExitRule) -> usize {
        let passes = self.config.passes;
        let host_tests = !self.backend.tests_exit();
        (1..passes).find(|&k| host_tests && exit.tested(k, passes)).unwrap_or(passes)
    }

    /// Whether a decoded step under `exit` is read once, at its end: no read-out the host
    /// tests (the device tests them, or none is tested).
    fn read_once(&self, exit: &ExitRule) -> bool {
        self.first_read(exit) == self.config.passes
    }

    /// The passes a decoded step under `exit` is recorded to: `cap`'s, raised to a pass the
    /// rule is tested after; all of them where the backend does not gate the step after it,
    /// or once a layer is sealed (that step's push, recorded ahead, would reach this row's
    /// later passes).
    fn upto(&self, exit: &ExitRule) -> usize {
        let passes = self.config.passes;
        if !self.backend.gates() || self.sealed() {
            return passes;
        }
        let want = self.recent.cap(self.cap, passes);
        (want.max(1)..passes).find(|&k| exit.tested(k, passes)).unwrap_or(passes)
    }

    /// Records a decoded row's step on token `id`, up to its first read; returns the pass
    /// it is recorded to at most (`upto`).
    fn start(&mut self, id: u32, at: Rows, exit: &ExitRule) -> Result<usize> {
        self.prepare(at, 1, 1)?;
        let upto = self.upto(exit);
        let sc = self.scratch.as_mut().expect("prepared");
        self.backend.enter([&mut sc.h, &mut sc.x, &mut sc.s], &[id]);
        self.passes_to_read(at, 1, upto, exit);
        Ok(upto)
    }

    /// Records passes `from..=upto` of a decoded row up to the host's next read: a read-out
    /// the host tests, else pass `upto` (the last, or a read-out tested on the device). The
    /// read-outs on the way stay on the device: one tested there is tested there (the rest
    /// of the step skipped where the rule holds), an untested one is written where the next
    /// test reads its "before" (`kept`, row 0).
    /// Returns the pass read after.
    /// So a step read once, at its end, is recorded whole: ahead of its token, too.
    /// A read-out's state is the one the next pass starts from, s = N(h): its pass ends as
    /// any other between passes (s ← N(h); h ← N(s + x), the read-out and resume edges in
    /// one) and the head reads s, one dispatch fewer a read-out. A pass with no read-out
    /// after it is closed by the next pass's first projection, which a backend may fuse
    /// with it.
    fn passes_to_read(&mut self, at: Rows, from: usize, upto: usize, exit: &ExitRule) -> usize {
        let (v, passes) = (self.config.vocab_size, self.config.passes);
        let rope = rope::table(self.config.rope_theta, self.config.head_dim, self.rope_offset + at.pos0, 1);
        let mut open = None;
        for k in from..=upto {
            let edge = if k == passes { Mix::Leave } else { Mix::Between };
            let closing = self.layers_pass(at, &rope, open.take());
            if edge == Mix::Between && !exit.reads_out(k, passes) {
                open = Some((closing, edge));
                continue;
            }
            self.close_pass(closing, edge, 1);
            let sc = self.scratch.as_mut().expect("prepared");
            let state = if edge == Mix::Leave { &sc.h } else { &sc.s };
            let tested = exit.tested(k, passes);
            if edge == Mix::Between && !tested {
                // Straight into the row the next test reads as its "before".
                self.backend.logits(&mut sc.kept, state, 0, 1);
                continue;
            }
            self.backend.logits(&mut sc.logits, state, 0, 1);
            if edge == Mix::Leave || !self.backend.tests_exit() {
                return k;
            }
            self.backend.exit_test(exit, k, &mut sc.logits, &mut sc.kept, v);
            if k == upto {
                return k;
            }
        }
        unreachable!("the last pass leaves, and a step recorded to fewer is tested after its last")
    }

    /// The last read of a decoded row. Where the backend holds ops, the next position's
    /// step is recorded while the device runs this one, up to its first read (its token's
    /// embedding among them, the token given at `release`), so that the host's encoding of
    /// a step does not leave the device idle: a step that does not come (another segment, a
    /// new exit rule, the end) is dropped unrun. Not the step that seals, whose layout
    /// reads the caches back (`may_run_ahead`).
    /// A greedy decoder's next step, where the device can choose its token, runs at once
    /// instead: the host checks the token it was fed against its own argmax of these logits
    /// before it takes the step, and that step's read checks the device's (`check`). With
    /// `tested` (the device tested the rule), the pass the row left at comes back too
    /// (None: it ran them all, or went on past those recorded), from the word after the
    /// greedy token's. With `gated` (this step recorded to fewer than all its passes), the
    /// next step starts with a gate on that word (`Backend::gate`).
    fn read_last(
        &mut self,
        at: Rows,
        exit: &ExitRule,
        check: Option<u32>,
        tested: bool,
        fed: Option<u32>,
        gated: bool,
    ) -> Result<(Vec<f32>, Option<usize>)> {
        let (v, passes) = (self.config.vocab_size, self.config.passes);
        let next = Rows { pos0: at.pos0 + 1, rows: 1 };
        let len = v + if tested { 2 } else { usize::from(check.is_some()) };
        if self.backend.holds() && self.may_run_ahead(next.pos0) {
            let sc = self.scratch.as_ref().expect("prepared");
            self.backend.read_begin(&sc.logits, len);
            // Only a step read once runs ahead: a read-out the host tests is a wait.
            let token = match fed {
                _ if !self.read_once(exit) => Token::Held,
                Some(token) => Token::Fed { token },
                None if self.greedy => Token::Greedy { token: u32::MAX },
                None => Token::Held,
            };
            self.record_next(at, exit, token, gated);
        }
        let sc = self.scratch.as_ref().expect("prepared");
        let mut logits = self.backend.read(&sc.logits, len)?;
        let left = match tested.then(|| logits.pop().map_or(0, f32::to_bits) as usize) {
            Some(k) if k > passes => {
                return Err(Error::Backend(format!("the device's exit test left at pass {k} of {passes}")));
            }
            Some(k) => (k != 0).then_some(k),
            None => None,
        };
        let token = if tested || check.is_some() { logits.pop() } else { None };
        if let Some(id) = check {
            let chosen = token.map(f32::to_bits);
            if chosen != Some(id) {
                return Err(Error::Backend(format!(
                    "the device's greedy token at position {} was {chosen:?}, the host's argmax {id}",
                    at.pos0
                )));
            }
        }
        if let Some(Ahead { token: Token::Greedy { token }, .. }) = self.ahead.as_mut() {
            *token = argmax(&logits);
        }
        Ok((logits, left))
    }

    /// Records the step after the row at `at` ahead of its token, while a read begun
    /// (`read_begin`) comes back: held, its token given at `release`, or run at once on a
    /// token fed or the device's argmax of these logits (where the backend can choose it;
    /// else held). The caches are laid out for it
    /// first, unheld: what a dropped step leaves is what any step at that position would
    /// (after the seal, its push: the step there again does not push).
    /// A failure there is that step's, not this one's: it is not held, and its own decode
    /// prepares again and reports it.
    fn record_next(&mut self, at: Rows, exit: &ExitRule, token: Token, gated: bool) {
        let next = Rows { pos0: at.pos0 + 1, rows: 1 };
        if self.prepare(next, 1, 1).is_err() {
            return;
        }
        let (v, upto) = (self.config.vocab_size, self.upto(exit));
        let token = match token {
            Token::Greedy { .. } if self.backend.chooses() => Token::Greedy { token: u32::MAX },
            Token::Fed { token } => Token::Fed { token },
            _ => Token::Held,
        };
        if token == Token::Held {
            self.backend.hold();
        }
        let sc = self.scratch.as_mut().expect("prepared");
        // Before its entry, which writes the state the row at `at` goes on from.
        if gated {
            self.backend.gate(&mut sc.logits, v);
        }
        let bufs = [&mut sc.h, &mut sc.x, &mut sc.s];
        match token {
            Token::Fed { token } => self.backend.enter_ahead(bufs, token),
            Token::Greedy { .. } => self.backend.enter_greedy(bufs, &mut sc.logits, v),
            Token::Held => self.backend.enter_held(bufs),
        }
        self.passes_to_read(next, 1, upto, exit);
        if token != Token::Held {
            self.backend.flush();
        }
        self.ahead = Some(Ahead { pos: next.pos0, exit: *exit, token, upto });
    }

    /// Drops a step recorded ahead.
    fn drop_ahead(&mut self) {
        if self.ahead.take().is_some() {
            self.backend.discard();
        }
    }

    /// Lays every cache out for a step over `at`, and sizes the scratch for `rows` rows
    /// and `logit_rows` rows of logits. A step recorded ahead is dropped first: it was
    /// laid out for itself.
    fn prepare(&mut self, at: Rows, rows: usize, logit_rows: usize) -> Result<()> {
        self.drop_ahead();
        let sample = self.sample();
        let seal = match &self.attention {
            Attention::O1(o) if self.fed && at.pos0 >= o.seal_at => Some(o.clone()),
            _ => None,
        };
        // A step recorded ahead here ran its pushes, taken or not.
        let push = self.pushed < Some(at.pos0);
        for layer in &mut self.layers {
            match (layer.keys, &seal) {
                (Keys::Sealed(near), _) => {
                    debug_assert_eq!(at.rows, 1, "sealed layers run single rows");
                    if let Some(e) = near.leaving(at.pos0).filter(|_| push && layer.sealed_at < Some(at.pos0)) {
                        self.backend.push(&mut layer.cache, &near, e);
                        self.pushed = Some(at.pos0);
                    }
                }
                (Keys::Full { .. }, Some(o1)) => {
                    let exported = self.backend.export(&layer.cache, at.pos0)?;
                    let landmarks = nystrom::seal(&self.config, o1, at.pos0, &exported);
                    let near = Near { sinks: o1.sinks, window: o1.window };
                    let moves = layer.keys.moves(&Keys::Sealed(near), at.pos0);
                    self.backend.seal(&mut layer.cache, &near, &moves, &landmarks)?;
                    layer.keys = Keys::Sealed(near);
                    layer.sealed_at = Some(at.pos0);
                }
                _ => {
                    let next = Keys::for_step(layer.kind, self.config.window, at.rows, sample);
                    let moves = layer.keys.moves(&next, at.pos0);
                    self.backend.relayout(&mut layer.cache, &next, at.end(), &moves)?;
                    layer.keys = next;
                }
            }
        }
        self.fed = true;
        if self.scratch.as_ref().is_none_or(|s| s.rows < rows || s.logit_rows < logit_rows) {
            let c = &self.config;
            let (rows, logit_rows) = match &self.scratch {
                Some(s) => (rows.max(s.rows), logit_rows.max(s.logit_rows)),
                None => (rows, logit_rows),
            };
            let mut buf = |width: usize| self.backend.alloc(rows * width);
            self.scratch = Some(Scratch {
                rows,
                logit_rows,
                x: buf(c.hidden)?,
                s: buf(c.hidden)?,
                h: buf(c.hidden)?,
                qkvg: buf(c.qkvg_width())?,
                q: buf(c.q_width())?,
                z: buf(c.q_width())?,
                o: buf(c.hidden)?,
                gu: buf(2 * c.ffn)?,
                m: buf(c.ffn)?,
                logits: self.backend.alloc(logit_rows * c.vocab_size + 2)?,
                kept: self.backend.alloc(2 * c.vocab_size)?,
            });
        }
        Ok(())
    }

    /// One pass of every layer over the rows `at`. Its first projection reads h, or first
    /// closes the pass before (`open`: that pass's last residual and the edge after it).
    /// Each residual is handed to the op that reads its result, so that a backend can fuse
    /// the two: the next projection's within the pass; the one that closes it is returned,
    /// for the caller to record (`close_pass`) or hand on.
    fn layers_pass(&mut self, at: Rows, rope: &[f32], open: Option<((usize, Part), Mix)>) -> (usize, Part) {
        let sc = self.scratch.as_mut().expect("prepared");
        let b = &mut self.backend;
        let rows = at.rows;
        let mut pending: Option<(usize, Part)> = None;
        for layer in self.layers.iter_mut() {
            let i = layer.index;
            let rotate = layer.kind == LayerKind::Sliding || self.config.rope_full;
            let (h, o, qkvg) = (&mut sc.h, &sc.o, &mut sc.qkvg);
            match (pending, open) {
                (Some(closing), _) => b.residual_project(closing, h, o, Mat::Qkvg(i), qkvg, rows),
                (None, Some((closing, mix))) => {
                    let edge = Edge { mix, x: &sc.x, s: &mut sc.s };
                    b.residual_mix_project(closing, h, o, edge, Mat::Qkvg(i), qkvg, rows);
                }
                (None, None) => b.project(qkvg, Mat::Qkvg(i), h, rows),
            }
            b.attend_out(layer, (&mut sc.z, &mut sc.o), &mut sc.q, &sc.qkvg, at, rotate.then_some(rope));
            b.mlp(i, &mut sc.h, &mut sc.o, &mut sc.gu, &mut sc.m, rows);
            pending = Some((i, Part::Mlp));
        }
        pending.expect("a block has a layer")
    }

    /// Records a pass's last residual (`closing`) and the loop's edge after it.
    fn close_pass(&mut self, closing: (usize, Part), mix: Mix, rows: usize) {
        let sc = self.scratch.as_mut().expect("prepared");
        self.backend.residual_mix(closing, &mut sc.h, &sc.o, Edge { mix, x: &sc.x, s: &mut sc.s }, rows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GROUP;
    use crate::cpu::Cpu;
    use crate::exit::Criterion;

    /// Every position that leaves the window is absorbed exactly once, whatever the passes
    /// and early exits: after each step the far statistics equal sums over F = [ns, p − w]
    /// recomputed from scratch, from each position's last-pass key and value.
    #[test]
    fn push_absorbs_each_evicted_position_once() {
        let json = serde_json::json!({"architecture": "dory", "vocab_size": 300, "hidden": 32, "heads": 4,
            "kv_heads": 1, "head_dim": 8, "ffn": 64, "layers": ["sliding", "full"], "passes": 3, "window": 3});
        let config = Config::parse(&json.to_string(), std::path::Path::new("test")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        crate::init::write_random_model(dir.path(), &config, 17, crate::weights::DType::F32, 1).unwrap();
        let model = crate::Model::load(dir.path()).unwrap();
        let c = &model.config;
        let o1 = O1 { sinks: 2, window: 5, landmarks: 3, stride: 2, rect: true, rcond: 1e-4, seal_at: 14 };
        let mut f = Forward::new(Cpu::new(c, &model.weights), c, 4).unwrap();
        f.set_attention(Attention::O1(o1.clone())).unwrap();
        let exit = ExitRule { criterion: Criterion::Kl, threshold: 0.05, min_passes: 1 };
        let (kd, d, m) = (c.kv_width(), c.head_dim, o1.landmarks);
        let near = Near { sinks: o1.sinks, window: o1.window };
        f.segment(&[0, 5, 9, 44, 100, 7, 8, 250, 3, 12], 0, Want::Last).unwrap();
        // Position → its last-pass key and value, as far as the far span is concerned.
        let mut far: Vec<(usize, Vec<f32>, Vec<f32>)> = vec![];
        let mut passes = vec![];
        let mut checked = 0;
        for p in 10..40usize {
            let full = &f.layers[1];
            match full.keys {
                Keys::Full { .. } if p >= o1.seal_at => {
                    for j in near.far(p) {
                        let (k, v) = full.cache.entry(j, kd);
                        far.push((j, k.to_vec(), v.to_vec()));
                    }
                }
                Keys::Sealed(_) => {
                    if let Some(e) = near.leaving(p) {
                        let (k, v) = full.cache.entry(near.slot(e), kd);
                        far.push((e, k.to_vec(), v.to_vec()));
                    }
                }
                _ => {}
            }
            let id = (p * 37 % 290 + 2) as u32;
            passes.push(f.decode(id, p, &exit).unwrap().passes);
            let Some(lm) = f.layers[1].cache.landmarks() else { continue };
            assert_eq!(far.iter().map(|e| e.0).collect::<Vec<_>>(), near.far(p).collect::<Vec<_>>());
            for a in 0..c.heads {
                for b in 0..m {
                    let at = a * m + b;
                    let q = &lm.queries[at * d..][..d];
                    let xs: Vec<f64> = far
                        .iter()
                        .map(|(_, k, _)| {
                            f64::from(c.attn_scale)
                                * q.iter()
                                    .zip(&k[a / GROUP * d..][..d])
                                    .map(|(x, y)| f64::from(*x) * f64::from(*y))
                                    .sum::<f64>()
                        })
                        .collect();
                    let top = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let mass: f64 = xs.iter().map(|x| (x - top).exp()).sum();
                    assert!((f64::from(lm.far_max[at]) - top).abs() < 1e-4, "M at {p}");
                    assert!(
                        (f64::from(lm.far_mass[at]) - mass).abs() < 1e-4 * mass,
                        "mass at {p}: {} vs {mass}",
                        lm.far_mass[at]
                    );
                    for e in 0..d {
                        let th: f64 = xs
                            .iter()
                            .zip(&far)
                            .map(|(x, (_, _, v))| (x - top).exp() * f64::from(v[a / GROUP * d + e]))
                            .sum();
                        assert!(
                            (f64::from(lm.far_values[at * d + e]) - th).abs() < 1e-4 * (1.0 + th.abs()),
                            "th at {p}"
                        );
                    }
                }
            }
            checked += 1;
        }
        assert!(checked > 20);
        assert!(passes.iter().any(|&k| k < 3) && passes.contains(&3), "varied passes: {passes:?}");
    }
}
