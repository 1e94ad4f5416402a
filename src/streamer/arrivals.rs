//! What comes back from the loader threads for textures: a level waits in
//! its texture's `pending` until this frame's decisions build it in, a
//! failure starts a back-off, and a level the loader staging reserve was
//! too full to take goes back to the loaders ([`Restage`]).

use super::Streamer;
use crate::ids::TextureId;
use crate::kinds::Tier;
use crate::transcode::{LevelImage, Output};
use crate::worker::{LoadError, LoadKey, LoadResult};

/// Times a level refused by a full loader staging reserve goes back to the
/// loaders (once per update) before it is built from CPU memory like a
/// level that is not staged: waiting a few updates for room keeps its
/// texel copy off the render thread, and the bound keeps a reserve held by
/// levels that cannot be built yet (they wait for these) from holding the
/// texture back for long.
pub(super) const RESTAGE_TRIES: u32 = 4;

/// A level refused by a full loader staging reserve, to hand back to the
/// loaders ([`crate::worker::Loader::restage`]).
#[derive(Debug)]
pub(super) struct Restage {
    pub(super) key: LoadKey,
    pub(super) output: Output,
    pub(super) image: LevelImage,
}

impl Streamer {
    /// Takes a finished texture load: its level waits in `pending`, or its
    /// failure starts a back-off (one per attempt).
    pub(super) fn accept_load(&mut self, r: LoadResult) {
        let Some((id, tier)) = self.texture_of(r.key) else {
            return;
        };
        let (frame, backoff) = (self.frame.number, self.options.retry_backoff_frames);
        let Some(e) = self.textures.entries.get_mut(id) else {
            return;
        };
        if tier != e.pending_tier {
            return; // a tier the texture no longer wants
        }
        let tries = e.restage_tries.remove(&r.level).unwrap_or(0);
        match r.result {
            // worth staging, but the reserve was full: it waits in CPU
            // memory (still requested) and goes back to the loaders next
            // update, up to RESTAGE_TRIES times, then the way of levels
            // that are not staged
            Ok(image)
                if r.reserve_full
                    && self.options.loader_staging_bytes > 0
                    && tries < RESTAGE_TRIES =>
            {
                e.restage_tries.insert(r.level, tries + 1);
                self.textures.restage.push(Restage {
                    key: r.key,
                    output: r.output,
                    image,
                });
            }
            result => self.accept_level(id, tier, r.level, result, frame, backoff),
        }
    }

    /// Hands the levels the staging reserve refused back to the loaders
    /// (after the poll that returned finished copies' room); a level no
    /// longer requested (cancelled, its tier given up, the texture
    /// removed) is dropped.
    pub(super) fn restage_refused(&mut self) {
        for r in std::mem::take(&mut self.textures.restage) {
            let level = r.image.level;
            let entry = self.texture_of(r.key).and_then(|(id, tier)| {
                self.textures
                    .entries
                    .get_mut(id)
                    .filter(|e| e.pending_tier == tier)
            });
            match entry {
                Some(e) if e.requested.contains(&level) => {
                    // ahead of transcodes: its texels are ready, and the
                    // room the reserve has now should go to what waited
                    // longest
                    self.loader.restage(r.key, r.output, r.image, f32::MAX);
                    self.frame.stats.restaged += 1;
                }
                entry => {
                    if let Some(e) = entry {
                        e.restage_tries.remove(&level);
                    }
                    self.loader.free(r.image.data);
                }
            }
        }
    }

    fn accept_level(
        &mut self,
        id: TextureId,
        tier: Tier,
        level: u32,
        result: Result<LevelImage, LoadError>,
        frame: u64,
        backoff: u64,
    ) {
        let Some(e) = self.textures.entries.get_mut(id) else {
            return;
        };
        e.requested.remove(&level);
        self.textures.slots.touch(id.index());
        match result {
            Ok(img) => {
                e.load.failure = None;
                if tier != e.tier || level < e.resident.first_level {
                    e.pending.insert(level, img);
                }
            }
            Err(err) => {
                self.frame.stats.failed_loads += 1;
                if matches!(err, LoadError::Panicked { .. }) {
                    self.frame.stats.panicked_loads += 1;
                }
                e.load.fail(err.to_string(), frame, backoff);
            }
        }
    }

    /// The live texture and tier a load key names, if any.
    fn texture_of(&self, key: LoadKey) -> Option<(TextureId, Tier)> {
        let LoadKey::Texture {
            slot,
            generation,
            tier,
        } = key
        else {
            return None;
        };
        let id: TextureId = self.textures.entries.id_at(slot as usize)?;
        (id.generation() == generation).then_some((id, tier))
    }
}
