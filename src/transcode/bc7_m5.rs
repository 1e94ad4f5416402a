//! BC7 mode 5 block packing, shared by the ETC1S transcoder and its chroma
//! filter (neither imports the other for it).

/// BC7 mode 5's first 64 bits for opaque RGB endpoints `(r0, r1, g0, g1,
/// b0, b1)`, 7 bits each: mode 5, no rotation, alpha endpoints 255.
#[inline]
pub(super) fn bc7_m5_lo(e: [u32; 6]) -> u64 {
    let mut v = 32u64; // mode 5: bit 5 of the 6-bit mode field
    for (i, c) in e.iter().enumerate() {
        v |= (*c as u64 & 127) << (8 + 7 * i);
    }
    v | 255 << 50 | 63 << 58
}

/// BC7 mode 5's last 64 bits from a 16-texel selector word (texel `i` at
/// bits `2i`, texel 0's high bit clear): the alpha endpoint's last 2 bits
/// (3), then the colour indices with the anchor's single bit; alpha indices 0.
#[inline]
pub(super) fn bc7_m5_hi(word: u32) -> u64 {
    let bits = (word & 1) | ((word >> 2) << 1);
    3 | (bits as u64) << 2
}
