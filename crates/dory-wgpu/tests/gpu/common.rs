//! What the GPU tests share: the devices (one per reduction the adapter can run, shared
//! by every test), random models, and both backends on one model.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use dory::weights::{DType, Stored};
use dory::{Backend, Config, Model};
use dory_wgpu::kernels::{Bands, Gemv1, Options, Slicing};
use dory_wgpu::{GpuDevice, GpuModel, Pick, Reduce, Wgpu};

static DEVICES: OnceLock<Vec<Arc<GpuDevice>>> = OnceLock::new();

/// The adapter with subgroup reductions (where it has them) and with workgroup-memory
/// ones, the second with the kernel shapes the defaults do not take, and a third with f16
/// projections in the order the defaults do not hold them. No adapter: a failure
/// under CI=true, else an empty list and a note.
pub fn devices() -> &'static [Arc<GpuDevice>] {
    DEVICES.get_or_init(|| {
        let first = match GpuDevice::open(Pick::Any) {
            Ok(d) => d,
            Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => {
                panic!("CI=true and no usable GPU adapter (install mesa-vulkan-drivers for lavapipe): {e}")
            }
            Err(e) => {
                eprintln!("SKIPPED: the GPU tests need an adapter (e.g. Debian's mesa-vulkan-drivers): {e}");
                return vec![];
            }
        };
        // With q8_0's kernels, which a model's upload would otherwise build again for each
        // q8_0 model (the CLI's test takes that way).
        let first =
            Arc::new(first.with_options(Options { q8: true, ..first.kernels.options }).expect("q8_0's kernels"));
        eprintln!("GPU tests on {}", first.describe());
        let mut all = vec![first.clone()];
        if first.caps.reduce == Reduce::Subgroup {
            // The kernels the defaults leave out: the single-row projection, with the
            // residual fused into it, a decoded row's embedding and the loop's entry apart,
            // bf16 projections held the other way, the
            // tensor-core GEMM's blocks each in one subgroup and its split after the
            // residual's dispatch; exit rules tested where the defaults do not; a
            // one-row projection's bands two to a workgroup where it forms the residual;
            // and the shaders built with wgpu's runtime checks.
            let shared =
                GpuDevice::open_with(Pick::Any, Some(Reduce::Shared)).expect("the same adapter, shared reductions");
            let o = shared.kernels.options;
            let gemv1 = Gemv1 { xs: Options::xs_most(shared.caps.workgroup_bytes), ..o.gemv1 };
            let coop_slicing = Slicing { most: 1, ..o.coop_slicing };
            let (bf16_as_f16, fuse_split, exit_on_device) = (!o.bf16_as_f16, false, !o.exit_on_device);
            let options = Options {
                gemv1,
                fuse_residual: true,
                fuse_enter: false,
                bf16_as_f16,
                coop_slicing,
                fuse_split,
                exit_on_device,
                q8: true,
                gemv_bands: Bands { per: 2, from: 1 },
                checks: true,
                poison_partials: true,
                ..o
            };
            all.push(Arc::new(shared.with_options(options).expect("the single-row kernels")));
            // And f16 projections in the other order (rows, or tiles without tensor cores),
            // with a prompt's attention on the tensor cores at every head's dims (the
            // defaults' from 128 only).
            let o = first.kernels.options;
            let attend_coop = o.attend_coop_fits(first.caps.workgroup_bytes).then_some(16);
            // q8_0 prompts copied for the tensor cores in slices of 64 rows; rows wider than
            // 1,024 with the residual in its own dispatch where the defaults fuse them.
            let q8_copy_bytes = 0;
            // And passes closed by the next pass's first projection, and a decoded row's
            // residual formed by the projection after it, which lavapipe's defaults leave
            // apart.
            let (fuse_edge, fuse_residual) = (true, true);
            // And a decoded row's chunks of several tiles of keys, which the defaults cut
            // from contexts of a few thousand keys only, with four loads in flight in
            // their walks (the defaults' eight on the others), and three bands of a one-row
            // projection to a workgroup where it forms the residual.
            let (attend_per, attend_ahead) = (256, 4);
            let gemv_bands = Bands { per: 3, from: 1 };
            // And each reduction counting its subgroup's lanes, as where the adapter's
            // subgroup size varies.
            let subgroup = 0;
            let other = Options {
                tiles: !o.tiles,
                attend_coop,
                q8_copy_bytes,
                residual_max_k: 1024,
                fuse_edge,
                fuse_residual,
                attend_per,
                attend_ahead,
                gemv_bands,
                subgroup,
                poison_partials: true,
                ..o
            };
            all.push(Arc::new(first.with_options(other).expect("the other order")));
        } else if std::env::var("CI").is_ok_and(|v| v == "true") && first.caps.subgroup.is_some() {
            panic!("the adapter has subgroups but the probe rejected them: the subgroup kernels would go untested");
        }
        all
    })
}

/// A config: hidden D, KV heads K (H = 4K), head_dim d, ffn F, layers, passes, window.
pub fn config(hidden: usize, kv: usize, d: usize, ffn: usize, layers: &[&str], passes: usize, window: usize) -> Config {
    config_with(hidden, kv, d, ffn, layers, passes, window, serde_json::json!({}))
}

#[allow(clippy::too_many_arguments)]
pub fn config_with(
    hidden: usize,
    kv: usize,
    d: usize,
    ffn: usize,
    layers: &[&str],
    passes: usize,
    window: usize,
    extra: serde_json::Value,
) -> Config {
    let mut json = serde_json::json!({
        "architecture": "dory", "vocab_size": 300, "hidden": hidden, "heads": 4 * kv, "kv_heads": kv,
        "head_dim": d, "ffn": ffn, "layers": layers, "passes": passes, "window": window,
        "bos_token_id": 0, "eos_token_id": 1,
    });
    for (k, v) in extra.as_object().expect("an object") {
        json[k] = v.clone();
    }
    Config::parse(&json.to_string(), Path::new("test config")).expect("valid config")
}

/// A random model of `config` in a temporary folder.
pub fn random_model(config: &Config, seed: u64, dtype: DType) -> (tempfile::TempDir, Model) {
    let dir = tempfile::tempdir().expect("tempdir");
    dory::init::write_random_model(dir.path(), config, seed, dtype, 1).expect("write");
    let model = Model::load(dir.path()).expect("load");
    (dir, model)
}

/// A random model of `config` stored as `stored`: a float dtype, or q8_0 (a random f32
/// model quantized, `dory quantize`'s way).
pub fn random_model_as(config: &Config, seed: u64, stored: Stored) -> (tempfile::TempDir, Model) {
    let Stored::Float(dtype) = stored else {
        let (_src, model) = random_model(config, seed, DType::F32);
        let dir = tempfile::tempdir().expect("tempdir");
        dory::quant::quantize(&model, dir.path(), &dory::quant::Quantization::q8_0()).expect("quantize");
        let model = Model::load(dir.path()).expect("load");
        return (dir, model);
    };
    random_model(config, seed, dtype)
}

/// The CPU reference and the GPU backend on one model.
pub fn backends(dev: &Arc<GpuDevice>, model: &Model) -> (dory::cpu::Cpu, Wgpu) {
    let cpu = dory::cpu::Cpu::new(&model.config, &model.weights);
    let gm = GpuModel::new(dev.clone(), &model.config, &model.weights).expect("upload");
    (cpu, Wgpu::new(&gm).expect("backend"))
}

/// Putting values into, and reading them out of, either backend's buffers.
pub trait Io: Backend {
    fn put(&mut self, data: &[f32]) -> Self::Buf;
    fn get(&mut self, buf: &Self::Buf, len: usize) -> Vec<f32> {
        self.read(buf, len).expect("read")
    }
    /// A buffer of `len` NaNs: an op that leaves any of it unwritten shows.
    fn poisoned(&mut self, len: usize) -> Self::Buf {
        self.put(&vec![f32::NAN; len])
    }
}

impl Io for dory::cpu::Cpu {
    fn put(&mut self, data: &[f32]) -> Vec<f32> {
        data.to_vec()
    }
}

impl Io for Wgpu {
    fn put(&mut self, data: &[f32]) -> dory_wgpu::GpuBuf {
        self.upload(data).expect("upload")
    }
}

/// ‖gpu − cpu‖ / ‖cpu‖, failing above `bound` with what was compared.
pub fn check(what: &str, gpu: &[f32], cpu: &[f32], bound: f64) {
    let want: Vec<f64> = cpu.iter().map(|&x| x as f64).collect();
    assert!(cpu.iter().all(|x| x.is_finite()), "{what}: the CPU reference is not finite");
    let err = dory::testing::rel_err(gpu, &want);
    assert!(err <= bound, "{what}: relative error {err:.3e} > {bound:.0e}");
}
