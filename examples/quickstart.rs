//! Quickstart: a texture streamed into the GPU level by level, headless.
//!
//! Cooks a generated test pattern into KTX2 (Basis UASTC, full mip chain),
//! loads its levels on loader threads smallest first, and after each level
//! arrives rebuilds the GPU texture with the levels now resident and renders
//! it at 256x256, the way a streamer brings a texture from blurry to sharp.
//! Writes `target/quickstart/residency.png` (one frame per step) and prints
//! what was resident at each step.
//!
//! Run: `cargo run --release --example quickstart` (set `WGPU_BACKEND=vulkan`
//! or `gl` to choose the adapter).

use mipstream::gpu::{self, upload_levels, valid_base_level};
use mipstream::transcode::{choose_targets, LevelImage, TextureClass, TranscodeOptions};
use mipstream::worker::{LoadKey, LoadRequest, Loader};
use mipstream::{MemorySource, TextureFile};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SIZE: u32 = 1024;
const VIEW: u32 = 256;

/// A pattern with detail at every scale: coloured rings, a fine grid and
/// diagonal stripes, so every missing mip shows.
fn pattern() -> image::RgbaImage {
    image::RgbaImage::from_fn(SIZE, SIZE, |x, y| {
        let (fx, fy) = (x as f32 / SIZE as f32 - 0.5, y as f32 / SIZE as f32 - 0.5);
        let r = (fx * fx + fy * fy).sqrt();
        let ring = ((r * 60.0).sin() * 0.5 + 0.5) * 255.0;
        let grid = if x % 16 == 0 || y % 16 == 0 {
            255.0
        } else {
            0.0
        };
        let stripe = if (x + y) % 8 < 2 { 60.0 } else { 0.0 };
        let hue = (fx.atan2(fy) / std::f32::consts::TAU + 0.5) * 255.0;
        image::Rgba([
            (ring * 0.8 + stripe).min(255.0) as u8,
            (hue * 0.7 + grid * 0.3) as u8,
            (255.0 - ring * 0.6).max(grid) as u8,
            255,
        ])
    })
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let out_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/quickstart");
    std::fs::create_dir_all(&out_dir)?;
    let t0 = Instant::now();
    let ktx2 = mipstream::cook::cook_image(
        "pattern",
        &pattern(),
        &mipstream::cook::CookOptions {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            ..Default::default()
        },
    )?;
    std::fs::write(out_dir.join("pattern.ktx2"), &ktx2)?;
    println!(
        "cooked a {SIZE}x{SIZE} pattern to UASTC KTX2: {} bytes in {:.1?}",
        ktx2.len(),
        t0.elapsed()
    );

    let g = gpu::headless(None)?;
    println!("adapter: {}", g.describe());
    let file = TextureFile::open(Arc::new(MemorySource::new("pattern.ktx2", ktx2)))?;
    let info = file.info().clone();
    let choice = choose_targets(&info, TextureClass::Color, g.device.features())?;
    let n = info.levels.len() as u32;

    // The tail (the levels below the smallest texture the format allows, e.g.
    // 4x4 and smaller for BC7) is loaded first, as a streamer keeps it always
    // resident; then every larger level is requested at once, smallest first.
    let format = choice.wgpu_format(&info, mipstream::Tier::Full);
    let tail = (0..n)
        .rev()
        .find(|&l| valid_base_level(format, info.width, info.height, l))
        .unwrap_or(0);
    let mut loader = Loader::new(2);
    let request = |level: u32| LoadRequest {
        key: LoadKey::Other(0),
        file: file.clone(),
        level,
        options: TranscodeOptions::new(choice.full, choice.srgb),
        priority: level as f32,
        stage: false,
    };
    let preview = Preview::new(&g.device);
    let mut arrived: Vec<Option<LevelImage>> = vec![None; n as usize];
    let mut frames = Vec::new();
    for phase in [tail..n, 0..tail] {
        for level in phase.rev() {
            loader.submit(request(level));
        }
        while loader.outstanding() > 0 {
            for r in loader.wait(Duration::from_secs(30)) {
                arrived[r.level as usize] = Some(r.result?);
                // resident: the run of arrived levels that ends at the smallest;
                // one frame per level the run grew by (two may arrive together)
                let mut k = n;
                while k > 0 && arrived[k as usize - 1].is_some() {
                    k -= 1;
                }
                let shown = frames
                    .last()
                    .map_or(tail + 1, |f: &(u32, u64, image::RgbaImage)| f.0);
                for k in (k..shown.min(tail + 1)).rev() {
                    let levels: Vec<LevelImage> =
                        arrived[k as usize..].iter().flatten().cloned().collect();
                    let tex = upload_levels(&g.device, &g.queue, "pattern", &info, &levels)?;
                    println!(
                        "resident levels {k}..{n} ({}x{} and smaller, {:?}): {} bytes on the GPU",
                        info.levels[k as usize].width,
                        info.levels[k as usize].height,
                        tex.format,
                        tex.bytes
                    );
                    frames.push((k, tex.bytes, preview.render(&g, &tex.view)));
                }
            }
        }
    }
    let sheet = contact_sheet(&frames);
    let path = out_dir.join("residency.png");
    sheet.save(&path)?;
    println!(
        "wrote {} ({} frames, blurry to sharp) in {:.1?}",
        path.display(),
        frames.len(),
        t0.elapsed()
    );
    // how close each residency step renders to the fully resident texture
    let full = &frames.last().expect("at least one frame").2;
    for (k, bytes, frame) in &frames {
        let mse = frame
            .as_raw()
            .iter()
            .zip(full.as_raw())
            .map(|(a, b)| (*a as f64 - *b as f64).powi(2))
            .sum::<f64>()
            / full.as_raw().len() as f64;
        let psnr = if mse == 0.0 {
            f64::INFINITY
        } else {
            10.0 * (255.0f64.powi(2) / mse).log10()
        };
        println!(
            "  levels {k:>2}..{n}: {bytes:>8} bytes, rendered PSNR vs fully resident {psnr:6.2} dB"
        );
    }
    println!("mips finer than the screen needs cost memory and show nothing: that gap is what mipstream's budget planner uses");
    Ok(())
}

/// Frames side by side, finest last.
fn contact_sheet(frames: &[(u32, u64, image::RgbaImage)]) -> image::RgbaImage {
    let mut sheet = image::RgbaImage::from_pixel(
        VIEW * frames.len() as u32 + 4 * (frames.len() as u32 - 1),
        VIEW,
        image::Rgba([0, 0, 0, 255]),
    );
    for (i, (_, _, f)) in frames.iter().enumerate() {
        image::imageops::overlay(&mut sheet, f, (i as u32 * (VIEW + 4)) as i64, 0);
    }
    sheet
}

/// A pipeline that draws a texture view over a 256x256 target.
struct Preview {
    pipeline: wgpu::RenderPipeline,
    sampler: wgpu::Sampler,
}

impl Preview {
    fn new(device: &wgpu::Device) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("preview"),
            source: wgpu::ShaderSource::Wgsl(include_str!("../shaders/preview.wgsl").into()),
        });
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("preview"),
            layout: None,
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: Default::default(),
            depth_stencil: None,
            multisample: Default::default(),
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("fs"),
                compilation_options: Default::default(),
                targets: &[Some(wgpu::TextureFormat::Rgba8UnormSrgb.into())],
            }),
            multiview_mask: None,
            cache: None,
        });
        let sampler = device.create_sampler(&wgpu::SamplerDescriptor {
            label: Some("trilinear"),
            mag_filter: wgpu::FilterMode::Linear,
            min_filter: wgpu::FilterMode::Linear,
            mipmap_filter: wgpu::MipmapFilterMode::Linear,
            ..Default::default()
        });
        Self { pipeline, sampler }
    }

    fn render(&self, g: &gpu::HeadlessGpu, view: &wgpu::TextureView) -> image::RgbaImage {
        let target = mipstream::gpu::readback::render_target(
            &g.device,
            "preview target",
            (VIEW, VIEW),
            wgpu::TextureFormat::Rgba8UnormSrgb,
        );
        let bind = g.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("preview"),
            layout: &self.pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::TextureView(view),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::Sampler(&self.sampler),
                },
            ],
        });
        let tv = target.create_view(&Default::default());
        let mut enc = g.device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("preview"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: &tv,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                        store: wgpu::StoreOp::Store,
                    },
                })],
                depth_stencil_attachment: None,
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.draw(0..3, 0..1);
        }
        g.queue.submit([enc.finish()]);
        let px = gpu::read_rgba8(&g.device, &g.queue, &target, 0, 0).expect("readback");
        image::RgbaImage::from_raw(VIEW, VIEW, px).expect("size")
    }
}
