//! `dory::Backend` on wgpu: each op records its dispatches (ops/), `read` submits them
//! as one command encoder and waits. A session owns one `Wgpu`: its recorder, caches and
//! scratch; the device, pipelines and weights are shared through `GpuModel`.

use std::sync::Arc;

use dory::backend::{Backend, Edge, Layer, Mat, Mix, Part};
use dory::cache::{Keys, Near, Rows};
use dory::exit::ExitRule;
use dory::nystrom::{Exported, Landmarks};

use crate::error::gpu_err;
use crate::model::GpuModel;
use crate::ops::attend::{self, Attend, AttendBufs, CoopBufs, Prep, Slots};
use crate::ops::matmul::Input;
use crate::ops::{copy, embed, exit, matmul, mix, o1, prep, residual, swiglu};
use crate::record::{Recorder, Store};

/// A device buffer of f32.
pub struct GpuBuf {
    pub(crate) store: Arc<Store>,
    len: usize,
    /// A second buffer of the same size that a fused residual writes the new hidden state
    /// into while its projection still reads the old one; the two then trade places.
    twin: Option<Arc<Store>>,
}

impl GpuBuf {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// One layer's keys and values ([slots, K·d] each), its query store before an O(1)
/// seal ([rows, H·d]), and after the seal its landmark state.
#[derive(Default)]
pub struct GpuCache {
    k: Option<Arc<Store>>,
    v: Option<Arc<Store>>,
    /// Slots the buffers hold.
    slots: usize,
    q: Option<Arc<Store>>,
    /// Rows of the query store in use (the buffer may hold more).
    q_rows: usize,
    q_cap: usize,
    landmarks: Option<o1::Sealed>,
}

pub struct Wgpu {
    model: Arc<GpuModel>,
    rec: Recorder,
    /// Attention partials (split keys), grown as steps need.
    part: Arc<Store>,
    /// The queries', keys' and values' f16 parts for attention on the tensor cores, grown as
    /// steps need.
    q_parts: Arc<Store>,
    kv_parts: Arc<Store>,
    /// The last RoPE table uploaded: its offset in the uploads and its length.
    rope: Option<(u32, usize)>,
    /// Caches' buffers a relayout let go, for the next that needs one (`storage`).
    spares: Vec<Arc<Store>>,
    /// Caches' buffers allocated since this backend was made.
    cache_buffers_made: usize,
}

/// Spare buffers kept: a ring's keys and values. A benchmark's repetitions and a chat's
/// turns switch the rings between a prompt's layout and a decoded row's, and each switch
/// then takes the buffers the last one let go instead of the device's allocator, which
/// sometimes takes milliseconds for a new block (the larger config's pp512 at depth 4096
/// on the H100: 2 repetitions in 3 ran 7% slower).
const SPARES: usize = 2;

impl Wgpu {
    pub fn new(model: &Arc<GpuModel>) -> dory::Result<Wgpu> {
        let dev = &model.dev;
        Ok(Wgpu {
            model: model.clone(),
            rec: Recorder::new(dev.clone())?,
            part: Store::new(dev, 16, "attention partials")?,
            q_parts: Store::new(dev, 16, "query parts")?,
            kv_parts: Store::new(dev, 16, "keys' and values' parts")?,
            rope: None,
            spares: Vec::new(),
            cache_buffers_made: 0,
        })
    }

    pub fn model(&self) -> &Arc<GpuModel> {
        &self.model
    }

    /// A buffer holding `data` (tests fill inputs this way).
    pub fn upload(&mut self, data: &[f32]) -> dory::Result<GpuBuf> {
        let store = Store::with_data(&self.model.dev, bytemuck::cast_slice(data), "upload")?;
        Ok(GpuBuf { store, len: data.len(), twin: None })
    }

    /// Dispatches recorded since this backend was made.
    pub fn dispatches(&self) -> u64 {
        self.rec.dispatches
    }

    /// Buffers allocated for the layers' caches since this backend was made.
    pub fn cache_buffers_made(&self) -> usize {
        self.cache_buffers_made
    }

    /// Waits for everything recorded (for timing).
    pub fn finish(&mut self) -> dory::Result<()> {
        let none = self.rec.none().clone();
        self.rec.submit(Some((&none, 4))).map(|_| ())
    }

    /// `embed::enter` into `enter`'s h, x and s.
    fn entered(&mut self, [h, x, s]: [&mut GpuBuf; 3], token: embed::Token) {
        let eps = self.model.config.eps;
        embed::enter(&mut self.rec, &self.model.embed, [&h.store, &x.store, &s.store], token, eps);
    }

    /// h's twin, where a projection that forms the residual writes the new hidden state
    /// (made on first use; None after an error, which the recorder then holds).
    fn twin(&mut self, h: &mut GpuBuf) -> Option<Arc<Store>> {
        if h.twin.is_none() {
            match Store::new(&self.model.dev, h.store.bytes, "hidden state") {
                Ok(s) => h.twin = Some(s),
                Err(e) => {
                    self.rec.fail(e);
                    return None;
                }
            }
        }
        h.twin.clone()
    }

    /// Records an op that reads h and writes the new hidden state to h's twin (`record`,
    /// given the recorder, h and the twin), then trades h with its twin.
    fn through_twin(&mut self, h: &mut GpuBuf, record: impl FnOnce(&mut Recorder, &Arc<Store>, &Arc<Store>)) {
        let Some(twin) = self.twin(h) else { return };
        self.rec.begin_op();
        record(&mut self.rec, &h.store, &twin);
        h.twin = Some(std::mem::replace(&mut h.store, twin));
    }

    /// The step's RoPE table in this submission's uploads, once for all layers.
    fn upload_rope(&mut self, table: &[f32]) -> u32 {
        if let Some((at, len)) = self.rope {
            let same = self
                .rec
                .uploaded(at, len)
                .is_some_and(|w| w.len() == table.len() && w.iter().zip(table).all(|(a, b)| *a == b.to_bits()));
            if same {
                return at;
            }
        }
        let at = self.rec.upload_f32(table);
        self.rope = Some((at, table.len()));
        at
    }

    /// A buffer of `slots` cache rows, with the first `keep` rows of `old` copied in.
    fn grown(
        &mut self,
        old: Option<&Arc<Store>>,
        slots: usize,
        width: usize,
        keep: usize,
        what: &str,
    ) -> dory::Result<Arc<Store>> {
        let store = self.storage(4 * (slots * width) as u64, what)?;
        if let Some(old) = old {
            copy::run(&mut self.rec, &store, 0, old, 0, keep * width);
        }
        Ok(store)
    }

    /// A buffer of at least `bytes`: a spare that holds them and at most twice as many (so
    /// that a long prompt's rings are not held for short ones), else a new one.
    fn storage(&mut self, bytes: u64, what: &str) -> dory::Result<Arc<Store>> {
        if let Some(i) = self.spares.iter().position(|s| (bytes..=2 * bytes.max(16)).contains(&s.bytes)) {
            return Ok(self.spares.remove(i));
        }
        self.cache_buffers_made += 1;
        Store::new(&self.model.dev, bytes, what)
    }

    /// Keeps `store` for `storage`, in place of the oldest spare.
    fn spare(&mut self, store: Arc<Store>) {
        if self.spares.len() == SPARES {
            self.spares.remove(0);
        }
        self.spares.push(store);
    }

    /// How many slots to give a cache that needs `need`: an exact full layer grows by
    /// doubling (within the binding limit), so that decoding does not copy every step.
    fn capacity(&self, next: &Keys, need: usize, have: usize, width: usize) -> usize {
        match next {
            Keys::Full { .. } => {
                let most = self.model.dev.caps.max_binding as usize / (4 * width.max(1));
                need.max((2 * have).min(most)).max(16)
            }
            // A ring grows with the context up to its cap (`Keys::slots`), by doubling too.
            Keys::Ring(r) => need.max((2 * have).min(r.cap)).max(16.min(r.cap)),
            _ => need,
        }
    }

    /// `Backend::attend`, then with `o` the out projection, which joins the attention's
    /// chunks on the way in where `matmul::combine_fuses` allows (z is then not written).
    fn attention(
        &mut self,
        layer: &mut Layer<GpuCache>,
        (z, o): (&mut GpuBuf, Option<&mut GpuBuf>),
        q: &mut GpuBuf,
        qkvg: &GpuBuf,
        at: Rows,
        rope: Option<&[f32]>,
    ) {
        self.rec.begin_op();
        let rope_at = rope.map(|t| self.upload_rope(t));
        let sample = match layer.keys {
            Keys::Full { sample: Some(s) } => s,
            _ => 0,
        };
        let model = self.model.clone();
        let c = &model.config;
        let weights = &model.layers[layer.index];
        let cache = &layer.cache;
        let (Some(k), Some(v)) = (&cache.k, &cache.v) else {
            return self.rec.fail(gpu_err("attend before the cache was laid out"));
        };
        let none = self.rec.none().clone();
        let qs = cache.q.as_ref().unwrap_or(&none);
        let slots = Slots::of(&layer.keys);
        // A single row is prepared by attend itself (unless fusing is off).
        let prep = Prep { rope_at, sample };
        let options = &model.dev.kernels.options;
        let fused = at.rows == 1 && options.fuse_prep;
        let parts = attend::on_tensor_cores(options, c.head_dim, at.rows, fused, slots);
        if parts && !grown(&mut self.rec, &mut self.q_parts, prep::parts_len(c, at.rows), "query parts") {
            return;
        }
        let parts = parts.then_some(&self.q_parts);
        let pb = prep::PrepBufs { qkvg: &qkvg.store, q_scale: &weights.q_scale, q: &q.store, k, v, qs, parts };
        if !fused {
            prep::record(&mut self.rec, c, pb, slots, at, prep);
        }
        // Rows see more positions the later they come: the last row sees the most.
        let most = layer.keys.visible(at.end() - 1).size_hint().0;
        let split = attend::plan(options, c.kv_heads, c.head_dim, most, at.rows, fused, parts.is_some());
        let need = attend::part_len(split, at.rows, c.kv_heads, c.head_dim);
        if !partials_grown(&mut self.rec, &mut self.part, 4 * need) {
            return;
        }
        let Some(len) = coop_grown(&mut self.rec, &mut self.kv_parts, c, at, parts.map(|_| &layer.keys)) else {
            return;
        };
        let gate_scale = &weights.gate_scale;
        let coop = parts.map(|_| CoopBufs { kv_parts: &self.kv_parts, len });
        let bufs = AttendBufs { prep: pb, gate_scale, z: &z.store, part: &self.part, coop };
        let sealed = match (&layer.keys, &cache.landmarks) {
            (Keys::Sealed(near), Some(lm)) => Some((near, lm)),
            _ => None,
        };
        let prep = fused.then_some(prep);
        let w_out = model.matrix(Mat::Out(layer.index));
        let heads = (c.kv_heads, c.head_dim);
        let joins = o.is_some()
            && sealed.is_none()
            && split.chunks > 1
            && matmul::combine_fuses(&self.rec, w_out, at.rows, heads, split.chunks);
        let a = Attend { slots, at, split, join: sealed.is_none() && !joins, prep };
        attend::record(&mut self.rec, c, &bufs, a);
        if let Some((near, lm)) = sealed {
            let far = !near.far(at.pos0).is_empty();
            o1::combine(&mut self.rec, c, &bufs, lm, split.chunks, far);
        }
        let Some(o) = o else { return };
        let (x, input) = match joins {
            true => {
                let (kv_heads, d) = heads;
                (&self.part, Input::Combine { qkvg: &qkvg.store, gate_scale, kv_heads, d, chunks: split.chunks })
            }
            false => (&z.store, Input::Plain),
        };
        self.rec.begin_op();
        matmul::record(&mut self.rec, w_out, x, 0, &o.store, at.rows, input);
    }
}

impl Backend for Wgpu {
    type Buf = GpuBuf;
    type Cache = GpuCache;

    fn name(&self) -> String {
        format!("wgpu: {}", self.model.dev.describe())
    }

    fn alloc(&mut self, len: usize) -> dory::Result<GpuBuf> {
        Ok(GpuBuf { store: Store::new(&self.model.dev, 4 * len as u64, "scratch")?, len, twin: None })
    }

    /// A new session's cache: the spares go with the old ones.
    fn cache(&mut self, _layer: usize) -> dory::Result<GpuCache> {
        self.spares.clear();
        Ok(GpuCache::default())
    }

    /// Keeps the keys', values' and query store's buffers (no position is read before a
    /// step writes it); a seal's landmarks go.
    fn clear(&mut self, _layer: usize, cache: &mut GpuCache) -> dory::Result<()> {
        (cache.q_rows, cache.landmarks) = (0, None);
        Ok(())
    }

    fn relayout(
        &mut self,
        cache: &mut GpuCache,
        next: &Keys,
        end: usize,
        moves: &[(usize, usize)],
    ) -> dory::Result<()> {
        self.rec.begin_op();
        let model = self.model.clone();
        let c = &model.config;
        let width = c.kv_width();
        let need = next.slots(end);
        // Where every position the next step sees stays in its slot (a ring whose kept
        // positions have not wrapped), the buffers serve as they are, if they hold enough.
        let moved = moves.iter().any(|&(from, to)| from != to);
        if moved || cache.slots < need || cache.k.is_none() {
            let slots = if moved { need } else { self.capacity(next, need, cache.slots, width) };
            let keep = if moved { 0 } else { cache.slots.min(slots) };
            let nk = self.grown(cache.k.as_ref(), slots, width, keep, "keys")?;
            let nv = self.grown(cache.v.as_ref(), slots, width, keep, "values")?;
            if let (true, Some(k), Some(v)) = (moved, &cache.k, &cache.v) {
                copy::slots(&mut self.rec, &nk, k, moves, width);
                copy::slots(&mut self.rec, &nv, v, moves, width);
            }
            // A spare may hold more slots than asked for.
            cache.slots = (nk.bytes.min(nv.bytes) / (4 * width as u64)) as usize;
            let old = (cache.k.replace(nk), cache.v.replace(nv));
            // A ring's old buffers serve its next layout; a full layer's, half the size of
            // its next growth, would serve none.
            if let (Keys::Ring(_), (Some(k), Some(v))) = (next, old) {
                self.spare(k);
                self.spare(v);
            }
        }
        let rows = next.samples(end);
        if rows == 0 {
            (cache.q, cache.q_rows, cache.q_cap) = (None, 0, 0);
        } else {
            if rows > cache.q_cap {
                let cap = self.capacity(&Keys::Full { sample: None }, rows, cache.q_cap, c.q_width());
                let keep = cache.q_rows.min(cap);
                cache.q = Some(self.grown(cache.q.as_ref(), cap, c.q_width(), keep, "query store")?);
                cache.q_cap = cap;
            }
            cache.q_rows = rows;
        }
        Ok(())
    }

    fn embed(&mut self, x: &mut GpuBuf, ids: &[u32]) {
        self.rec.begin_op();
        embed::record(&mut self.rec, &self.model.embed, &x.store, ids);
    }

    fn enter(&mut self, [h, x, s]: [&mut GpuBuf; 3], ids: &[u32]) {
        match ids {
            [id] if embed::enters(&self.rec, &self.model.embed) => {
                self.rec.begin_op();
                let at = self.rec.upload(&[*id]);
                self.entered([h, x, s], embed::Token::Uploaded { at });
            }
            _ => {
                self.embed(x, ids);
                self.mix(Mix::Enter, h, x, s, ids.len());
            }
        }
    }

    fn mix(&mut self, m: Mix, h: &mut GpuBuf, x: &GpuBuf, s: &mut GpuBuf, rows: usize) {
        self.rec.begin_op();
        let c = &self.model.config;
        mix::record(&mut self.rec, m, [&h.store, &x.store, &s.store], None, (c.hidden, c.eps), rows);
    }

    fn residual_mix(&mut self, (layer, part): (usize, Part), h: &mut GpuBuf, o: &GpuBuf, e: Edge<GpuBuf>, rows: usize) {
        self.rec.begin_op();
        let model = self.model.clone();
        let (c, alpha) = (&model.config, model.layers[layer].alpha(part));
        let bufs = [&h.store, &e.x.store, &e.s.store];
        mix::record(&mut self.rec, e.mix, bufs, Some((&o.store, alpha)), (c.hidden, c.eps), rows);
    }

    fn project(&mut self, out: &mut GpuBuf, mat: Mat, x: &GpuBuf, rows: usize) {
        self.rec.begin_op();
        let model = self.model.clone();
        matmul::record(&mut self.rec, model.matrix(mat), &x.store, 0, &out.store, rows, Input::Plain);
    }

    fn residual_project(
        &mut self,
        (layer, part): (usize, Part),
        h: &mut GpuBuf,
        o: &GpuBuf,
        mat: Mat,
        out: &mut GpuBuf,
        rows: usize,
    ) {
        let model = self.model.clone();
        let w = model.matrix(mat);
        let alpha = model.layers[layer].alpha(part);
        if matmul::residual_splits(&self.rec, w, rows) {
            // On the tensor cores the residual writes h in place and cuts x's parts as it goes.
            let input = Input::Residual { o: &o.store, alpha, h_next: &h.store, eps: model.config.eps };
            self.rec.begin_op();
            return matmul::record(&mut self.rec, w, &h.store, 0, &out.store, rows, input);
        }
        if !matmul::residual_fuses(&self.rec, w, rows) {
            self.residual(layer, part, h, o, rows);
            return self.project(out, mat, h, rows);
        }
        let eps = model.config.eps;
        self.through_twin(h, |rec, h, twin| {
            let input = Input::Residual { o: &o.store, alpha, h_next: twin, eps };
            matmul::record(rec, w, h, 0, &out.store, rows, input);
        });
    }

    fn residual_mix_project(
        &mut self,
        closing: (usize, Part),
        h: &mut GpuBuf,
        o: &GpuBuf,
        edge: Edge<GpuBuf>,
        mat: Mat,
        out: &mut GpuBuf,
        rows: usize,
    ) {
        let model = self.model.clone();
        let w = model.matrix(mat);
        if edge.mix != Mix::Between || !matmul::edge_fuses(&self.rec, w, rows) {
            self.residual_mix(closing, h, o, edge, rows);
            return self.project(out, mat, h, rows);
        }
        let (edge_x, s) = (&edge.x.store, &edge.s.store);
        let (alpha, eps) = (model.layers[closing.0].alpha(closing.1), model.config.eps);
        self.through_twin(h, |rec, h, twin| {
            let input = Input::Edge { o: &o.store, alpha, h_next: twin, eps, edge_x, s };
            matmul::record(rec, w, h, 0, &out.store, rows, input);
        });
    }

    fn attend(
        &mut self,
        layer: &mut Layer<GpuCache>,
        z: &mut GpuBuf,
        q: &mut GpuBuf,
        qkvg: &GpuBuf,
        at: Rows,
        rope: Option<&[f32]>,
    ) {
        self.attention(layer, (z, None), q, qkvg, at, rope);
    }

    fn attend_out(
        &mut self,
        layer: &mut Layer<GpuCache>,
        (z, o): (&mut GpuBuf, &mut GpuBuf),
        q: &mut GpuBuf,
        qkvg: &GpuBuf,
        at: Rows,
        rope: Option<&[f32]>,
    ) {
        self.attention(layer, (z, Some(o)), q, qkvg, at, rope);
    }

    fn export(&mut self, cache: &GpuCache, end: usize) -> dory::Result<Exported> {
        let c = &self.model.config;
        let (Some(k), Some(v)) = (&cache.k, &cache.v) else {
            return Err(gpu_err("export of a cache that holds nothing"));
        };
        let floats = |words: Option<Vec<u32>>| -> Vec<f32> {
            words.unwrap_or_default().into_iter().map(f32::from_bits).collect()
        };
        let n = 4 * (end * c.kv_width()) as u64;
        let keys = floats(self.rec.submit(Some((k, n)))?);
        let values = floats(self.rec.submit(Some((v, n)))?);
        let queries = match &cache.q {
            Some(q) => floats(self.rec.submit(Some((q, 4 * (cache.q_rows * c.q_width()) as u64)))?),
            None => Vec::new(),
        };
        Ok(Exported { keys, values, queries })
    }

    fn seal(
        &mut self,
        cache: &mut GpuCache,
        near: &Near,
        moves: &[(usize, usize)],
        landmarks: &Landmarks,
    ) -> dory::Result<()> {
        self.rec.begin_op();
        let width = self.model.config.kv_width();
        let (Some(k), Some(v)) = (cache.k.take(), cache.v.take()) else {
            return Err(gpu_err("seal of a cache that holds nothing"));
        };
        // A sealed layer holds only what spec §6 counts (no spare is taken or kept).
        self.spares.clear();
        let slots = near.sinks + near.window;
        let nk = self.grown(None, slots, width, 0, "keys")?;
        let nv = self.grown(None, slots, width, 0, "values")?;
        copy::slots(&mut self.rec, &nk, &k, moves, width);
        copy::slots(&mut self.rec, &nv, &v, moves, width);
        let store = o1::upload(&self.model.dev, landmarks)?;
        *cache = GpuCache {
            k: Some(nk),
            v: Some(nv),
            slots,
            q: None,
            q_rows: 0,
            q_cap: 0,
            landmarks: Some(o1::Sealed { store, m: landmarks.m, rect: landmarks.rect }),
        };
        Ok(())
    }

    fn push(&mut self, cache: &mut GpuCache, near: &Near, leaving: usize) {
        self.rec.begin_op();
        let (Some(k), Some(v), Some(lm)) = (&cache.k, &cache.v, &cache.landmarks) else {
            self.rec.fail(gpu_err("push on a layer that is not sealed"));
            return;
        };
        o1::push(&mut self.rec, &self.model.config, k, v, lm, near.slot(leaving));
    }

    fn cache_bytes(&self, cache: &GpuCache) -> usize {
        [&cache.k, &cache.v, &cache.q].iter().filter_map(|s| s.as_ref()).map(|s| s.bytes as usize).sum::<usize>()
            + cache.landmarks.as_ref().map_or(0, |l| l.store.bytes as usize)
    }

    fn swiglu(&mut self, layer: usize, m: &mut GpuBuf, gu: &GpuBuf, rows: usize) {
        self.rec.begin_op();
        let model = self.model.clone();
        swiglu::record(&mut self.rec, &model.layers[layer], &m.store, &gu.store, model.config.ffn, rows);
    }

    fn mlp(&mut self, layer: usize, h: &mut GpuBuf, o: &mut GpuBuf, gu: &mut GpuBuf, m: &mut GpuBuf, rows: usize) {
        let model = self.model.clone();
        let l = &model.layers[layer];
        let (rec, w) = (&self.rec, &l.gate_up);
        if matmul::glu_fuses(rec, w, rows, true) {
            // The residual, gate|up and SwiGLU in one dispatch.
            let (alpha, eps) = (l.alpha(Part::Attn), model.config.eps);
            self.through_twin(h, |rec, h, twin| {
                let input = Input::Residual { o: &o.store, alpha, h_next: twin, eps };
                matmul::glu(rec, w, h, &m.store, &l.mlp_scales, input);
            });
        } else if matmul::glu_fuses(rec, w, rows, false) && !matmul::residual_fuses(rec, w, rows) {
            self.residual(layer, Part::Attn, h, o, rows);
            self.rec.begin_op();
            matmul::glu(&mut self.rec, w, &h.store, &m.store, &l.mlp_scales, Input::Plain);
        } else if let Some(m_scale) = l.glu_scale.filter(|_| matmul::glu_parts(rec, (w, &l.down), rows)) {
            // On the tensor cores gate|up's epilogue cuts down's parts (and the residual x's,
            // where the options fuse its split).
            let (alpha, eps) = (l.alpha(Part::Attn), model.config.eps);
            let input = if matmul::residual_splits(rec, w, rows) {
                Input::Residual { o: &o.store, alpha, h_next: &h.store, eps }
            } else {
                self.residual(layer, Part::Attn, h, o, rows);
                Input::Plain
            };
            self.rec.begin_op();
            let (x, out) = (&h.store, &o.store);
            return matmul::mlp(&mut self.rec, (w, &l.down), x, out, rows, input, (&l.mlp_scales, m_scale));
        } else {
            // The residual with gate|up (gemv1's prologue, or its own dispatch), SwiGLU with down.
            self.residual_project((layer, Part::Attn), h, o, Mat::GateUp(layer), gu, rows);
            return self.swiglu_down(layer, o, gu, m, rows);
        }
        self.project(o, Mat::Down(layer), m, rows);
    }

    fn swiglu_down(&mut self, layer: usize, out: &mut GpuBuf, gu: &GpuBuf, m: &mut GpuBuf, rows: usize) {
        let model = self.model.clone();
        let l = &model.layers[layer];
        let input = Input::Swiglu(&l.mlp_scales);
        if !matmul::fuses(&self.rec, &l.down, rows, input) {
            return dory::backend::swiglu_then_down(self, layer, out, gu, m, rows);
        }
        self.rec.begin_op();
        matmul::record(&mut self.rec, &l.down, &gu.store, 0, &out.store, rows, input);
    }

    fn residual(&mut self, layer: usize, part: Part, h: &mut GpuBuf, o: &GpuBuf, rows: usize) {
        self.rec.begin_op();
        let model = self.model.clone();
        let l = &model.layers[layer];
        residual::record(&mut self.rec, &h.store, &o.store, l.alpha(part), model.config.hidden, model.config.eps, rows);
    }

    fn logits(&mut self, out: &mut GpuBuf, h: &GpuBuf, first: usize, rows: usize) {
        self.rec.begin_op();
        let model = self.model.clone();
        matmul::record(&mut self.rec, &model.head, &h.store, first, &out.store, rows, Input::Scaled(&model.head_scale));
    }

    fn copy_rows(&mut self, dst: &mut GpuBuf, dst_row: usize, src: &GpuBuf, src_row: usize, rows: usize, width: usize) {
        self.rec.begin_op();
        copy::run(&mut self.rec, &dst.store, dst_row * width, &src.store, src_row * width, rows * width);
    }

    fn read(&mut self, buf: &GpuBuf, len: usize) -> dory::Result<Vec<f32>> {
        let words = self.rec.submit(Some((&buf.store, 4 * len as u64)))?.unwrap_or_default();
        Ok(words.into_iter().take(len).map(f32::from_bits).collect())
    }

    /// Not while kernels are timed: each of their submissions waits.
    fn holds(&self) -> bool {
        crate::record::ahead() && !self.rec.timed && !self.model.dev.caps.timestamps
    }

    fn read_begin(&mut self, buf: &GpuBuf, len: usize) {
        self.rec.read_begin(&buf.store, 4 * len as u64);
    }

    fn hold(&mut self) {
        self.rec.hold();
    }

    fn enter_held(&mut self, [h, x, s]: [&mut GpuBuf; 3]) {
        self.rec.begin_op();
        if embed::enters(&self.rec, &self.model.embed) {
            let at = self.rec.upload(&[0]);
            self.rec.token_at(at);
            return self.entered([h, x, s], embed::Token::Uploaded { at });
        }
        let at = embed::record(&mut self.rec, &self.model.embed, &x.store, &[0]);
        self.rec.token_at(at);
        self.mix(Mix::Enter, h, x, s, 1);
    }

    fn chooses(&self) -> bool {
        true
    }

    fn enter_greedy(&mut self, [h, x, s]: [&mut GpuBuf; 3], logits: &mut GpuBuf, v: usize) {
        self.rec.begin_op();
        // The step runs after this one, which the device is still running: in one
        // submission, at `flush` (on the H200: dory-tiny 1.08–1.13×, the larger config
        // 1.03–1.07×, bench/logs/h200-2026-12-05c/call-6).
        self.rec.unbatched();
        if embed::enters(&self.rec, &self.model.embed) {
            self.entered([h, x, s], embed::Token::Greedy { logits: &logits.store, n: v });
        } else {
            embed::greedy(&mut self.rec, &self.model.embed, &x.store, &logits.store, v);
            self.mix(Mix::Enter, h, x, s, 1);
        }
    }

    fn enter_ahead(&mut self, bufs: [&mut GpuBuf; 3], id: u32) {
        self.rec.begin_op();
        // As enter_greedy's step: one submission, at `flush`.
        self.rec.unbatched();
        self.enter(bufs, &[id]);
    }

    fn flush(&mut self) {
        self.rec.flush();
    }

    fn tests_exit(&self) -> bool {
        self.model.dev.kernels.options.exit_on_device
    }

    fn exit_test(&mut self, rule: &ExitRule, k: usize, logits: &mut GpuBuf, kept: &mut GpuBuf, v: usize) {
        self.rec.begin_op();
        exit::record(&mut self.rec, rule, k, &logits.store, &kept.store, v);
    }

    fn gates(&self) -> bool {
        self.model.dev.kernels.options.exit_on_device
    }

    fn gate(&mut self, logits: &mut GpuBuf, v: usize) {
        self.rec.begin_op();
        exit::gate(&mut self.rec, &logits.store, v);
    }

    fn release(&mut self, id: u32) -> dory::Result<()> {
        self.rec.release(id)
    }

    fn discard(&mut self) {
        self.rec.discard();
    }
}

/// kv_parts.wgsl's parts grown for a step of `at` where attend_coop.wgsl runs (`keys`, the
/// layer's, given): the span's len (`attend::span_len`, from the first row's first
/// position, the layer having no sinks; 0 where it does not run), or None where growing
/// failed (recorded).
fn coop_grown(
    rec: &mut Recorder,
    kv_parts: &mut Arc<Store>,
    c: &dory::Config,
    at: Rows,
    keys: Option<&Keys>,
) -> Option<usize> {
    let Some(keys) = keys else { return Some(0) };
    let len = attend::span_len(keys.visible(at.pos0).next().unwrap_or(at.pos0), at);
    let kv_len = attend::kv_parts_len(len, c.kv_heads, c.head_dim);
    grown(rec, kv_parts, kv_len, "keys' and values' parts").then_some(len)
}

/// `grown` for the attention partials, a new buffer of them filled with NaN where the
/// options ask (`Options::poison_partials`).
fn partials_grown(rec: &mut Recorder, part: &mut Arc<Store>, bytes: usize) -> bool {
    let held = part.id;
    let ok = grown(rec, part, bytes, "attention partials");
    let dev = rec.dev();
    if ok && part.id != held && dev.kernels.options.poison_partials {
        dev.queue.write_buffer(&part.buffer, 0, &f32::NAN.to_le_bytes().repeat(part.bytes as usize / 4));
    }
    ok
}

/// `store` grown to hold `bytes` (to the next power of two); false after an error, which
/// the recorder then holds.
fn grown(rec: &mut Recorder, store: &mut Arc<Store>, bytes: usize, what: &str) -> bool {
    if store.bytes as usize >= bytes {
        return true;
    }
    match Store::new(rec.dev(), bytes.next_power_of_two() as u64, what) {
        Ok(s) => {
            *store = s;
            true
        }
        Err(e) => {
            rec.fail(e);
            false
        }
    }
}
