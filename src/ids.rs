//! Generational ids: an index and a generation, so an id whose slot was freed
//! and reused is detected as stale instead of naming the new occupant, and
//! the tag of the map that issued it, so an id from another streamer is an
//! error instead of naming one of this streamer's textures.

use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name {
            owner: u32,
            index: u32,
            generation: u32,
        }

        impl $name {
            /// The slot index (dense, reused after removal).
            pub fn index(self) -> usize {
                self.index as usize
            }

            /// The slot's generation when the id was issued.
            pub fn generation(self) -> u32 {
                self.generation
            }

            /// An id no map issued (every lookup with it fails as stale),
            /// for tests of code that only carries ids (the tools' tables).
            #[doc(hidden)]
            pub fn detached(index: u32) -> Self {
                Self {
                    owner: u32::MAX,
                    index,
                    generation: 0,
                }
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}{}v{}", $prefix, self.index, self.generation)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(self, f)
            }
        }

        impl SlotId for $name {
            fn new(owner: u32, index: u32, generation: u32) -> Self {
                Self {
                    owner,
                    index,
                    generation,
                }
            }
            fn parts(self) -> (u32, u32, u32) {
                (self.owner, self.index, self.generation)
            }
        }
    };
}

id_type!(
    /// A texture registered with a [`crate::streamer::Streamer`].
    TextureId,
    "tex"
);
id_type!(
    /// An object registered with a [`crate::streamer::Streamer`].
    ObjectId,
    "obj"
);
id_type!(
    /// A mesh registered with a [`crate::streamer::Streamer`].
    MeshId,
    "mesh"
);

/// An id for slot `index`, generation 0 (tests that need ids with no map).
#[cfg(test)]
pub(crate) fn test_id<I: SlotId>(index: u32) -> I {
    I::new(0, index, 0)
}

/// An id made of its map's tag, an index and a generation.
pub(crate) trait SlotId: Copy {
    fn new(owner: u32, index: u32, generation: u32) -> Self;
    fn parts(self) -> (u32, u32, u32);
}

/// A tag no map has issued yet (0 is for maps made with `Default`).
pub(crate) fn new_owner() -> u32 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

#[derive(Debug)]
struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// A generational slot map; its ids carry its `owner` tag.
#[derive(Debug)]
pub(crate) struct Slots<T> {
    owner: u32,
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Self::owned_by(0)
    }
}

impl<T> Slots<T> {
    /// An empty map whose ids carry `owner` (see [`new_owner`]).
    pub(crate) fn owned_by(owner: u32) -> Self {
        Self {
            owner,
            slots: Vec::new(),
            free: Vec::new(),
        }
    }

    /// The slot of a live id of this map (None: another map's, or stale).
    fn slot_of<I: SlotId>(&self, id: I) -> Option<usize> {
        let (owner, index, generation) = id.parts();
        let slot = self.slots.get(index as usize)?;
        (owner == self.owner && slot.generation == generation).then_some(index as usize)
    }

    /// Stores `value` and returns its id.
    pub(crate) fn insert<I: SlotId>(&mut self, value: T) -> I {
        if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            slot.generation = slot.generation.wrapping_add(1);
            slot.value = Some(value);
            return I::new(self.owner, index, slot.generation);
        }
        self.slots.push(Slot {
            generation: 0,
            value: Some(value),
        });
        I::new(self.owner, self.slots.len() as u32 - 1, 0)
    }

    /// The value for a live id.
    pub(crate) fn get<I: SlotId>(&self, id: I) -> Option<&T> {
        self.slots[self.slot_of(id)?].value.as_ref()
    }

    /// The value for a live id, mutably.
    pub(crate) fn get_mut<I: SlotId>(&mut self, id: I) -> Option<&mut T> {
        let i = self.slot_of(id)?;
        self.slots[i].value.as_mut()
    }

    /// Removes a live id's value.
    pub(crate) fn remove<I: SlotId>(&mut self, id: I) -> Option<T> {
        let i = self.slot_of(id)?;
        let index = i as u32;
        let slot = &mut self.slots[i];
        let v = slot.value.take()?;
        self.free.push(index);
        Some(v)
    }

    /// How many entries are live.
    pub(crate) fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Every live entry with its id.
    pub(crate) fn iter<I: SlotId>(&self) -> impl Iterator<Item = (I, &T)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            Some((
                I::new(self.owner, i as u32, s.generation),
                s.value.as_ref()?,
            ))
        })
    }

    /// The id of the live entry in slot `index`, if any.
    pub(crate) fn id_at<I: SlotId>(&self, index: usize) -> Option<I> {
        let s = self.slots.get(index)?;
        s.value.as_ref()?;
        Some(I::new(self.owner, index as u32, s.generation))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_ids_never_alias() {
        let mut s = Slots::default();
        let a: TextureId = s.insert("a");
        assert_eq!(s.get(a), Some(&"a"));
        assert_eq!(s.remove(a), Some("a"));
        let b: TextureId = s.insert("b");
        assert_eq!(a.index(), b.index(), "the slot is reused");
        assert_ne!(a, b);
        assert_eq!(s.get(a), None, "the stale id must not see the new value");
        assert_eq!(s.remove(a), None);
        assert_eq!(s.get(b), Some(&"b"));
        assert_eq!(s.len(), 1);
        assert_eq!(format!("{b:?}"), "tex0v1");
    }

    #[test]
    fn another_maps_ids_name_nothing_here() {
        let (mut a, mut b) = (Slots::owned_by(new_owner()), Slots::owned_by(new_owner()));
        let x: TextureId = a.insert("a's");
        let y: TextureId = b.insert("b's");
        assert_eq!(x.index(), y.index());
        assert_eq!(b.get(x), None, "a's id must not name b's texture");
        assert_eq!(b.remove(x), None);
        assert_eq!(b.get(y), Some(&"b's"));
    }
}
