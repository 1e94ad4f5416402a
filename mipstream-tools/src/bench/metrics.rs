//! Picture comparisons (PSNR and NVIDIA FLIP against `full`) and the small
//! statistics the benchmark reports.

use image::RgbaImage;
use mipstream::gpu::regions::{region_bytes, RegionBytes};
use mipstream::streamer::{Streamer, TextureReport};

/// What the textures the streamer's newest GPU feedback saw hold, whole and
/// as their sampled regions' tiles ([`mipstream::gpu::regions`]): the
/// feedback is of the frame drawn before the update, the levels those the
/// update left resident (`textures`: its report's rows). `None` without
/// feedback.
pub(crate) fn feedback_region_bytes(
    streamer: &Streamer,
    textures: &[TextureReport],
) -> Option<RegionBytes> {
    let feedback = streamer.latest_feedback()?;
    let mut sum = RegionBytes::default();
    for t in textures {
        let Some(Some(seen)) = feedback.slots.get(t.id.index()) else {
            continue;
        };
        let Ok(gpu) = streamer.resident(t.id) else {
            continue;
        };
        let layered = gpu.texture.depth_or_array_layers() > 1
            || gpu.view_dimension != wgpu::TextureViewDimension::D2;
        let r = region_bytes(gpu.format, t.size, gpu.first_level, gpu.level_count, seen);
        sum += if layered {
            // the mask is of one uv square: arrays, cubes and volumes count whole
            RegionBytes {
                whole: r.whole,
                regions: r.whole,
            }
        } else {
            r
        };
    }
    Some(sum)
}

/// Bytes as text with a binary unit.
pub(crate) fn human(bytes: u64) -> String {
    mipstream::gpu::memory::human_bytes(bytes)
}

/// The value at fraction `p` of `sorted` (nearest rank; 0 when empty).
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}
/// Mean squared error over RGB (0-255 scale).
pub fn mse_rgb(a: &RgbaImage, b: &RgbaImage) -> f64 {
    let (mut se, mut n) = (0f64, 0f64);
    for (p, q) in a.pixels().zip(b.pixels()) {
        for c in 0..3 {
            let d = p.0[c] as f64 - q.0[c] as f64;
            se += d * d;
            n += 1.0;
        }
    }
    se / n.max(1.0)
}

/// PSNR in dB for a mean squared error, capped at 100 dB (identical pictures).
pub fn psnr_from_mse(mse: f64) -> f64 {
    if mse <= 0.0 {
        100.0
    } else {
        (10.0 * (255.0f64 * 255.0 / mse).log10()).min(100.0)
    }
}

/// PSNR over RGB, capped at 100 dB (identical pictures).
pub fn psnr_rgb(a: &RgbaImage, b: &RgbaImage) -> f64 {
    psnr_from_mse(mse_rgb(a, b))
}

/// Mean NVIDIA FLIP error (0 identical, 1 most different) over RGB.
pub fn flip_mean(reference: &RgbaImage, test: &RgbaImage) -> f32 {
    let (w, h) = reference.dimensions();
    let rgb = |i: &RgbaImage| {
        i.pixels()
            .flat_map(|p| [p.0[0], p.0[1], p.0[2]])
            .collect::<Vec<_>>()
    };
    let r = nv_flip::FlipImageRgb8::with_data(w, h, &rgb(reference));
    let t = nv_flip::FlipImageRgb8::with_data(w, h, &rgb(test));
    let err = nv_flip::flip(r, t, nv_flip::DEFAULT_PIXELS_PER_DEGREE);
    nv_flip::FlipPool::from_image(&err).mean()
}
