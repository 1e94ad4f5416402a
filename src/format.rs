//! GPU texel formats: the VkFormats a KTX2 file may carry as plain (non-Basis)
//! payloads, and the transcode targets Basis payloads turn into.
//!
//! [`PlainFormat`] describes one VkFormat mipstream can load: its block size,
//! bytes per block, the `wgpu::TextureFormat` it uploads as, and how the bytes
//! must be rearranged on the way (three-channel formats have no GPU equivalent
//! and are widened to four channels). Formats not in the table are refused with a
//! typed error naming the VkFormat, never guessed at.
//!
//! [`TargetFormat`] is what a Basis payload is transcoded into. Its bit rate is
//! what the residency planner trades against quality when it picks a tier.

use wgpu::TextureFormat as Tf;

/// How the bytes of a plain format are rearranged before upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expand {
    /// The bytes upload as they are.
    None,
    /// Three 8-bit channels `RGB` widened to `RGBA` with alpha 255.
    Rgb8,
    /// Three 8-bit channels `BGR` reordered and widened to `RGBA` with alpha 255.
    Bgr8,
}

/// A VkFormat that mipstream can load as a plain (non-Basis) payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlainFormat {
    /// The VkFormat value from the KTX2 header.
    pub vk_format: u32,
    /// The Vulkan name, without the `VK_FORMAT_` prefix.
    pub name: &'static str,
    /// Texel block width (1 for uncompressed formats).
    pub block_width: u32,
    /// Texel block height (1 for uncompressed formats).
    pub block_height: u32,
    /// Bytes per block as stored in the file.
    pub block_bytes: u32,
    /// The wgpu format the data uploads as (after [`Expand`]).
    pub gpu: Tf,
    /// How the stored bytes are rearranged for upload.
    pub expand: Expand,
    /// Whether the format stores sRGB-encoded colour.
    pub srgb: bool,
    /// Number of colour channels stored.
    pub channels: u32,
}

impl PlainFormat {
    /// Whether the format is block-compressed (block larger than one texel).
    pub fn is_compressed(&self) -> bool {
        self.block_width > 1 || self.block_height > 1
    }

    /// Bytes one image of `width` x `height` texels takes in the file.
    pub fn image_bytes(&self, width: u32, height: u32) -> u64 {
        let bx = width.div_ceil(self.block_width) as u64;
        let by = height.div_ceil(self.block_height) as u64;
        bx * by * self.block_bytes as u64
    }

    /// Looks up a VkFormat value. `None` when mipstream does not load it.
    pub fn from_vk(vk_format: u32) -> Option<Self> {
        PLAIN_FORMATS
            .iter()
            .copied()
            .find(|f| f.vk_format == vk_format)
    }
}

macro_rules! plain {
    ($vk:expr, $name:literal, $bw:expr, $bh:expr, $bytes:expr, $gpu:expr, $expand:ident, $srgb:expr, $ch:expr) => {
        PlainFormat {
            vk_format: $vk,
            name: $name,
            block_width: $bw,
            block_height: $bh,
            block_bytes: $bytes,
            gpu: $gpu,
            expand: Expand::$expand,
            srgb: $srgb,
            channels: $ch,
        }
    };
}

macro_rules! astc {
    ($vk:expr, $name:literal, $bw:expr, $bh:expr, $block:ident, $srgb:expr) => {
        PlainFormat {
            vk_format: $vk,
            name: $name,
            block_width: $bw,
            block_height: $bh,
            block_bytes: 16,
            gpu: Tf::Astc {
                block: wgpu::AstcBlock::$block,
                channel: if $srgb {
                    wgpu::AstcChannel::UnormSrgb
                } else {
                    wgpu::AstcChannel::Unorm
                },
            },
            expand: Expand::None,
            srgb: $srgb,
            channels: 4,
        }
    };
}

/// Every plain VkFormat mipstream loads.
pub const PLAIN_FORMATS: &[PlainFormat] = &[
    plain!(9, "R8_UNORM", 1, 1, 1, Tf::R8Unorm, None, false, 1),
    plain!(10, "R8_SNORM", 1, 1, 1, Tf::R8Snorm, None, false, 1),
    plain!(13, "R8_UINT", 1, 1, 1, Tf::R8Uint, None, false, 1),
    plain!(14, "R8_SINT", 1, 1, 1, Tf::R8Sint, None, false, 1),
    // wgpu has no R8 sRGB format: the texels upload unconverted as R8_UNORM and the
    // renderer applies the transfer function (reported as `srgb`).
    plain!(15, "R8_SRGB", 1, 1, 1, Tf::R8Unorm, None, true, 1),
    plain!(16, "R8G8_UNORM", 1, 1, 2, Tf::Rg8Unorm, None, false, 2),
    plain!(17, "R8G8_SNORM", 1, 1, 2, Tf::Rg8Snorm, None, false, 2),
    plain!(20, "R8G8_UINT", 1, 1, 2, Tf::Rg8Uint, None, false, 2),
    plain!(21, "R8G8_SINT", 1, 1, 2, Tf::Rg8Sint, None, false, 2),
    plain!(22, "R8G8_SRGB", 1, 1, 2, Tf::Rg8Unorm, None, true, 2),
    plain!(23, "R8G8B8_UNORM", 1, 1, 3, Tf::Rgba8Unorm, Rgb8, false, 3),
    plain!(
        29,
        "R8G8B8_SRGB",
        1,
        1,
        3,
        Tf::Rgba8UnormSrgb,
        Rgb8,
        true,
        3
    ),
    plain!(30, "B8G8R8_UNORM", 1, 1, 3, Tf::Rgba8Unorm, Bgr8, false, 3),
    plain!(
        36,
        "B8G8R8_SRGB",
        1,
        1,
        3,
        Tf::Rgba8UnormSrgb,
        Bgr8,
        true,
        3
    ),
    plain!(
        37,
        "R8G8B8A8_UNORM",
        1,
        1,
        4,
        Tf::Rgba8Unorm,
        None,
        false,
        4
    ),
    plain!(
        38,
        "R8G8B8A8_SNORM",
        1,
        1,
        4,
        Tf::Rgba8Snorm,
        None,
        false,
        4
    ),
    plain!(41, "R8G8B8A8_UINT", 1, 1, 4, Tf::Rgba8Uint, None, false, 4),
    plain!(42, "R8G8B8A8_SINT", 1, 1, 4, Tf::Rgba8Sint, None, false, 4),
    plain!(
        43,
        "R8G8B8A8_SRGB",
        1,
        1,
        4,
        Tf::Rgba8UnormSrgb,
        None,
        true,
        4
    ),
    plain!(
        44,
        "B8G8R8A8_UNORM",
        1,
        1,
        4,
        Tf::Bgra8Unorm,
        None,
        false,
        4
    ),
    plain!(
        50,
        "B8G8R8A8_SRGB",
        1,
        1,
        4,
        Tf::Bgra8UnormSrgb,
        None,
        true,
        4
    ),
    plain!(
        64,
        "A2B10G10R10_UNORM_PACK32",
        1,
        1,
        4,
        Tf::Rgb10a2Unorm,
        None,
        false,
        4
    ),
    plain!(70, "R16_UNORM", 1, 1, 2, Tf::R16Unorm, None, false, 1),
    plain!(74, "R16_UINT", 1, 1, 2, Tf::R16Uint, None, false, 1),
    plain!(76, "R16_SFLOAT", 1, 1, 2, Tf::R16Float, None, false, 1),
    plain!(77, "R16G16_UNORM", 1, 1, 4, Tf::Rg16Unorm, None, false, 2),
    plain!(83, "R16G16_SFLOAT", 1, 1, 4, Tf::Rg16Float, None, false, 2),
    plain!(
        91,
        "R16G16B16A16_UNORM",
        1,
        1,
        8,
        Tf::Rgba16Unorm,
        None,
        false,
        4
    ),
    plain!(
        97,
        "R16G16B16A16_SFLOAT",
        1,
        1,
        8,
        Tf::Rgba16Float,
        None,
        false,
        4
    ),
    plain!(98, "R32_UINT", 1, 1, 4, Tf::R32Uint, None, false, 1),
    plain!(100, "R32_SFLOAT", 1, 1, 4, Tf::R32Float, None, false, 1),
    plain!(103, "R32G32_SFLOAT", 1, 1, 8, Tf::Rg32Float, None, false, 2),
    plain!(
        109,
        "R32G32B32A32_SFLOAT",
        1,
        1,
        16,
        Tf::Rgba32Float,
        None,
        false,
        4
    ),
    plain!(
        122,
        "B10G11R11_UFLOAT_PACK32",
        1,
        1,
        4,
        Tf::Rg11b10Ufloat,
        None,
        false,
        3
    ),
    plain!(
        123,
        "E5B9G9R9_UFLOAT_PACK32",
        1,
        1,
        4,
        Tf::Rgb9e5Ufloat,
        None,
        false,
        3
    ),
    plain!(
        131,
        "BC1_RGB_UNORM_BLOCK",
        4,
        4,
        8,
        Tf::Bc1RgbaUnorm,
        None,
        false,
        3
    ),
    plain!(
        132,
        "BC1_RGB_SRGB_BLOCK",
        4,
        4,
        8,
        Tf::Bc1RgbaUnormSrgb,
        None,
        true,
        3
    ),
    plain!(
        133,
        "BC1_RGBA_UNORM_BLOCK",
        4,
        4,
        8,
        Tf::Bc1RgbaUnorm,
        None,
        false,
        4
    ),
    plain!(
        134,
        "BC1_RGBA_SRGB_BLOCK",
        4,
        4,
        8,
        Tf::Bc1RgbaUnormSrgb,
        None,
        true,
        4
    ),
    plain!(
        135,
        "BC2_UNORM_BLOCK",
        4,
        4,
        16,
        Tf::Bc2RgbaUnorm,
        None,
        false,
        4
    ),
    plain!(
        136,
        "BC2_SRGB_BLOCK",
        4,
        4,
        16,
        Tf::Bc2RgbaUnormSrgb,
        None,
        true,
        4
    ),
    plain!(
        137,
        "BC3_UNORM_BLOCK",
        4,
        4,
        16,
        Tf::Bc3RgbaUnorm,
        None,
        false,
        4
    ),
    plain!(
        138,
        "BC3_SRGB_BLOCK",
        4,
        4,
        16,
        Tf::Bc3RgbaUnormSrgb,
        None,
        true,
        4
    ),
    plain!(
        139,
        "BC4_UNORM_BLOCK",
        4,
        4,
        8,
        Tf::Bc4RUnorm,
        None,
        false,
        1
    ),
    plain!(
        140,
        "BC4_SNORM_BLOCK",
        4,
        4,
        8,
        Tf::Bc4RSnorm,
        None,
        false,
        1
    ),
    plain!(
        141,
        "BC5_UNORM_BLOCK",
        4,
        4,
        16,
        Tf::Bc5RgUnorm,
        None,
        false,
        2
    ),
    plain!(
        142,
        "BC5_SNORM_BLOCK",
        4,
        4,
        16,
        Tf::Bc5RgSnorm,
        None,
        false,
        2
    ),
    plain!(
        143,
        "BC6H_UFLOAT_BLOCK",
        4,
        4,
        16,
        Tf::Bc6hRgbUfloat,
        None,
        false,
        3
    ),
    plain!(
        144,
        "BC6H_SFLOAT_BLOCK",
        4,
        4,
        16,
        Tf::Bc6hRgbFloat,
        None,
        false,
        3
    ),
    plain!(
        145,
        "BC7_UNORM_BLOCK",
        4,
        4,
        16,
        Tf::Bc7RgbaUnorm,
        None,
        false,
        4
    ),
    plain!(
        146,
        "BC7_SRGB_BLOCK",
        4,
        4,
        16,
        Tf::Bc7RgbaUnormSrgb,
        None,
        true,
        4
    ),
    plain!(
        147,
        "ETC2_R8G8B8_UNORM_BLOCK",
        4,
        4,
        8,
        Tf::Etc2Rgb8Unorm,
        None,
        false,
        3
    ),
    plain!(
        148,
        "ETC2_R8G8B8_SRGB_BLOCK",
        4,
        4,
        8,
        Tf::Etc2Rgb8UnormSrgb,
        None,
        true,
        3
    ),
    plain!(
        149,
        "ETC2_R8G8B8A1_UNORM_BLOCK",
        4,
        4,
        8,
        Tf::Etc2Rgb8A1Unorm,
        None,
        false,
        4
    ),
    plain!(
        150,
        "ETC2_R8G8B8A1_SRGB_BLOCK",
        4,
        4,
        8,
        Tf::Etc2Rgb8A1UnormSrgb,
        None,
        true,
        4
    ),
    plain!(
        151,
        "ETC2_R8G8B8A8_UNORM_BLOCK",
        4,
        4,
        16,
        Tf::Etc2Rgba8Unorm,
        None,
        false,
        4
    ),
    plain!(
        152,
        "ETC2_R8G8B8A8_SRGB_BLOCK",
        4,
        4,
        16,
        Tf::Etc2Rgba8UnormSrgb,
        None,
        true,
        4
    ),
    plain!(
        153,
        "EAC_R11_UNORM_BLOCK",
        4,
        4,
        8,
        Tf::EacR11Unorm,
        None,
        false,
        1
    ),
    plain!(
        154,
        "EAC_R11_SNORM_BLOCK",
        4,
        4,
        8,
        Tf::EacR11Snorm,
        None,
        false,
        1
    ),
    plain!(
        155,
        "EAC_R11G11_UNORM_BLOCK",
        4,
        4,
        16,
        Tf::EacRg11Unorm,
        None,
        false,
        2
    ),
    plain!(
        156,
        "EAC_R11G11_SNORM_BLOCK",
        4,
        4,
        16,
        Tf::EacRg11Snorm,
        None,
        false,
        2
    ),
    astc!(157, "ASTC_4x4_UNORM_BLOCK", 4, 4, B4x4, false),
    astc!(158, "ASTC_4x4_SRGB_BLOCK", 4, 4, B4x4, true),
    astc!(159, "ASTC_5x4_UNORM_BLOCK", 5, 4, B5x4, false),
    astc!(160, "ASTC_5x4_SRGB_BLOCK", 5, 4, B5x4, true),
    astc!(161, "ASTC_5x5_UNORM_BLOCK", 5, 5, B5x5, false),
    astc!(162, "ASTC_5x5_SRGB_BLOCK", 5, 5, B5x5, true),
    astc!(163, "ASTC_6x5_UNORM_BLOCK", 6, 5, B6x5, false),
    astc!(164, "ASTC_6x5_SRGB_BLOCK", 6, 5, B6x5, true),
    astc!(165, "ASTC_6x6_UNORM_BLOCK", 6, 6, B6x6, false),
    astc!(166, "ASTC_6x6_SRGB_BLOCK", 6, 6, B6x6, true),
    astc!(167, "ASTC_8x5_UNORM_BLOCK", 8, 5, B8x5, false),
    astc!(168, "ASTC_8x5_SRGB_BLOCK", 8, 5, B8x5, true),
    astc!(169, "ASTC_8x6_UNORM_BLOCK", 8, 6, B8x6, false),
    astc!(170, "ASTC_8x6_SRGB_BLOCK", 8, 6, B8x6, true),
    astc!(171, "ASTC_8x8_UNORM_BLOCK", 8, 8, B8x8, false),
    astc!(172, "ASTC_8x8_SRGB_BLOCK", 8, 8, B8x8, true),
    astc!(173, "ASTC_10x5_UNORM_BLOCK", 10, 5, B10x5, false),
    astc!(174, "ASTC_10x5_SRGB_BLOCK", 10, 5, B10x5, true),
    astc!(175, "ASTC_10x6_UNORM_BLOCK", 10, 6, B10x6, false),
    astc!(176, "ASTC_10x6_SRGB_BLOCK", 10, 6, B10x6, true),
    astc!(177, "ASTC_10x8_UNORM_BLOCK", 10, 8, B10x8, false),
    astc!(178, "ASTC_10x8_SRGB_BLOCK", 10, 8, B10x8, true),
    astc!(179, "ASTC_10x10_UNORM_BLOCK", 10, 10, B10x10, false),
    astc!(180, "ASTC_10x10_SRGB_BLOCK", 10, 10, B10x10, true),
    astc!(181, "ASTC_12x10_UNORM_BLOCK", 12, 10, B12x10, false),
    astc!(182, "ASTC_12x10_SRGB_BLOCK", 12, 10, B12x10, true),
    astc!(183, "ASTC_12x12_UNORM_BLOCK", 12, 12, B12x12, false),
    astc!(184, "ASTC_12x12_SRGB_BLOCK", 12, 12, B12x12, true),
];

/// What a Basis Universal payload is transcoded into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum TargetFormat {
    /// BC7 RGBA, 8 bits per texel. The desktop default.
    Bc7,
    /// BC1 RGB, 4 bits per texel: the compact tier for opaque colour on desktop.
    Bc1,
    /// BC3 RGBA, 8 bits per texel.
    Bc3,
    /// BC4 single channel, 4 bits per texel.
    Bc4,
    /// BC5 two channels, 8 bits per texel: normal maps (X, Y) on desktop.
    Bc5,
    /// ASTC 4x4 RGBA, 8 bits per texel. The mobile default.
    Astc4x4,
    /// ETC2 RGBA, 8 bits per texel.
    Etc2Rgba,
    /// ETC2 RGB (ETC1-compatible blocks), 4 bits per texel: the compact tier on ETC2 hardware.
    Etc2Rgb,
    /// EAC R11, 4 bits per texel.
    EacR11,
    /// EAC RG11, 8 bits per texel: normal maps on ETC2 hardware.
    EacRg11,
    /// Uncompressed RGBA8, 32 bits per texel: works everywhere.
    Rgba8,
}

impl TargetFormat {
    /// Every target, for iteration in tests and tools.
    pub const ALL: [TargetFormat; 11] = [
        Self::Bc7,
        Self::Bc1,
        Self::Bc3,
        Self::Bc4,
        Self::Bc5,
        Self::Astc4x4,
        Self::Etc2Rgba,
        Self::Etc2Rgb,
        Self::EacR11,
        Self::EacRg11,
        Self::Rgba8,
    ];

    /// The wgpu format to create textures of this target with.
    pub fn wgpu_format(self, srgb: bool) -> Tf {
        match (self, srgb) {
            (Self::Bc7, false) => Tf::Bc7RgbaUnorm,
            (Self::Bc7, true) => Tf::Bc7RgbaUnormSrgb,
            (Self::Bc1, false) => Tf::Bc1RgbaUnorm,
            (Self::Bc1, true) => Tf::Bc1RgbaUnormSrgb,
            (Self::Bc3, false) => Tf::Bc3RgbaUnorm,
            (Self::Bc3, true) => Tf::Bc3RgbaUnormSrgb,
            (Self::Bc4, _) => Tf::Bc4RUnorm,
            (Self::Bc5, _) => Tf::Bc5RgUnorm,
            (Self::Astc4x4, srgb) => Tf::Astc {
                block: wgpu::AstcBlock::B4x4,
                channel: if srgb {
                    wgpu::AstcChannel::UnormSrgb
                } else {
                    wgpu::AstcChannel::Unorm
                },
            },
            (Self::Etc2Rgba, false) => Tf::Etc2Rgba8Unorm,
            (Self::Etc2Rgba, true) => Tf::Etc2Rgba8UnormSrgb,
            (Self::Etc2Rgb, false) => Tf::Etc2Rgb8Unorm,
            (Self::Etc2Rgb, true) => Tf::Etc2Rgb8UnormSrgb,
            (Self::EacR11, _) => Tf::EacR11Unorm,
            (Self::EacRg11, _) => Tf::EacRg11Unorm,
            (Self::Rgba8, false) => Tf::Rgba8Unorm,
            (Self::Rgba8, true) => Tf::Rgba8UnormSrgb,
        }
    }

    /// Bits stored per texel.
    pub fn bits_per_texel(self) -> u32 {
        match self {
            Self::Bc1 | Self::Bc4 | Self::Etc2Rgb | Self::EacR11 => 4,
            Self::Rgba8 => 32,
            _ => 8,
        }
    }

    /// Bytes per 4x4 block (or per texel for [`Rgba8`](Self::Rgba8)).
    pub fn block_bytes(self) -> u32 {
        match self {
            Self::Rgba8 => 4,
            other => other.bits_per_texel() * 2,
        }
    }

    /// Block edge in texels (4 for every compressed target, 1 for RGBA8).
    pub fn block_size(self) -> u32 {
        if self == Self::Rgba8 {
            1
        } else {
            4
        }
    }

    /// Bytes one image of `width` x `height` texels takes in this format.
    pub fn image_bytes(self, width: u32, height: u32) -> u64 {
        let b = self.block_size();
        width.div_ceil(b) as u64 * height.div_ceil(b) as u64 * self.block_bytes() as u64
    }

    /// Short lower-case name used by the CLI and reports (`bc7`, `astc4x4`...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Bc7 => "bc7",
            Self::Bc1 => "bc1",
            Self::Bc3 => "bc3",
            Self::Bc4 => "bc4",
            Self::Bc5 => "bc5",
            Self::Astc4x4 => "astc4x4",
            Self::Etc2Rgba => "etc2-rgba",
            Self::Etc2Rgb => "etc2-rgb",
            Self::EacR11 => "eac-r11",
            Self::EacRg11 => "eac-rg11",
            Self::Rgba8 => "rgba8",
        }
    }

    /// Parses a [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }
}

impl std::fmt::Display for TargetFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_consistent_with_wgpu() {
        for f in PLAIN_FORMATS {
            let (bw, bh) = f.gpu.block_dimensions();
            assert_eq!((bw, bh), (f.block_width, f.block_height), "{}", f.name);
            let gpu_bytes = f.gpu.block_copy_size(None).unwrap();
            match f.expand {
                Expand::None => assert_eq!(gpu_bytes, f.block_bytes, "{}", f.name),
                Expand::Rgb8 | Expand::Bgr8 => {
                    assert_eq!((f.block_bytes, gpu_bytes), (3, 4), "{}", f.name)
                }
            }
            assert_eq!(f.gpu.is_srgb() || f.srgb, f.srgb, "{}", f.name);
            assert_eq!(PlainFormat::from_vk(f.vk_format), Some(*f));
        }
        let mut vks: Vec<u32> = PLAIN_FORMATS.iter().map(|f| f.vk_format).collect();
        vks.sort_unstable();
        vks.dedup();
        assert_eq!(
            vks.len(),
            PLAIN_FORMATS.len(),
            "duplicate VkFormat in table"
        );
        assert_eq!(PlainFormat::from_vk(0), None);
        assert_eq!(PlainFormat::from_vk(1_000_156_000), None);
    }

    #[test]
    fn targets_sizes_match_wgpu() {
        for t in TargetFormat::ALL {
            for srgb in [false, true] {
                let f = t.wgpu_format(srgb);
                assert_eq!(f.block_copy_size(None), Some(t.block_bytes()), "{t}");
                assert_eq!(
                    f.block_dimensions(),
                    (t.block_size(), t.block_size()),
                    "{t}"
                );
            }
            assert_eq!(TargetFormat::from_name(t.name()), Some(t));
        }
        assert_eq!(TargetFormat::Bc7.image_bytes(768, 512), 768 * 512);
        assert_eq!(TargetFormat::Bc1.image_bytes(6, 4), 16);
        assert_eq!(TargetFormat::Rgba8.image_bytes(3, 3), 36);
    }
}
