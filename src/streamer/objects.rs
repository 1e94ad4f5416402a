//! The object table: boxes (or spheres) in the world that show textures
//! and meshes, each with the world units one UV unit or mesh unit spans.
//! Objects are what the planner measures against the views.

use super::StaleId;
use super::{ObjectDesc, Streamer};
use crate::ids::ObjectId;

/// One registered object.
#[derive(Debug)]
pub(super) struct ObjectEntry {
    pub(super) desc: ObjectDesc,
}

impl Streamer {
    /// Registers an object.
    pub fn register_object(&mut self, desc: ObjectDesc) -> Result<ObjectId, StaleId> {
        self.check_textures(&desc)?;
        self.check_meshes(&desc)?;
        let id: ObjectId = self.objects.insert(ObjectEntry { desc: desc.clone() });
        self.push_object(id, &desc);
        Ok(id)
    }

    /// Replaces an object's bounds and textures.
    pub fn set_object(&mut self, id: ObjectId, desc: ObjectDesc) -> Result<(), StaleId> {
        self.check_textures(&desc)?;
        self.check_meshes(&desc)?;
        let o = self.objects.get_mut(id).ok_or(StaleId::Object(id))?;
        o.desc = desc.clone();
        self.push_object(id, &desc);
        Ok(())
    }

    /// Moves an object (its new bounding box centre and half extents).
    pub fn move_object(
        &mut self,
        id: ObjectId,
        center: glam::Vec3,
        half_extents: glam::Vec3,
    ) -> Result<(), StaleId> {
        let o = self.objects.get_mut(id).ok_or(StaleId::Object(id))?;
        o.desc.center = center;
        o.desc.half_extents = half_extents;
        self.planner
            .get()
            .move_object(id.index(), center, half_extents);
        Ok(())
    }

    /// Objects registered and not removed.
    pub fn object_count(&self) -> usize {
        self.objects.len()
    }

    /// Removes an object.
    pub fn remove_object(&mut self, id: ObjectId) -> Result<(), StaleId> {
        self.objects.remove(id).ok_or(StaleId::Object(id))?;
        self.planner.get().remove_object(id.index());
        Ok(())
    }

    fn check_textures(&self, desc: &ObjectDesc) -> Result<(), StaleId> {
        match desc
            .textures
            .iter()
            .find(|(t, _)| self.textures.entries.get(*t).is_none())
        {
            Some((t, _)) => Err(StaleId::Texture(*t)),
            None => Ok(()),
        }
    }

    fn push_object(&mut self, id: ObjectId, desc: &ObjectDesc) {
        let bindings: Vec<(usize, f32)> =
            desc.textures.iter().map(|(t, s)| (t.index(), *s)).collect();
        self.planner
            .get()
            .set_object(id.index(), desc.center, desc.half_extents, &bindings);
        self.planner.get().set_object_meshes(
            id.index(),
            desc.center,
            desc.half_extents,
            &Self::mesh_bindings(desc),
        );
    }
}
