// The minimal scene renderer: axis-aligned boxes, one texture each, tiled by
// the box size, with a fixed sun and ambient light. Mode 1 is the mip heatmap:
// each box tinted by how far its texture's resident mip is from the one the
// views want (green: as wanted, yellow: 1 coarser, red: 2 or more coarser,
// blue: finer than needed). Mode 2 is for diagnostics: each pixel's texture
// (red and green: its index + 1, written so the sRGB target stores exactly
// those bytes; blue 0) and, in alpha, the lod the sampler picks from the
// texture's level 0 view, as (lod + 8) / 32.

struct Globals {
    view_proj: mat4x4<f32>,
    light: vec4<f32>,
    // x: mode (0 normal, 1 heatmap, 2 texture index and lod); y: 1 to
    // report GPU feedback (the feedback module is appended to this source
    // at group 2, binding 0)
    mode: vec4<u32>,
}

@group(0) @binding(0) var<uniform> g: Globals;
@group(0) @binding(1) var samp: sampler;
@group(1) @binding(0) var tex: texture_2d<f32>;

struct VsIn {
    @location(0) pos: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) uv: vec2<f32>,
    @location(3) center: vec3<f32>,
    @location(4) size: vec3<f32>,
    // x: world units per texture repeat, y: resident mip - wanted mip,
    // z: highlight (mode 2: the texture's index + 1)
    @location(5) extra: vec3<f32>,
    // GPU feedback: the texture's slot, its full-resolution width and height
    @location(6) feedback: vec3<f32>,
}

struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) uv: vec2<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) extra: vec3<f32>,
    @location(3) @interpolate(flat) feedback: vec3<f32>,
}

@vertex
fn vs(v: VsIn) -> VsOut {
    let world = v.center + v.pos * v.size;
    let n = abs(v.normal);
    var extent = vec2<f32>(v.size.x, v.size.y);
    if n.x > 0.5 {
        extent = vec2<f32>(v.size.z, v.size.y);
    } else if n.y > 0.5 {
        extent = vec2<f32>(v.size.x, v.size.z);
    }
    var out: VsOut;
    out.clip = g.view_proj * vec4<f32>(world, 1.0);
    out.uv = v.uv * extent / v.extra.x;
    out.normal = v.normal;
    out.extra = v.extra;
    out.feedback = v.feedback;
    return out;
}

fn heat(delta: f32) -> vec3<f32> {
    if delta < -0.5 {
        return vec3<f32>(0.2, 0.4, 1.0);
    }
    if delta < 0.5 {
        return vec3<f32>(0.15, 0.85, 0.2);
    }
    if delta < 1.5 {
        return vec3<f32>(1.0, 0.9, 0.1);
    }
    if delta < 2.5 {
        return vec3<f32>(1.0, 0.5, 0.05);
    }
    return vec3<f32>(1.0, 0.08, 0.05);
}

// The linear value an sRGB target stores as the byte `b`.
fn srgb_byte(b: f32) -> f32 {
    let c = b / 255.0;
    if c <= 0.04045 {
        return c / 12.92;
    }
    return pow((c + 0.055) / 1.055, 2.4);
}

@fragment MIPSTREAM_EARLY_DEPTH
fn fs(f: VsOut) -> @location(0) vec4<f32> {
    let c = textureSample(tex, samp, f.uv);
    if g.mode.y == 1u {
        // the trilinear sampler: no anisotropy, no bias
        mipstream_feedback(u32(f.feedback.x + 0.5), f.uv, f.feedback.yz, 1.0, 0.0, f.clip);
    }
    if g.mode.x == 2u {
        let texels = f.uv * vec2<f32>(textureDimensions(tex, 0));
        let rho = max(length(dpdx(texels)), length(dpdy(texels)));
        let lod = log2(max(rho, 1e-6));
        let id = u32(f.extra.z + 0.5);
        let a = clamp((lod + 8.0) / 32.0, 0.0, 1.0);
        return vec4<f32>(srgb_byte(f32(id & 255u)), srgb_byte(f32(id >> 8u)), 0.0, a);
    }
    let sun = max(dot(normalize(f.normal), normalize(g.light.xyz)), 0.0);
    var rgb = c.rgb * (0.35 + 0.65 * sun);
    if g.mode.x == 1u {
        let luma = dot(c.rgb, vec3<f32>(0.3, 0.59, 0.11));
        rgb = heat(f.extra.y) * (0.45 + 0.55 * luma) * (0.6 + 0.4 * sun);
    }
    if f.extra.z > 0.5 {
        rgb = mix(rgb, vec3<f32>(1.0, 0.0, 1.0), 0.45);
    }
    return vec4<f32>(rgb, 1.0);
}
