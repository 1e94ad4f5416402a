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
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
