//! `dory-wgpu-regs [--ir DIR] [--q8] [NAME…]`: what the Vulkan driver compiled each of the
//! backend's kernels to — registers, spills, shared memory and whatever else it reports
//! through VK_KHR_pipeline_executable_properties (NVIDIA's "Register Count" among them, as
//! llama.cpp's Vulkan backend reads it). On NVIDIA the kernels' speed is bound by how many
//! workgroups an SM holds, which their registers per invocation and workgroup memory decide;
//! this shows both for every kernel without a profiler.
//!
//! The kernels are those `Kernels::plan` lists under the options the engine chooses: the tool
//! opens the engine's own device (`GpuDevice::open`, as `--backend wgpu` does, its subgroup
//! probe and DORY_WGPU_* included) and reads its options, each NAME keeping the kernels whose
//! name contains it; `--q8` adds q8_0's kernels. Each
//! is written to SPIR-V as wgpu 30 writes it for the engine on Vulkan (wgpu-hal's naga
//! options, without runtime checks unless DORY_WGPU_CHECKS=1, workgroup memory not zeroed,
//! bindings packed as wgpu-hal packs them), built on a device with the features wgpu enables
//! (robust buffer access among them), and its statistics printed on one line: the kernel,
//! its constants, the workgroup naga gives it, then the driver's `name=value`s, tab-separated
//! (`grep`, `cut -f`). `--ir DIR` also writes each executable's textual internal
//! representations (SASS or PTX, where the driver exposes them) to
//! DIR/<kernel>-<executable>-<representation>.txt. The statistics come from a Vulkan device of
//! the tool's own on the same adapter (wgpu does not ask the driver for them).

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use ash::{ext, khr, vk};
use dory_wgpu::kernels::{module_text, Kernels, Options, Spec};
use dory_wgpu::{GpuDevice, Pick};
use naga::back::spv;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        // A reader that stopped early (`| head`) is no failure.
        Err(e) if e.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("dory-wgpu-regs: {e:#}");
            ExitCode::from(2)
        }
    }
}

struct Args {
    names: Vec<String>,
    ir: Option<PathBuf>,
    q8: bool,
}

fn args() -> Result<Args> {
    let mut a = Args { names: vec![], ir: None, q8: false };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--ir" => a.ir = Some(it.next().context("--ir needs a folder")?.into()),
            "--q8" => a.q8 = true,
            "-h" | "--help" => {
                let _ = writeln!(
                    std::io::stdout(),
                    "usage: dory-wgpu-regs [--ir DIR] [--q8] [NAME…] (see the source's top comment)"
                );
                std::process::exit(0);
            }
            s if s.starts_with('-') => bail!("unknown option {s}"),
            _ => a.names.push(arg),
        }
    }
    Ok(a)
}

/// The instance and device, destroyed when dropped (the device first: declared after).
struct Instance(ash::Instance);
impl Drop for Instance {
    fn drop(&mut self) {
        unsafe { self.0.destroy_instance(None) };
    }
}
struct Device(ash::Device);
impl Drop for Device {
    fn drop(&mut self) {
        unsafe { self.0.destroy_device(None) };
    }
}

/// The features queried and then enabled: all the device supports, as one chain.
#[derive(Default)]
struct Features {
    core: vk::PhysicalDeviceFeatures,
    v11: vk::PhysicalDeviceVulkan11Features<'static>,
    v12: vk::PhysicalDeviceVulkan12Features<'static>,
    v13: vk::PhysicalDeviceVulkan13Features<'static>,
    pep: vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR<'static>,
    coop: Option<vk::PhysicalDeviceCooperativeMatrixFeaturesKHR<'static>>,
    robust2: Option<vk::PhysicalDeviceRobustness2FeaturesEXT<'static>>,
}

impl Features {
    /// The chain over these structs, rebuilt from scratch (push_next follows old links).
    fn chain(&mut self) -> vk::PhysicalDeviceFeatures2<'_> {
        self.v11.p_next = std::ptr::null_mut();
        self.v12.p_next = std::ptr::null_mut();
        self.v13.p_next = std::ptr::null_mut();
        self.pep.p_next = std::ptr::null_mut();
        let mut f = vk::PhysicalDeviceFeatures2::default()
            .features(self.core)
            .push_next(&mut self.v11)
            .push_next(&mut self.v12)
            .push_next(&mut self.v13)
            .push_next(&mut self.pep);
        if let Some(c) = &mut self.coop {
            c.p_next = std::ptr::null_mut();
            f = f.push_next(c);
        }
        if let Some(r) = &mut self.robust2 {
            r.p_next = std::ptr::null_mut();
            f = f.push_next(r);
        }
        f
    }
}

fn c_str(s: Result<&CStr, std::ffi::FromBytesUntilNulError>) -> String {
    s.map_or_else(|_| "?".into(), |s| s.to_string_lossy().into_owned())
}

fn run() -> Result<bool> {
    let args = args()?;
    let dev = GpuDevice::open(Pick::Any).map_err(|e| anyhow!("{e}"))?;
    let options = Options { q8: args.q8, ..dev.kernels.options };
    // SAFETY: loading the Vulkan loader runs its initialisers; it is the system's.
    let entry =
        unsafe { ash::Entry::load() }.map_err(|e| anyhow!("cannot load the Vulkan loader (libvulkan.so.1): {e}"))?;
    let app = vk::ApplicationInfo::default().application_name(c"dory-wgpu-regs").api_version(vk::API_VERSION_1_3);
    let instance = unsafe { entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None) }
        .map_err(|e| anyhow!("vkCreateInstance: {e}"))?;
    let instance = Instance(instance);
    let vki = &instance.0;

    let picked = pick(vki, &dev.info.name)?;
    let mut offer = offer(vki, &picked)?;
    let mut out = std::io::stdout().lock();
    header(&mut out, vki, &picked, &dev, options)?;
    let device = open(vki, &picked, &mut offer)?;
    let pep = khr::pipeline_executable_properties::Device::new(vki, &device.0);

    // wgpu's SUBGROUP feature, which the engine asks for wherever the adapter has it.
    let subgroups = dev.caps.subgroup.is_some();
    let spv_options = spv_options(&offer.feats, options, subgroups, offer.has_robust2);
    let builder = Builder {
        device: &device.0,
        pep: &pep,
        ir: args.ir.clone(),
        push_bytes: picked.props.limits.max_push_constants_size.min(256),
        // wgpu-hal asks for it wherever wgpu's SUBGROUP feature is on (the engine asks for that).
        varying: subgroups && offer.feats.v13.subgroup_size_control != 0,
    };
    if let Some(dir) = &args.ir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    kernels(&mut out, &builder, &args.names, options, &spv_options)
}

/// The physical device picked, with what the later steps read of it.
struct Picked {
    phd: vk::PhysicalDevice,
    props: vk::PhysicalDeviceProperties,
    name: String,
    /// Every device's name, for the errors that say which there are.
    all: String,
}

/// The Vulkan device of the engine's adapter (`want`, its name); it must offer Vulkan 1.3.
fn pick(vki: &ash::Instance, want: &str) -> Result<Picked> {
    let phds = unsafe { vki.enumerate_physical_devices() }.map_err(|e| anyhow!("vkEnumeratePhysicalDevices: {e}"))?;
    let named: Vec<_> = phds
        .iter()
        .map(|&p| {
            let props = unsafe { vki.get_physical_device_properties(p) };
            (p, props, c_str(props.device_name_as_c_str()))
        })
        .collect();
    let all = named.iter().map(|(_, _, n)| n.as_str()).collect::<Vec<_>>().join(", ");
    let &(phd, props, ref name) = named
        .iter()
        .find(|(_, _, n)| n == want)
        .ok_or_else(|| anyhow!("no Vulkan device is the engine's adapter {want:?} (devices: {all})"))?;
    if props.api_version < vk::API_VERSION_1_3 {
        bail!("{name} offers Vulkan {}; this tool needs 1.3", version(props.api_version));
    }
    Ok(Picked { phd, props, name: name.clone(), all })
}

/// What the device offers that this tool and the engine read.
struct Offer {
    feats: Features,
    has_coop: bool,
    has_robust2: bool,
}

/// The device's extensions and features, queried.
fn offer(vki: &ash::Instance, picked: &Picked) -> Result<Offer> {
    let Picked { phd, ref name, .. } = *picked;
    let exts = unsafe { vki.enumerate_device_extension_properties(phd) }
        .map_err(|e| anyhow!("vkEnumerateDeviceExtensionProperties: {e}"))?;
    let has = |n: &CStr| exts.iter().any(|e| e.extension_name_as_c_str() == Ok(n));
    if !has(khr::pipeline_executable_properties::NAME) {
        bail!(
            "{name} ({}) does not offer VK_KHR_pipeline_executable_properties, through which this tool reads \
             what the driver compiled (devices: {})",
            driver_text(vki, phd),
            picked.all
        );
    }
    let (has_coop, has_robust2) = (has(khr::cooperative_matrix::NAME), has(ext::robustness2::NAME));

    let mut feats = Features {
        coop: has_coop.then(Default::default),
        robust2: has_robust2.then(Default::default),
        ..Default::default()
    };
    let mut chain = feats.chain();
    unsafe { vki.get_physical_device_features2(phd, &mut chain) };
    feats.core = chain.features;
    if feats.pep.pipeline_executable_info == vk::FALSE {
        bail!("{name} lists VK_KHR_pipeline_executable_properties but not its feature pipelineExecutableInfo");
    }
    Ok(Offer { feats, has_coop, has_robust2 })
}

/// The two header lines: the device, then the options.
fn header(out: &mut impl Write, vki: &ash::Instance, picked: &Picked, dev: &GpuDevice, options: Options) -> Result<()> {
    let Picked { phd, props, ref name, .. } = *picked;
    writeln!(
        out,
        "# device: {name} ({:?}), {}, Vulkan {}, subgroups {:?}, workgroup memory {} B, push constants {} B",
        props.device_type,
        driver_text(vki, phd),
        version(props.api_version),
        dev.caps.subgroup,
        props.limits.max_compute_shared_memory_size,
        props.limits.max_push_constants_size
    )?;
    writeln!(
        out,
        "# options: reduce={:?} coop={} subgroup={} checks={} q8={} coop_tile={:?} gemv1={:?} attend_coop={:?}",
        options.reduce,
        options.coop,
        options.subgroup,
        options.checks,
        options.q8,
        options.coop_tile,
        options.gemv1,
        options.attend_coop
    )?;
    Ok(())
}

/// The device: every supported feature of the chain enabled, as queried, and the
/// extensions this tool reads through and wgpu enables.
fn open(vki: &ash::Instance, picked: &Picked, offer: &mut Offer) -> Result<Device> {
    let family = unsafe { vki.get_physical_device_queue_family_properties(picked.phd) }
        .iter()
        .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
        .ok_or_else(|| anyhow!("{} has no compute queue", picked.name))? as u32;
    let mut names = vec![khr::pipeline_executable_properties::NAME.as_ptr()];
    if offer.has_coop {
        names.push(khr::cooperative_matrix::NAME.as_ptr());
    }
    if offer.has_robust2 {
        names.push(ext::robustness2::NAME.as_ptr());
    }
    let queue = [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&[1.0])];
    let mut chain = offer.feats.chain();
    let info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queue)
        .enabled_extension_names(&names)
        .push_next(&mut chain);
    let device = unsafe { vki.create_device(picked.phd, &info, None) }.map_err(|e| anyhow!("vkCreateDevice: {e}"))?;
    Ok(Device(device))
}

/// Each of the plan's kernels that NAMEs keep, built and its line written (or its error);
/// whether all were built.
fn kernels(
    out: &mut impl Write,
    builder: &Builder,
    names: &[String],
    options: Options,
    spv_options: &spv::Options,
) -> Result<bool> {
    let plan = Kernels::plan(options);
    let mut parsed: HashMap<&str, Result<(naga::Module, naga::valid::ModuleInfo), String>> = HashMap::new();
    let mut ok = true;
    let mut shown = 0;
    for spec in plan.specs.iter().filter(|s| names.is_empty() || names.iter().any(|n| s.name.contains(n))) {
        shown += 1;
        let m = spec.module;
        let module = parsed.entry(m.name).or_insert_with(|| parse(&module_text(m, options.reduce)));
        let line = match module {
            Ok((module, info)) => builder.kernel(spec, module, info, spv_options),
            Err(e) => Err(e.clone()),
        };
        match line {
            Ok(line) => writeln!(out, "{line}")?,
            Err(e) => {
                ok = false;
                writeln!(out, "{}\terror={e}", label(spec))?;
            }
        }
    }
    if shown == 0 {
        bail!("no kernel's name contains any of {names:?}");
    }
    Ok(ok)
}

/// Vulkan's packed version as text.
fn version(v: u32) -> String {
    format!("{}.{}.{}", vk::api_version_major(v), vk::api_version_minor(v), vk::api_version_patch(v))
}

/// The driver's name, its version text (NVIDIA's "570.124.06") and its raw version.
fn driver_text(vki: &ash::Instance, phd: vk::PhysicalDevice) -> String {
    let mut drv = vk::PhysicalDeviceDriverProperties::default();
    let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut drv);
    unsafe { vki.get_physical_device_properties2(phd, &mut props2) };
    let raw = props2.properties.driver_version;
    format!(
        "driver {} {} (driverVersion {raw:#x})",
        c_str(drv.driver_name_as_c_str()),
        c_str(drv.driver_info_as_c_str())
    )
}

/// naga's SPIR-V options as wgpu-hal 30 makes them (adapter.rs's `naga_options`, then
/// device.rs's `compile_stage` for a module built without runtime checks and a pipeline
/// that does not zero its workgroup memory), for the features the engine asks for: its
/// capabilities matter where naga picks an instruction or a polyfill by them.
fn spv_options(feats: &Features, options: Options, subgroups: bool, robust2: bool) -> spv::Options<'static> {
    let (index, buffer) = if options.checks {
        use naga::proc::BoundsCheckPolicy as P;
        (P::Restrict, if robust2 { P::Unchecked } else { P::Restrict })
    } else {
        (naga::proc::BoundsCheckPolicy::Unchecked, naga::proc::BoundsCheckPolicy::Unchecked)
    };
    spv::Options {
        lang_version: (1, 6),
        // DEBUG only under wgpu's debug flag (not in a release build).
        flags: spv::WriterFlags::LABEL_VARYINGS | spv::WriterFlags::FORCE_POINT_SIZE,
        capabilities: Some(capabilities(feats, options, subgroups).into_iter().collect()),
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index,
            buffer,
            image_load: index,
            binding_array: naga::proc::BoundsCheckPolicy::Unchecked,
        },
        zero_initialize_workgroup_memory: spv::ZeroInitializeWorkgroupMemoryMode::None,
        force_loop_bounding: options.checks,
        ray_query_initialization_tracking: options.checks,
        use_storage_input_output_16: options.coop && feats.v11.storage_input_output16 != 0,
        fake_missing_bindings: false,
        task_dispatch_limits: None,
        mesh_shader_primitive_indices_clamp: options.checks,
        emit_int_div_checks: options.checks,
        ..Default::default()
    }
}

/// The SPIR-V capabilities of the features wgpu enables for the engine (`spv_options`).
fn capabilities(feats: &Features, options: Options, subgroups: bool) -> Vec<spv::Capability> {
    use spv::Capability as C;
    let mut caps = vec![
        C::Shader,
        C::Matrix,
        C::Sampled1D,
        C::Image1D,
        C::ImageQuery,
        C::DerivativeControl,
        C::StorageImageExtendedFormats,
    ];
    if subgroups {
        caps.extend([
            C::GroupNonUniform,
            C::GroupNonUniformVote,
            C::GroupNonUniformArithmetic,
            C::GroupNonUniformBallot,
            C::GroupNonUniformShuffle,
            C::GroupNonUniformShuffleRelative,
            C::GroupNonUniformQuad,
        ]);
    }
    // SHADER_F16 and cooperative matrices are asked for only with the tensor cores.
    if options.coop {
        caps.extend([C::Float16, C::CooperativeMatrixKHR, C::VulkanMemoryModel]);
    }
    if feats.v13.shader_integer_dot_product != 0 {
        caps.extend([
            C::DotProductInputAllKHR,
            C::DotProductInput4x8BitKHR,
            C::DotProductInput4x8BitPackedKHR,
            C::DotProductKHR,
        ]);
    }
    if feats.v12.shader_int8 != 0 {
        caps.push(C::Int8);
    }
    caps
}

/// A module's text parsed and validated, as wgpu-core does.
fn parse(text: &str) -> Result<(naga::Module, naga::valid::ModuleInfo), String> {
    use naga::valid::{Capabilities, ShaderStages, SubgroupOperationSet, ValidationFlags, Validator};
    let module = naga::front::wgsl::parse_str(text).map_err(|e| format!("naga: {}", e.emit_to_string(text)))?;
    let info = Validator::new(ValidationFlags::all(), Capabilities::all())
        .subgroup_stages(ShaderStages::COMPUTE)
        .subgroup_operations(SubgroupOperationSet::all())
        .validate(&module)
        .map_err(|e| format!("naga: {}", e.emit_to_string(text)))?;
    Ok((module, info))
}

/// The kernel's name and its constants (several kernels share a name: one per dtype, say),
/// less the SUBGROUP every kernel takes.
fn label(spec: &Spec) -> String {
    let c: Vec<String> =
        spec.constants.iter().filter(|(k, _)| *k != "SUBGROUP").map(|(k, v)| format!("{k}={v}")).collect();
    if c.is_empty() {
        spec.name.to_string()
    } else {
        format!("{}[{}]", spec.name, c.join(","))
    }
}

/// `label` as a file name's part.
fn file_part(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect()
}

struct Builder<'a> {
    device: &'a ash::Device,
    pep: &'a khr::pipeline_executable_properties::Device,
    ir: Option<PathBuf>,
    push_bytes: u32,
    varying: bool,
}

impl Builder<'_> {
    /// The kernel's line: its label, its workgroup, then each executable's statistics.
    fn kernel(
        &self,
        spec: &Spec,
        module: &naga::Module,
        info: &naga::valid::ModuleInfo,
        base: &spv::Options,
    ) -> Result<String, String> {
        let constants: naga::back::PipelineConstants =
            spec.constants.iter().map(|&(k, v)| (k.to_string(), v)).collect();
        let stage = naga::ShaderStage::Compute;
        let (module, info) =
            naga::back::pipeline_constants::process_overrides(module, info, Some((stage, spec.entry)), &constants)
                .map_err(|e| format!("naga: constants: {e}"))?;
        let ep = module
            .entry_points
            .iter()
            .position(|e| e.stage == stage && e.name == spec.entry)
            .ok_or_else(|| format!("no entry point {}", spec.entry))?;
        let (bindings, workgroup_bytes) = bindings(&module, info.get_entry_point(ep))?;
        let binding_map: spv::BindingMap = bindings
            .iter()
            .enumerate()
            .map(|(i, (rb, _))| {
                (*rb, spv::BindingInfo { descriptor_set: 0, binding: i as u32, binding_array_size: None })
            })
            .collect();
        let options = spv::Options { binding_map, ..base.clone() };
        let pipeline = spv::PipelineOptions { shader_stage: stage, entry_point: spec.entry.to_string() };
        let words =
            spv::write_vec(&module, &info, &options, Some(&pipeline)).map_err(|e| format!("naga: SPIR-V: {e}"))?;
        let [x, y, z] = module.entry_points[ep].workgroup_size;
        let mut line = format!("{}\tworkgroup={x}x{y}x{z}\tworkgroup_bytes={workgroup_bytes}", label(spec));
        let types: Vec<vk::DescriptorType> = bindings.iter().map(|(_, t)| *t).collect();
        for (i, text) in self.statistics(spec, &words, &types)?.into_iter().enumerate() {
            line += &if i == 0 { text } else { format!("\t#{i}{text}") };
        }
        Ok(line)
    }

    /// Builds the pipeline and returns each executable's fields (`\tname=value`…), after
    /// writing its representations under `--ir`; destroys what it made, failing or not.
    fn statistics(&self, spec: &Spec, words: &[u32], types: &[vk::DescriptorType]) -> Result<Vec<String>, String> {
        let d = self.device;
        // Each guard lives to the end of this function, past the pipeline's last use, and
        // they drop in the reverse order of their making (the pipeline first).
        let set = self.set_layout(types)?;
        let _set = Defer(|| unsafe { d.destroy_descriptor_set_layout(set, None) });
        let push = [vk::PushConstantRange::default().stage_flags(vk::ShaderStageFlags::COMPUTE).size(self.push_bytes)];
        let sets = [set];
        let layout_info = vk::PipelineLayoutCreateInfo::default().set_layouts(&sets).push_constant_ranges(&push);
        let layout =
            unsafe { d.create_pipeline_layout(&layout_info, None) }.map_err(vk_err("vkCreatePipelineLayout"))?;
        let _layout = Defer(|| unsafe { d.destroy_pipeline_layout(layout, None) });
        let shader = unsafe { d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(words), None) }
            .map_err(vk_err("vkCreateShaderModule"))?;
        let _shader = Defer(|| unsafe { d.destroy_shader_module(shader, None) });
        let pipeline = self.pipeline(spec, shader, layout)?;
        let _pipeline = Defer(|| unsafe { d.destroy_pipeline(pipeline, None) });
        self.executables(spec, pipeline)
    }

    /// The descriptor set layout of one buffer binding per type, numbered in order.
    fn set_layout(&self, types: &[vk::DescriptorType]) -> Result<vk::DescriptorSetLayout, String> {
        let set_bindings: Vec<_> = types
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(i as u32)
                    .descriptor_type(t)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        let set_info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&set_bindings);
        unsafe { self.device.create_descriptor_set_layout(&set_info, None) }
            .map_err(vk_err("vkCreateDescriptorSetLayout"))
    }

    /// The compute pipeline, made to capture its statistics (and, under `--ir`, its internal
    /// representations); the caller destroys it.
    fn pipeline(
        &self,
        spec: &Spec,
        shader: vk::ShaderModule,
        layout: vk::PipelineLayout,
    ) -> Result<vk::Pipeline, String> {
        let d = self.device;
        let entry = CString::new(spec.entry).map_err(|e| e.to_string())?;
        let mut stage_flags = vk::PipelineShaderStageCreateFlags::empty();
        if self.varying {
            stage_flags |= vk::PipelineShaderStageCreateFlags::ALLOW_VARYING_SUBGROUP_SIZE;
        }
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .flags(stage_flags)
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(shader)
            .name(&entry);
        let mut flags = vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR;
        if self.ir.is_some() {
            flags |= vk::PipelineCreateFlags::CAPTURE_INTERNAL_REPRESENTATIONS_KHR;
        }
        let info = [vk::ComputePipelineCreateInfo::default().flags(flags).stage(stage).layout(layout)];
        match unsafe { d.create_compute_pipelines(vk::PipelineCache::null(), &info, None) } {
            Ok(p) => Ok(p[0]),
            Err((made, e)) => {
                for p in made.into_iter().filter(|p| *p != vk::Pipeline::null()) {
                    unsafe { d.destroy_pipeline(p, None) };
                }
                Err(format!("vkCreateComputePipelines: {e}"))
            }
        }
    }

    /// Each of the pipeline's executables' fields (`\tname=value`…), after writing its
    /// representations under `--ir`.
    fn executables(&self, spec: &Spec, pipeline: vk::Pipeline) -> Result<Vec<String>, String> {
        let executables =
            unsafe { self.pep.get_pipeline_executable_properties(&vk::PipelineInfoKHR::default().pipeline(pipeline)) }
                .map_err(vk_err("vkGetPipelineExecutablePropertiesKHR"))?;
        let mut out = vec![];
        for (i, exe) in executables.iter().enumerate() {
            let at = vk::PipelineExecutableInfoKHR::default().pipeline(pipeline).executable_index(i as u32);
            let mut text = format!("\tsubgroup={}", exe.subgroup_size);
            if executables.len() > 1 {
                text = format!("\texecutable={}{text}", c_str(exe.name_as_c_str()));
            }
            let stats = unsafe { self.pep.get_pipeline_executable_statistics(&at) }
                .map_err(vk_err("vkGetPipelineExecutableStatisticsKHR"))?;
            for s in &stats {
                text += &format!("\t{}={}", c_str(s.name_as_c_str()), statistic(s));
            }
            if let Some(dir) = &self.ir {
                for (name, bytes) in self.representations(&at)? {
                    let path = dir.join(format!("{}-{i}-{}.txt", file_part(&label(spec)), file_part(&name)));
                    std::fs::write(&path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                }
            }
            out.push(text);
        }
        Ok(out)
    }

    /// An executable's textual internal representations (name, text), by the two-call
    /// protocol: their count, then their sizes (null pData), then their data.
    fn representations(&self, at: &vk::PipelineExecutableInfoKHR) -> Result<Vec<(String, Vec<u8>)>, String> {
        let get = self.pep.fp().get_pipeline_executable_internal_representations_khr;
        let dev = self.device.handle();
        let mut count = 0;
        unsafe { get(dev, at, &mut count, std::ptr::null_mut()) }
            .result()
            .map_err(|e| format!("vkGetPipelineExecutableInternalRepresentationsKHR: {e}"))?;
        if count == 0 {
            return Ok(vec![]);
        }
        let mut reprs = vec![vk::PipelineExecutableInternalRepresentationKHR::default(); count as usize];
        let sizes = unsafe { get(dev, at, &mut count, reprs.as_mut_ptr()) };
        if sizes != vk::Result::SUCCESS && sizes != vk::Result::INCOMPLETE {
            return Err(format!("vkGetPipelineExecutableInternalRepresentationsKHR: {sizes}"));
        }
        reprs.truncate(count as usize);
        let mut data: Vec<Vec<u8>> = reprs.iter().map(|r| vec![0u8; r.data_size]).collect();
        for (r, d) in reprs.iter_mut().zip(&mut data) {
            r.p_data = d.as_mut_ptr().cast();
        }
        let filled = unsafe { get(dev, at, &mut count, reprs.as_mut_ptr()) };
        if filled != vk::Result::SUCCESS && filled != vk::Result::INCOMPLETE {
            return Err(format!("vkGetPipelineExecutableInternalRepresentationsKHR: {filled}"));
        }
        Ok(reprs
            .iter()
            .zip(data)
            .filter(|(r, _)| r.is_text != 0)
            .map(|(r, mut d)| {
                d.truncate(r.data_size);
                // Text ends in a NUL, which a file need not keep.
                if d.last() == Some(&0) {
                    d.pop();
                }
                (c_str(r.name_as_c_str()), d)
            })
            .collect())
    }
}

/// The entry point's bindings, packed in order of their numbers as wgpu-hal packs a
/// layout's entries (its `binding_map`), and their workgroup memory.
fn bindings(
    module: &naga::Module,
    uses: &naga::valid::FunctionInfo,
) -> Result<(Vec<(naga::ResourceBinding, vk::DescriptorType)>, u32), String> {
    let mut bindings: Vec<(naga::ResourceBinding, vk::DescriptorType)> = vec![];
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).map_err(|e| format!("naga: layout: {e}"))?;
    let mut workgroup_bytes = 0;
    for (_, var) in module.global_variables.iter().filter(|(h, _)| !uses[*h].is_empty()) {
        if var.space == naga::AddressSpace::WorkGroup {
            workgroup_bytes += layouter[var.ty].size;
        }
        let Some(rb) = var.binding else { continue };
        let ty = match var.space {
            naga::AddressSpace::Storage { .. } => vk::DescriptorType::STORAGE_BUFFER,
            naga::AddressSpace::Uniform => vk::DescriptorType::UNIFORM_BUFFER,
            s => return Err(format!("binding {rb:?} in {s:?}: only buffers are laid out")),
        };
        if rb.group != 0 {
            return Err(format!("binding {rb:?}: only group 0 is laid out"));
        }
        bindings.push((rb, ty));
    }
    bindings.sort_by_key(|(rb, _)| rb.binding);
    Ok((bindings, workgroup_bytes))
}

/// A statistic's value as text.
fn statistic(s: &vk::PipelineExecutableStatisticKHR) -> String {
    // SAFETY: the union's member is the one `format` names.
    unsafe {
        match s.format {
            vk::PipelineExecutableStatisticFormatKHR::BOOL32 => (s.value.b32 != 0).to_string(),
            vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64.to_string(),
            vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64.to_string(),
            vk::PipelineExecutableStatisticFormatKHR::FLOAT64 => s.value.f64.to_string(),
            f => format!("?{f:?}"),
        }
    }
}

/// A Vulkan call's error named.
fn vk_err(call: &'static str) -> impl Fn(vk::Result) -> String {
    move |e| format!("{call}: {e}")
}

/// Runs its closure when dropped: the Vulkan objects a kernel makes, on every way out.
struct Defer<F: FnMut()>(F);
impl<F: FnMut()> Drop for Defer<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}
