//! The planner's smallest terms, shared by the cluster layout and the
//! density pass (neither imports the other for them): what binds an object
//! to a texture, the objects' boxes as lanes, a fast `log2`.

use glam::Vec3;

/// One texture used by one object.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Binding {
    /// Planner texture slot plus one; 0 is a sink that dead bindings feed,
    /// so the scatter needs no branch for them.
    pub(crate) sum: u32,
    /// The object slot.
    pub(crate) object: u32,
    /// `log2(texture size) - log2(world units per UV unit)`.
    pub(crate) lod_offset: f32,
}

impl Binding {
    /// Marks the binding dead: it feeds the sink from now on.
    pub(crate) fn kill(&mut self) {
        self.sum = 0;
    }
}

/// Object bounds as structure-of-arrays, indexed by object slot, so the
/// per-view loop runs over plain `f32` lanes and vectorises.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bounds {
    pub(super) cx: Vec<f32>,
    pub(super) cy: Vec<f32>,
    pub(super) cz: Vec<f32>,
    pub(super) hx: Vec<f32>,
    pub(super) hy: Vec<f32>,
    pub(super) hz: Vec<f32>,
    pub(super) radius: Vec<f32>,
}

impl Bounds {
    /// Grows to `len` slots; new slots are empty points at the origin.
    pub(crate) fn resize(&mut self, len: usize) {
        for v in [
            &mut self.cx,
            &mut self.cy,
            &mut self.cz,
            &mut self.hx,
            &mut self.hy,
            &mut self.hz,
            &mut self.radius,
        ] {
            v.resize(len, 0.0);
        }
    }

    /// The box in slot `i`: centre and half extents.
    pub(crate) fn get(&self, i: usize) -> (Vec3, Vec3) {
        (
            Vec3::new(self.cx[i], self.cy[i], self.cz[i]),
            Vec3::new(self.hx[i], self.hy[i], self.hz[i]),
        )
    }

    /// Sets slot `i` to the box `center +- half`.
    pub(crate) fn set(&mut self, i: usize, center: Vec3, half: Vec3) {
        let half = half.abs();
        self.cx[i] = center.x;
        self.cy[i] = center.y;
        self.cz[i] = center.z;
        self.hx[i] = half.x;
        self.hy[i] = half.y;
        self.hz[i] = half.z;
        self.radius[i] = half.length();
    }
}

/// Fast `log2` for positive normal floats, within 0.01 of the exact value.
#[inline(always)]
pub(crate) fn fast_log2(x: f32) -> f32 {
    let bits = x.to_bits() as i32;
    let exp = ((bits >> 23) & 0xff) as f32 - 127.0;
    let m = f32::from_bits(((bits & 0x007f_ffff) | 0x3f80_0000) as u32); // [1, 2)
                                                                         // quadratic fit of log2(m) on [1, 2)
    exp + (-0.344_845 * m + 2.024_658) * m - 1.674_873
}
