//! The device: an adapter picked by the caller's rule, its queue, and the kernels,
//! shared (through an `Arc`) by every model and session that runs on it.

use std::sync::Arc;

use crate::error::gpu_err;
use crate::kernels::{Kernels, Options, Reduce};

/// Which adapters may run the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// A hardware GPU only (`--backend auto`): a software rasterizer such as lavapipe is
    /// never picked on its own.
    Hardware,
    /// The best adapter there is, hardware first, then software (`--backend wgpu`).
    Any,
}

/// What the device offers the kernels.
#[derive(Clone, Debug)]
pub struct Caps {
    /// The reductions the kernels were built with.
    pub reduce: Reduce,
    /// Subgroup sizes the adapter reports (min, max), when it has subgroups.
    pub subgroup: Option<(u32, u32)>,
    pub max_binding: u64,
    pub max_buffer: u64,
    /// Timestamps inside compute passes were asked for and granted (`profile`).
    pub timestamps: bool,
    /// Timestamps at the start and end of a pass (`Recorder::timed`).
    pub pass_timestamps: bool,
    /// f16 cooperative matrices (tensor cores) for the GEMM: the adapter offers 16 × 16 × 16
    /// f16 products accumulated in f32, and subgroups of exactly 32.
    pub coop: bool,
    pub workgroup_bytes: u32,
    /// Storage buffers may be declared `@coherent` (wgpu's MEMORY_DECORATION_COHERENT): no
    /// kernel of the engine is, the benchmarks' probes of a dispatch whose workgroups hand
    /// each other data are (dory-wgpu-bench's `mlp_fused`).
    pub coherent: bool,
}

pub struct GpuDevice {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    pub caps: Caps,
    pub kernels: Kernels,
}

fn is_hardware(info: &wgpu::AdapterInfo) -> bool {
    matches!(
        info.device_type,
        wgpu::DeviceType::DiscreteGpu | wgpu::DeviceType::IntegratedGpu | wgpu::DeviceType::VirtualGpu
    )
}

fn rank(info: &wgpu::AdapterInfo) -> u8 {
    match info.device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    }
}

/// The adapters wgpu sees on Vulkan, Metal and DX12 (not GL: its compute is too limited).
pub fn adapters() -> Vec<wgpu::Adapter> {
    // Without wgpu's checks of indirect dispatches' counts, which add a dispatch to each:
    // the only counts are exit.rs's, each a recorded dispatch's own or zero.
    let flags = (wgpu::InstanceFlags::from_build_config() - wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL).with_env();
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::VULKAN | wgpu::Backends::METAL | wgpu::Backends::DX12,
        flags,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let mut list = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
    list.retain(|a| a.get_info().backend != wgpu::Backend::Gl);
    list.sort_by_key(|a| rank(&a.get_info()));
    list
}

/// The adapter `pick` chooses, if any.
pub fn choose(pick: Pick) -> Option<wgpu::Adapter> {
    adapters().into_iter().find(|a| pick == Pick::Any || is_hardware(&a.get_info()))
}

impl GpuDevice {
    /// Opens the adapter `pick` chooses, with subgroup reductions where it has them.
    pub fn open(pick: Pick) -> dory::Result<Arc<GpuDevice>> {
        GpuDevice::open_with(pick, None)
    }

    /// `open`, forcing the reductions when `reduce` is given (tests build both).
    pub fn open_with(pick: Pick, reduce: Option<Reduce>) -> dory::Result<Arc<GpuDevice>> {
        GpuDevice::from_adapter(chosen(pick)?, reduce).map(Arc::new)
    }

    /// `open` for a model of `config`: a q8_0 model's kernels built at once, not rebuilt
    /// by `GpuModel::new` (which doubled a q8_0 model's start).
    pub fn open_for(pick: Pick, config: &dory::Config) -> dory::Result<Arc<GpuDevice>> {
        GpuDevice::from_adapter_for(chosen(pick)?, config).map(Arc::new)
    }

    /// `from_adapter` for a model of `config` (`open_for`).
    pub fn from_adapter_for(adapter: wgpu::Adapter, config: &dory::Config) -> dory::Result<GpuDevice> {
        GpuDevice::from_adapter_with(adapter, None, false, config.quantization.is_some())
    }

    /// `open` with timestamps at the start and end of passes, which benchmarks time
    /// kernels by (`Recorder::timed`).
    pub fn open_timed(pick: Pick) -> dory::Result<Arc<GpuDevice>> {
        GpuDevice::from_adapter_with(chosen(pick)?, None, true, false).map(Arc::new)
    }

    pub fn from_adapter(adapter: wgpu::Adapter, reduce: Option<Reduce>) -> dory::Result<GpuDevice> {
        GpuDevice::from_adapter_with(adapter, reduce, false, false)
    }

    fn from_adapter_with(
        adapter: wgpu::Adapter,
        reduce: Option<Reduce>,
        timed: bool,
        q8: bool,
    ) -> dory::Result<GpuDevice> {
        usable(&adapter)?;
        let (info, features, limits) = (adapter.get_info(), adapter.features(), adapter.limits());
        let subgroups = features.contains(wgpu::Features::SUBGROUP);
        let mut required = wgpu::Features::IMMEDIATES;
        if subgroups {
            required |= wgpu::Features::SUBGROUP;
        }
        let coop = offers_coop(&adapter) && reduce != Some(Reduce::Shared);
        if coop {
            required |= COOP_FEATURES;
        }
        let coherent = features.contains(wgpu::Features::MEMORY_DECORATION_COHERENT);
        required |= features & wgpu::Features::MEMORY_DECORATION_COHERENT;
        let pass_timestamps = timed && features.contains(wgpu::Features::TIMESTAMP_QUERY);
        if pass_timestamps {
            required |= wgpu::Features::TIMESTAMP_QUERY;
        }
        let stamps = wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES;
        let timestamps = crate::profile::enabled() && features.contains(stamps);
        if timestamps {
            required |= stamps;
        }
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("dory"),
            required_features: required,
            required_limits: limits.clone(),
            // Cooperative matrices are an experimental feature in wgpu 30: asked for only
            // where the adapter offers them (the shader test translates that kernel).
            experimental_features: if coop {
                // SAFETY: wgpu's experimental features may have bugs; the GEMM that uses
                // them is tested against the CPU on the adapters that offer them.
                unsafe { wgpu::ExperimentalFeatures::enabled() }
            } else {
                wgpu::ExperimentalFeatures::disabled()
            },
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .map_err(|e| gpu_err(format!("cannot open {}: {e}", info.name)))?;
        // The probe where its answer is used: to choose the reductions, or for the size.
        let asked = std::env::var("DORY_WGPU_SUBGROUP").map_or(true, |v| v != "0");
        let probe = subgroups && (reduce.is_none() || asked);
        let runs = if probe { subgroup_runs(&device, &queue)? } else { None };
        let reduce = match reduce {
            Some(Reduce::Subgroup) if !subgroups => {
                return Err(gpu_err(format!("adapter {} has no subgroup operations", info.name)))
            }
            Some(r) => r,
            None if runs.is_some() => Reduce::Subgroup,
            None => Reduce::Shared,
        };
        let coop = coop && reduce == Reduce::Subgroup;
        let workgroup_bytes = limits.max_compute_workgroup_storage_size;
        let subgroup = if asked { fixed_subgroup(&info, runs) } else { 0 };
        let checks = keeps_checks(&info);
        let mut options = Options { q8, subgroup, checks, ..Options::new(reduce, coop, workgroup_bytes) };
        if info.device_type == wgpu::DeviceType::Cpu {
            options = options.on_cpu();
        }
        let kernels = Kernels::new(&device, options)?;
        let caps = Caps {
            reduce,
            subgroup: subgroups.then_some((info.subgroup_min_size, info.subgroup_max_size)),
            max_binding: limits.max_storage_buffer_binding_size & !15,
            max_buffer: limits.max_buffer_size,
            timestamps,
            pass_timestamps,
            coop,
            workgroup_bytes,
            coherent,
        };
        Ok(GpuDevice { device, queue, info, caps, kernels })
    }

    /// The same device with its kernels built under other options (benchmarks compare
    /// kernel shapes this way).
    pub fn with_options(&self, options: Options) -> dory::Result<GpuDevice> {
        let kernels = Kernels::new(&self.device, options)?;
        let caps = Caps { coop: options.coop, ..self.caps.clone() };
        Ok(GpuDevice { device: self.device.clone(), queue: self.queue.clone(), info: self.info.clone(), caps, kernels })
    }

    /// The adapter in words: name, API, kind and reductions.
    pub fn describe(&self) -> String {
        let reduce = match (self.caps.reduce, self.caps.subgroup) {
            (Reduce::Subgroup, Some((lo, hi))) if lo == hi => format!("subgroups of {lo}"),
            (Reduce::Subgroup, Some((lo, hi))) => format!("subgroups of {lo}–{hi}"),
            _ => "workgroup-memory reductions".to_string(),
        };
        let coop = if self.caps.coop { ", f16 tensor cores" } else { "" };
        let tiles = if self.kernels.options.tiles { ", f16 weights in tiles" } else { "" };
        format!("{} ({:?}, {:?}, {reduce}{coop}{tiles})", self.info.name, self.info.backend, self.info.device_type)
    }
}

/// An error naming what the kernels need and `adapter` lacks, if anything.
fn usable(adapter: &wgpu::Adapter) -> dory::Result<()> {
    let name = adapter.get_info().name;
    if !adapter.features().contains(wgpu::Features::IMMEDIATES) {
        return Err(gpu_err(format!(
            "adapter {name} lacks immediate data (push constants), which the kernels take their parameters from"
        )));
    }
    if !adapter.get_downlevel_capabilities().flags.contains(wgpu::DownlevelFlags::SHADER_F16_IN_F32) {
        return Err(gpu_err(format!("adapter {name} cannot unpack f16 in shaders (unpack2x16float)")));
    }
    let immediates = adapter.limits().max_immediate_size;
    if immediates < 64 {
        return Err(gpu_err(format!(
            "adapter {name} allows {immediates} bytes of immediate data; the kernels need 64"
        )));
    }
    Ok(())
}

/// The adapter `pick` chooses, or an error saying there is none.
fn chosen(pick: Pick) -> dory::Result<wgpu::Adapter> {
    choose(pick).ok_or_else(|| {
        gpu_err(match pick {
            Pick::Hardware => "no hardware GPU adapter (Vulkan, Metal or DX12) was found",
            Pick::Any => "no GPU adapter (Vulkan, Metal or DX12; software ones included) was found",
        })
    })
}

/// What the tensor-core kernels need beyond subgroups: f16, cooperative matrices, and
/// barriers of a subgroup alone (attend_coop.wgsl's subgroups each keep their own pace).
const COOP_FEATURES: wgpu::Features = wgpu::Features::SHADER_F16
    .union(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
    .union(wgpu::Features::SUBGROUP_BARRIER);

/// Whether the GEMM can run on `adapter`'s cooperative matrices: f16 × f16 → f32 at
/// 16 × 16 × 16 and subgroups of exactly 32 (the kernel's layout). DORY_WGPU_COOP=0 keeps
/// the plain GEMM (for comparing the two).
fn offers_coop(adapter: &wgpu::Adapter) -> bool {
    use wgpu::CooperativeScalarType as T;
    let info = adapter.get_info();
    adapter.features().contains(COOP_FEATURES | wgpu::Features::SUBGROUP)
        && (info.subgroup_min_size, info.subgroup_max_size) == (32, 32)
        && std::env::var("DORY_WGPU_COOP").map_or(true, |v| v != "0")
        && adapter
            .cooperative_matrix_properties()
            .iter()
            .any(|p| (p.m_size, p.n_size, p.k_size) == (16, 16, 16) && p.ab_type == T::F16 && p.cr_type == T::F32)
}

/// Whether the shaders keep wgpu's runtime checks (`Options::checks`): as DORY_WGPU_CHECKS
/// says, else only off Vulkan. Without naga's checks a buffer access is still kept in its
/// buffer there by the robust buffer access wgpu enables; on Metal and DX12 naga's checks
/// are the only ones, and no GPU of theirs has run these kernels.
fn keeps_checks(info: &wgpu::AdapterInfo) -> bool {
    match std::env::var("DORY_WGPU_CHECKS").as_deref() {
        Ok("0") => false,
        Ok("1") => true,
        _ => info.backend != wgpu::Backend::Vulkan,
    }
}

/// The subgroup size every pipeline may take as a constant (`Options::subgroup`): the
/// probe's (`runs`), where the adapter reports no other; else 0.
fn fixed_subgroup(info: &wgpu::AdapterInfo, runs: Option<u32>) -> u32 {
    let fixed = (info.subgroup_min_size == info.subgroup_max_size).then_some(info.subgroup_min_size);
    runs.filter(|&n| fixed == Some(n)).unwrap_or(0)
}

/// Runs `probe.wgsl`: the subgroups' size when every subgroup is a run of consecutive local
/// indices of one power-of-two length from 4 to 64, as `reduce_subgroup.wgsl` assumes.
fn subgroup_runs(device: &wgpu::Device, queue: &wgpu::Queue) -> dory::Result<Option<u32>> {
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("probe"),
        source: wgpu::ShaderSource::Wgsl(include_str!("probe.wgsl").into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("probe"),
        layout: None,
        module: &module,
        entry_point: Some("probe"),
        compilation_options: Default::default(),
        cache: None,
    });
    let bytes = 2 * 256 * 4;
    let out = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("probe"),
        size: bytes,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("probe staging"),
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry { binding: 0, resource: out.as_entire_binding() }],
    });
    let mut enc = device.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(1, 1, 1);
    }
    enc.copy_buffer_to_buffer(&out, 0, &staging, 0, bytes);
    queue.submit([enc.finish()]);
    if let Some(e) = pollster::block_on(scope.pop()) {
        return Err(gpu_err(format!("the subgroup probe does not build: {e}")));
    }
    let words = crate::record::read_mapped(device, &staging, bytes)?;
    // One size for every subgroup, too: a reduction within a subgroup returns before the
    // workgroup's barriers in all of them or in none.
    let ok = (0..256).all(|lid| {
        let (size, first) = (words[2 * lid], words[2 * lid + 1]);
        size == words[0] && size.is_power_of_two() && (4..=64).contains(&size) && first == (lid as u32 / size) * size
    });
    Ok(ok.then_some(words[0]))
}
