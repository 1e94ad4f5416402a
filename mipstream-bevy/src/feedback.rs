//! GPU feedback in Bevy: what Bevy's frames really sample, per streamed
//! texture, fused into mipstream's plan ([`crate::MipstreamPlugin::feedback`]).
//!
//! Nothing changes in how a scene is written: entities keep their
//! `MeshMaterial3d<StandardMaterial>`. Every entity whose material samples
//! a streamed image also gets a `MeshMaterial3d<FeedbackMaterial>` the
//! plugin makes and keeps in step (one per `StandardMaterial`): a second
//! draw of the same mesh in Bevy's transparent phase, after every opaque
//! and alpha-masked draw, that writes no colour and no depth and passes
//! only where its depth equals what the frame kept (`CompareFunction::Equal`,
//! with the early depth test forced where the device has
//! `SHADER_EARLY_DEPTH_TEST`). So only the fragments Bevy's frame shows
//! report, hidden ones never, with no depth prepass; alpha-masked
//! materials report exactly where their discard kept a fragment (the
//! discarded ones wrote no depth), which an engine's own material shader
//! could not do with the early test forced. Blended (transparent)
//! materials write no depth and report nothing.
//!
//! Why a second draw rather than an extended `StandardMaterial`: Bevy
//! 0.20's `ExtendedMaterial` would make users change every material's type
//! (and every query on it), and the feedback's storage writes in the main
//! pass would turn its early depth test off. The cost is a second vertex
//! pass over the streamed meshes and one fragment per visible pixel whose
//! five calls (one per `StandardMaterial` texture slot that streams) add
//! atomics for one pixel in four.
//!
//! After Bevy's cameras have recorded their frame, the plugin records the
//! readback (`mipstream::gpu::feedback::FeedbackRecorder`) into the same
//! submission: the streamer takes it, without waiting, a frame or two
//! later, and its planner fuses it (`PlannerOptions::fuse_feedback`).

use crate::Mipstream;
use bevy::asset::uuid_handle;
use bevy::camera::visibility::RenderLayers;
use bevy::core_pipeline::schedule::camera_driver;
use bevy::mesh::MeshVertexBufferLayoutRef;
use bevy::pbr::{Material, MaterialPipeline, MaterialPipelineKey, MaterialPlugin, MeshMaterial3d};
use bevy::prelude::*;
use bevy::render::camera::SortedCameras;
use bevy::render::render_resource::{
    AsBindGroup, Buffer, CachedPipelineState, ColorWrites, CompareFunction, PipelineCache,
    RenderPipelineDescriptor, ShaderType, SpecializedMeshPipelineError,
};
use bevy::render::renderer::{
    PendingCommandBuffers, RenderDevice, RenderGraph, RenderGraphSystems,
};
use bevy::render::{Extract, ExtractSchedule};
use bevy::shader::{Shader, ShaderRef};
use mipstream::gpu::feedback::FeedbackRecorder;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// The feedback shaders, by (early depth test forced, UV sets the mesh
/// has: none, the first, both).
const SHADERS: [[Handle<Shader>; 3]; 2] = [
    [
        uuid_handle!("6a0f3c1e-5d2b-4f7a-9c84-1b2e3d4f5a60"),
        uuid_handle!("6a0f3c1e-5d2b-4f7a-9c84-1b2e3d4f5a61"),
        uuid_handle!("6a0f3c1e-5d2b-4f7a-9c84-1b2e3d4f5a62"),
    ],
    [
        uuid_handle!("6a0f3c1e-5d2b-4f7a-9c84-1b2e3d4f5a63"),
        uuid_handle!("6a0f3c1e-5d2b-4f7a-9c84-1b2e3d4f5a64"),
        uuid_handle!("6a0f3c1e-5d2b-4f7a-9c84-1b2e3d4f5a65"),
    ],
];

/// Whether the device forces early depth tests (set when the plugin
/// finishes; `Material::specialize` has no device to ask).
static EARLY_DEPTH: AtomicBool = AtomicBool::new(false);

/// Texture slots the feedback buffer starts with; it doubles when a
/// registered texture's index passes it.
const FIRST_SLOTS: u32 = 64;

/// `StandardMaterial`'s texture slots the feedback reports, in the order
/// of [`FeedbackParams::slots`].
const SLOTS: usize = 5;

/// What the feedback shader needs of one `StandardMaterial`.
#[derive(ShaderType, Debug, Clone, Copy, PartialEq)]
pub struct FeedbackParams {
    /// The material's `uv_transform`.
    uv_transform: Mat3,
    /// The streamed texture's slot (`TextureId::index()`) of base colour,
    /// normal map, metallic-roughness, occlusion and emissive, in the first
    /// five lanes; `u32::MAX` where that slot is empty or not streamed.
    slots: [UVec4; 2],
    /// Per slot: the texture's full-resolution width and height, the
    /// sampler's maximum anisotropy, and 1 where it reads the second UV set.
    textures: [Vec4; SLOTS],
}

/// The feedback-only draw of a streamed mesh
/// ([`crate::MipstreamPlugin::feedback`]): each entity whose
/// `StandardMaterial` samples a streamed image gets a child wearing the one
/// made for that material ([`FeedbackDraw`]).
#[derive(Asset, AsBindGroup, TypePath, Debug, Clone)]
pub struct FeedbackMaterial {
    #[uniform(0)]
    params: FeedbackParams,
    #[storage(1, buffer)]
    words: Buffer,
}

impl Material for FeedbackMaterial {
    fn fragment_shader() -> ShaderRef {
        ShaderRef::Handle(SHADERS[0][0].clone())
    }

    // the transparent phase: drawn after every opaque and masked draw
    fn alpha_mode(&self) -> AlphaMode {
        AlphaMode::Blend
    }

    fn enable_prepass() -> bool {
        false
    }

    fn enable_shadows() -> bool {
        false
    }

    fn enable_oit() -> bool {
        false
    }

    fn specialize(
        _pipeline: &MaterialPipeline,
        descriptor: &mut RenderPipelineDescriptor,
        layout: &MeshVertexBufferLayoutRef,
        _key: MaterialPipelineKey<Self>,
    ) -> Result<(), SpecializedMeshPipelineError> {
        descriptor.label = Some("mipstream_feedback_pipeline".into());
        if let Some(fragment) = descriptor.fragment.as_mut() {
            let early = usize::from(EARLY_DEPTH.load(Ordering::Relaxed));
            let uvs = if !layout.0.contains(Mesh::ATTRIBUTE_UV_0) {
                0
            } else if layout.0.contains(Mesh::ATTRIBUTE_UV_1) {
                2
            } else {
                1
            };
            fragment.shader = SHADERS[early][uvs].clone();
            for target in fragment.targets.iter_mut().flatten() {
                target.blend = None;
                target.write_mask = ColorWrites::empty();
            }
        }
        if let Some(depth) = descriptor.depth_stencil.as_mut() {
            depth.depth_write_enabled = Some(false);
            depth.depth_compare = Some(CompareFunction::Equal);
        }
        Ok(())
    }
}

/// The shader: `mipstream::gpu::feedback::FEEDBACK_WGSL` at the material's
/// bind group, binding 1, called for each streamed slot. Plain WGSL, not
/// Bevy's WESL: WESL 0.6 refuses naga's `@early_depth_test(force)`. So it
/// declares the part of Bevy's `VertexOutput` it reads (`uvs`: none, the
/// first set, both), and the sampler's lod bias is taken as 0 (Bevy sets
/// `MipBias` only for temporal upscalers).
fn shader_source(early: bool, uvs: usize) -> String {
    let group = bevy::pbr::MATERIAL_BIND_GROUP_INDEX;
    let module = mipstream::gpu::feedback::wgsl(group as u32, 1);
    let attribute = if early {
        "@early_depth_test(force)"
    } else {
        ""
    };
    let (inputs, body) = match uvs {
        0 => ("", ""),
        1 => (
            "@location(2) uv: vec2<f32>,",
            "let uv_a = in.uv;\n    let uv_b = in.uv;",
        ),
        _ => (
            "@location(2) uv: vec2<f32>,\n    @location(3) uv_b: vec2<f32>,",
            "let uv_a = in.uv;\n    let uv_b = in.uv_b;",
        ),
    };
    let report = if uvs == 0 {
        String::new()
    } else {
        format!(
            r#"{body}
    for (var i = 0u; i < {SLOTS}u; i += 1u) {{
        let slot = mipstream_params.slots[i / 4u][i % 4u];
        let t = mipstream_params.textures[i];
        var uv = uv_a;
        if t.w > 0.5 {{
            uv = uv_b;
        }}
        uv = (mipstream_params.uv_transform * vec3<f32>(uv, 1.0)).xy;
        // uniform control flow: the slot is the material's, for every pixel
        if slot != 0xffffffffu {{
            mipstream_feedback(slot, uv, t.xy, t.z, 0.0, in.position);
        }}
    }}"#
        )
    };
    format!(
        r#"{module}

struct MipstreamFeedbackParams {{
    uv_transform: mat3x3<f32>,
    slots: array<vec4<u32>, 2>,
    textures: array<vec4<f32>, {SLOTS}>,
}}

@group({group}) @binding(0)
var<uniform> mipstream_params: MipstreamFeedbackParams;

// what the feedback reads of Bevy's `VertexOutput` (bevy_pbr's forward_io)
struct MipstreamVertexOutput {{
    @builtin(position) position: vec4<f32>,
    {inputs}
}}

@fragment
{attribute}
fn fragment(in: MipstreamVertexOutput) -> @location(0) vec4<f32> {{
    {report}
    return vec4<f32>(0.0);
}}
"#
    )
}

/// The plugin's feedback state in the main world.
#[derive(Resource, Default)]
pub(crate) struct FeedbackMaterials {
    /// The feedback buffer's texture slots now.
    slots: u32,
    /// Per `StandardMaterial`: its feedback material and what it was made from.
    made: HashMap<AssetId<StandardMaterial>, (Handle<FeedbackMaterial>, FeedbackParams)>,
    /// [`Mipstream::images_changed_since`] at the last visit of every entity.
    images_seen: u64,
}

pub(crate) fn build(app: &mut App) {
    app.add_plugins(MaterialPlugin::<FeedbackMaterial>::default());
}

/// Turns feedback on in the streamer, loads the shaders, and adds the
/// systems of both worlds.
pub(crate) fn finish(app: &mut App) {
    let early = app
        .world()
        .resource::<RenderDevice>()
        .features()
        .contains(bevy::render::settings::WgpuFeatures::SHADER_EARLY_DEPTH_TEST);
    EARLY_DEPTH.store(early, Ordering::Relaxed);
    let mut shaders = app.world_mut().resource_mut::<Assets<Shader>>();
    for (early, variants) in SHADERS.iter().enumerate() {
        for (uvs, handle) in variants.iter().enumerate() {
            let source = shader_source(early == 1, uvs);
            let path = format!("mipstream_bevy/feedback_{early}_{uvs}.wgsl");
            let _ = shaders.insert(handle.id(), Shader::from_wgsl(source, path));
        }
    }
    app.world_mut()
        .resource_mut::<Mipstream>()
        .streamer
        .enable_feedback(FIRST_SLOTS);
    app.insert_resource(FeedbackMaterials {
        slots: FIRST_SLOTS,
        made: HashMap::new(),
        images_seen: 0,
    });
    if let Some(render_app) = app.get_sub_app_mut(bevy::render::RenderApp) {
        render_app
            .init_resource::<RenderFeedback>()
            .add_systems(ExtractSchedule, extract)
            .add_systems(
                RenderGraph,
                record
                    .in_set(RenderGraphSystems::Render)
                    .after(camera_driver),
            );
    }
}

/// What a material's feedback draw reports, from the streamer's textures.
fn params(ms: &Mipstream, m: &StandardMaterial) -> FeedbackParams {
    let textures = crate::material_slots(m);
    let mut slots = [u32::MAX; 8];
    let mut sizes = [Vec4::ZERO; SLOTS];
    for (i, (image, channel)) in textures.into_iter().enumerate() {
        let Some(id) = image.as_ref().and_then(|h| ms.texture_id(h)) else {
            continue;
        };
        let Ok(info) = ms.streamer.texture_info(id) else {
            continue;
        };
        slots[i] = id.index() as u32;
        let uv_b = *channel == bevy::mesh::UvChannel::Uv1;
        // Bevy's default sampler: trilinear, no anisotropy
        sizes[i] = Vec4::new(
            info.width as f32,
            info.height as f32,
            1.0,
            f32::from(u8::from(uv_b)),
        );
    }
    FeedbackParams {
        uv_transform: m.uv_transform.into(),
        slots: [
            UVec4::from_slice(&slots[..4]),
            UVec4::from_slice(&slots[4..]),
        ],
        textures: sizes,
    }
}

/// On an entity whose `StandardMaterial` samples a streamed image: the
/// child entity that draws its feedback.
#[derive(Component, Debug, Clone, Copy)]
pub struct FeedbackDraw(pub Entity);

/// The child entity drawing its parent's feedback (same mesh, identity
/// transform, [`FeedbackMaterial`]). A child rather than a second material
/// on the entity: Bevy keeps one material instance per entity.
#[derive(Component, Debug, Clone, Copy)]
pub struct FeedbackDrawOf;

/// An entity drawing a `StandardMaterial`, as the feedback sees it.
type Worn<'a> = (
    Entity,
    &'a MeshMaterial3d<StandardMaterial>,
    &'a Mesh3d,
    Option<&'a FeedbackDraw>,
    Option<&'a RenderLayers>,
);

/// What makes an entity's feedback draw change: its mesh (a streamed
/// mesh's LOD switch), its material, its render layers.
type Rebind = Or<(
    Changed<Mesh3d>,
    Changed<MeshMaterial3d<StandardMaterial>>,
    Changed<RenderLayers>,
)>;

/// What `sync` sets on a feedback draw: its mesh, material and layers.
type DrawParts = (
    &'static mut Mesh3d,
    &'static mut MeshMaterial3d<FeedbackMaterial>,
    Option<&'static RenderLayers>,
);

/// The feedback draws alone.
type DrawsOnly = (
    With<FeedbackDrawOf>,
    Without<MeshMaterial3d<StandardMaterial>>,
);

/// Every entity whose `StandardMaterial` samples a streamed image has a
/// child drawing that material's feedback with the entity's current mesh
/// (a streamed mesh's LOD of this frame); the feedback buffer grows with
/// the registered textures. Only entities whose mesh, material or layers
/// changed are visited, unless an image started or stopped streaming, a
/// material asset changed, or the buffer grew: then every one is.
#[allow(clippy::too_many_arguments)] // a system's parameters
pub(crate) fn sync(
    mut commands: Commands,
    mut ms: ResMut<Mipstream>,
    mut state: ResMut<FeedbackMaterials>,
    standard: Res<Assets<StandardMaterial>>,
    mut feedback: ResMut<Assets<FeedbackMaterial>>,
    all: Query<Worn>,
    changed: Query<Worn, Rebind>,
    with_draw: Query<&FeedbackDraw>,
    mut draws: Query<DrawParts, DrawsOnly>,
    mut gone_material: RemovedComponents<MeshMaterial3d<StandardMaterial>>,
    mut gone_layers: RemovedComponents<RenderLayers>,
    mut material_events: MessageReader<AssetEvent<StandardMaterial>>,
) {
    let t0 = std::time::Instant::now();
    let needed = ms
        .images
        .values()
        .map(|t| t.index() as u32 + 1)
        .max()
        .unwrap_or(0);
    let mut full = false;
    if needed > state.slots {
        state.slots = needed.next_power_of_two();
        ms.streamer.enable_feedback(state.slots);
        // every feedback material binds the new buffer
        state.made.clear();
        full = true;
    }
    let Some(words) = ms.streamer.feedback_buffer().cloned() else {
        return;
    };
    full |= ms.images_changed_since(&mut state.images_seen);
    // a material loaded, changed or gone so that what it samples changed
    // (the plugin marks every material changed whose streamed image
    // swapped: those samples stay as they were)
    for event in material_events.read() {
        let (AssetEvent::Added { id }
        | AssetEvent::Modified { id }
        | AssetEvent::LoadedWithDependencies { id }
        | AssetEvent::Removed { id }) = *event
        else {
            continue;
        };
        let now = standard
            .get(id)
            .map(|m| params(&ms, m))
            .filter(|p| p.slots.iter().any(|s| *s != UVec4::MAX));
        full |= now.as_ref() != state.made.get(&id).map(|(_, p)| p);
    }
    // an entity that no longer draws a StandardMaterial draws no feedback
    for entity in gone_material.read() {
        if let Ok(&FeedbackDraw(child)) = with_draw.get(entity) {
            commands.entity(child).despawn();
            commands.entity(entity).remove::<FeedbackDraw>();
        }
    }
    let unlayered: Vec<Entity> = gone_layers.read().collect();
    let mut seen: HashMap<AssetId<StandardMaterial>, Option<Handle<FeedbackMaterial>>> =
        HashMap::new();
    let mut visit = |(entity, material, mesh, draw, layers): Worn<'_>| {
        let id = material.id();
        let handle = seen.entry(id).or_insert_with(|| {
            let m = standard.get(id)?;
            let p = params(&ms, m);
            if p.slots.iter().all(|s| *s == UVec4::MAX) {
                state.made.remove(&id);
                return None;
            }
            match state.made.get(&id) {
                Some((h, made)) if *made == p => Some(h.clone()),
                Some((h, _)) => {
                    let h = h.clone();
                    if let Some(mut f) = feedback.get_mut(&h) {
                        f.params = p;
                    }
                    state.made.insert(id, (h.clone(), p));
                    Some(h)
                }
                None => {
                    let h = feedback.add(FeedbackMaterial {
                        params: p,
                        words: Buffer::from(words.clone()),
                    });
                    state.made.insert(id, (h.clone(), p));
                    Some(h)
                }
            }
        });
        match (handle.as_ref(), draw.map(|d| d.0)) {
            (Some(h), Some(child)) => {
                if let Ok((mut m, mut f, child_layers)) = draws.get_mut(child) {
                    if m.id() != mesh.id() {
                        m.0 = mesh.0.clone();
                    }
                    if f.id() != h.id() {
                        f.0 = h.clone();
                    }
                    // the cameras that see the entity, and only they, see
                    // its feedback draw
                    if child_layers != layers {
                        match layers {
                            Some(l) => commands.entity(child).insert(l.clone()),
                            None => commands.entity(child).remove::<RenderLayers>(),
                        };
                    }
                }
            }
            (Some(h), None) => {
                let mut child = commands.spawn((
                    Mesh3d(mesh.0.clone()),
                    MeshMaterial3d(h.clone()),
                    Transform::IDENTITY,
                    ChildOf(entity),
                    FeedbackDrawOf,
                ));
                if let Some(l) = layers {
                    child.insert(l.clone());
                }
                let child = child.id();
                commands.entity(entity).insert(FeedbackDraw(child));
            }
            (None, Some(child)) => {
                commands.entity(child).despawn();
                commands.entity(entity).remove::<FeedbackDraw>();
            }
            (None, None) => {}
        }
    };
    if full {
        all.iter().for_each(&mut visit);
        // feedback materials of materials nothing wears any more
        state.made.retain(|id, _| seen.contains_key(id));
    } else {
        changed.iter().for_each(&mut visit);
        unlayered
            .iter()
            .filter(|&&e| !changed.contains(e))
            .filter_map(|&e| all.get(e).ok())
            .for_each(&mut visit);
    }
    ms.frame_time += t0.elapsed();
}

/// The recorder and the frame it records, in the render world.
#[derive(Resource, Default)]
struct RenderFeedback {
    recorder: Option<FeedbackRecorder>,
    frame: u64,
}

fn extract(ms: Extract<Res<Mipstream>>, mut out: ResMut<RenderFeedback>) {
    out.recorder = ms.streamer.feedback_recorder();
    out.frame = ms.streamer.frame();
}

/// After every camera recorded its frame: the copy of what they reported,
/// submitted with them.
fn record(
    feedback: Res<RenderFeedback>,
    cameras: Res<SortedCameras>,
    pipelines: Res<PipelineCache>,
    device: Res<RenderDevice>,
    mut pending: ResMut<PendingCommandBuffers>,
) {
    let Some(recorder) = &feedback.recorder else {
        return;
    };
    // no camera drew: nothing was sampled, and "not seen" must not read
    // as hidden
    if cameras.0.is_empty() {
        return;
    }
    // while Bevy compiles pipelines in the background, the draws whose
    // pipeline is not ready are skipped: a feedback draw that did not run,
    // or an entity whose main draw wrote no depth for it to match, would
    // read as hidden, and the plan would let its textures go (FlightHelmet's
    // lit materials took 40 frames on lavapipe, and every texture read as
    // unseen until then)
    let compiling = pipelines.pipelines().any(|p| {
        matches!(
            p.state,
            CachedPipelineState::Queued | CachedPipelineState::Creating(_)
        )
    });
    if compiling {
        return;
    }
    let mut encoder = device
        .wgpu_device()
        .create_command_encoder(&Default::default());
    recorder.record(&mut encoder, feedback.frame);
    pending.push_encoder(encoder, "mipstream_feedback_readback");
}
