//! Measured loss: how much error a texture shows when it is held at each mip
//! level and tier, measured once when it is cooked (or by `mipstream
//! annotate`) and stored in the KTX2 file's key/value data, so the planner
//! spends the budget where it removes the most *measured* error.
//!
//! For each level `k`, `level_error[k]` is the mean squared error, per texel
//! and channel on the 0-255 scale, of level `k` reconstructed at level 0's
//! size (bilinear, as a GPU magnifies it) against level 0 itself; level 0's
//! own is 0. Colour files (sRGB transfer in the DFD) are filtered in linear
//! light and compared in sRGB-encoded values (what a picture shows, and what
//! PSNR is measured on); data and normal maps are filtered and compared as
//! stored (linear). The channels compared are R, G and B, plus alpha where
//! the file carries one (RGBA, or Basis RG data kept in alpha). For a Basis
//! file with opaque data, the compact tiers are measured the same way: each
//! level transcoded to BC1 (and to ETC2 RGB) and compared with the full
//! tier's level 0. Several images (array layers, cubemap faces) are averaged.
//!
//! Squared error undersells block-compression artifacts: on the Sponza
//! textures BC1's level 0 has a third of the squared error of the full
//! tier's level 1 but the same NVIDIA FLIP error (a perceptual metric that
//! sees its blocks and banding). So each compact tier also carries its
//! *blur equivalent*: the (fractional) number of levels the full tier must
//! drop to show the same mean FLIP error as the compact tier's level 0,
//! measured on a crop of level 0 at its own scale. The planner charges a
//! compact level `r` at least what the full tier shows at `r + blur`.
//!
//! Key [`LOSS_KEY`] (`mipstream.loss`), value UTF-8 text ending in NUL, fields
//! separated by single spaces:
//!
//! ```text
//! v1 space=srgb level=0,1.52,6.9,...  bc1=2.1,3.3,... bc1_blur=0.93 etc2rgb=2.0,3.1,... etc2rgb_blur=0.88
//! ```
//!
//! `v1` first; `space=srgb|linear`; `level=` one number per mip level of the
//! file; `bc1=` / `etc2rgb=` (optional) likewise, each with an optional
//! `_blur=` blur equivalent in levels. Numbers are finite and not
//! negative. Unknown `name=value` fields are ignored (later versions may add
//! some); anything else is a [`LossError`], which a streamer reports as a
//! warning and answers with the geometric error model for that texture.

use crate::container::TextureInfo;

/// The KTX2 key the measured loss is stored under.
pub const LOSS_KEY: &str = "mipstream.loss";

/// How a texture's error was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossSpace {
    /// Filtered in linear light, compared in sRGB-encoded values (colour).
    Srgb,
    /// Filtered and compared as stored (data, normal maps).
    Linear,
}

impl LossSpace {
    /// `srgb` or `linear`.
    pub fn key(self) -> &'static str {
        match self {
            LossSpace::Srgb => "srgb",
            LossSpace::Linear => "linear",
        }
    }
}

/// A compact (lower-bit) tier whose loss is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompactFormat {
    /// BC1 (the compact tier on adapters with BC formats).
    Bc1,
    /// ETC2 RGB (the compact tier on adapters with ETC2 but not BC).
    Etc2Rgb,
}

impl CompactFormat {
    /// Both, in the order they are written.
    pub const ALL: [CompactFormat; 2] = [CompactFormat::Bc1, CompactFormat::Etc2Rgb];

    /// The field name: `bc1` or `etc2rgb`.
    pub fn key(self) -> &'static str {
        match self {
            CompactFormat::Bc1 => "bc1",
            CompactFormat::Etc2Rgb => "etc2rgb",
        }
    }
}

/// A texture's measured loss per level (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct TextureLoss {
    /// How it was measured.
    pub space: LossSpace,
    /// Per mip level: mean squared error of that level reconstructed at
    /// level 0's size against level 0 (0-255 scale, per texel and channel).
    pub level_error: Vec<f32>,
    /// The same for each compact tier measured, against the full tier's level 0.
    pub compact: Vec<CompactLoss>,
}

/// One compact tier's measured loss.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactLoss {
    /// The format.
    pub format: CompactFormat,
    /// Per mip level, as [`TextureLoss::level_error`], against the full
    /// tier's level 0.
    pub level_error: Vec<f32>,
    /// Levels the full tier must drop to look as wrong (by mean FLIP) as
    /// this tier's level 0 (see the module docs); `None` if not measured.
    pub blur_levels: Option<f32>,
}

/// Why a texture's loss metadata could not be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LossError {
    /// The value is not text of the documented form.
    #[error("{key}: {reason}")]
    Malformed {
        /// The key ([`LOSS_KEY`]).
        key: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A list does not have one number per mip level.
    #[error("{key}: {field} has {found} values for {expected} mip levels")]
    LevelCount {
        /// The key ([`LOSS_KEY`]).
        key: &'static str,
        /// The field.
        field: String,
        /// Values found.
        found: usize,
        /// Levels in the file.
        expected: usize,
    },
}

impl TextureLoss {
    /// The compact tier `format`'s loss, if it was measured.
    pub fn compact(&self, format: CompactFormat) -> Option<&CompactLoss> {
        self.compact.iter().find(|c| c.format == format)
    }

    /// The key/value entry's value (text ending in NUL).
    pub fn to_value(&self) -> Vec<u8> {
        let list = |v: &[f32]| {
            v.iter()
                .map(|x| format_number(*x))
                .collect::<Vec<_>>()
                .join(",")
        };
        let mut s = format!(
            "v1 space={} level={}",
            self.space.key(),
            list(&self.level_error)
        );
        for c in &self.compact {
            s.push_str(&format!(" {}={}", c.format.key(), list(&c.level_error)));
            if let Some(b) = c.blur_levels {
                s.push_str(&format!(" {}_blur={}", c.format.key(), format_number(b)));
            }
        }
        let mut bytes = s.into_bytes();
        bytes.push(0);
        bytes
    }

    /// Parses a value written by [`to_value`](Self::to_value) for a file of
    /// `levels` mip levels.
    pub fn parse(value: &[u8], levels: usize) -> Result<Self, LossError> {
        let bad = |reason: String| LossError::Malformed {
            key: LOSS_KEY,
            reason,
        };
        let value = value.strip_suffix(&[0]).unwrap_or(value);
        let text = std::str::from_utf8(value).map_err(|_| bad("not UTF-8 text".into()))?;
        let mut fields = text.split(' ').filter(|f| !f.is_empty());
        match fields.next() {
            Some("v1") => {}
            Some(v) => return Err(bad(format!("unknown version {v:?} (expected v1)"))),
            None => return Err(bad("empty".into())),
        }
        let mut space = None;
        let mut level_error = None;
        let mut compact: Vec<CompactLoss> = Vec::new();
        let mut blurs: Vec<(CompactFormat, f32)> = Vec::new();
        for field in fields {
            let (name, val) = field
                .split_once('=')
                .ok_or_else(|| bad(format!("field {field:?} is not name=value")))?;
            let numbers = || -> Result<Vec<f32>, LossError> {
                let v = val
                    .split(',')
                    .map(|n| match n.parse::<f32>() {
                        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
                        _ => Err(bad(format!(
                            "{name}: {n:?} is not a finite, non-negative number"
                        ))),
                    })
                    .collect::<Result<Vec<f32>, _>>()?;
                if v.len() != levels {
                    return Err(LossError::LevelCount {
                        key: LOSS_KEY,
                        field: name.to_owned(),
                        found: v.len(),
                        expected: levels,
                    });
                }
                Ok(v)
            };
            match name {
                "space" => {
                    space = Some(match val {
                        "srgb" => LossSpace::Srgb,
                        "linear" => LossSpace::Linear,
                        s => return Err(bad(format!("unknown space {s:?}"))),
                    })
                }
                "level" => level_error = Some(numbers()?),
                _ => {
                    if let Some(f) = CompactFormat::ALL.into_iter().find(|f| f.key() == name) {
                        compact.push(CompactLoss {
                            format: f,
                            level_error: numbers()?,
                            blur_levels: None,
                        });
                    } else if let Some(f) = CompactFormat::ALL
                        .into_iter()
                        .find(|f| name.strip_suffix("_blur") == Some(f.key()))
                    {
                        match val.parse::<f32>() {
                            Ok(b) if b.is_finite() && b >= 0.0 => blurs.push((f, b)),
                            _ => {
                                return Err(bad(format!(
                                    "{name}: {val:?} is not a finite, non-negative number"
                                )))
                            }
                        }
                    }
                }
            }
        }
        for (f, b) in blurs {
            match compact.iter_mut().find(|c| c.format == f) {
                Some(c) => c.blur_levels = Some(b),
                None => return Err(bad(format!("{}_blur without {}=", f.key(), f.key()))),
            }
        }
        Ok(Self {
            space: space.ok_or_else(|| bad("no space= field".into()))?,
            level_error: level_error.ok_or_else(|| bad("no level= field".into()))?,
            compact,
        })
    }

    /// The loss stored in a file's key/value data: `None` when the file has
    /// none, an error when it has one that cannot be used.
    pub fn from_info(info: &TextureInfo) -> Option<Result<Self, LossError>> {
        info.key_values
            .iter()
            .find(|(k, _)| k == LOSS_KEY)
            .map(|(_, v)| Self::parse(v, info.levels.len()))
    }
}

/// Four significant digits, no exponent for ordinary values: small text.
fn format_number(x: f32) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let digits = (3 - x.abs().log10().floor() as i32).clamp(0, 9) as usize;
    let s = format!("{x:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_value_round_trips() {
        let loss = TextureLoss {
            space: LossSpace::Srgb,
            level_error: vec![0.0, 1.5234, 12.25, 401.7],
            compact: vec![CompactLoss {
                format: CompactFormat::Bc1,
                level_error: vec![3.0, 4.5, 13.0, 402.0],
                blur_levels: Some(0.9312),
            }],
        };
        let v = loss.to_value();
        assert_eq!(v.last(), Some(&0));
        assert_eq!(
            std::str::from_utf8(&v[..v.len() - 1]).unwrap(),
            "v1 space=srgb level=0,1.523,12.25,401.7 bc1=3,4.5,13,402 bc1_blur=0.9312"
        );
        let back = TextureLoss::parse(&v, 4).unwrap();
        assert_eq!(back.space, LossSpace::Srgb);
        assert_eq!(back.level_error, vec![0.0, 1.523, 12.25, 401.7]);
        let bc1 = back.compact(CompactFormat::Bc1).unwrap();
        assert_eq!((bc1.level_error[3], bc1.blur_levels), (402.0, Some(0.9312)));
        assert!(back.compact(CompactFormat::Etc2Rgb).is_none());
        // a blur equivalent alone is not enough
        assert!(TextureLoss::parse(b"v1 space=srgb level=0 bc1_blur=1", 1).is_err());
    }

    #[test]
    fn bad_values_are_typed_errors() {
        let e = |s: &str, n| TextureLoss::parse(s.as_bytes(), n).unwrap_err();
        assert!(matches!(
            e("v2 space=srgb level=0", 1),
            LossError::Malformed { .. }
        ));
        assert!(matches!(e("", 1), LossError::Malformed { .. }));
        assert!(matches!(e("v1 level=0", 1), LossError::Malformed { .. }));
        assert!(matches!(e("v1 space=srgb", 1), LossError::Malformed { .. }));
        assert!(matches!(
            e("v1 space=srgb level=0,-1", 2),
            LossError::Malformed { .. }
        ));
        assert!(matches!(
            e("v1 space=srgb level=0,NaN", 2),
            LossError::Malformed { .. }
        ));
        assert_eq!(
            e("v1 space=linear level=0,1,2", 4),
            LossError::LevelCount {
                key: LOSS_KEY,
                field: "level".into(),
                found: 3,
                expected: 4
            }
        );
        assert!(matches!(
            TextureLoss::parse(&[0xff, 0xfe], 1),
            Err(LossError::Malformed { .. })
        ));
        // unknown fields are for later versions
        assert!(TextureLoss::parse(b"v1 space=linear level=0,2 future=x", 2).is_ok());
    }
}
