//! mipstream's numbers as Bevy diagnostics (`DiagnosticsStore`; the
//! `LogDiagnosticsPlugin` prints them).

use crate::Mipstream;
use bevy::diagnostic::{Diagnostic, DiagnosticPath, Diagnostics, RegisterDiagnostic};
use bevy::prelude::*;
use mipstream::streamer::BelowReason;

/// The diagnostic paths the plugin records every frame (the "below" counts
/// every [`MipstreamDiagnostics::REPORT_EVERY`] frames: they need the full
/// residency report).
#[derive(Debug)]
pub struct MipstreamDiagnostics;

impl MipstreamDiagnostics {
    /// GPU MiB mipstream holds (textures, meshes, staging, pool).
    pub const HELD_MIB: DiagnosticPath = DiagnosticPath::const_new("mipstream/held_mib");
    /// The budget in MiB.
    pub const BUDGET_MIB: DiagnosticPath = DiagnosticPath::const_new("mipstream/budget_mib");
    /// KiB uploaded this frame.
    pub const UPLOAD_KIB: DiagnosticPath = DiagnosticPath::const_new("mipstream/upload_kib");
    /// Levels uploaded this frame.
    pub const UPLOADS: DiagnosticPath = DiagnosticPath::const_new("mipstream/uploads");
    /// Milliseconds `Streamer::update` took (planning, uploads, swaps).
    pub const UPDATE_MS: DiagnosticPath = DiagnosticPath::const_new("mipstream/update_ms");
    /// Milliseconds all the plugin's main-world systems took (`update` included).
    pub const PLUGIN_MS: DiagnosticPath = DiagnosticPath::const_new("mipstream/plugin_ms");
    /// Textures holding less detail than the cameras want.
    pub const BELOW_WANTED: DiagnosticPath = DiagnosticPath::const_new("mipstream/below_wanted");
    /// ... of which because the budget does not reach.
    pub const BELOW_BUDGET: DiagnosticPath = DiagnosticPath::const_new("mipstream/below/budget");
    /// ... of which because their levels are still loading.
    pub const BELOW_LOADING: DiagnosticPath = DiagnosticPath::const_new("mipstream/below/loading");
    /// ... of which because the per-frame upload cap was spent.
    pub const BELOW_UPLOAD_CAP: DiagnosticPath =
        DiagnosticPath::const_new("mipstream/below/upload_cap");
    /// ... of which for any other reason (max resolution, errors, out of memory).
    pub const BELOW_OTHER: DiagnosticPath = DiagnosticPath::const_new("mipstream/below/other");
    /// Mesh LODs Bevy holds for mipstream (cooked scenes' meshes).
    pub const MESH_LODS: DiagnosticPath = DiagnosticPath::const_new("mipstream/mesh_lods");
    /// MiB of those LODs.
    pub const MESH_MIB: DiagnosticPath = DiagnosticPath::const_new("mipstream/mesh_mib");
    /// Meshes drawn coarser than the cameras want (every [`Self::REPORT_EVERY`] frames).
    pub const MESHES_BELOW: DiagnosticPath = DiagnosticPath::const_new("mipstream/meshes_below");
    /// Frames between the "below" counts.
    pub const REPORT_EVERY: u64 = 30;
}

pub(crate) fn build(app: &mut App) {
    use MipstreamDiagnostics as D;
    for (path, suffix) in [
        (D::HELD_MIB, " MiB"),
        (D::BUDGET_MIB, " MiB"),
        (D::UPLOAD_KIB, " KiB"),
        (D::UPLOADS, ""),
        (D::UPDATE_MS, " ms"),
        (D::PLUGIN_MS, " ms"),
        (D::BELOW_WANTED, ""),
        (D::BELOW_BUDGET, ""),
        (D::BELOW_LOADING, ""),
        (D::BELOW_UPLOAD_CAP, ""),
        (D::BELOW_OTHER, ""),
        (D::MESH_LODS, ""),
        (D::MESH_MIB, " MiB"),
        (D::MESHES_BELOW, ""),
    ] {
        app.register_diagnostic(Diagnostic::new(path).with_suffix(suffix));
    }
}

pub(crate) fn record(ms: Res<Mipstream>, mut diagnostics: Diagnostics) {
    use MipstreamDiagnostics as D;
    const MIB: f64 = (1u64 << 20) as f64;
    let s = &ms.streamer;
    let stats = s.frame_stats();
    diagnostics.add_measurement(&D::HELD_MIB, || s.held_bytes() as f64 / MIB);
    diagnostics.add_measurement(&D::BUDGET_MIB, || s.budget_bytes() as f64 / MIB);
    diagnostics.add_measurement(&D::UPLOAD_KIB, || stats.upload_bytes as f64 / 1024.0);
    diagnostics.add_measurement(&D::UPLOADS, || stats.uploads as f64);
    diagnostics.add_measurement(&D::UPDATE_MS, || stats.update_time.as_secs_f64() * 1e3);
    diagnostics.add_measurement(&D::PLUGIN_MS, || ms.frame_time.as_secs_f64() * 1e3);
    diagnostics.add_measurement(&D::MESH_LODS, || ms.held_mesh_lods() as f64);
    diagnostics.add_measurement(&D::MESH_MIB, || s.mesh_bytes() as f64 / MIB);
    if s.frame() % D::REPORT_EVERY != 1 {
        return;
    }
    let report = s.report();
    let below = report.meshes.iter().filter(|m| m.below.is_some()).count();
    diagnostics.add_measurement(&D::MESHES_BELOW, || below as f64);
    let mut counts = [0u32; 5];
    for t in &report.textures {
        let Some(reason) = &t.below else { continue };
        counts[0] += 1;
        counts[match reason {
            BelowReason::Budget => 1,
            BelowReason::Loading => 2,
            BelowReason::UploadCap => 3,
            _ => 4,
        }] += 1;
    }
    for (path, n) in [
        D::BELOW_WANTED,
        D::BELOW_BUDGET,
        D::BELOW_LOADING,
        D::BELOW_UPLOAD_CAP,
        D::BELOW_OTHER,
    ]
    .iter()
    .zip(counts)
    {
        diagnostics.add_measurement(path, || n as f64);
    }
}
