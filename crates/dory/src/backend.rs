//! The operations a backend implements: the seed's kernels, one level up. The step
//! (`forward.rs`) is written once over them; a backend never re-implements the loop.
//!
//! Ops enqueue work and may return before it is done (a GPU records them into one
//! command encoder); `read` is the only point where the host waits for a number.
//! Buffers hold f32 row-major matrices of `rows` rows; every op works on the first
//! `rows` rows of its buffers.

use crate::cache::{Keys, Near, Rows};
use crate::config::LayerKind;
use crate::error::Result;
use crate::exit::ExitRule;
use crate::nystrom::{Exported, Landmarks};

/// The edges of the loop (spec §4–§5; the seed's mix modes). x is the token's input,
/// s the state carried between passes, h the hidden state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mix {
    /// Mode 0, entering the first pass: s ← x; h ← N(s + x).
    Enter,
    /// Mode 1, between passes: s ← N(h); h ← N(s + x).
    Between,
    /// Mode 2, leaving the last pass: h ← N(h).
    Leave,
    /// Mode 3, a read-out before a possible exit: s ← N(h); h ← s.
    ReadOut,
    /// Mode 4, the next pass after a read-out: h ← N(s + x).
    Resume,
}

impl Mix {
    /// The edge after pass `k` of `passes`: leaving after the last, else a read-out where
    /// `read_out` asks for one, else between passes.
    pub fn after(k: usize, passes: usize, read_out: bool) -> Mix {
        match (k == passes, read_out) {
            (true, _) => Mix::Leave,
            (false, true) => Mix::ReadOut,
            (false, false) => Mix::Between,
        }
    }
}

/// The projections, fused where they share an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mat {
    /// [rows, D] → [rows, H·d | K·d | K·d | H·d]: q, k, v and the attention gate.
    Qkvg(usize),
    /// [rows, H·d] → [rows, D].
    Out(usize),
    /// [rows, D] → [rows, F | F]: the MLP's gate and up projections.
    GateUp(usize),
    /// [rows, F] → [rows, D].
    Down(usize),
}

/// A loop edge and the buffers it reads and writes besides h: x and s.
pub struct Edge<'a, B> {
    pub mix: Mix,
    pub x: &'a B,
    pub s: &'a mut B,
}

/// Which sub-layer a residual closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Attn,
    Mlp,
}

/// One layer of the block as a step sees it: its index (which weights), its kind, how its
/// cache is laid out for the step (`keys`), the cache, and where it was sealed.
pub struct Layer<C> {
    pub index: usize,
    pub kind: LayerKind,
    pub keys: Keys,
    pub cache: C,
    /// The position of the step that sealed this (full) layer.
    pub sealed_at: Option<usize>,
}

pub trait Backend {
    /// A device buffer of f32.
    type Buf;
    /// One layer's key and value storage.
    type Cache;

    /// The device, in words (`dory info` prints it).
    fn name(&self) -> String;

    fn alloc(&mut self, len: usize) -> Result<Self::Buf>;

    /// An empty cache for `layer`.
    fn cache(&mut self, layer: usize) -> Result<Self::Cache>;

    /// Empties `cache` (of `layer`), keeping what storage the backend would otherwise
    /// allocate again: by default it is made anew.
    fn clear(&mut self, layer: usize, cache: &mut Self::Cache) -> Result<()> {
        *cache = self.cache(layer)?;
        Ok(())
    }

    /// Makes `cache` hold the slots that `next` needs for positions below `end`, moving
    /// the entries that `moves` lists (old slot → new slot, read from the old storage).
    fn relayout(&mut self, cache: &mut Self::Cache, next: &Keys, end: usize, moves: &[(usize, usize)]) -> Result<()>;

    /// x ← embed[ids]: [ids.len(), D].
    fn embed(&mut self, x: &mut Self::Buf, ids: &[u32]);

    /// x ← embed[ids], then the loop's entry (`Mix::Enter`: s ← x; h ← N(s + x)): the two
    /// ops in a row, which a backend may fuse (the wgpu one does for a decoded row).
    fn enter(&mut self, [h, x, s]: [&mut Self::Buf; 3], ids: &[u32]) {
        self.embed(x, ids);
        self.mix(Mix::Enter, h, x, s, ids.len());
    }

    fn mix(&mut self, mix: Mix, h: &mut Self::Buf, x: &Self::Buf, s: &mut Self::Buf, rows: usize);

    /// out ← x · Wᵀ for the matrix `mat`.
    fn project(&mut self, out: &mut Self::Buf, mat: Mat, x: &Self::Buf, rows: usize);

    /// The attention of `layer` for the rows `at`, from `qkvg` (the output of `Mat::Qkvg`):
    /// first q ← N(rope(yq)) ⊙ q_scale per query head ([rows, H·d]), and k ← N(rope(yk)),
    /// v ← yv per KV head written to the layer's cache at the step's positions (`rope` is
    /// `rope::table` for the step, or None for no rotation); under `Keys::Full { sample:
    /// Some(s) }` also the q of every position j ≡ 0 (mod s) kept in the cache's query store
    /// (row j / s), overwriting earlier passes. Then z ← the gated attention output ([rows,
    /// H·d]) of q over the positions each row sees, gated by the yg part of `qkvg`; under
    /// `Keys::Sealed` (one row), spec §6's attend: the near set exactly, the far span through
    /// the landmarks that `seal` installed.
    fn attend(
        &mut self,
        layer: &mut Layer<Self::Cache>,
        z: &mut Self::Buf,
        q: &mut Self::Buf,
        qkvg: &Self::Buf,
        at: Rows,
        rope: Option<&[f32]>,
    );

    /// `attend`, then o ← z · outᵀ (`Mat::Out` of the layer): the two ops in a row, which a
    /// backend may fuse (the wgpu one joins a decoded row's chunks of keys on the way in
    /// to the projection, leaving z unwritten).
    fn attend_out(
        &mut self,
        layer: &mut Layer<Self::Cache>,
        (z, o): (&mut Self::Buf, &mut Self::Buf),
        q: &mut Self::Buf,
        qkvg: &Self::Buf,
        at: Rows,
        rope: Option<&[f32]>,
    ) {
        self.attend(layer, z, q, qkvg, at, rope);
        self.project(o, Mat::Out(layer.index), z, at.rows);
    }

    /// The host's copy of an exact full layer's positions [0, end) and its query store,
    /// for the seal.
    fn export(&mut self, cache: &Self::Cache, end: usize) -> Result<Exported>;

    /// Turns an exact full layer into a sealed one: the entries `moves` lists (old slot →
    /// slot under `near`, read from the old storage) are kept, everything else freed, and
    /// `landmarks` installed.
    fn seal(
        &mut self,
        cache: &mut Self::Cache,
        near: &Near,
        moves: &[(usize, usize)],
        landmarks: &Landmarks,
    ) -> Result<()>;

    /// The push (spec §6): absorbs position `leaving`, still in its window slot, into the
    /// far statistics of every (query head, landmark), as an online softmax does.
    fn push(&mut self, cache: &mut Self::Cache, near: &Near, leaving: usize);

    /// Bytes the cache holds now.
    fn cache_bytes(&self, cache: &Self::Cache) -> usize;

    /// m ← silu(g ⊙ gate_scale) ⊙ (u ⊙ up_scale), from `gu` = [rows, F | F].
    fn swiglu(&mut self, layer: usize, m: &mut Self::Buf, gu: &Self::Buf, rows: usize);

    /// out ← down · m with m = SwiGLU(gu), for `rows` rows: the end of the MLP. `m`
    /// ([rows, F]) is scratch for backends that form SwiGLU apart, as this default does;
    /// a backend may fuse the two (the wgpu one does for a few rows).
    fn swiglu_down(&mut self, layer: usize, out: &mut Self::Buf, gu: &Self::Buf, m: &mut Self::Buf, rows: usize) {
        swiglu_then_down(self, layer, out, gu, m, rows);
    }

    /// The MLP of `layer` after its attention: the residual that closes the attention part
    /// (h from the attention output o), gu ← h · gate_upᵀ, then o ← down · SwiGLU(gu) ([rows,
    /// D]). `gu` and `m` are scratch; a backend may form SwiGLU where gate and up meet (the
    /// wgpu one does for a decoded row).
    fn mlp(
        &mut self,
        layer: usize,
        h: &mut Self::Buf,
        o: &mut Self::Buf,
        gu: &mut Self::Buf,
        m: &mut Self::Buf,
        rows: usize,
    ) {
        self.residual_project((layer, Part::Attn), h, o, Mat::GateUp(layer), gu, rows);
        self.swiglu_down(layer, o, gu, m, rows);
    }

    /// The nGPT residual: h ← N(N(h) + alpha ⊙ (N(o) − N(h))).
    fn residual(&mut self, layer: usize, part: Part, h: &mut Self::Buf, o: &Self::Buf, rows: usize);

    /// The residual that closes `part` of `layer`, then out ← h · Wᵀ with the new h: the
    /// two ops in a row, which a backend may fuse (the wgpu one does for a decoded row).
    fn residual_project(
        &mut self,
        (layer, part): (usize, Part),
        h: &mut Self::Buf,
        o: &Self::Buf,
        mat: Mat,
        out: &mut Self::Buf,
        rows: usize,
    ) {
        self.residual(layer, part, h, o, rows);
        self.project(out, mat, h, rows);
    }

    /// The residual that closes a pass (`part` of its last layer), then the loop's edge
    /// that follows it: the two ops in a row, which a backend may fuse (the wgpu one does).
    fn residual_mix(
        &mut self,
        (layer, part): (usize, Part),
        h: &mut Self::Buf,
        o: &Self::Buf,
        edge: Edge<'_, Self::Buf>,
        rows: usize,
    ) {
        self.residual(layer, part, h, o, rows);
        self.mix(edge.mix, h, edge.x, edge.s, rows);
    }

    /// `residual_mix`, then out ← h · Wᵀ with the new h (the next pass's first projection):
    /// the two ops in a row, which a backend may fuse (the wgpu one does for a decoded row).
    #[allow(clippy::too_many_arguments)]
    fn residual_mix_project(
        &mut self,
        closing: (usize, Part),
        h: &mut Self::Buf,
        o: &Self::Buf,
        edge: Edge<'_, Self::Buf>,
        mat: Mat,
        out: &mut Self::Buf,
        rows: usize,
    ) {
        self.residual_mix(closing, h, o, edge, rows);
        self.project(out, mat, h, rows);
    }

    /// out ← head_scale ⊙ (head · h) for the rows `first..first + rows` of h: [rows, V].
    fn logits(&mut self, out: &mut Self::Buf, h: &Self::Buf, first: usize, rows: usize);

    /// dst[dst_row..][..rows] ← src[src_row..][..rows], rows of `width` floats.
    fn copy_rows(
        &mut self,
        dst: &mut Self::Buf,
        dst_row: usize,
        src: &Self::Buf,
        src_row: usize,
        rows: usize,
        width: usize,
    );

    /// The host's view of `buf[..len]`: waits for every op recorded so far.
    fn read(&mut self, buf: &Self::Buf, len: usize) -> Result<Vec<f32>>;

    /// Whether this backend can hold ops back (`hold`, `release`, `discard`) and start a
    /// read early (`read_begin`): a GPU's, whose host then encodes the next decoding step
    /// while the device runs this one instead of after it. The step calls those four only
    /// where this says yes.
    fn holds(&self) -> bool {
        false
    }

    /// Starts the device on every op recorded, `buf[..len]` copied back after them; the
    /// next `read` of `buf` waits for that copy.
    fn read_begin(&mut self, _buf: &Self::Buf, _len: usize) {}

    /// Ops recorded from here until the next `read` are held back: encoded while that
    /// read waits, run only at `release`, after the ops recorded in between.
    fn hold(&mut self) {}

    /// Records `enter` for one row among the held ops, for the `id` that `release` is
    /// given, so that a token costs no encoding between its sampling and its step.
    fn enter_held(&mut self, _bufs: [&mut Self::Buf; 3]) {}

    /// Whether the device chooses a greedy decoder's token (`enter_greedy`): a GPU's; a
    /// CPU's host has its logits at once.
    fn chooses(&self) -> bool {
        false
    }

    /// Where `chooses`: `enter` on argmax(logits[..v]) (`sampler::argmax`'s choice), the
    /// token chosen on the device and left at logits[v] (a u32's bits, for the step's read
    /// to check), so that the next step can start before the host reads these logits.
    fn enter_greedy(&mut self, _bufs: [&mut Self::Buf; 3], _logits: &mut Self::Buf, _v: usize) {
        unreachable!("a backend that chooses the greedy token on the device says so (chooses)")
    }

    /// `enter` on token `id` for a step to run right after the one the device is still
    /// running, its token known ahead (a segment's next row): by default `enter`.
    fn enter_ahead(&mut self, bufs: [&mut Self::Buf; 3], id: u32) {
        self.enter(bufs, &[id]);
    }

    /// Starts the device on what is recorded, without a read (a failure is reported at
    /// the next read, as an op's).
    fn flush(&mut self) {}

    /// Runs what is recorded, then the held ops, `id` the token of an `enter_held`.
    fn release(&mut self, _id: u32) -> Result<()> {
        Ok(())
    }

    /// Drops the held ops unrun.
    fn discard(&mut self) {}

    /// Whether the exit rule is tested on the device (`exit_test`): a GPU's; a CPU's host is
    /// its device.
    fn tests_exit(&self) -> bool {
        false
    }

    /// Where `tests_exit`: tests `rule` after the read-out of pass `k` (`logits`: v of them,
    /// then the greedy token's word, then a word the device sets to k, as a u32's bits, where
    /// the rule holds and to 0 where it does not; under KL against `kept` row 0, which these
    /// logits then replace), and skips what is recorded after it in the step where the rule
    /// holds, so that a step with read-outs needs one read.
    fn exit_test(&mut self, _rule: &ExitRule, _k: usize, _logits: &mut Self::Buf, _kept: &mut Self::Buf, _v: usize) {
        unreachable!("a backend that tests the exit rule on the device says so (tests_exit)")
    }

    /// Whether a decoded step whose rule the device tests may be recorded to fewer than all
    /// its passes (`Forward`'s cap), the step recorded after it starting with `gate`.
    fn gates(&self) -> bool {
        false
    }

    /// Where `gates`: the ops recorded after it, up to the next read (a decoded step
    /// recorded ahead, from before its token's entry), do nothing where the step before
    /// them left no pass in the word after `logits`' greedy token (`exit_test`'s): that row
    /// went on past the passes recorded, and the host runs them first.
    fn gate(&mut self, _logits: &mut Self::Buf, _v: usize) {
        unreachable!("a backend that gates steps says so (gates)")
    }
}

/// `Backend::swiglu_down` as two ops, SwiGLU into `m` then the down projection: the
/// default, and what a fusing backend falls back to where it does not fuse.
pub fn swiglu_then_down<B: Backend + ?Sized>(
    b: &mut B,
    layer: usize,
    out: &mut B::Buf,
    gu: &B::Buf,
    m: &mut B::Buf,
    rows: usize,
) {
    b.swiglu(layer, m, gu, rows);
    b.project(out, Mat::Down(layer), m, rows);
}
