//! `mipstream info`: what a texture file holds, as text or JSON.

use mipstream::container::{Channels, ContainerKind, TextureInfo};
use mipstream::loss::{TextureLoss, LOSS_KEY};
use serde_json::{json, Value};
use std::path::Path;

pub(crate) fn run(path: &Path, as_json: bool) -> Result<(), String> {
    if is_mesh(path) {
        return mesh(path, as_json);
    }
    let file = mipstream::TextureFile::open_path(path).map_err(|e| e.to_string())?;
    let info = file.info();
    if as_json {
        let text = serde_json::to_string_pretty(&to_json(info)).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        print!("{}", to_text(info));
    }
    Ok(())
}

/// Whether the file starts with the `.msmesh` identifier.
fn is_mesh(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|_| magic == mipstream::mesh::container::MAGIC)
}

/// `info` on a `.msmesh`: bounds and the LOD table.
fn mesh(path: &Path, as_json: bool) -> Result<(), String> {
    let file = mipstream::mesh::MeshFile::open_path(path).map_err(|e| e.to_string())?;
    let info = file.info();
    let (min, max) = info.bounds;
    if as_json {
        let lods: Vec<Value> = info
            .lods
            .iter()
            .enumerate()
            .map(|(i, l)| {
                json!({
                    "lod": i,
                    "triangles": l.triangles(),
                    "vertices": l.vertex_count,
                    "error": l.error,
                    "bytes": l.bytes(),
                    "vertex_range": {"offset": l.vertex_offset, "length": l.vertex_count as u64 * mipstream::mesh::VERTEX_STRIDE as u64},
                    "index_range": {"offset": l.index_offset, "length": l.index_count as u64 * 4},
                })
            })
            .collect();
        let v = json!({
            "container": "msmesh",
            "attributes": info.attributes,
            "bounds": [min.to_array(), max.to_array()],
            "lod_count": info.lods.len(),
            "lods": lods,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?
        );
    } else {
        println!(
            "{}: mesh, {} LOD(s), bounds {:?} to {:?}",
            info.name,
            info.lods.len(),
            min.to_array(),
            max.to_array()
        );
        println!("  lod  triangles  vertices       error      bytes");
        for (i, l) in info.lods.iter().enumerate() {
            println!(
                "  {i:>3}  {:>9}  {:>8}  {:>10.3e}  {:>9}",
                l.triangles(),
                l.vertex_count,
                l.error,
                l.bytes()
            );
        }
    }
    Ok(())
}

fn channels(c: Channels) -> &'static str {
    match c {
        Channels::R => "R",
        Channels::Rg => "RG",
        Channels::Rgb => "RGB",
        Channels::Rgba => "RGBA",
    }
}

fn container(info: &TextureInfo) -> &'static str {
    match info.container {
        ContainerKind::Ktx2 => "KTX2",
        ContainerKind::Basis => ".basis",
    }
}

/// Key/value values: text when they are a NUL-terminated UTF-8 string, else hex.
fn kv_value(v: &[u8]) -> String {
    match std::str::from_utf8(v.strip_suffix(&[0]).unwrap_or(v)) {
        Ok(s) if !s.contains('\0') => s.to_owned(),
        _ => v.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

fn to_json(info: &TextureInfo) -> Value {
    let levels: Vec<Value> = info
        .levels
        .iter()
        .map(|l| {
            json!({
                "level": l.level,
                "width": l.width,
                "height": l.height,
                "ranges": l.ranges.iter().map(|(o, n)| json!({"offset": o, "length": n})).collect::<Vec<_>>(),
                "stored_bytes": l.stored_len(),
                "uncompressed_bytes": l.uncompressed_len,
            })
        })
        .collect();
    let dfd = info.dfd.as_ref().map(|d| {
        json!({
            "total_bytes": d.total_bytes,
            "color_model": d.color_model,
            "color_primaries": d.color_primaries,
            "transfer_function": d.transfer_function,
            "flags": d.flags,
            "texel_block": d.texel_block,
            "bytes_planes": d.bytes_planes,
            "samples": d.samples.iter().map(|s| json!({
                "channel": s.channel,
                "qualifiers": s.qualifiers,
                "bit_offset": s.bit_offset,
                "bit_length": s.bit_length,
                "lower": s.lower,
                "upper": s.upper,
            })).collect::<Vec<_>>(),
        })
    });
    let kv: serde_json::Map<String, Value> = info
        .key_values
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(kv_value(v))))
        .collect();
    let loss = TextureLoss::from_info(info);
    let mut warnings = info.warnings.clone();
    let (space, level_error, compact, blur) = match &loss {
        Some(Ok(l)) => (
            json!(l.space.key()),
            json!(l.level_error),
            json!(l
                .compact
                .iter()
                .map(|c| (c.format.key().to_owned(), json!(c.level_error)))
                .collect::<serde_json::Map<String, Value>>()),
            json!(l
                .compact
                .iter()
                .map(|c| (c.format.key().to_owned(), json!(c.blur_levels)))
                .collect::<serde_json::Map<String, Value>>()),
        ),
        Some(Err(e)) => {
            warnings.push(format!("{e}: the planner uses the geometric error model"));
            (Value::Null, Value::Null, Value::Null, Value::Null)
        }
        None => (Value::Null, Value::Null, Value::Null, Value::Null),
    };
    json!({
        "file": info.name,
        "file_size": info.file_size,
        "container": container(info),
        "format": info.payload.name(),
        "basis": info.payload.is_basis(),
        "supercompression": info.supercompression.name(),
        "width": info.width,
        "height": info.height,
        "layers": info.layers,
        "is_array": info.is_array,
        "faces": info.faces,
        "level_count": info.levels.len(),
        "srgb": info.srgb,
        "premultiplied_alpha": info.premultiplied,
        "channels": channels(info.channels),
        "levels": levels,
        "dfd": dfd,
        "key_values": kv,
        "loss_space": space,
        "level_error": level_error,
        "compact_level_error": compact,
        "compact_blur_levels": blur,
        "warnings": warnings,
    })
}

fn to_text(info: &TextureInfo) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}: {} {}, {}x{}, {} level(s), {} layer(s){}, {} face(s), {} {}, supercompression {}, {} bytes",
        info.name,
        container(info),
        info.payload.name(),
        info.width,
        info.height,
        info.levels.len(),
        info.layers,
        if info.is_array { " (array)" } else { "" },
        info.faces,
        if info.srgb { "sRGB" } else { "linear" },
        channels(info.channels),
        info.supercompression.name(),
        info.file_size,
    );
    if let Some(d) = &info.dfd {
        let ids: Vec<u8> = d.samples.iter().map(|s| s.channel).collect();
        let _ = writeln!(
            s,
            "DFD: {} bytes, colour model {}, primaries {}, transfer {}, flags {}, block {}x{}, samples {} (channel ids {ids:?})",
            d.total_bytes,
            d.color_model,
            d.color_primaries,
            d.transfer_function,
            d.flags,
            d.texel_block[0],
            d.texel_block[1],
            d.samples.len(),
        );
    }
    let loss = TextureLoss::from_info(info);
    let measured = loss.as_ref().and_then(|l| l.as_ref().ok());
    let _ = write!(
        s,
        "{:>5}  {:>11}  {:>10}  {:>10}  {:>12}",
        "level", "size", "offset", "stored", "uncompressed"
    );
    if let Some(m) = measured {
        let _ = write!(s, "  {:>16}", "error (PSNR)");
        for c in &m.compact {
            let _ = write!(s, "  {:>16}", format!("{} error", c.format.key()));
        }
    }
    let _ = writeln!(s);
    let cell = |e: f32| {
        if e <= 0.0 {
            "0".to_owned()
        } else {
            format!(
                "{e:.2} ({:.1} dB)",
                10.0 * (255.0f64 * 255.0 / e as f64).log10()
            )
        }
    };
    for l in &info.levels {
        let offset = l.ranges.first().map_or(0, |r| r.0);
        let _ = write!(
            s,
            "{:>5}  {:>11}  {:>10}  {:>10}  {:>12}",
            l.level,
            format!("{}x{}", l.width, l.height),
            if l.ranges.len() > 1 {
                format!("{offset}+{}", l.ranges.len() - 1)
            } else {
                offset.to_string()
            },
            l.stored_len(),
            if l.uncompressed_len == 0 {
                "-".to_owned()
            } else {
                l.uncompressed_len.to_string()
            },
        );
        if let Some(m) = measured {
            let at = |v: &[f32]| v.get(l.level as usize).copied().unwrap_or(0.0);
            let _ = write!(s, "  {:>16}", cell(at(&m.level_error)));
            for c in &m.compact {
                let _ = write!(s, "  {:>16}", cell(at(&c.level_error)));
            }
        }
        let _ = writeln!(s);
    }
    match &loss {
        Some(Ok(m)) => {
            let _ = writeln!(
                s,
                "measured loss ({LOSS_KEY}, {}): mean squared error per texel and channel (0-255) of each level magnified to level 0",
                m.space.key()
            );
            for c in &m.compact {
                if let Some(b) = c.blur_levels {
                    let _ = writeln!(
                        s,
                        "{} looks (by FLIP) like the full tier {b:.2} levels coarser",
                        c.format.key()
                    );
                }
            }
        }
        Some(Err(e)) => {
            let _ = writeln!(
                s,
                "warning: {e}: the planner uses the geometric error model"
            );
        }
        None => {
            let _ = writeln!(
                s,
                "no measured loss: the planner uses the geometric error model (run `mipstream annotate`)"
            );
        }
    }
    for (k, v) in info.key_values.iter().filter(|(k, _)| k != LOSS_KEY) {
        let _ = writeln!(s, "{k}: {}", kv_value(v));
    }
    for w in &info.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}
