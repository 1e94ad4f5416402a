//! Generational ids: an index and a generation, so an id whose slot was freed
//! and reused is detected as stale instead of naming the new occupant.

use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name {
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
            fn new(index: u32, generation: u32) -> Self {
                Self { index, generation }
            }
            fn parts(self) -> (u32, u32) {
                (self.index, self.generation)
            }
        }
    };
}

id_type!(
    /// A texture registered with a [`crate::Streamer`].
    TextureId,
    "tex"
);
id_type!(
    /// An object registered with a [`crate::Streamer`].
    ObjectId,
    "obj"
);
id_type!(
    /// A mesh registered with a [`crate::Streamer`].
    MeshId,
    "mesh"
);

/// An id for slot `index`, generation 0 (tests that need ids with no map).
#[cfg(test)]
pub(crate) fn test_id<I: SlotId>(index: u32) -> I {
    I::new(index, 0)
}

/// An id made of an index and a generation.
pub(crate) trait SlotId: Copy {
    fn new(index: u32, generation: u32) -> Self;
    fn parts(self) -> (u32, u32);
}

#[derive(Debug)]
struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// A generational slot map.
#[derive(Debug)]
pub(crate) struct Slots<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Slots<T> {
    /// Stores `value` and returns its id.
    pub(crate) fn insert<I: SlotId>(&mut self, value: T) -> I {
        if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            slot.generation = slot.generation.wrapping_add(1);
            slot.value = Some(value);
            return I::new(index, slot.generation);
        }
        self.slots.push(Slot {
            generation: 0,
            value: Some(value),
        });
        I::new(self.slots.len() as u32 - 1, 0)
    }

    /// The value for a live id.
    pub(crate) fn get<I: SlotId>(&self, id: I) -> Option<&T> {
        let (index, generation) = id.parts();
        let slot = self.slots.get(index as usize)?;
        (slot.generation == generation).then_some(slot.value.as_ref()?)
    }

    /// The value for a live id, mutably.
    pub(crate) fn get_mut<I: SlotId>(&mut self, id: I) -> Option<&mut T> {
        let (index, generation) = id.parts();
        let slot = self.slots.get_mut(index as usize)?;
        if slot.generation != generation {
            return None;
        }
        slot.value.as_mut()
    }

    /// Removes a live id's value.
    pub(crate) fn remove<I: SlotId>(&mut self, id: I) -> Option<T> {
        let (index, generation) = id.parts();
        let slot = self.slots.get_mut(index as usize)?;
        if slot.generation != generation {
            return None;
        }
        let v = slot.value.take()?;
        self.free.push(index);
        Some(v)
    }

    /// Every live entry with its id.
    pub(crate) fn iter<I: SlotId>(&self) -> impl Iterator<Item = (I, &T)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((I::new(i as u32, s.generation), s.value.as_ref()?)))
    }

    /// Every live entry, mutably, with its id.
    pub(crate) fn iter_mut<I: SlotId>(&mut self) -> impl Iterator<Item = (I, &mut T)> {
        self.slots.iter_mut().enumerate().filter_map(|(i, s)| {
            let generation = s.generation;
            Some((I::new(i as u32, generation), s.value.as_mut()?))
        })
    }

    /// The id of the live entry in slot `index`, if any.
    pub(crate) fn id_at<I: SlotId>(&self, index: usize) -> Option<I> {
        let s = self.slots.get(index)?;
        s.value.as_ref()?;
        Some(I::new(index as u32, s.generation))
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
        assert_eq!(format!("{b:?}"), "tex0v1");
    }
}
