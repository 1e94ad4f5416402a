// The minimal glTF material renderer: base colour (texture times factor), a
// tangent-space normal map in any of mipstream's channel layouts, one sun and
// a hemisphere ambient, linear light out to an sRGB target. Enough to judge
// what a LOD or a mip costs a picture, not a PBR renderer. GPU feedback's
// module (`mipstream::gpu::feedback::wgsl(3, 0)`) is appended to this source.

struct Globals {
    view_proj: mat4x4<f32>,
    eye: vec4<f32>,
    sun: vec4<f32>,
    // x: 1 to report GPU feedback; y: an id pass (1: each pixel's base
    // colour texture and lod, 2: its normal map's; 0: shade)
    flags: vec4<u32>,
}

struct Draw {
    model: mat4x4<f32>,
    // the inverse transpose of the model's upper 3x3, in three columns
    normal0: vec4<f32>,
    normal1: vec4<f32>,
    normal2: vec4<f32>,
    // x: dither fade (0 off; > 0 draw where the dither is below it; < 0 draw
    // where it is at or above -fade), yzw unused
    fade: vec4<f32>,
}

struct Material {
    base_color: vec4<f32>,
    // x: normal scale, y: normal layout (0 none, 1 as authored, 2 RG, 3 RA),
    // z: alpha cutoff (0: opaque)
    params: vec4<f32>,
    // GPU feedback: x: the base colour texture's slot + 1 (0: not
    // streamed), yz: its full-resolution size; w: the normal map's slot + 1
    feedback: vec4<f32>,
    // xy: the normal map's full-resolution size
    feedback_normal: vec4<f32>,
}

@group(0) @binding(0) var<uniform> g: Globals;
@group(0) @binding(1) var samp: sampler;
@group(1) @binding(0) var<uniform> d: Draw;
@group(2) @binding(0) var<uniform> m: Material;
@group(2) @binding(1) var base_tex: texture_2d<f32>;
@group(2) @binding(2) var normal_tex: texture_2d<f32>;

struct VsIn {
    @location(0) pos: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) uv: vec2<f32>,
    @location(3) tangent: vec4<f32>,
}

struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) uv: vec2<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) tangent: vec4<f32>,
}

@vertex
fn vs(v: VsIn) -> VsOut {
    let world = d.model * vec4<f32>(v.pos, 1.0);
    let nm = mat3x3<f32>(d.normal0.xyz, d.normal1.xyz, d.normal2.xyz);
    let m3 = mat3x3<f32>(d.model[0].xyz, d.model[1].xyz, d.model[2].xyz);
    var out: VsOut;
    out.clip = g.view_proj * world;
    out.uv = v.uv;
    out.normal = nm * v.normal;
    out.tangent = vec4<f32>(m3 * v.tangent.xyz, v.tangent.w);
    return out;
}

// 4x4 ordered dither in [0, 1)
fn bayer(p: vec2<u32>) -> f32 {
    let m = array<f32, 16>(0.0, 8.0, 2.0, 10.0, 12.0, 4.0, 14.0, 6.0,
                           3.0, 11.0, 1.0, 9.0, 15.0, 7.0, 13.0, 5.0);
    return (m[(p.y % 4u) * 4u + (p.x % 4u)] + 0.5) / 16.0;
}

// Reports what this fragment samples (before any discard: the call takes
// derivatives; the conditions are uniform). The trilinear sampler: no
// anisotropy, no bias.
fn report(f: VsOut) {
    if g.flags.x == 1u {
        if m.feedback.x > 0.5 {
            mipstream_feedback(u32(m.feedback.x - 0.5), f.uv, m.feedback.yz, 1.0, 0.0, f.clip);
        }
        if m.feedback.w > 0.5 && m.params.y > 0.5 {
            mipstream_feedback(u32(m.feedback.w - 0.5), f.uv, m.feedback_normal.xy, 1.0, 0.0, f.clip);
        }
    }
}

// The linear value an sRGB target stores as the byte `b`.
fn srgb_byte(b: f32) -> f32 {
    let c = b / 255.0;
    if c <= 0.04045 {
        return c / 12.92;
    }
    return pow((c + 0.055) / 1.055, 2.4);
}

// An id pass's pixel: the streamed texture's slot + 1 in red and green
// (0: none), 0 in blue, and in alpha the lod the trilinear sampler picks of
// its full-resolution level 0, (lod + 8) / 32 (the box renderer's
// `TexturePixel` encoding; the target is sRGB, so the bytes are inverted).
fn ids(f: VsOut) -> vec4<f32> {
    var slot = 0u;
    var size = m.feedback.yz;
    if g.flags.y == 1u {
        slot = u32(max(m.feedback.x, 0.0) + 0.5);
    } else if m.params.y > 0.5 {
        slot = u32(max(m.feedback.w, 0.0) + 0.5);
        size = m.feedback_normal.xy;
    }
    let lod = mipstream_feedback_lod(f.uv, max(size, vec2<f32>(1.0)), 1.0, 0.0);
    if slot == 0u {
        return vec4<f32>(0.0);
    }
    let a = clamp((lod + 8.0) / 32.0, 0.0, 1.0);
    return vec4<f32>(srgb_byte(f32(slot & 255u)), srgb_byte(f32(slot >> 8u)), 0.0, a);
}

// The opaque pipeline's entry point forces early depth tests where the
// device can (nothing in it discards: the renderer draws masked materials
// and dithered cross-fades with the other pipeline, entry point `fs`).
@fragment MIPSTREAM_EARLY_DEPTH
fn fs_opaque(f: VsOut) -> @location(0) vec4<f32> {
    report(f);
    if g.flags.y != 0u {
        return ids(f);
    }
    return shade(f, textureSample(base_tex, samp, f.uv) * m.base_color);
}

@fragment
fn fs(f: VsOut) -> @location(0) vec4<f32> {
    report(f);
    // (before any discard: the id takes derivatives; the condition is uniform)
    var id = vec4<f32>(0.0);
    if g.flags.y != 0u {
        id = ids(f);
    }
    let fade = d.fade.x;
    if fade != 0.0 {
        let t = bayer(vec2<u32>(f.clip.xy));
        if (fade > 0.0 && t >= fade) || (fade < 0.0 && t < -fade) {
            discard;
        }
    }
    let c = textureSample(base_tex, samp, f.uv) * m.base_color;
    if m.params.z > 0.0 && c.a < m.params.z {
        discard;
    }
    if g.flags.y != 0u {
        return id;
    }
    return shade(f, c);
}

// The lit colour of a fragment whose base colour is `c`.
fn shade(f: VsOut, c: vec4<f32>) -> vec4<f32> {
    var n = normalize(f.normal);
    let nlayout = u32(m.params.y);
    let t_len = length(f.tangent.xyz);
    if nlayout != 0u && t_len > 1e-6 {
        let s = textureSample(normal_tex, samp, f.uv);
        var xy = s.xy * 2.0 - 1.0;
        var z = s.z * 2.0 - 1.0;
        if nlayout == 3u {
            xy = vec2<f32>(s.r, s.a) * 2.0 - 1.0;
        }
        if nlayout >= 2u {
            z = sqrt(max(1.0 - dot(xy, xy), 0.0));
        }
        let tn = normalize(vec3<f32>(xy * m.params.x, z));
        let t = normalize(f.tangent.xyz - n * dot(n, f.tangent.xyz));
        let b = cross(n, t) * f.tangent.w;
        n = normalize(t * tn.x + b * tn.y + n * tn.z);
    }
    let sun = max(dot(n, normalize(g.sun.xyz)), 0.0);
    let sky = 0.5 + 0.5 * n.y;
    let light = 0.9 * sun + mix(0.12, 0.35, sky);
    return vec4<f32>(c.rgb * light, 1.0);
}
