//! Deferred recording: the ops append dispatches to a list, and the list becomes one
//! compute pass of one command encoder at the next sync point (`read`), or earlier in
//! batches submitted without waiting, so that the GPU works on a step while the CPU still
//! encodes the rest of it. A batch is a quarter of the dispatches the last step between
//! sync points had, within [MIN_BATCH, MAX_BATCH]: a small model's step, which the host's
//! encoding bounds (wgpu's ~3 µs a dispatch against the GPU's ~4.5), overlaps in small
//! batches, and a large one's, which the GPU bounds, goes in a few submissions (each costs
//! the GPU a gap). Small per-dispatch data (token ids, RoPE
//! tables, relayout moves) goes into an upload arena written once per submission; bind
//! groups are created on first use and cached by the buffers they bind.
//!
//! Ops can also be held (`hold`): encoded into a command buffer of their own while the
//! device runs what was submitted before, and submitted at `release`. A decoding step is
//! recorded so, ahead of its token, while the step before it runs (`Forward::read_last`):
//! the host's encoding then overlaps the device's work instead of following it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytemuck::Pod;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::device::GpuDevice;
use crate::error::gpu_err;
use crate::kernels::KernelId;
use crate::profile::{self, Phase};

/// The bounds of a batch (`DORY_WGPU_BATCH=N` makes every batch N; 0: one submission per
/// sync point). On the H200, dory-tiny (39 dispatches a step) decodes at 1,057 tok/s in
/// batches of 16 and 842 in one of 64; the larger config (231) at 287–290 in batches of
/// 64 or growing ones, 274 in batches of 16.
const MIN_BATCH: usize = 16;
const MAX_BATCH: usize = 64;

/// The batch DORY_WGPU_BATCH fixes, if it does.
fn batch_fixed() -> Option<usize> {
    static FIXED: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *FIXED.get_or_init(|| {
        std::env::var("DORY_WGPU_BATCH").ok().and_then(|v| v.parse::<usize>().ok()).map(|n| match n {
            0 => usize::MAX,
            n => n,
        })
    })
}

/// The batch for a step of `dispatches`.
fn batch_for(dispatches: usize) -> usize {
    batch_fixed().unwrap_or((dispatches / 4).clamp(MIN_BATCH, MAX_BATCH))
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A device buffer with an id that bind groups are cached by.
pub struct Store {
    pub id: u64,
    pub buffer: wgpu::Buffer,
    pub bytes: u64,
}

impl Store {
    /// A storage buffer of `bytes` (at least 16), or an error naming `what` when the
    /// device refuses it.
    pub fn new(dev: &GpuDevice, bytes: u64, what: &str) -> dory::Result<Arc<Store>> {
        Store::with_usage(dev, bytes, what, wgpu::BufferUsages::empty())
    }

    /// A store that indirect dispatches also read their counts from.
    pub fn indirect(dev: &GpuDevice, bytes: u64, what: &str) -> dory::Result<Arc<Store>> {
        Store::with_usage(dev, bytes, what, wgpu::BufferUsages::INDIRECT)
    }

    fn with_usage(dev: &GpuDevice, bytes: u64, what: &str, extra: wgpu::BufferUsages) -> dory::Result<Arc<Store>> {
        let bytes = bytes.max(16).next_multiple_of(16);
        if bytes > dev.caps.max_binding {
            return Err(gpu_err(format!(
                "{what} needs {bytes} bytes in one buffer, over this adapter's limit of {} bytes for a storage binding",
                dev.caps.max_binding
            )));
        }
        let scope = dev.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let buffer = dev.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(what),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST | extra,
            mapped_at_creation: false,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(gpu_err(format!("cannot allocate {bytes} bytes for {what}: {e}")));
        }
        Ok(Arc::new(Store { id: NEXT_ID.fetch_add(1, Ordering::Relaxed), buffer, bytes }))
    }

    /// A buffer holding `data`.
    pub fn with_data(dev: &GpuDevice, data: &[u8], what: &str) -> dory::Result<Arc<Store>> {
        let store = Store::new(dev, data.len() as u64, what)?;
        dev.queue.write_buffer(&store.buffer, 0, data);
        Ok(store)
    }
}

/// What a binding of a recorded dispatch refers to.
#[derive(Clone)]
pub enum Bind {
    Buf(Arc<Store>),
    /// The upload arena of the dispatch's submission.
    Upload,
}

/// The most bindings any kernel has (attend.wgsl's ten).
const MOST_BINDINGS: usize = 10;

/// A dispatch's bindings, inline up to MOST_BINDINGS, so that recording them allocates
/// nothing.
pub type Binds = SmallVec<[(u32, Bind); MOST_BINDINGS]>;

/// A recorded dispatch. Small vectors inline: recording a step allocates nothing.
struct Cmd {
    kernel: KernelId,
    binds: Binds,
    imm: SmallVec<[u8; 64]>,
    groups: [u32; 3],
    /// In a region that may be skipped (`skip_from`): its counts' offset in the skip args.
    indirect: Option<u64>,
}

/// A bind group's identity: the kernel and each binding's buffer.
type GroupKey = (KernelId, SmallVec<[(u32, u64); MOST_BINDINGS]>);

struct Cached {
    group: wgpu::BindGroup,
    /// The buffers bound, kept to tell when the group can be dropped.
    stores: Vec<Arc<Store>>,
}

/// Which pair of the tensor-core GEMM's split buffers (`Recorder::split_buffers`): a
/// product's x, or the down projection's m, which gate|up cuts while it reads its x.
#[derive(Clone, Copy, Debug)]
pub enum Split {
    X,
    Glu,
}

pub struct Recorder {
    dev: Arc<GpuDevice>,
    cmds: Vec<Cmd>,
    /// This submission's uploads, in 4-byte words.
    uploads: Vec<u32>,
    upload: Option<Arc<Store>>,
    /// The tensor-core GEMM's scratch, each reused or grown (`scratch`): x's f16 parts and
    /// row scales (`split_buffers`), two pairs of them (`Split`), the sliced GEMM's
    /// per-slice sums (`join_buffer`).
    parts: [Option<Arc<Store>>; 2],
    scales: [Option<Arc<Store>>; 2],
    join: Option<Arc<Store>>,
    /// A slice of a q8_0 matrix's rows in f16, for the tensor cores (`q8_copy_buffer`).
    q8_copy: Option<Arc<Store>>,
    /// Looked up at every dispatch: a fast hash (SipHash was ~3 % of a small model's host time).
    groups: FxHashMap<GroupKey, Cached>,
    /// The adapter's limit on workgroups along one axis.
    max_groups: u32,
    sweep_at: usize,
    staging: Option<wgpu::Buffer>,
    /// Bound where a kernel's optional read-write buffer is absent.
    none: Arc<Store>,
    /// Dispatches recorded since this recorder was made (for the dispatch floor).
    pub dispatches: u64,
    /// With `timed` (and pass timestamps on the device) every submission waits and adds
    /// the GPU time of its pass to `gpu_seconds`: how benchmarks time kernels.
    pub timed: bool,
    pub gpu_seconds: f64,
    /// The first failure of an op, reported at the next sync point (ops return nothing).
    error: Option<dory::Error>,
    /// When the last submission returned (`DORY_WGPU_PROFILE=host`).
    returned: Option<Instant>,
    /// Dispatches that make the next batch.
    batch: usize,
    /// From `unbatched` to the next `flush`: no batch is sent (a greedy decoder's next
    /// step, recorded while the device runs this one, goes in one submission).
    unbatched: bool,
    /// Dispatches recorded since the last sync point.
    since_sync: usize,
    /// Held ops and early reads (boxed: a session's size stays a CPU one's).
    ahead: Box<Holding>,
    /// From `skip_from` to the next submission: the counts of the dispatches recorded since
    /// (`[n, then (x, y, z) each]`), written into `skip_args` before that submission.
    skipping: Option<Vec<u32>>,
    skip_args: Option<Arc<Store>>,
}

/// Dispatches a region that may be skipped can hold: a decoded step's, ~230 for a model of
/// 32 layer-passes, 8 a layer-pass at most (768 KiB of counts).
const SKIP_MOST: usize = 65536;

/// What `hold` and `read_begin` keep.
#[derive(Default)]
struct Holding {
    /// While ops are held: the unheld commands, uploads and first failure, parked.
    parked: Option<(Vec<Cmd>, Vec<u32>, Option<dory::Error>)>,
    /// The held ops, encoded (or their first failure), waiting for `release`.
    held: Option<dory::Result<Held>>,
    /// The arena of held ops' uploads (written at their release).
    upload: Option<Arc<Store>>,
    /// A read started by `read_begin`.
    pending: Option<Pending>,
    /// Where the held ops' uploads keep the token that `release` is given (`token_at`).
    token: Option<usize>,
}

/// Held ops, encoded into a command buffer whose uploads are written as it is released.
struct Held {
    buffer: wgpu::CommandBuffer,
    uploads: Vec<u32>,
    arena: Arc<Store>,
    token: Option<usize>,
    /// The counts of its region that may be skipped (a step that tests its exit rule on
    /// the device), and the buffer they go to.
    skips: Option<(Vec<u32>, Arc<Store>)>,
}

impl Held {
    /// Writes its uploads and its counts, as it is submitted.
    fn write(&self, dev: &GpuDevice) {
        if !self.uploads.is_empty() {
            dev.queue.write_buffer(&self.arena.buffer, 0, bytemuck::cast_slice(&self.uploads));
        }
        if let Some((counts, args)) = &self.skips {
            dev.queue.write_buffer(&args.buffer, 0, bytemuck::cast_slice(counts));
        }
    }
}

/// A read on its way: `bytes` of the buffer `store` copied into `staging`, being mapped.
struct Pending {
    store: u64,
    bytes: u64,
    staging: wgpu::Buffer,
    mapped: Mapped,
    /// The submission that copies the bytes: a wait for it leaves alone what was submitted
    /// after (a greedy decoder's next step).
    index: wgpu::SubmissionIndex,
}

/// Whether ops may be held (`DORY_WGPU_AHEAD=0`: not, to measure what it gains).
pub fn ahead() -> bool {
    static AHEAD: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AHEAD.get_or_init(|| std::env::var("DORY_WGPU_AHEAD").map_or(true, |v| v != "0"))
}

/// Workgroups for `n` items, `per` to a workgroup.
pub fn groups_for(n: usize, per: usize) -> u32 {
    n.div_ceil(per) as u32
}

impl Recorder {
    pub fn new(dev: Arc<GpuDevice>) -> dory::Result<Recorder> {
        Ok(Recorder {
            dev: dev.clone(),
            skipping: None,
            skip_args: None,
            cmds: Vec::new(),
            uploads: Vec::new(),
            upload: None,
            groups: FxHashMap::default(),
            max_groups: dev.device.limits().max_compute_workgroups_per_dimension,
            sweep_at: 256,
            staging: None,
            parts: [None, None],
            scales: [None, None],
            join: None,
            q8_copy: None,
            none: Store::new(&dev, 16, "unused")?,
            dispatches: 0,
            timed: false,
            gpu_seconds: 0.0,
            error: None,
            returned: None,
            batch: batch_for(0),
            unbatched: false,
            since_sync: 0,
            ahead: Box::default(),
        })
    }

    /// A small buffer to bind where a kernel's optional buffer is absent.
    pub fn none(&self) -> &Arc<Store> {
        &self.none
    }

    pub fn dev(&self) -> &Arc<GpuDevice> {
        &self.dev
    }

    /// Called at the start of each op: submits what is recorded once it is a batch, so
    /// that one op's dispatches and uploads always share a submission.
    pub fn begin_op(&mut self) {
        // Not `submit`, which would wait for a read begun (a greedy decoder's next step is
        // recorded while its logits come back).
        let batched = !self.unbatched && self.skipping.is_none();
        if self.ahead.parked.is_none() && batched && self.cmds.len() >= self.batch {
            if let Err(e) = self.send(None, None) {
                self.fail(e);
            }
        }
    }

    /// From here to the next submission every dispatch (but `dispatch_always`'s) is
    /// indirect, its counts in `skip_args`, so that a kernel of the step (exit.wgsl) can
    /// empty the rest of it; the region goes in one submission with what came before it in
    /// the same op, its counts written before it runs.
    pub fn skip_from(&mut self) {
        self.skipping.get_or_insert_with(|| vec![0]);
    }

    /// Whether a region that may be skipped has begun (`skip_from`).
    pub fn skipping(&self) -> bool {
        self.skipping.is_some()
    }

    /// The counts of the dispatches `skip_from` makes indirect (`[n, then (x, y, z) each]`).
    pub fn skip_args(&mut self) -> Arc<Store> {
        if self.skip_args.is_none() {
            match Store::indirect(&self.dev, 4 * (1 + 3 * SKIP_MOST) as u64, "skipped dispatches' counts") {
                Ok(s) => self.skip_args = Some(s),
                Err(e) => self.fail(e),
            }
        }
        self.skip_args.clone().unwrap_or_else(|| self.none.clone())
    }

    /// Remembers an op's failure for the next sync point.
    pub fn fail(&mut self, e: dory::Error) {
        self.error.get_or_insert(e);
    }

    /// Appends `words` to this submission's uploads; returns their offset in words.
    pub fn upload(&mut self, words: &[u32]) -> u32 {
        let at = self.uploads.len() as u32;
        self.uploads.extend_from_slice(words);
        at
    }

    pub fn upload_f32(&mut self, values: &[f32]) -> u32 {
        let at = self.uploads.len() as u32;
        self.uploads.extend(values.iter().map(|v| v.to_bits()));
        at
    }

    /// This submission's uploads from word `at` on (to reuse a table uploaded earlier in
    /// the same submission).
    pub fn uploaded(&self, at: u32, len: usize) -> Option<&[u32]> {
        self.uploads.get(at as usize..at as usize + len)
    }

    /// Buffers of at least `parts` and `scales` bytes for x's f16 parts and row scales
    /// (matmul.rs), shared by every GEMM on the tensor cores: each splits its x and reads
    /// it before the next dispatch writes them again; `Split::Glu`'s are written by a
    /// gate|up product while it reads the others.
    pub fn split_buffers(&mut self, which: Split, parts: u64, scales: u64) -> dory::Result<(Arc<Store>, Arc<Store>)> {
        let i = which as usize;
        Ok((
            scratch(&self.dev, &mut self.parts[i], parts, "the tensor-core GEMM's f16 parts of x")?,
            scratch(&self.dev, &mut self.scales[i], scales, "the tensor-core GEMM's row scales")?,
        ))
    }

    /// A buffer of at least `bytes` for the sliced GEMM's sums of each slice, shared by
    /// every such product (each joins its slices before the next writes them again).
    pub fn join_buffer(&mut self, bytes: u64) -> dory::Result<Arc<Store>> {
        scratch(&self.dev, &mut self.join, bytes, "the sliced GEMM's sums of each slice")
    }

    /// A buffer of at least `bytes` for a slice of a q8_0 matrix copied in f16, shared by
    /// every such copy (each product reads its copy before the next is written).
    pub fn q8_copy_buffer(&mut self, bytes: u64) -> dory::Result<Arc<Store>> {
        scratch(&self.dev, &mut self.q8_copy, bytes, "a q8_0 matrix's rows in f16 for the tensor cores")
    }

    pub fn dispatch(&mut self, kernel: KernelId, binds: &[(u32, Bind)], imm: &impl Pod, groups: [u32; 3]) {
        self.dispatch_as(kernel, binds, imm, groups, true);
    }

    /// A dispatch never skipped, even in a region that may be (exit.wgsl's).
    pub fn dispatch_always(&mut self, kernel: KernelId, binds: &[(u32, Bind)], imm: &impl Pod, groups: [u32; 3]) {
        self.dispatch_as(kernel, binds, imm, groups, false);
    }

    fn dispatch_as(&mut self, kernel: KernelId, binds: &[(u32, Bind)], imm: &impl Pod, groups: [u32; 3], skips: bool) {
        if groups.contains(&0) {
            return;
        }
        let limit = self.max_groups;
        if let Some(g) = groups.iter().find(|&&g| g > limit) {
            let name = self.dev.kernels.get(kernel).name;
            self.fail(gpu_err(format!("{name} would need {g} workgroups along one axis, over the limit of {limit}")));
            return;
        }
        self.dispatches += 1;
        self.since_sync += 1;
        let indirect = self.skipping.as_mut().filter(|_| skips).map(|counts| {
            let at = 4 * counts.len() as u64;
            counts.extend_from_slice(&groups);
            at
        });
        self.cmds.push(Cmd {
            kernel,
            binds: binds.iter().cloned().collect(),
            imm: SmallVec::from_slice(bytemuck::bytes_of(imm)),
            groups,
            indirect,
        });
    }

    fn bind_group(&mut self, kernel: KernelId, binds: &[(u32, Bind)]) -> wgpu::BindGroup {
        let upload = self.upload.as_ref();
        let store_of = |b: &'_ Bind| -> Arc<Store> {
            match b {
                Bind::Buf(s) => s.clone(),
                Bind::Upload => upload.expect("uploads were written before binding").clone(),
            }
        };
        let id_of = |b: &Bind| match b {
            Bind::Buf(s) => s.id,
            Bind::Upload => upload.map_or(0, |u| u.id),
        };
        let key: GroupKey = (kernel, binds.iter().map(|(i, b)| (*i, id_of(b))).collect());
        if let Some(c) = self.groups.get(&key) {
            return c.group.clone();
        }
        let stores: Vec<Arc<Store>> = binds.iter().map(|(_, b)| store_of(b)).collect();
        let k = self.dev.kernels.get(kernel);
        let entries: Vec<wgpu::BindGroupEntry> = binds
            .iter()
            .zip(&stores)
            .map(|((i, _), s)| wgpu::BindGroupEntry { binding: *i, resource: s.buffer.as_entire_binding() })
            .collect();
        let group = self.dev.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(k.name),
            layout: &k.layout,
            entries: &entries,
        });
        self.groups.insert(key, Cached { group: group.clone(), stores });
        group
    }

    /// Drops cached bind groups whose buffers nobody else holds any more.
    fn sweep(&mut self) {
        if self.groups.len() < self.sweep_at {
            return;
        }
        self.groups.retain(|_, c| c.stores.iter().all(|s| Arc::strong_count(s) > 1));
        self.sweep_at = 2 * self.groups.len() + 256;
    }

    /// Submits everything recorded, then, with `read`, copies `bytes` of that buffer back
    /// and waits for them; a read of what `read_begin` started only waits.
    pub fn submit(&mut self, read: Option<(&Store, u64)>) -> dory::Result<Option<Vec<u32>>> {
        self.end_hold();
        if let Some(p) = self.ahead.pending.take() {
            let same = read.is_some_and(|(src, bytes)| src.id == p.store && read_bytes(bytes) == p.bytes);
            let words = self.wait(p)?;
            if same {
                return Ok(Some(words));
            }
        }
        let pending = self.send(read, None)?;
        pending.map(|p| self.wait(p)).transpose()
    }

    /// Submits everything recorded with `bytes` of `src` copied back after it, and returns
    /// at once: the next `submit` reading the same waits for the copy.
    pub fn read_begin(&mut self, src: &Store, bytes: u64) {
        if let Some(p) = self.ahead.pending.take() {
            if let Err(e) = self.wait(p) {
                self.fail(e);
            }
        }
        match self.send(Some((src, bytes)), None) {
            Ok(p) => self.ahead.pending = p,
            Err(e) => self.fail(e),
        }
    }

    /// Ops recorded from here until the next submission are held: encoded then, and
    /// submitted at `release` after what is recorded in between.
    pub fn hold(&mut self) {
        debug_assert!(self.skipping.is_none(), "a region that may be skipped ends at its submission");
        self.end_hold();
        self.ahead.held = None;
        let parked = (std::mem::take(&mut self.cmds), std::mem::take(&mut self.uploads), self.error.take());
        self.ahead.parked = Some(parked);
    }

    /// Submits everything recorded without a read; a read begun stays pending.
    pub fn flush(&mut self) {
        self.end_hold();
        if let Err(e) = self.send(None, None) {
            self.fail(e);
        }
    }

    /// Sends no batch until the next `flush`: for ops recorded while the device is still
    /// busy with earlier ones, whose batches would only add submissions (each ~15 µs of
    /// the host's time to submit, besides its encoding). Not where DORY_WGPU_BATCH fixes
    /// the batches.
    pub fn unbatched(&mut self) {
        self.unbatched = batch_fixed().is_none();
    }

    /// The held ops' upload at word `at` (recorded while holding) is the token that
    /// `release` is given.
    pub fn token_at(&mut self, at: u32) {
        debug_assert!(self.ahead.parked.is_some(), "a token's place among held uploads");
        self.ahead.token = Some(at as usize);
    }

    /// Submits what is recorded, then the held ops, with `token` in its place among their
    /// uploads.
    pub fn release(&mut self, token: u32) -> dory::Result<()> {
        self.end_hold();
        let mut held = self.ahead.held.take().transpose()?;
        if let Some(h) = held.as_mut() {
            if let Some(at) = h.token {
                h.uploads[at] = token;
            }
        }
        if self.skipping.is_some() && held.as_ref().is_some_and(|h| h.skips.is_some()) {
            // Both regions count in the same buffer: each goes in a submission of its own.
            self.send(None, None)?;
        }
        self.send(None, held).map(|_| ())
    }

    /// Drops the held ops (and their errors) unrun.
    pub fn discard(&mut self) {
        if let Some((cmds, uploads, error)) = self.ahead.parked.take() {
            (self.cmds, self.uploads, self.error) = (cmds, uploads, error);
            // A region begun while holding was the held ops'.
            self.skipping = None;
        }
        self.ahead.held = None;
        self.ahead.token = None;
    }

    /// Ends holding: the held ops are encoded now, while the device runs what came before
    /// them, and the recording goes on where it was parked.
    fn end_hold(&mut self) {
        let Some((cmds, uploads, error)) = self.ahead.parked.take() else { return };
        let host = self.lap_ahead();
        let held_cmds = std::mem::replace(&mut self.cmds, cmds);
        let held_uploads = std::mem::replace(&mut self.uploads, uploads);
        let held_error = std::mem::replace(&mut self.error, error);
        let token = self.ahead.token.take();
        // A region begun while holding is the held ops' (`hold` begins none).
        let skipping = self.skipping.take();
        self.ahead.held = Some(match held_error {
            Some(e) => Err(e),
            None => self.encode_held(&held_cmds, held_uploads, token, skipping),
        });
        if let Some(t) = host {
            profile::add_host(Phase::Held, t.elapsed().as_nanos() as f64);
            self.returned = Some(Instant::now());
        }
    }

    /// With the host profiled, the time since the last submission or wait returned as
    /// recording ahead of a read-back; now.
    fn lap_ahead(&mut self) -> Option<Instant> {
        let now = profile::host().then(Instant::now)?;
        if let Some(last) = self.returned {
            profile::add_host(Phase::Ahead, (now - last).as_nanos() as f64);
        }
        Some(now)
    }

    fn encode_held(
        &mut self,
        cmds: &[Cmd],
        uploads: Vec<u32>,
        token: Option<usize>,
        skipping: Option<Vec<u32>>,
    ) -> dory::Result<Held> {
        let skips = match skipping {
            Some(counts) => Some((counted(counts)?, self.skip_args_made()?)),
            None => None,
        };
        let bytes = 4 * uploads.len() as u64;
        if self.ahead.upload.as_ref().is_none_or(|u| u.bytes < bytes) {
            self.ahead.upload = Some(Store::new(&self.dev, bytes.next_power_of_two(), "held uploads")?);
        }
        let arena = self.ahead.upload.clone().expect("made above");
        // The held dispatches bind their own arena, written as they are released.
        let unheld = self.upload.replace(arena.clone());
        let groups: Vec<wgpu::BindGroup> = cmds.iter().map(|c| self.bind_group(c.kernel, &c.binds)).collect();
        self.upload = unheld;
        let mut enc = self.dev.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("held") });
        encode(&self.dev, &mut enc, cmds, &groups, None, false, skips.as_ref().map(|(_, args)| &**args));
        Ok(Held { buffer: enc.finish(), uploads, arena, token, skips })
    }

    /// Waits for a read's copy and mapping.
    fn wait(&mut self, p: Pending) -> dory::Result<Vec<u32>> {
        let host = self.lap_ahead();
        let words = wait_mapped(&self.dev.device, &p.staging, p.bytes, &p.mapped, Some(p.index));
        if let Some(t) = host {
            profile::add_host(Phase::Wait, t.elapsed().as_nanos() as f64);
            self.returned = Some(Instant::now());
        }
        words
    }

    /// Submits everything recorded, then the held ops `then`; with `read`, `bytes` of that
    /// buffer are copied back after them and their mapping begun.
    fn send(&mut self, read: Option<(&Store, u64)>, then: Option<Held>) -> dory::Result<Option<Pending>> {
        self.unbatched = false;
        if let Some(e) = self.error.take() {
            self.cmds.clear();
            self.uploads.clear();
            self.skipping = None;
            return Err(e);
        }
        let host = profile::host().then(Instant::now);
        if let (Some(now), Some(last)) = (host, self.returned) {
            profile::add_host(Phase::Record, (now - last).as_nanos() as f64);
        }
        let lap = |phase, since: &mut Option<Instant>| {
            if let Some(t) = since {
                let now = Instant::now();
                profile::add_host(phase, (now - *t).as_nanos() as f64);
                *t = now;
            }
        };
        let mut since = host;
        if let (true, None, Some(held)) = (self.cmds.is_empty(), read, then.as_ref()) {
            // Only held ops (a decoding step with its token among them): no encoder.
            held.write(&self.dev);
            self.dev.queue.submit(then.map(|h| h.buffer));
            lap(Phase::Submit, &mut since);
            self.returned = since;
            return Ok(None);
        }
        self.write_uploads()?;
        self.write_skip_args()?;
        lap(Phase::Uploads, &mut since);
        let mut cmds = std::mem::take(&mut self.cmds);
        let groups: Vec<wgpu::BindGroup> = cmds.iter().map(|c| self.bind_group(c.kernel, &c.binds)).collect();
        lap(Phase::BindGroups, &mut since);
        let dev = self.dev.clone();
        let mut enc = dev.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("step") });
        let timed = self.timed && dev.caps.pass_timestamps && !cmds.is_empty();
        let stamps = (timed || dev.caps.timestamps && !cmds.is_empty()).then(|| Stamps::new(&dev, cmds.len()));
        let skip_args = self.skip_args.clone();
        encode(&dev, &mut enc, &cmds, &groups, stamps.as_ref(), timed, skip_args.as_deref());
        lap(Phase::Pass, &mut since);
        let read = read.map(|(src, bytes)| {
            let bytes = read_bytes(bytes);
            let staging = self.staging_for(bytes);
            enc.copy_buffer_to_buffer(&src.buffer, 0, &staging, 0, bytes);
            (src.id, staging, bytes)
        });
        let buffer = enc.finish();
        lap(Phase::Finish, &mut since);
        let index = match then {
            Some(held) => {
                held.write(&dev);
                dev.queue.submit([buffer, held.buffer])
            }
            None => dev.queue.submit([buffer]),
        };
        lap(Phase::Submit, &mut since);
        if let Some(s) = stamps {
            self.take_stamps(&s, timed, &cmds)?;
        }
        // Emptied, the list keeps its room for the next submission's dispatches.
        cmds.clear();
        self.cmds = cmds;
        self.sweep();
        if read.is_some() {
            self.batch = batch_for(self.since_sync);
            self.since_sync = 0;
        }
        self.returned = since;
        Ok(read.map(|(store, staging, bytes)| Pending {
            store,
            bytes,
            mapped: map_begin(&staging, bytes),
            staging,
            index,
        }))
    }

    /// Writes the counts of a region that may be skipped (`skip_from`), which ends here.
    fn write_skip_args(&mut self) -> dory::Result<()> {
        let Some(counts) = self.skipping.take() else { return Ok(()) };
        let counts = counted(counts)?;
        self.dev.queue.write_buffer(&self.skip_args_made()?.buffer, 0, bytemuck::cast_slice(&counts));
        Ok(())
    }

    /// The counts' buffer of a region that may be skipped, which its exit test made.
    fn skip_args_made(&self) -> dory::Result<Arc<Store>> {
        self.skip_args
            .clone()
            .ok_or_else(|| gpu_err("a region that may be skipped without its counts' buffer (skip_args)"))
    }

    /// Writes this submission's uploads into the arena, grown as needed.
    fn write_uploads(&mut self) -> dory::Result<()> {
        // A dispatch may bind the arena without reading it (prep without rotation).
        if !self.uploads.is_empty() || self.upload.is_none() {
            let bytes = 4 * self.uploads.len() as u64;
            if self.upload.as_ref().is_none_or(|u| u.bytes < bytes) {
                self.upload = Some(Store::new(&self.dev, bytes.next_power_of_two(), "uploads")?);
            }
            let upload = self.upload.as_ref().expect("made above");
            self.dev.queue.write_buffer(&upload.buffer, 0, bytemuck::cast_slice(&self.uploads));
            self.uploads.clear();
        }
        Ok(())
    }

    /// A MAP_READ buffer of at least `bytes`, kept for later reads.
    fn staging_for(&mut self, bytes: u64) -> wgpu::Buffer {
        if self.staging.as_ref().is_none_or(|s| s.size() < bytes) {
            self.staging = Some(self.dev.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("read"),
                size: bytes.next_power_of_two(),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }));
        }
        self.staging.clone().expect("made above")
    }

    /// Reads a submission's timestamps: the pass's GPU time into `gpu_seconds` when timed,
    /// else each dispatch's into the profile.
    fn take_stamps(&mut self, s: &Stamps, timed: bool, cmds: &[Cmd]) -> dory::Result<()> {
        let words = read_mapped(&self.dev.device, &s.staging, 8 * u64::from(s.count))?;
        let ticks: &[u64] = bytemuck::cast_slice(&words);
        let period = f64::from(self.dev.queue.get_timestamp_period());
        if timed {
            self.gpu_seconds += ticks[1].saturating_sub(ticks[0]) as f64 * period * 1e-9;
            return Ok(());
        }
        for (i, c) in cmds.iter().enumerate().take(s.count as usize / 2) {
            let name = self.dev.kernels.get(c.kernel).name;
            crate::profile::add(name, ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * period);
        }
        Ok(())
    }
}

/// A region's counts (`skip_from`) with their number in front, as exit.wgsl reads them.
fn counted(mut counts: Vec<u32>) -> dory::Result<Vec<u32>> {
    let n = (counts.len() - 1) / 3;
    if n > SKIP_MOST {
        return Err(gpu_err(format!("a step of {n} dispatches after an exit test, over {SKIP_MOST}")));
    }
    counts[0] = n as u32;
    Ok(counts)
}

/// Records `cmds` as one compute pass of `enc`, with timestamps around the pass (`timed`)
/// or around every dispatch (profiling) when `stamps` are given.
fn encode(
    dev: &GpuDevice,
    enc: &mut wgpu::CommandEncoder,
    cmds: &[Cmd],
    groups: &[wgpu::BindGroup],
    stamps: Option<&Stamps>,
    timed: bool,
    skip_args: Option<&Store>,
) {
    if !cmds.is_empty() {
        let pass_stamps = stamps.filter(|_| timed).map(|s| wgpu::ComputePassTimestampWrites {
            query_set: &s.set,
            beginning_of_pass_write_index: Some(0),
            end_of_pass_write_index: Some(1),
        });
        let mut pass =
            enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("step"), timestamp_writes: pass_stamps });
        for (i, (c, g)) in cmds.iter().zip(groups).enumerate() {
            pass.set_pipeline(&dev.kernels.get(c.kernel).pipeline);
            pass.set_bind_group(0, g, &[]);
            if !c.imm.is_empty() {
                pass.set_immediates(0, &c.imm);
            }
            let stamp = stamps.filter(|_| !timed && i < crate::profile::MAX_DISPATCHES);
            if let Some(s) = stamp {
                pass.write_timestamp(&s.set, 2 * i as u32);
            }
            match (c.indirect, skip_args) {
                (Some(at), Some(args)) => pass.dispatch_workgroups_indirect(&args.buffer, at),
                _ => pass.dispatch_workgroups(c.groups[0], c.groups[1], c.groups[2]),
            }
            if let Some(s) = stamp {
                pass.write_timestamp(&s.set, 2 * i as u32 + 1);
            }
        }
    }
    if let Some(s) = stamps {
        enc.resolve_query_set(&s.set, 0..s.count, &s.resolved, 0);
        enc.copy_buffer_to_buffer(&s.resolved, 0, &s.staging, 0, 8 * u64::from(s.count));
    }
}

/// One submission's timestamp queries (`profile`).
struct Stamps {
    set: wgpu::QuerySet,
    count: u32,
    resolved: wgpu::Buffer,
    staging: wgpu::Buffer,
}

impl Stamps {
    fn new(dev: &GpuDevice, dispatches: usize) -> Stamps {
        let count = 2 * dispatches.min(crate::profile::MAX_DISPATCHES) as u32;
        let buffer = |usage, label| {
            dev.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: 8 * u64::from(count),
                usage,
                mapped_at_creation: false,
            })
        };
        Stamps {
            set: dev.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("profile"),
                ty: wgpu::QueryType::Timestamp,
                count,
            }),
            count,
            resolved: buffer(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC, "profile"),
            staging: buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, "profile read"),
        }
    }
}

/// Maps `bytes` of a MAP_READ buffer once the queue is done with it, and copies them out.
pub fn read_mapped(device: &wgpu::Device, staging: &wgpu::Buffer, bytes: u64) -> dory::Result<Vec<u32>> {
    let mapped = map_begin(staging, bytes);
    wait_mapped(device, staging, bytes, &mapped, None)
}

/// The bytes a read of `bytes` copies: whole words, at least one.
fn read_bytes(bytes: u64) -> u64 {
    bytes.max(4).next_multiple_of(4)
}

type Mapped = std::sync::mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>;

/// Asks for `bytes` of `staging` mapped once the queue is done with it.
fn map_begin(staging: &wgpu::Buffer, bytes: u64) -> Mapped {
    let (tx, rx) = std::sync::mpsc::channel();
    staging.map_async(wgpu::MapMode::Read, 0..bytes, move |r| {
        let _ = tx.send(r);
    });
    rx
}

/// Waits for `map_begin`'s mapping (its copy in submission `index`, else the last) and
/// copies the bytes out.
fn wait_mapped(
    device: &wgpu::Device,
    staging: &wgpu::Buffer,
    bytes: u64,
    mapped: &Mapped,
    index: Option<wgpu::SubmissionIndex>,
) -> dory::Result<Vec<u32>> {
    let wait = wgpu::PollType::Wait { submission_index: index, timeout: None };
    device.poll(wait).map_err(|e| gpu_err(format!("waiting for the device: {e}")))?;
    mapped
        .recv()
        .map_err(|_| gpu_err("the device dropped a read-back"))?
        .map_err(|e| gpu_err(format!("reading back: {e}")))?;
    let words = {
        let view = staging.get_mapped_range(0..bytes).map_err(|e| gpu_err(format!("reading back: {e:?}")))?;
        bytemuck::cast_slice::<u8, u32>(&view).to_vec()
    };
    staging.unmap();
    Ok(words)
}

/// The buffer held in `slot` where it has at least `bytes`, else a new one in its place,
/// grown by half again so that a prompt's growing rows do not reallocate each time.
fn scratch(dev: &Arc<GpuDevice>, slot: &mut Option<Arc<Store>>, bytes: u64, what: &str) -> dory::Result<Arc<Store>> {
    match slot {
        Some(b) if b.bytes >= bytes => Ok(b.clone()),
        _ => {
            let b = Store::new(dev, bytes + bytes / 2, what)?;
            *slot = Some(b.clone());
            Ok(b)
        }
    }
}
