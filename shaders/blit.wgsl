// Copies the viewer's offscreen frame (sRGB texture, sampled as linear) to
// the window's surface. `fs` suits an sRGB surface (the hardware encodes);
// `fs_encode` encodes to sRGB by hand for a surface without an sRGB format.

@group(0) @binding(0) var frame: texture_2d<f32>;
@group(0) @binding(1) var samp: sampler;

struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) uv: vec2<f32>,
}

@vertex
fn vs(@builtin(vertex_index) i: u32) -> VsOut {
    // one triangle covering the screen
    let uv = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u));
    var out: VsOut;
    out.clip = vec4<f32>(uv * vec2<f32>(2.0, -2.0) + vec2<f32>(-1.0, 1.0), 0.0, 1.0);
    out.uv = uv;
    return out;
}

@fragment
fn fs(v: VsOut) -> @location(0) vec4<f32> {
    return textureSample(frame, samp, v.uv);
}

fn encode(c: f32) -> f32 {
    if c <= 0.0031308 {
        return c * 12.92;
    }
    return 1.055 * pow(c, 1.0 / 2.4) - 0.055;
}

@fragment
fn fs_encode(v: VsOut) -> @location(0) vec4<f32> {
    let c = textureSample(frame, samp, v.uv);
    return vec4<f32>(encode(c.r), encode(c.g), encode(c.b), c.a);
}
