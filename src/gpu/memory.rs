//! What wgpu and the driver say about GPU memory, beside mipstream's own
//! exact accounting: the allocator's report (allocated vs reserved, so
//! fragmentation shows), wgpu's internal counters, and the driver's budget.
//!
//! The driver budget comes from Vulkan's `VK_EXT_memory_budget`, reached through
//! wgpu's hal escape hatch, one of mipstream's two `unsafe` modules (the
//! other is `cook`, whose Basis encoder binding marks its calls unsafe). Where
//! the extension is missing (lavapipe lacks it) the heap sizes are still
//! reported, with no budget; other backends report nothing.

/// One memory heap as the driver reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapBudget {
    /// Heap size in bytes.
    pub size: u64,
    /// Whether the heap is device-local (VRAM on a discrete GPU).
    pub device_local: bool,
    /// Bytes this process may use before the driver starts evicting or
    /// failing, if the driver says (`VK_EXT_memory_budget`).
    pub budget: Option<u64>,
    /// Bytes this process uses in the heap, if the driver says.
    pub usage: Option<u64>,
}

/// The driver's view of memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverBudget {
    /// The heaps.
    pub heaps: Vec<HeapBudget>,
}

impl DriverBudget {
    /// The budget of the device-local heaps together, if the driver reports one.
    pub fn device_local_budget(&self) -> Option<u64> {
        let local = self.heaps.iter().filter(|h| h.device_local);
        local
            .map(|h| h.budget)
            .sum::<Option<u64>>()
            .filter(|b| *b > 0)
    }

    /// What this process uses of the device-local heaps, if the driver says.
    pub fn device_local_usage(&self) -> Option<u64> {
        let local = self.heaps.iter().filter(|h| h.device_local);
        local.map(|h| h.usage).sum::<Option<u64>>()
    }
}

/// The driver's memory budget, where the backend can tell: Vulkan with
/// `VK_EXT_memory_budget`, when mipstream is built with its `driver-budget`
/// feature (on by default; it enables wgpu's `vulkan` backend).
pub fn driver_budget(device: &wgpu::Device) -> Option<DriverBudget> {
    vulkan::driver_budget(device)
}

/// Whether the device runs on wgpu's GL backend (which has no allocator
/// report and never counts texture memory).
pub fn is_gl(device: &wgpu::Device) -> bool {
    device.adapter_info().backend == wgpu::Backend::Gl
}

/// Whether `copy_texture_to_texture` works for block-compressed formats on
/// this device. wgpu's GL backend copies through a framebuffer, which cannot
/// hold a compressed texture, so it is false there.
pub fn copies_compressed_textures(device: &wgpu::Device) -> bool {
    !is_gl(device)
}

#[cfg(all(not(target_arch = "wasm32"), feature = "driver-budget"))]
#[allow(unsafe_code)] // wgpu's hal escape hatch to call vkGetPhysicalDeviceMemoryProperties2
mod vulkan {
    use super::{DriverBudget, HeapBudget};
    use ash::vk;

    pub(super) fn driver_budget(device: &wgpu::Device) -> Option<DriverBudget> {
        // SAFETY: `as_hal` hands out the live hal device of a Vulkan-backed
        // wgpu device (None for other backends). Only read-only queries of the
        // physical device are made, with structures initialised by ash.
        let hal = unsafe { device.as_hal::<wgpu::hal::api::Vulkan>() }?;
        let instance = hal.shared_instance().raw_instance();
        let physical = hal.raw_physical_device();
        let has_budget = hal
            .enabled_device_extensions()
            .contains(&ash::ext::memory_budget::NAME);
        let mut budget = vk::PhysicalDeviceMemoryBudgetPropertiesEXT::default();
        let mut props = vk::PhysicalDeviceMemoryProperties2::default();
        if has_budget {
            props = props.push_next(&mut budget);
        }
        // SAFETY: `physical` belongs to `instance`; `props` (and `budget` when
        // chained) are valid for writing for the duration of the call.
        unsafe { instance.get_physical_device_memory_properties2(physical, &mut props) };
        let base = props.memory_properties;
        let heaps = (0..base.memory_heap_count as usize)
            .map(|i| HeapBudget {
                size: base.memory_heaps[i].size,
                device_local: base.memory_heaps[i]
                    .flags
                    .contains(vk::MemoryHeapFlags::DEVICE_LOCAL),
                budget: has_budget.then(|| budget.heap_budget[i]),
                usage: has_budget.then(|| budget.heap_usage[i]),
            })
            .collect();
        Some(DriverBudget { heaps })
    }
}

#[cfg(any(target_arch = "wasm32", not(feature = "driver-budget")))]
mod vulkan {
    pub(super) fn driver_budget(_: &wgpu::Device) -> Option<super::DriverBudget> {
        None
    }
}

/// wgpu's allocator report, summarised.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AllocatorSummary {
    /// Bytes in live allocations.
    pub allocated: u64,
    /// Bytes the allocator holds from the driver (allocated + free space in its blocks).
    pub reserved: u64,
    /// Memory blocks the allocator holds.
    pub blocks: usize,
    /// The largest free range inside any block.
    pub largest_free_range: u64,
    /// `1 - largest free range / total free`: 0 when all free space is one range.
    pub fragmentation: f32,
}

impl AllocatorSummary {
    /// Reserved but unallocated bytes.
    pub fn unallocated(&self) -> u64 {
        self.reserved.saturating_sub(self.allocated)
    }
}

/// Summarises `Device::generate_allocator_report` (None on backends without one).
pub fn allocator_summary(device: &wgpu::Device) -> Option<AllocatorSummary> {
    let r = device.generate_allocator_report()?;
    let mut largest = 0u64;
    for block in &r.blocks {
        let mut allocs: Vec<(u64, u64)> = r.allocations[block.allocations.clone()]
            .iter()
            .map(|a| (a.offset, a.size))
            .collect();
        allocs.sort_unstable();
        let mut at = 0u64;
        for (offset, size) in allocs {
            largest = largest.max(offset.saturating_sub(at));
            at = at.max(offset + size);
        }
        largest = largest.max(block.size.saturating_sub(at));
    }
    let free = r
        .total_reserved_bytes
        .saturating_sub(r.total_allocated_bytes);
    Some(AllocatorSummary {
        allocated: r.total_allocated_bytes,
        reserved: r.total_reserved_bytes,
        blocks: r.blocks.len(),
        largest_free_range: largest,
        fragmentation: if free == 0 {
            0.0
        } else {
            1.0 - largest as f32 / free as f32
        },
    })
}

/// wgpu's internal resource counters (feature `counters`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GpuCounters {
    /// Live textures in the device.
    pub textures: isize,
    /// Bytes of texture memory the backend reports.
    pub texture_memory: isize,
    /// Live buffers.
    pub buffers: isize,
    /// Bytes of buffer memory.
    pub buffer_memory: isize,
    /// Live memory allocations.
    pub memory_allocations: isize,
}

impl GpuCounters {
    /// Texture and buffer memory together: what wgpu counts of a device's
    /// memory.
    pub fn bytes(&self) -> u64 {
        (self.texture_memory.max(0) + self.buffer_memory.max(0)) as u64
    }
}

/// Reads wgpu's internal counters.
pub fn counters(device: &wgpu::Device) -> GpuCounters {
    let c = device.get_internal_counters();
    GpuCounters {
        textures: c.hal.textures.read(),
        texture_memory: c.hal.texture_memory.read(),
        buffers: c.hal.buffers.read(),
        buffer_memory: c.hal.buffer_memory.read(),
        memory_allocations: c.hal.memory_allocations.read(),
    }
}

/// Bytes as text with a binary unit (`1.50 MiB`).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_readable_bytes() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.50 KiB");
        assert_eq!(human_bytes(3 << 30), "3.00 GiB");
    }
}
