//! The comparison views: mipstream beside an engine's rule (or beside full
//! resolution) from the same camera, each half its own streamer at the same
//! budget and upload cap, scored against full resolution; and the error
//! view, a FLIP heat map of the budgeted picture against full resolution.
//!
//! Scores are taken every [`SCORE_EVERY`] frames at a low resolution
//! ([`SCORE_WIDTH`] pixels across): each strategy's picture and the full
//! one are rendered small, read back, and compared (PSNR over RGB, mean
//! NVIDIA FLIP), so the frame rate holds while the numbers stay live.

use super::*;
use mipstream::plan::Policy;

/// Frames between two scores (and error maps).
pub(super) const SCORE_EVERY: u64 = 30;
/// Width of the pictures scores are taken on (height by the scene's aspect).
pub(super) const SCORE_WIDTH: u32 = 480;

/// A second streamer under an engine's rule, at the viewer's budget and
/// upload cap, for the right half of a split.
pub(super) struct Rival {
    pub(super) streamer: Streamer,
    pub(super) renderer: SceneRenderer,
    pub(super) boxes: Vec<DrawBox>,
    pub(super) policy: Policy,
}

/// One half of a split, scored against full resolution.
#[derive(Debug, Clone, PartialEq)]
pub struct HalfScore {
    /// Its strategy: `mipstream`, `unreal_pool`, `unity_budget` or `full`.
    pub strategy: &'static str,
    /// Bytes its streamer holds (textures, pool and staging).
    pub held: u64,
    /// The budget it keeps to (`None` for full resolution, which has none).
    pub budget: Option<u64>,
    /// PSNR against full resolution, dB (100: identical).
    pub psnr_db: f64,
    /// Mean FLIP against full resolution (0: identical).
    pub flip: f32,
}

/// Both halves' scores at one frame.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitScores {
    /// The viewer's frame they were taken at.
    pub frame: u64,
    /// Left: mipstream.
    pub left: HalfScore,
    /// Right: the rule it is compared with (or full resolution).
    pub right: HalfScore,
}

/// The error view's picture: the FLIP error map, magma-coloured.
pub(super) struct ErrorMap {
    /// Kept with its view for as long as the map is shown.
    _texture: wgpu::Texture,
    pub(super) view: wgpu::TextureView,
    pub(super) frame: u64,
}

impl Mode {
    /// The engine rule the right half plays, for the splits against one.
    pub(super) fn rival_policy(self) -> Option<Policy> {
        match self {
            Mode::SplitUnreal => Some(Policy::UNREAL),
            Mode::SplitUnity => Some(Policy::UNITY),
            _ => None,
        }
    }

    /// Whether the mode needs the full-resolution streamer.
    pub(super) fn needs_reference(self) -> bool {
        matches!(
            self,
            Mode::SplitFull | Mode::SplitUnreal | Mode::SplitUnity | Mode::Error
        )
    }

    /// Whether the scene is drawn in two halves.
    pub(super) fn is_split(self) -> bool {
        matches!(self, Mode::SplitFull | Mode::SplitUnreal | Mode::SplitUnity)
    }
}

fn policy_key(p: Policy) -> &'static str {
    match p {
        Policy::UnrealPool { .. } => "unreal_pool",
        Policy::UnityBudget { .. } => "unity_budget",
        _ => "rule",
    }
}

impl Viewer {
    /// Keeps the right half's engine-rule streamer for the mode in force
    /// (made the first time, at the viewer's budget and upload cap), and
    /// updates it with the frame's camera.
    pub(super) fn update_rival(&mut self, view: &View) -> Result<(), ViewerError> {
        let Some(policy) = self.settings.mode.rival_policy() else {
            self.rival = None;
            return Ok(());
        };
        if self.rival.as_ref().is_none_or(|r| r.policy != policy) {
            let options = StreamerOptions {
                budget: Budget::Bytes((self.settings.budget_mb * MIB) as u64),
                upload_bytes_per_frame: (self.settings.upload_cap_mb * MIB) as u64,
                ..Default::default()
            };
            let (mut streamer, boxes, _, _) =
                Self::new_streamer(&self.device, &self.queue, &self.scene, None, options)?;
            streamer.set_policy(policy);
            self.rival = Some(Rival {
                streamer,
                renderer: SceneRenderer::new(&self.device, TARGET_FORMAT),
                boxes,
                policy,
            });
            self.scores = None;
        }
        let r = self.rival.as_mut().expect("made above");
        r.streamer.update(&[*view]);
        r.streamer
            .check_invariants()
            .map_err(|violation| ViewerError::Invariant {
                frame: self.frame,
                violation,
            })?;
        let changed = r.streamer.take_changed();
        r.renderer.sync(&self.device, &r.streamer, &changed);
        Ok(())
    }

    /// The budget and upload cap of the panel, applied to the rival too.
    pub(super) fn apply_rival_settings(&mut self) {
        let budget = (self.settings.budget_mb * MIB) as u64;
        let cap = (self.settings.upload_cap_mb * MIB) as u64;
        if let Some(r) = &mut self.rival {
            r.streamer.set_budget(Budget::Bytes(budget));
            let levels = r.streamer.options().uploads_per_frame;
            r.streamer.set_upload_cap(cap, levels);
        }
    }

    /// The last scores of the split in force, if it has been scored.
    pub fn split_scores(&self) -> Option<&SplitScores> {
        self.scores.as_ref()
    }

    /// Whether this frame takes new scores (or a new error map).
    pub(super) fn score_due(&self) -> bool {
        let mode = self.settings.mode;
        if !(mode.is_split() || mode == Mode::Error) || self.meshes.is_some() {
            return false;
        }
        let last = if mode == Mode::Error {
            self.error_map.as_ref().map(|e| e.frame)
        } else {
            self.scores.as_ref().map(|s| s.frame)
        };
        last.is_none_or(|f| self.frame >= f + SCORE_EVERY)
    }

    /// Renders the strategies and full resolution small, scores the split's
    /// halves against full resolution, and (in the error view) makes the
    /// FLIP error map.
    pub(super) fn score(&mut self, view: &View) -> Result<(), ViewerError> {
        let size = self.scene_target.size;
        let small = UVec2::new(
            SCORE_WIDTH.min(size.x),
            ((SCORE_WIDTH.min(size.x) as f32 * size.y as f32 / size.x.max(1) as f32).round()
                as u32)
                .max(16),
        );
        if self.score_target.as_ref().is_none_or(|t| t.size != small) {
            self.score_target = Some(Self::make_target(&self.device, small));
        }
        let small_view = View {
            viewport: small,
            ..*view
        };
        let ours = self.render_small(small_view, Side::Mipstream)?;
        let full = self.render_small(small_view, Side::Full)?;
        let held = |s: &Streamer| s.report().totals.accounted();
        let score = |strategy, held, budget, img: &image::RgbaImage| {
            let (psnr_db, flip, _) = compare(&full, img);
            HalfScore {
                strategy,
                held,
                budget,
                psnr_db,
                flip,
            }
        };
        if self.settings.mode == Mode::Error {
            let (_, _, map) = compare(&full, &ours);
            self.error_map = Some(self.upload_error_map(&map));
            return Ok(());
        }
        let left = score(
            "mipstream",
            held(&self.streamer),
            Some(self.streamer.budget_bytes()),
            &ours,
        );
        let right = match &self.rival {
            Some(r) => {
                let (key, held, budget) = (
                    policy_key(r.policy),
                    held(&r.streamer),
                    r.streamer.budget_bytes(),
                );
                let img = self.render_small(small_view, Side::Rival)?;
                score(key, held, Some(budget), &img)
            }
            None => {
                let r = self.reference.as_ref().expect("a split has its reference");
                score("full", held(&r.streamer), None, &full)
            }
        };
        self.scores = Some(SplitScores {
            frame: self.frame,
            left,
            right,
        });
        Ok(())
    }

    fn render_small(&mut self, view: View, side: Side) -> Result<image::RgbaImage, ViewerError> {
        let target = self.score_target.as_ref().expect("made by score");
        let region = Region {
            origin: UVec2::ZERO,
            size: target.size,
            clear: true,
        };
        let (renderer, boxes, streamer) = match side {
            Side::Mipstream => (&mut self.renderer, &self.boxes, &self.streamer),
            Side::Full => {
                let r = self.reference.as_mut().expect("scored with a reference");
                (&mut r.renderer, &r.boxes, &r.streamer)
            }
            Side::Rival => {
                let r = self.rival.as_mut().expect("scored with a rival");
                (&mut r.renderer, &r.boxes, &r.streamer)
            }
        };
        renderer.render_region(
            &self.device,
            &self.queue,
            &target.view,
            target.size,
            &view,
            boxes,
            streamer,
            ViewMode::Normal,
            region,
        );
        let px = gpu::read_rgba8(&self.device, &self.queue, &target.texture, 0, 0)?;
        image::RgbaImage::from_raw(target.size.x, target.size.y, px).ok_or_else(|| {
            ViewerError::Screenshot {
                path: String::new(),
                message: "readback returned the wrong number of pixels".into(),
            }
        })
    }

    fn upload_error_map(&self, map: &image::RgbaImage) -> ErrorMap {
        let (w, h) = map.dimensions();
        let texture = self.device.create_texture(&wgpu::TextureDescriptor {
            label: Some("mipstream viewer error map"),
            size: wgpu::Extent3d {
                width: w,
                height: h,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: TARGET_FORMAT,
            usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        });
        self.queue.write_texture(
            wgpu::TexelCopyTextureInfo {
                texture: &texture,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            map.as_raw(),
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(w * 4),
                rows_per_image: Some(h),
            },
            wgpu::Extent3d {
                width: w,
                height: h,
                depth_or_array_layers: 1,
            },
        );
        let view = texture.create_view(&Default::default());
        ErrorMap {
            _texture: texture,
            view,
            frame: self.frame,
        }
    }
}

/// Which streamer a small picture is rendered from.
#[derive(Clone, Copy)]
enum Side {
    Mipstream,
    Full,
    Rival,
}

/// PSNR (RGB, capped at 100 dB), mean FLIP and the magma-coloured FLIP map
/// of `test` against `reference`.
fn compare(reference: &image::RgbaImage, test: &image::RgbaImage) -> (f64, f32, image::RgbaImage) {
    let (w, h) = reference.dimensions();
    let rgb = |i: &image::RgbaImage| -> Vec<u8> {
        i.pixels().flat_map(|p| [p.0[0], p.0[1], p.0[2]]).collect()
    };
    let (a, b) = (rgb(reference), rgb(test));
    let mse = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (*x as f64 - *y as f64).powi(2))
        .sum::<f64>()
        / a.len().max(1) as f64;
    let psnr = if mse <= 0.0 {
        100.0
    } else {
        (10.0 * (255.0f64 * 255.0 / mse).log10()).min(100.0)
    };
    let err = nv_flip::flip(
        nv_flip::FlipImageRgb8::with_data(w, h, &a),
        nv_flip::FlipImageRgb8::with_data(w, h, &b),
        nv_flip::DEFAULT_PIXELS_PER_DEGREE,
    );
    let mean = nv_flip::FlipPool::from_image(&err).mean();
    let colours = err.apply_color_lut(&nv_flip::magma_lut()).to_vec();
    let map = image::RgbaImage::from_fn(w, h, |x, y| {
        let i = ((y * w + x) * 3) as usize;
        image::Rgba([colours[i], colours[i + 1], colours[i + 2], 255])
    });
    (psnr, mean, map)
}
