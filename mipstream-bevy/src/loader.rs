//! `.ktx2` files as streamed `Handle<Image>`s.

use crate::Mipstream;
use bevy::asset::io::Reader;
use bevy::asset::{AssetLoader, AssetPath, LoadContext, RenderAssetUsages};
use bevy::image::ImageSampler;
use bevy::prelude::*;
use bevy::reflect::TypePath;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};
use mipstream::streamer::{PreparedTexture, TexturePreparer};
use mipstream::transcode::NormalLayout;
use mipstream::{MemorySource, TextureClass, TextureDesc, TextureFile};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

/// What a streamed image is for (how it transcodes and how its error counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ImageClass {
    /// Colour (base colour, emissive): sRGB where the file says so.
    #[default]
    Color,
    /// A tangent-space normal map: X and Y in red and green, as
    /// `StandardMaterial` reads them.
    Normal,
    /// Other linear data (metallic-roughness, occlusion).
    Data,
}

/// Per-file settings: `asset_server.load_builder().with_settings(|s: &mut StreamedImageSettings| s.class = ImageClass::Normal).load("n.ktx2")`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamedImageSettings {
    /// What the image is for. Default: colour.
    pub class: ImageClass,
    /// Importance against other textures (1 = normal).
    pub priority: f32,
    /// The sampler (Bevy's default when `Default`).
    pub sampler: ImageSampler,
}

impl Default for StreamedImageSettings {
    fn default() -> Self {
        Self {
            class: ImageClass::Color,
            priority: 1.0,
            sampler: ImageSampler::Default,
        }
    }
}

/// Why a streamed image did not load.
#[derive(Debug, thiserror::Error)]
pub enum StreamedLoadError {
    /// The bytes could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// What failed.
        source: std::io::Error,
    },
    /// mipstream refused the file (malformed, unsupported).
    #[error("{0}")]
    Mipstream(String),
}

/// Bevy's loader for `.ktx2` files that mipstream streams: it reads the
/// file, transcodes the always-resident tail on Bevy's asset task pool and
/// returns a 1x1 placeholder `Image` whose render-world texture mipstream
/// replaces once the texture has registered (the same frame or the next).
///
/// The whole file is kept in CPU memory (it is read through Bevy's asset
/// sources, which may be embedded or remote); GPU memory holds only the
/// resident levels.
#[derive(TypePath, Debug)]
pub struct StreamedImageLoader {
    preparer: TexturePreparer,
    sender: Sender<(AssetPath<'static>, PreparedTexture)>,
}

/// Textures prepared by the loader, waiting for their image asset's event.
#[derive(Resource)]
pub(crate) struct Inbox {
    receiver: Mutex<Receiver<(AssetPath<'static>, PreparedTexture)>>,
    pending: HashMap<AssetPath<'static>, PreparedTexture>,
}

pub(crate) fn build(app: &mut App) {
    // loads asked for before the renderer exists wait for the loader
    app.preregister_asset_loader::<StreamedImageLoader>(&["ktx2"]);
}

pub(crate) fn finish(app: &mut App, preparer: TexturePreparer) {
    let (sender, receiver) = channel();
    app.register_asset_loader(StreamedImageLoader { preparer, sender });
    app.insert_resource(Inbox {
        receiver: Mutex::new(receiver),
        pending: HashMap::new(),
    });
}

impl AssetLoader for StreamedImageLoader {
    type Asset = Image;
    type Settings = StreamedImageSettings;
    type Error = StreamedLoadError;

    async fn load(
        &self,
        reader: &mut dyn Reader,
        settings: &StreamedImageSettings,
        load_context: &mut LoadContext<'_>,
    ) -> Result<Image, StreamedLoadError> {
        let path = load_context.path().clone();
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .await
            .map_err(|source| StreamedLoadError::Read {
                path: path.to_string(),
                source,
            })?;
        let file = TextureFile::open(Arc::new(MemorySource::new(path.to_string(), bytes)))
            .map_err(|e| StreamedLoadError::Mipstream(e.to_string()))?;
        let class = match settings.class {
            ImageClass::Color => TextureClass::Color,
            ImageClass::Normal => TextureClass::Normal,
            ImageClass::Data => TextureClass::Data,
        };
        let desc = TextureDesc::new(file)
            .with_class(class)
            .with_priority(settings.priority)
            .with_normal_layout(NormalLayout::RedGreen)
            .with_label(path.to_string());
        let prepared = self
            .preparer
            .prepare(desc)
            .map_err(|e| StreamedLoadError::Mipstream(e.to_string()))?;
        let _ = self.sender.send((path, prepared));
        Ok(placeholder(settings))
    }

    fn extensions(&self) -> &[&str] {
        &["ktx2"]
    }
}

/// What Bevy prepares before mipstream's texture replaces it: one texel
/// (grey, or a flat normal), with the settings' sampler.
pub(crate) fn placeholder(settings: &StreamedImageSettings) -> Image {
    let (texel, format) = match settings.class {
        ImageClass::Color => ([128, 128, 128, 255], TextureFormat::Rgba8UnormSrgb),
        ImageClass::Normal => ([128, 128, 255, 255], TextureFormat::Rgba8Unorm),
        ImageClass::Data => ([255, 128, 0, 255], TextureFormat::Rgba8Unorm),
    };
    let mut image = Image::new_fill(
        Extent3d {
            width: 1,
            height: 1,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        &texel,
        format,
        RenderAssetUsages::RENDER_WORLD,
    );
    image.sampler = settings.sampler.clone();
    image
}

/// Registers the textures whose image assets arrived, and unregisters
/// those whose images were removed.
pub(crate) fn register_loaded(
    mut ms: ResMut<Mipstream>,
    mut inbox: ResMut<Inbox>,
    mut events: MessageReader<AssetEvent<Image>>,
    server: Res<AssetServer>,
) {
    let t0 = std::time::Instant::now();
    let inbox = &mut *inbox;
    // a new frame: the last one's time was recorded
    ms.frame_time = std::time::Duration::ZERO;
    ms.removed.clear();
    for (path, prepared) in inbox
        .receiver
        .get_mut()
        .unwrap_or_else(|e| e.into_inner())
        .try_iter()
    {
        inbox.pending.insert(path, prepared);
    }
    let ms = &mut *ms;
    for event in events.read() {
        match *event {
            AssetEvent::Added { id } | AssetEvent::Modified { id } => {
                let Some(path) = server.get_path(id) else {
                    continue;
                };
                let Some(prepared) = inbox.pending.remove(&path.into_owned()) else {
                    continue;
                };
                // a reload: the old texture goes (the render world and
                // the objects hear of it as of a removal)
                ms.forget_image(id);
                match ms.streamer.register_prepared(prepared) {
                    Ok(texture) => ms.record_image(id, texture),
                    Err(e) => error!("mipstream: {e}"),
                }
            }
            AssetEvent::Removed { id } => ms.forget_image(id),
            _ => {}
        }
    }
    ms.frame_time += t0.elapsed();
}
