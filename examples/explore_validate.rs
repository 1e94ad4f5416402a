use std::collections::BTreeMap;
fn main() {
    let root = std::path::Path::new("../shared/data/ktx2-conformance");
    let mut stats: BTreeMap<u32, (u32, u32, Vec<String>)> = BTreeMap::new();
    for dir in std::fs::read_dir(root.join("input/validate")).unwrap() {
        let dir = dir.unwrap().path();
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            let stem = f.file_stem().unwrap().to_string_lossy().to_string();
            let golden = root.join("golden/validate").join(dir.file_name().unwrap()).join(format!("{stem}.out.json"));
            let text = std::fs::read_to_string(&golden).unwrap_or_default();
            let v: serde_json::Value = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
            let mut ids = vec![];
            if let Some(m) = v["messages"].as_array() { for m in m { if m["type"] == "error" { ids.push(m["id"].as_u64().unwrap() as u32); } } }
            let outcome = match mipstream::TextureFile::open_path(&f) {
                Err(e) => Err(e.to_string()),
                Ok(t) => {
                    let mut r = Ok(());
                    for l in 0..t.info().levels.len() as u32 {
                        match t.read_level(l) { Err(e) => { r = Err(e.to_string()); break; }
                            Ok(raw) => {
                                let c = mipstream::transcode::choose_targets(t.info(), Default::default(), wgpu::Features::TEXTURE_COMPRESSION_BC);
                                match c { Err(e) => { r = Err(e.to_string()); break; }
                                  Ok(c) => if let Err(e) = mipstream::transcode::transcode_level(&t, &raw, &mipstream::transcode::TranscodeOptions::new(c.full, c.srgb)) { r = Err(e.to_string()); break; } }
                            } }
                    }
                    r
                }
            };
            ids.sort(); ids.dedup();
            for id in ids {
                let e = stats.entry(id).or_default();
                match &outcome { Ok(()) => { e.1 += 1; e.2.push(f.file_name().unwrap().to_string_lossy().to_string()); } Err(_) => e.0 += 1 }
            }
        }
    }
    for (id, (refused, accepted, names)) in stats {
        println!("{id}: refused {refused} accepted {accepted} {:?}", names.iter().take(3).collect::<Vec<_>>());
    }
}
