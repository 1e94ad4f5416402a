//! The KTX2 Data Format Descriptor: block framing checked here, the basic block
//! decoded by the `ktx2` crate, and the result summarised for loading.
//!
//! Unknown (non-basic) blocks are skipped with a warning; a missing or repeated
//! basic block, or framing that does not add up, makes the file unloadable.

/// One sample of the basic DFD block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleSummary {
    /// Channel id (meaning depends on the colour model).
    pub channel: u8,
    /// Qualifier bits: linear 1, exponent 2, signed 4, float 8.
    pub qualifiers: u8,
    /// First bit of the sample in the texel block.
    pub bit_offset: u16,
    /// Bits in the sample.
    pub bit_length: u16,
    /// Lower bound of the sample's range.
    pub lower: u32,
    /// Upper bound of the sample's range.
    pub upper: u32,
}

/// The basic DFD block, summarised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DfdSummary {
    /// Total DFD bytes (including the 4-byte size).
    pub total_bytes: u32,
    /// Colour model (1 RGBSDA, 128.. BCn, 160.. ETC, 162 ASTC, 163 ETC1S, 166 UASTC...).
    pub color_model: u8,
    /// Colour primaries (1 BT.709).
    pub color_primaries: u8,
    /// Transfer function (1 linear, 2 sRGB).
    pub transfer_function: u8,
    /// Flags (bit 0: alpha premultiplied).
    pub flags: u8,
    /// Texel block dimensions (each value is the size, not size - 1).
    pub texel_block: [u8; 4],
    /// Bytes per plane.
    pub bytes_planes: [u8; 8],
    /// The samples.
    pub samples: Vec<SampleSummary>,
}

/// Parses the DFD bytes (`dfd[0..4]` is dfdTotalSize). Errors are reasons for
/// [`super::OpenError::Invalid`]; `warnings` collects harmless deviations.
pub(super) fn parse(dfd: &[u8], warnings: &mut Vec<String>) -> Result<DfdSummary, String> {
    if dfd.len() < 4 {
        return Err("the DFD is shorter than its 4-byte size field".into());
    }
    let total = u32::from_le_bytes(dfd[0..4].try_into().unwrap_or_default());
    if total as usize != dfd.len() {
        return Err(format!(
            "dfdTotalSize is {total} but dfdByteLength is {}",
            dfd.len()
        ));
    }
    let mut basic = None;
    let mut at = 4usize;
    while at < dfd.len() {
        let rest = &dfd[at..];
        if rest.len() < 8 {
            return Err(format!(
                "{} bytes left at DFD offset {at}, too few for a block header",
                rest.len()
            ));
        }
        let word = u32::from_le_bytes(rest[0..4].try_into().unwrap_or_default());
        let vendor = word & 0x1_ffff;
        let kind = word >> 17;
        let version = u16::from_le_bytes([rest[4], rest[5]]);
        let size = u16::from_le_bytes([rest[6], rest[7]]) as usize;
        if size < 8 {
            return Err(format!(
                "DFD block at offset {at} declares size {size} (< 8)"
            ));
        }
        if size > rest.len() {
            return Err(format!(
                "DFD block at offset {at} declares size {size} but only {} bytes remain",
                rest.len()
            ));
        }
        if vendor == 0 && kind == 0 {
            if basic.is_some() {
                return Err("more than one basic DFD block".into());
            }
            if version != 2 {
                return Err(format!(
                    "basic DFD block version {version} (only 2 is defined)"
                ));
            }
            if size < 24 || !(size - 24).is_multiple_of(16) {
                return Err(format!(
                    "basic DFD block size {size} is not 24 + 16 x samples"
                ));
            }
            basic = Some(summarise(&rest[8..size], total)?);
        } else {
            warnings.push(format!(
                "ignored DFD block vendor {vendor} type {kind} ({size} bytes)"
            ));
        }
        at += size;
    }
    basic.ok_or_else(|| "the DFD has no basic block".into())
}

fn summarise(body: &[u8], total: u32) -> Result<DfdSummary, String> {
    // ktx2's parser adds 1 to each texel block dimension in a u8 and panics on
    // 255, so that value is refused here first.
    if body.get(4..8).is_some_and(|d| d.contains(&255)) {
        return Err("basic DFD block texel dimension of 256 is out of range".into());
    }
    let basic = ::ktx2::dfd::Basic::parse(body).map_err(|e| format!("basic DFD block: {e}"))?;
    let samples = basic
        .sample_information
        .iter()
        .map(|s| SampleSummary {
            channel: s.channel_type,
            qualifiers: s.channel_type_qualifiers.bits(),
            bit_offset: s.bit_offset,
            bit_length: s.bit_length.get() as u16,
            lower: s.lower,
            upper: s.upper,
        })
        .collect();
    Ok(DfdSummary {
        total_bytes: total,
        color_model: basic.color_model.map_or(0, |m| m.value()),
        color_primaries: basic.color_primaries.map_or(0, |m| m.value()),
        transfer_function: basic.transfer_function.map_or(0, |m| m.value()),
        flags: basic.flags.bits(),
        texel_block: basic.texel_block_dimensions.map(|d| d.get()),
        bytes_planes: basic.bytes_planes,
        samples,
    })
}

/// Colour models of the Basis Universal family, by number, for messages.
pub(super) fn basis_model_name(model: u8) -> Option<&'static str> {
    Some(match model {
        163 => "ETC1S",
        164 => "PVRTC",
        165 => "PVRTC2",
        166 => "UASTC LDR 4x4",
        167 => "UASTC HDR 4x4",
        168 => "UASTC HDR 6x6 intermediate",
        169 => "XUASTC LDR intermediate",
        170 => "a Basis Universal codec newer than this reader (colour model 170)",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(vendor_kind: u32, version: u16, body: &[u8]) -> Vec<u8> {
        let mut b = vendor_kind.to_le_bytes().to_vec();
        b.extend_from_slice(&version.to_le_bytes());
        b.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
        b.extend_from_slice(body);
        b
    }

    fn dfd(blocks: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = blocks.concat();
        let mut d = ((body.len() + 4) as u32).to_le_bytes().to_vec();
        d.extend(body);
        d
    }

    /// An ETC1S basic block body: model 163, sRGB, one RGB sample.
    fn etc1s_body() -> Vec<u8> {
        let mut b = vec![163, 1, 2, 0, 3, 3, 0, 0];
        b.extend_from_slice(&[0; 8]); // bytes planes
        b.extend_from_slice(&[0, 0, 63, 0, 0, 0, 0, 0]); // sample: offset 0, length 64, channel 0
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        b
    }

    #[test]
    fn parses_a_basic_block() {
        let mut w = vec![];
        let s = parse(&dfd(&[block(0, 2, &etc1s_body())]), &mut w).unwrap();
        assert_eq!(s.color_model, 163);
        assert_eq!(s.transfer_function, 2);
        assert_eq!(s.texel_block, [4, 4, 1, 1]);
        assert_eq!(s.samples.len(), 1);
        assert_eq!(s.samples[0].bit_length, 64);
        assert!(w.is_empty());
    }

    #[test]
    fn refuses_broken_framing() {
        let mut w = vec![];
        let good = dfd(&[block(0, 2, &etc1s_body())]);
        let mut wrong_total = good.clone();
        wrong_total[0] += 4;
        assert!(parse(&wrong_total, &mut w)
            .unwrap_err()
            .contains("dfdTotalSize"));
        assert!(parse(&dfd(&[]), &mut w)
            .unwrap_err()
            .contains("no basic block"));
        let two = dfd(&[block(0, 2, &etc1s_body()), block(0, 2, &etc1s_body())]);
        assert!(parse(&two, &mut w).unwrap_err().contains("more than one"));
        let v1 = dfd(&[block(0, 1, &etc1s_body())]);
        assert!(parse(&v1, &mut w).unwrap_err().contains("version 1"));
        let mut too_big = good.clone();
        too_big[10] = 200;
        assert!(parse(&too_big, &mut w).unwrap_err().contains("only"));
        let odd = dfd(&[block(0, 2, &etc1s_body()[..20])]);
        assert!(parse(&odd, &mut w).unwrap_err().contains("24 + 16"));
    }

    #[test]
    fn skips_unknown_blocks_with_a_warning() {
        let mut w = vec![];
        let d = dfd(&[
            block(5 | (1 << 17), 0, &[1, 2, 3, 4]),
            block(0, 2, &etc1s_body()),
        ]);
        assert_eq!(parse(&d, &mut w).unwrap().color_model, 163);
        assert_eq!(w.len(), 1);
    }
}
