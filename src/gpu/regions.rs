//! Partial residency, measured rather than built: what holding only the
//! sampled regions of a texture's finest levels would take, from GPU
//! feedback's region masks ([`super::feedback::SlotFeedback::regions`]).
//!
//! Sparse residency (Vulkan's sparse images, D3D12's tiled resources) binds
//! memory in 64 KiB tiles of a standard shape; the levels smaller than a
//! tile sit in a mip tail held whole. [`region_bytes`] counts, for one
//! texture's resident levels, the bytes whole levels take and the bytes the
//! tiles that overlap the feedback's sampled regions would take, at the
//! same quality (the same levels sampled where they are sampled):
//!
//! - the finest band, the levels no finer than the finest lod sampled
//!   (`floor(finest_lod)`, and every resident level finer than it), is held
//!   only where the mask says a pixel sampled within a level of the finest
//!   lod. Pixels outside the mask sample coarser than `finest_lod + 1`, so
//!   they never touch those levels;
//! - coarser levels, whose sampling the mask does not locate, are held
//!   whole, as is every level smaller than one tile (the mip tail);
//! - a level's regions never count more than the level whole.
//!
//! The mask over-approximates: the shader marks a pixel against the finest
//! lod reported so far in the frame, so pixels drawn before the finest one
//! may mark cells coarser than the band. The ratio it gives is an upper
//! bound of what tiling saves at that mask's 8x8 resolution.

use super::feedback::SlotFeedback;

/// Bytes of one sparse tile.
pub const TILE_BYTES: u64 = 64 * 1024;

/// Cells of the feedback's region mask along each axis.
pub const MASK_CELLS: u32 = 8;

/// The standard sparse tile of `format`, in texels: 64 KiB of its texel
/// blocks, as Vulkan's standard sparse image block shapes lay them out
/// (8-bit: 256x256, 16-bit: 256x128, 32-bit: 128x128, 64-bit: 128x64,
/// 128-bit: 64x64 blocks), times the block's size in texels for compressed
/// formats. `None` for formats without a copy size (depth, planar).
pub fn tile_texels(format: wgpu::TextureFormat) -> Option<(u32, u32)> {
    let block_bytes = format.block_copy_size(None)?;
    let (bw, bh) = format.block_dimensions();
    let blocks = (TILE_BYTES / u64::from(block_bytes)) as u32;
    // the wider side takes the odd power of two
    let log = blocks.trailing_zeros();
    let w = 1u32 << log.div_ceil(2);
    let h = blocks / w;
    Some((w * bw, h * bh))
}

/// Bytes whole levels take, and bytes holding only the sampled regions of
/// the finest band would take.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegionBytes {
    /// The resident levels, whole.
    pub whole: u64,
    /// The same levels with the finest band held only in the tiles that
    /// overlap the sampled regions.
    pub regions: u64,
}

impl std::ops::AddAssign for RegionBytes {
    fn add_assign(&mut self, o: Self) {
        self.whole += o.whole;
        self.regions += o.regions;
    }
}

impl RegionBytes {
    /// `regions / whole` (1 when nothing is held).
    pub fn ratio(&self) -> f64 {
        if self.whole == 0 {
            1.0
        } else {
            self.regions as f64 / self.whole as f64
        }
    }
}

/// What a 2D texture holding levels `first_level .. first_level +
/// level_count` of a `width` x `height` chain in `format` takes whole, and
/// what it would take holding only the tiles of its finest band that
/// `sampled` marks (module docs). Formats without a tile shape count whole.
pub fn region_bytes(
    format: wgpu::TextureFormat,
    (width, height): (u32, u32),
    first_level: u32,
    level_count: u32,
    sampled: &SlotFeedback,
) -> RegionBytes {
    let mut out = RegionBytes::default();
    let Some(block_bytes) = format.block_copy_size(None) else {
        return out;
    };
    let (bw, bh) = format.block_dimensions();
    let tile = tile_texels(format);
    // the finest band: levels no coarser than the finest lod sampled
    let band = sampled.finest_level();
    for level in first_level..first_level + level_count {
        let w = crate::container::mip_extent(width, level);
        let h = crate::container::mip_extent(height, level);
        let whole = u64::from(w.div_ceil(bw)) * u64::from(h.div_ceil(bh)) * u64::from(block_bytes);
        out.whole += whole;
        out.regions += match tile {
            Some((tw, th)) if level <= band && w >= tw && h >= th => {
                (tiles_marked(w, h, tw, th, sampled.regions) * TILE_BYTES).min(whole)
            }
            _ => whole,
        };
    }
    out
}

/// Tiles of `tw` x `th` texels of a `w` x `h` level that overlap a marked
/// cell of the 8x8 mask over its uv square.
fn tiles_marked(w: u32, h: u32, tw: u32, th: u32, mask: u64) -> u64 {
    // the cells' texel spans along one axis that tile `i` overlaps
    let overlaps = |i: u32, t: u32, size: u32, cell: u32| {
        let (a, b) = (u64::from(i * t), u64::from((i + 1) * t));
        let (size, cell, n) = (u64::from(size), u64::from(cell), u64::from(MASK_CELLS));
        a * n < (cell + 1) * size && cell * size < b * n
    };
    let mut count = 0;
    for ty in 0..h.div_ceil(th) {
        for tx in 0..w.div_ceil(tw) {
            let hit = (0..MASK_CELLS * MASK_CELLS).any(|bit| {
                mask >> bit & 1 == 1
                    && overlaps(tx, tw, w, bit % MASK_CELLS)
                    && overlaps(ty, th, h, bit / MASK_CELLS)
            });
            count += u64::from(hit);
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use wgpu::TextureFormat as F;

    fn seen(finest_lod: f32, regions: u64) -> SlotFeedback {
        SlotFeedback {
            finest_lod,
            mean_lod: finest_lod,
            pixels: 4,
            regions,
        }
    }

    #[test]
    fn tiles_have_the_standard_sparse_shapes() {
        assert_eq!(tile_texels(F::R8Unorm), Some((256, 256)));
        assert_eq!(tile_texels(F::Rg8Unorm), Some((256, 128)));
        assert_eq!(tile_texels(F::Rgba8UnormSrgb), Some((128, 128)));
        assert_eq!(tile_texels(F::Rgba16Float), Some((128, 64)));
        // BC1: 8-byte blocks of 4x4; BC7: 16-byte blocks
        assert_eq!(tile_texels(F::Bc1RgbaUnorm), Some((512, 256)));
        assert_eq!(tile_texels(F::Bc7RgbaUnormSrgb), Some((256, 256)));
        let astc = F::Astc {
            block: wgpu::AstcBlock::B6x6,
            channel: wgpu::AstcChannel::UnormSrgb,
        };
        assert_eq!(tile_texels(astc), Some((384, 384)));
        assert_eq!(tile_texels(F::Depth24Plus), None);
    }

    #[test]
    fn one_marked_cell_holds_one_tile_of_the_finest_level() {
        // 2048^2 BC7, every level: level 0 is 8x8 tiles of 256 texels, one
        // per mask cell; levels 1.. are coarser than the band, held whole
        let whole_of = |l: u32| {
            let s = u64::from((2048u32 >> l).max(4));
            s * s
        };
        let all: u64 = (0..12).map(whole_of).sum();
        let r = region_bytes(F::Bc7RgbaUnormSrgb, (2048, 2048), 0, 12, &seen(0.4, 1));
        assert_eq!(r.whole, all);
        assert_eq!(r.regions, all - whole_of(0) + TILE_BYTES);
        // the last cell (bottom right) is one tile too
        let r = region_bytes(
            F::Bc7RgbaUnormSrgb,
            (2048, 2048),
            0,
            12,
            &seen(0.0, 1 << 63),
        );
        assert_eq!(r.regions, all - whole_of(0) + TILE_BYTES);
    }

    #[test]
    fn the_band_reaches_down_to_the_finest_lod_sampled() {
        // finest lod 1.5: levels 0 and 1 are held by region; cells 0 and 1
        // of the top row are two tiles of level 0, and at level 1 (1024^2,
        // 4x4 tiles) a cell is half a tile, so they share one
        let r = region_bytes(F::Bc7RgbaUnormSrgb, (2048, 2048), 0, 12, &seen(1.5, 0b11));
        let level2_on: u64 = (2..12).map(|l| (2048u64 >> l).max(4).pow(2)).sum();
        assert_eq!(r.regions, 3 * TILE_BYTES + level2_on);
        // resident from level 1: only level 1 is in the band
        let r = region_bytes(F::Bc7RgbaUnormSrgb, (2048, 2048), 1, 11, &seen(1.5, 0b11));
        assert_eq!(r.regions, TILE_BYTES + level2_on);
        assert_eq!(r.whole, 1024 * 1024 + level2_on);
    }

    #[test]
    fn a_full_mask_holds_everything_and_the_tail_is_whole() {
        let r = region_bytes(
            F::Bc7RgbaUnormSrgb,
            (2048, 2048),
            0,
            12,
            &seen(3.0, u64::MAX),
        );
        assert_eq!(r.regions, r.whole);
        assert_eq!(r.ratio(), 1.0);
        // 128^2 RGBA8 is one tile: at most the level itself
        let r = region_bytes(F::Rgba8UnormSrgb, (128, 128), 0, 8, &seen(0.0, 1));
        assert_eq!(r.regions, r.whole);
        // 64^2 is smaller than a tile: the mip tail, whole
        let r = region_bytes(F::Rgba8UnormSrgb, (64, 64), 0, 7, &seen(0.0, 1));
        assert_eq!(r.regions, r.whole);
        // magnified (lod below 0): level 0 is the band
        let r = region_bytes(F::Rgba8UnormSrgb, (1024, 1024), 0, 11, &seen(-2.0, 1));
        let rest: u64 = (1..11).map(|l| (1024u64 >> l).pow(2) * 4).sum();
        assert_eq!(r.regions, TILE_BYTES + rest);
    }

    #[test]
    fn wide_textures_map_cells_onto_tiles_along_each_axis() {
        // 2048 x 512 RGBA8: tiles 128x128, 16 x 4; a cell is 256 x 64
        // texels: cell (x 3, y 5) spans texels x 768..1024, y 320..384,
        // tiles x 6 and 7, y 2 => 2 tiles
        let mask = 1u64 << (5 * 8 + 3);
        let r = region_bytes(F::Rgba8UnormSrgb, (2048, 512), 0, 1, &seen(0.0, mask));
        assert_eq!(r.regions, 2 * TILE_BYTES);
        assert_eq!(r.whole, 2048 * 512 * 4);
    }
}
