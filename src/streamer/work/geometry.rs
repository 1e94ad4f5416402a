//! A texture's geometry: what the decisions need to size any range of its
//! levels in either tier, on the CPU.

use crate::container::mip_extent;
use crate::gpu::Shape;
use crate::kinds::Tier;

/// A texture's dimensions and the format of each tier: the [`Shape`] of
/// any range of its levels, on the CPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Geometry {
    pub(crate) width: u32,
    pub(crate) height: u32,
    /// Images per level (array layers, cube faces).
    pub(crate) layers: u32,
    /// Levels in the file.
    pub(crate) levels: u32,
    /// The GPU format of the full and the compact tier.
    pub(crate) formats: [wgpu::TextureFormat; 2],
}

impl Geometry {
    /// The shape of a texture holding levels `first..` in `tier`.
    pub(crate) fn shape(&self, first: u32, tier: Tier) -> Shape {
        Shape {
            format: self.formats[tier_index(tier)],
            width: mip_extent(self.width, first),
            height: mip_extent(self.height, first),
            mips: self.levels - first,
            layers: self.layers,
        }
    }
}

fn tier_index(t: Tier) -> usize {
    match t {
        Tier::Full => 0,
        Tier::Compact => 1,
    }
}
