//! The GPU side: the only code in mipstream that touches a `wgpu::Device` or
//! `wgpu::Queue`.
//!
//! [`headless`] opens an adapter without a window (for tools, benchmarks and
//! render tests), honouring `WGPU_BACKEND`, and fails with an error that says
//! what to install when no adapter exists. [`upload`] turns transcoded levels
//! into a `wgpu::Texture` holding any contiguous range of mips.

pub(crate) mod books;
pub mod feedback;
pub mod memory;
pub mod readback;
pub mod regions;
mod scope;
pub(crate) mod staging;
pub(crate) mod store;
pub mod upload;

/// What a texture costs in mipstream's books (its allocation, as the budget
/// counts it).
pub use books::Shape;
pub use readback::{read_rgba8, ReadbackError};
/// Levels below this many bytes are not staged by the loaders
/// (`StreamerOptions::loader_staging_bytes`).
pub use staging::MIN_STAGED_BYTES;
pub use store::AllocError;
pub use store::{GpuMesh, MeshBuffers};
pub use upload::{upload_levels, valid_base_level, GpuTexture, UploadError};

/// Why no GPU device could be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuInitError {
    /// No adapter exists for the requested backends.
    #[error("no GPU adapter for backends {backends}: {hint}")]
    NoAdapter {
        /// The backends that were searched.
        backends: String,
        /// What to install.
        hint: &'static str,
    },
    /// The adapter refused to create a device.
    #[error("{adapter}: requesting a device failed: {source}")]
    RequestDevice {
        /// The adapter's name.
        adapter: String,
        /// wgpu's error.
        #[source]
        source: wgpu::RequestDeviceError,
    },
}

/// What to install when no adapter is found.
pub const INSTALL_HINT: &str = "on Debian/Ubuntu install Mesa's software drivers: \
`apt-get install mesa-vulkan-drivers` (lavapipe, for WGPU_BACKEND=vulkan) or \
`apt-get install libegl1 libgl1-mesa-dri` (llvmpipe, for WGPU_BACKEND=gl); \
with a GPU, install its Vulkan/GL driver";

/// An adapter, device and queue opened without a window.
#[derive(Debug)]
pub struct HeadlessGpu {
    /// The instance (keep it alive as long as the device).
    pub instance: wgpu::Instance,
    /// The adapter.
    pub adapter: wgpu::Adapter,
    /// The device, with every texture-compression feature the adapter offers.
    pub device: wgpu::Device,
    /// The queue.
    pub queue: wgpu::Queue,
}

impl HeadlessGpu {
    /// `"<adapter name> (<backend>)"`, for logs and reports.
    pub fn describe(&self) -> String {
        let info = self.adapter.get_info();
        format!("{} ({:?})", info.name, info.backend)
    }
}

/// The features mipstream asks for when the adapter offers them.
pub fn wanted_features() -> wgpu::Features {
    wgpu::Features::TEXTURE_COMPRESSION_BC
        | wgpu::Features::TEXTURE_COMPRESSION_ETC2
        | wgpu::Features::TEXTURE_COMPRESSION_ASTC
        | wgpu::Features::TEXTURE_FORMAT_16BIT_NORM
        // GPU feedback's shaders keep early depth testing with it
        // (`gpu::feedback`)
        | wgpu::Features::SHADER_EARLY_DEPTH_TEST
}

/// Opens a device without a window.
///
/// `backends` defaults to `WGPU_BACKEND` (e.g. `vulkan`, `gl`), else every
/// backend built in. Software adapters (lavapipe, llvmpipe) are accepted.
pub fn headless(backends: Option<wgpu::Backends>) -> Result<HeadlessGpu, GpuInitError> {
    headless_with_features(backends, wanted_features())
}

/// [`headless`] asking only for `features` (those the adapter offers): for
/// testing what a device without some formats does, e.g. with
/// `wgpu::Features::empty()` every texture falls back to RGBA8.
pub fn headless_with_features(
    backends: Option<wgpu::Backends>,
    features: wgpu::Features,
) -> Result<HeadlessGpu, GpuInitError> {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    if let Some(b) = backends {
        desc.backends = b;
    }
    let searched = format!("{:?}", desc.backends);
    let instance = wgpu::Instance::new(desc);
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        ..Default::default()
    }))
    .map_err(|_| GpuInitError::NoAdapter {
        backends: searched,
        hint: INSTALL_HINT,
    })?;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("mipstream"),
        required_features: adapter.features() & features,
        required_limits: adapter.limits(),
        ..Default::default()
    }))
    .map_err(|source| GpuInitError::RequestDevice {
        adapter: adapter.get_info().name,
        source,
    })?;
    Ok(HeadlessGpu {
        instance,
        adapter,
        device,
        queue,
    })
}
