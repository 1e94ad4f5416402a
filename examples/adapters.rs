//! Prints the adapter mipstream picks (honours `WGPU_BACKEND`) and its texture
//! compression features.

fn main() {
    match mipstream::gpu::headless(None) {
        Ok(gpu) => {
            let f = gpu.device.features();
            println!("{}", gpu.describe());
            println!(
                "  BC: {}",
                f.contains(wgpu::Features::TEXTURE_COMPRESSION_BC)
            );
            println!(
                "  ETC2: {}",
                f.contains(wgpu::Features::TEXTURE_COMPRESSION_ETC2)
            );
            println!(
                "  ASTC: {}",
                f.contains(wgpu::Features::TEXTURE_COMPRESSION_ASTC)
            );
            println!(
                "  allocator report: {}",
                gpu.device.generate_allocator_report().is_some()
            );
            // what GPU feedback (a fragment shader writing a storage buffer)
            // needs and can use, from the adapter
            let a = gpu.adapter.features();
            let down = gpu.adapter.get_downlevel_capabilities();
            let limits = gpu.adapter.limits();
            println!(
                "  fragment storage writes: {}, storage buffers per stage: {}",
                down.flags
                    .contains(wgpu::DownlevelFlags::FRAGMENT_WRITABLE_STORAGE),
                limits.max_storage_buffers_per_shader_stage
            );
            println!(
                "  early depth test (forced): {}, subgroups: {}",
                a.contains(wgpu::Features::SHADER_EARLY_DEPTH_TEST),
                a.contains(wgpu::Features::SUBGROUP)
            );
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
