//! wgpu's error scopes around an allocation or a write, in one place: what
//! they caught comes back as a value (an out-of-memory event first), so a
//! refused allocation is an error the caller degrades on, never a panic in
//! wgpu's uncaptured-error handler.

/// Which errors a scope catches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Catch {
    /// Out-of-memory errors only (writes whose arguments are checked).
    OutOfMemory,
    /// Validation errors only (copies into a texture made just before).
    Validation,
    /// Both (creating a texture or a buffer).
    Both,
}

/// What a scope caught.
#[derive(Debug, Default)]
pub(crate) struct Caught {
    /// The device ran out of memory.
    pub(crate) out_of_memory: bool,
    /// A validation error, with wgpu's message.
    pub(crate) validation: Option<String>,
}

impl Caught {
    /// Whether anything was caught.
    pub(crate) fn any(&self) -> bool {
        self.out_of_memory || self.validation.is_some()
    }
}

/// Runs `f` inside the error scopes `catch` names and returns its value
/// with what they caught. Popping a scope does not wait for the GPU.
pub(crate) fn catching<T>(
    device: &wgpu::Device,
    catch: Catch,
    f: impl FnOnce() -> T,
) -> (T, Caught) {
    let oom = (catch != Catch::Validation)
        .then(|| device.push_error_scope(wgpu::ErrorFilter::OutOfMemory));
    let validation = (catch != Catch::OutOfMemory)
        .then(|| device.push_error_scope(wgpu::ErrorFilter::Validation));
    let value = f();
    // scopes pop in the reverse order of their pushes
    let validation = validation.and_then(|s| pollster::block_on(s.pop()));
    let out_of_memory = oom.is_some_and(|s| pollster::block_on(s.pop()).is_some());
    let caught = Caught {
        out_of_memory,
        validation: validation.map(|e| e.to_string()),
    };
    (value, caught)
}
