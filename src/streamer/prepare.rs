//! Registration off the render thread: a texture's tail read and transcoded
//! on any thread ([`TexturePreparer`]), then registered without file access
//! ([`Streamer::register_prepared`]); a mesh's coarsest LOD read on any
//! thread ([`PreparedMesh::prepare`]), then registered without file access
//! ([`Streamer::register_prepared_mesh`]).

use super::work::Geometry;
use super::{MeshDesc, MeshRegisterError, Streamer, TextureDesc, TextureId, TextureRegisterError};
use crate::container::mip_extent;
use crate::format::TargetFormat;
use crate::kinds::Tier;
use crate::loss::{CompactFormat, TextureLoss};
use crate::mesh::MeshLod;
use crate::plan::{PlanLoss, PlanTexture};
use crate::transcode::{self, LevelImage, TargetChoice, TranscodeOptions};
use crate::worker::LoadError;

/// Prepares textures for [`Streamer::register_prepared`] on any thread: it
/// reads and transcodes the always-resident tail there, so registering on the
/// render thread only creates the texture and stages the tail's bytes.
///
/// Made by [`Streamer::preparer`]; `Clone + Send + Sync`, so an engine's
/// asset threads each hold one. A prepared texture belongs to the device
/// features of the streamer that made the preparer (registering it in a
/// streamer on another device is refused).
#[derive(Debug, Clone)]
pub struct TexturePreparer {
    features: wgpu::Features,
    tail_size: u32,
}

/// A texture whose tail has been read and transcoded, ready to register (see
/// [`TexturePreparer`]).
#[derive(Debug)]
pub struct PreparedTexture {
    pub(super) desc: TextureDesc,
    pub(super) features: wgpu::Features,
    pub(super) choice: TargetChoice,
    pub(super) geometry: Geometry,
    pub(super) plan: PlanTexture,
    pub(super) label: String,
    pub(super) tail: Vec<LevelImage>,
}

impl PreparedTexture {
    /// Its label (the file name unless the descriptor gave one).
    pub fn label(&self) -> &str {
        &self.label
    }
}

/// A mesh whose coarsest LOD has been read (and its indices checked), ready
/// for [`Streamer::register_prepared_mesh`]: the mesh half of
/// [`TexturePreparer`]. Reading a LOD does not depend on the device, so
/// there is no preparer to make: an asset thread calls
/// [`prepare`](Self::prepare) with the mesh's [`MeshDesc`] and sends the
/// result (`Send + Sync`) to the thread that drives the streamer.
#[derive(Debug)]
pub struct PreparedMesh {
    pub(super) desc: MeshDesc,
    pub(super) label: String,
    pub(super) base: MeshLod,
}

impl PreparedMesh {
    /// Reads `desc`'s coarsest LOD on this thread (blocking: a file read
    /// and a pass over its indices). A read that fails, or indices that
    /// point outside the LOD's vertices, are
    /// [`MeshRegisterError::Base`], the error
    /// [`Streamer::register_mesh`] gives for the same file.
    pub fn prepare(desc: MeshDesc) -> Result<Self, MeshRegisterError> {
        let info = desc.file.info();
        let label = desc.label.clone().unwrap_or_else(|| info.name.clone());
        let coarsest = info.lods.len().saturating_sub(1) as u32;
        let base = desc
            .file
            .read_lod(coarsest)
            .map_err(|source| MeshRegisterError::Base {
                label: label.clone(),
                source,
            })?;
        Ok(Self { desc, label, base })
    }

    /// Its label (the file's name unless the descriptor gave one).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The coarsest LOD that was read (what the mesh shows until finer ones
    /// stream in).
    pub fn coarsest(&self) -> &MeshLod {
        &self.base
    }

    /// The mesh's bounds in mesh units (min, max), from its file.
    pub fn bounds(&self) -> (glam::Vec3, glam::Vec3) {
        self.desc.file.info().bounds
    }
}

/// What a texture is, before anything is read: format choice, geometry, tail
/// level and plan facts.
pub(super) struct Layout {
    pub(super) choice: TargetChoice,
    pub(super) geometry: Geometry,
    pub(super) plan: PlanTexture,
    pub(super) label: String,
}

impl TexturePreparer {
    /// Reads and transcodes `desc`'s tail on this thread (blocking: 0.2 to
    /// tens of ms per texture).
    pub fn prepare(&self, desc: TextureDesc) -> Result<PreparedTexture, TextureRegisterError> {
        let layout = layout(&desc, self.features, self.tail_size)?;
        let opts = TranscodeOptions::for_choice(&layout.choice, layout.choice.full)
            .with_row_alignment(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
        let tail = (layout.plan.tail_level..layout.plan.level_count)
            .map(|l| {
                let raw = desc.file.read_level(l).map_err(LoadError::from)?;
                transcode::transcode_level(&desc.file, &raw, &opts).map_err(LoadError::from)
            })
            .collect::<Result<Vec<_>, LoadError>>()
            .map_err(|source| TextureRegisterError::Tail {
                label: layout.label.clone(),
                source: Box::new(source),
            })?;
        Ok(PreparedTexture {
            desc,
            features: self.features,
            choice: layout.choice,
            geometry: layout.geometry,
            plan: layout.plan,
            label: layout.label,
            tail,
        })
    }
}

/// The format choice, geometry, tail and plan facts of a texture on a device
/// with `features`.
pub(super) fn layout(
    desc: &TextureDesc,
    features: wgpu::Features,
    tail_size: u32,
) -> Result<Layout, TextureRegisterError> {
    let info = desc.file.info();
    let choice = transcode::choose_targets_with(info, desc.class, desc.normal_layout, features)?;
    let formats = [
        choice.wgpu_format(info, Tier::Full),
        choice.wgpu_format(info, Tier::Compact),
    ];
    let levels = info.levels.len() as u32;
    let geometry = Geometry {
        width: info.width,
        height: info.height,
        layers: info.images_per_level(),
        levels,
        formats,
    };
    // the tail: levels no larger than tail_size, from a level the format can
    // start a texture at
    let mut tail = (0..levels)
        .find(|&l| mip_extent(info.width, l).max(mip_extent(info.height, l)) <= tail_size)
        .unwrap_or(levels - 1);
    while tail > 0
        && !formats
            .iter()
            .all(|&f| crate::gpu::valid_base_level(f, info.width, info.height, tail))
    {
        tail -= 1;
    }
    let finest_allowed = desc.max_resolution.map_or(0, |m| {
        (0..levels)
            .find(|&l| mip_extent(info.width, l).max(mip_extent(info.height, l)) <= m)
            .unwrap_or(levels - 1)
            .min(tail)
    });
    let resident_bytes = |tier: Tier| -> Vec<u64> {
        (0..levels)
            .map(|l| geometry.shape(l, tier).bytes())
            .collect()
    };
    let plan = PlanTexture {
        size: info.width.max(info.height),
        level_count: levels,
        tail_level: tail,
        finest_allowed,
        resident_bytes: [
            resident_bytes(Tier::Full),
            if choice.compact.is_some() {
                resident_bytes(Tier::Compact)
            } else {
                Vec::new()
            },
        ],
        boost: desc.priority,
        loss: plan_loss(info, &choice),
        // set once the tail is read (`Streamer::install`)
        tie_key: 0,
    };
    let label = desc.label.clone().unwrap_or_else(|| {
        std::path::Path::new(&info.name)
            .file_stem()
            .map_or(info.name.clone(), |s| s.to_string_lossy().into_owned())
    });
    Ok(Layout {
        choice,
        geometry,
        plan,
        label,
    })
}

/// The planner's view of a file's measured loss: the full tier's curve and
/// the compact tier's for the format this device would use (none when the
/// file carries no usable loss; the report says why).
fn plan_loss(info: &crate::container::TextureInfo, choice: &TargetChoice) -> Option<PlanLoss> {
    let loss = TextureLoss::from_info(info)?.ok()?;
    let compact = match choice.compact {
        Some(transcode::Output::Transcode(TargetFormat::Bc1)) => loss.compact(CompactFormat::Bc1),
        Some(transcode::Output::Transcode(TargetFormat::Etc2Rgb)) => {
            loss.compact(CompactFormat::Etc2Rgb)
        }
        _ => None,
    };
    Some(PlanLoss {
        compact: compact.map(|c| c.level_error.clone()).unwrap_or_default(),
        compact_blur: compact.and_then(|c| c.blur_levels).unwrap_or(0.0),
        full: loss.level_error,
    })
}

impl Streamer {
    /// A [`TexturePreparer`] for this streamer's device and tail size.
    pub fn preparer(&self) -> TexturePreparer {
        TexturePreparer {
            features: self.gpu.features(),
            tail_size: self.options.tail_size,
        }
    }

    /// Registers a texture prepared on another thread: creates its texture
    /// and stages the tail, no file access and no transcoding. The id is
    /// usable at once and its view holds the tail from the next submit on
    /// (the same as [`register_texture`](Self::register_texture)).
    /// Prepared textures register in the order this is called; a preparer
    /// made before [`set_budget`](Self::set_budget) or any other call is
    /// still valid (it depends only on the device and `tail_size`).
    pub fn register_prepared(
        &mut self,
        prepared: PreparedTexture,
    ) -> Result<TextureId, TextureRegisterError> {
        if prepared.features != self.gpu.features() {
            return Err(TextureRegisterError::ForeignPrepared {
                label: prepared.label,
            });
        }
        self.install(prepared)
    }
}
