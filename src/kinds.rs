//! The words every layer shares: what a texture is for ([`TextureClass`])
//! and which quality tier its resident levels are in ([`Tier`]). A leaf: it
//! imports nothing of mipstream, so the planner can use them without the
//! transcoder.

/// What a texture is used for: decides its target format and channel layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TextureClass {
    /// Colour (albedo, emissive, UI): perceptual error matters.
    #[default]
    Color,
    /// Tangent-space normal map: X and Y matter, Z is reconstructed.
    Normal,
    /// Other linear data (roughness, masks, heights).
    Data,
}

/// Quality tier of a texture's resident data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Tier {
    /// The best format the adapter offers (e.g. BC7, 8 bits per texel).
    #[default]
    Full,
    /// A lower-bit format (e.g. BC1, 4 bits per texel), for memory pressure.
    Compact,
}
