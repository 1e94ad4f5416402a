// mipstream GPU feedback: what the fragment shaders really sample, per
// streamed texture. An engine puts this source into its own shader
// (`mipstream::gpu::feedback::wgsl(group, binding)` writes its bind group and
// binding in), binds `Streamer::feedback_buffer()` there, and calls
// `mipstream_feedback` from each fragment shader that samples a streamed
// texture, in uniform control flow (it takes derivatives), before any
// discard.
//
// Five words per texture slot (the `TextureId::index()` the engine passes):
//   0: the finest lod sampled this frame, as 1 + (32 - lod) * 64, atomicMax
//      (0: not sampled); lod in levels of the texture's full-resolution
//      level 0, the sampler's own formula (anisotropy and bias included),
//      kept in [-16, 32] (below 0 the texture is magnified: the sampler uses
//      level 0, and the planner still learns how far below it is);
//   1: pixels that sampled it (each reporting pixel adds 4: one pixel in four
//      reports, the one at even x and even y);
//   2, 3: 64 bits, an 8x8 grid over the texture's [0, 1) uv square (wrapped):
//      a bit is set where a pixel sampled within one level of the finest lod
//      reported so far in that frame;
//   4: the sum over reporting pixels of (lod + 8) * 8, lod kept in [-8, 24]
//      (at most 256 a pixel: 16 million reporting pixels, 67 million sampling
//      pixels, before it wraps), from which the pixels' mean lod.
// Slots beyond the buffer are ignored. Writing storage turns early depth
// testing off: the entry point calling this should carry
// `@early_depth_test(force)` (feature SHADER_EARLY_DEPTH_TEST: Vulkan, GLES
// 3.1) or come after a depth prepass, so hidden fragments do not report.

@group(MIPSTREAM_FEEDBACK_GROUP) @binding(MIPSTREAM_FEEDBACK_BINDING)
var<storage, read_write> mipstream_feedback_words: array<atomic<u32>>;

const MIPSTREAM_FEEDBACK_MAX_LOD: f32 = 32.0;
const MIPSTREAM_FEEDBACK_MIN_LOD: f32 = -16.0;
const MIPSTREAM_FEEDBACK_WORDS: u32 = 5u;

// The lod a trilinear (max_anisotropy 1) or anisotropic sampler picks at this
// pixel for a texture of `size` texels at level 0 (the full-resolution size,
// not the resident copy's), with `bias` added: log2 of the footprint's major
// axis over the anisotropy used, as the Vulkan and GL specifications
// approximate it.
fn mipstream_feedback_lod(uv: vec2<f32>, size: vec2<f32>, max_anisotropy: f32, bias: f32) -> f32 {
    let dx = dpdx(uv) * size;
    let dy = dpdy(uv) * size;
    let px = dot(dx, dx);
    let py = dot(dy, dy);
    let major = max(px, py);
    let minor = max(min(px, py), 1e-20);
    let n = clamp(ceil(sqrt(major / minor)), 1.0, max(max_anisotropy, 1.0));
    return 0.5 * log2(max(major, 1e-20)) - log2(n) + bias;
}

// Reports that this pixel samples texture `slot` at `uv`; `size` is the
// texture's full-resolution size, `max_anisotropy` and `bias` its sampler's.
fn mipstream_feedback(slot: u32, uv: vec2<f32>, size: vec2<f32>, max_anisotropy: f32, bias: f32, frag_coord: vec4<f32>) {
    let lod = clamp(mipstream_feedback_lod(uv, size, max_anisotropy, bias), MIPSTREAM_FEEDBACK_MIN_LOD, MIPSTREAM_FEEDBACK_MAX_LOD);
    let pixel = vec2<u32>(frag_coord.xy);
    let base = slot * MIPSTREAM_FEEDBACK_WORDS;
    if (pixel.x & 1u) != 0u || (pixel.y & 1u) != 0u || base + MIPSTREAM_FEEDBACK_WORDS > arrayLength(&mipstream_feedback_words) {
        return;
    }
    let key = 1u + u32((MIPSTREAM_FEEDBACK_MAX_LOD - lod) * 64.0);
    let before = atomicMax(&mipstream_feedback_words[base], key);
    atomicAdd(&mipstream_feedback_words[base + 1u], 4u);
    atomicAdd(&mipstream_feedback_words[base + 4u], u32((clamp(lod, -8.0, 24.0) + 8.0) * 8.0 + 0.5));
    let finest = MIPSTREAM_FEEDBACK_MAX_LOD - f32(max(before, key) - 1u) / 64.0;
    if lod <= finest + 1.0 {
        let cell = min(vec2<u32>(fract(uv) * 8.0), vec2<u32>(7u));
        let bit = cell.y * 8u + cell.x;
        if bit < 32u {
            atomicOr(&mipstream_feedback_words[base + 2u], 1u << bit);
        } else {
            atomicOr(&mipstream_feedback_words[base + 3u], 1u << (bit - 32u));
        }
    }
}
