//! Fixed level policies: the rules engines ship, so `mipstream bench` can
//! compare the budget fit with them through the same loader, upload path and
//! cap. Each rule is a pure function of what every asset (a texture or a mesh)
//! wants, holds and costs, unit-tested on small hand-made cases below.
//!
//! Levels are top-level indices here, as everywhere in mipstream: an asset at
//! level `l` holds levels `l..` (a mesh at LOD `l` holds LOD `l` and its
//! coarsest), 0 is the finest, `coarsest` is always resident. Unreal counts
//! resident mips instead (`N - l`); the rules below are translated.
//!
//! What every rule gets from the harness, identically and for free: wanted
//! levels from the same screen-space texel density (every frame, for every
//! object, with the look-ahead of moving cameras), the same visibility test
//! (frustum, no occlusion), the same upload cap, and the streamer's own
//! protection of the budget (a growth that would not fit beside everything
//! held waits, and later plans leave it room), and for the budgeted rules
//! the room in their plan for the largest growth they choose, which the
//! budget fit keeps for itself (`with_growth_room`). Knobs that only cost an
//! engine quality in this harness are left out and named where they apply.

use super::density::OFFSCREEN_LOD_BIAS;
use super::{Limit, MeshPlan, MeshResident, Planner, ResidentState, TexturePlan};
use crate::kinds::Tier;

/// How each texture's (and mesh's) resident level is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// mipstream: the level and tier that remove the most visible error the
    /// budget allows.
    #[default]
    Budget,
    /// Every texture `bias` mips below its finest, whatever the cameras see (a
    /// game's global texture-quality setting).
    UniformBias {
        /// Mips dropped from every texture.
        bias: u32,
    },
    /// Each texture at the level its screen size asks for, never more than
    /// `max_reduction` mips below its finest, with no budget fitting (Unity's
    /// mipmap streaming without a memory budget).
    DistanceOnly {
        /// The most mips a texture may drop.
        max_reduction: u32,
    },
    /// Unity's mipmap streaming with a memory budget
    /// (`QualitySettings.streamingMipmapsMemoryBudget`); see [`unity_budget`].
    UnityBudget {
        /// `QualitySettings.streamingMipmapsMaxLevelReduction` (Unity's
        /// default: 2).
        max_level_reduction: u32,
    },
    /// Unreal Engine's texture streaming pool at Epic quality
    /// (`r.Streaming.MipBias` 0); see [`unreal_pool`].
    UnrealPool {
        /// Frames per second, to turn frames since an asset was seen into
        /// the seconds Unreal's priorities count.
        frames_per_second: u32,
    },
}

impl Policy {
    /// Unity's defaults.
    pub const UNITY: Policy = Policy::UnityBudget {
        max_level_reduction: 2,
    };
    /// Unreal's Epic defaults at 60 frames per second.
    pub const UNREAL: Policy = Policy::UnrealPool {
        frames_per_second: 60,
    };
}

/// One asset as an engine rule sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RuleAsset<'a> {
    /// `bytes[l]`: bytes held at level `l` (levels `l..`), for every level up
    /// to `coarsest`; never rising with `l`.
    pub bytes: &'a [u64],
    /// Finest level allowed (a maximum resolution); 0 for none.
    pub finest: u32,
    /// The always-resident level (a texture's tail, a mesh's coarsest LOD).
    pub coarsest: u32,
    /// The level its views ask for, as the rule computes it (clamped to
    /// `finest..=coarsest` by the rule).
    pub wanted: u32,
    /// Drawn by a view this frame (inside a frustum).
    pub visible: bool,
    /// Seconds since a view last drew it (0 when visible).
    pub secs_since_seen: f32,
    /// The level it holds now.
    pub resident: u32,
    /// A mesh LOD chain rather than a texture.
    pub mesh: bool,
    /// Finest continuous lod its views need (infinite: none): nearer and
    /// larger on screen is smaller.
    pub lod: f32,
}

impl RuleAsset<'_> {
    fn at(&self, level: u32) -> u64 {
        let l = level.min(self.coarsest) as usize;
        self.bytes.get(l).copied().unwrap_or(0)
    }

    fn clamp(&self, level: u32) -> u32 {
        level.clamp(self.finest.min(self.coarsest), self.coarsest)
    }
}

/// What a rule decides for every asset.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuleOutput {
    /// Level to hold, per asset.
    pub target: Vec<u32>,
    /// Load order, per asset: larger loads first.
    pub priority: Vec<f32>,
    /// Bytes of the targets.
    pub bytes: u64,
    /// The rule holds more than the budget on purpose (Unity's floors).
    pub over_budget: bool,
}

/// Nearest first: larger for a smaller lod (a texture seen larger).
fn nearest_first(lod: f32) -> f32 {
    if lod.is_finite() {
        (-lod.clamp(-60.0, 60.0)).exp2()
    } else {
        1e-30
    }
}

/// Unity's mipmap streaming with a memory budget, as its manual and script
/// reference describe it (Unity 6: Manual/TextureStreaming-configure,
/// Manual/TextureStreaming-introduction, Manual/TextureStreaming-override-mipmap-level;
/// ScriptReference QualitySettings-streamingMipmapsMemoryBudget,
/// -streamingMipmapsMaxLevelReduction, Texture-streamingTextureDiscardUnusedMips):
///
/// - each texture's floor is `max_level_reduction` mips below its finest
///   ("Unity must keep mipmap levels above the Max Level Reduction value in
///   GPU memory. This might mean Unity exceeds the memory budget"): floors
///   are held even over the budget, and then [`RuleOutput::over_budget`] says
///   so;
/// - its desired level is the one its screen size asks for, capped at the
///   floor; a texture no camera draws sits at its floor;
/// - while the targets exceed the budget, one more mip is dropped from every
///   texture (all priorities equal, Unity's default 0: "Everything ties"),
///   step by step, until they fit or every texture sits at its floor;
/// - mips already resident finer than the target are kept while everything
///   fits (`streamingTextureDiscardUnusedMips` false, Unity's default),
///   cheapest first (the order is undocumented: an assumption);
/// - loads run nearest first.
///
/// Unity does not stream meshes: they are non-streaming memory, which Unity
/// subtracts from the texture budget. Here each mesh is held at the LOD its
/// screen size asks for (a `LODGroup`'s choice, counted as if only that LOD
/// and the coarsest were in memory: an advantage over Unity, which keeps every
/// LOD of a group loaded), and the textures get the rest.
///
/// Advantages this harness gives Unity: wanted levels for every renderer every
/// frame (Unity refreshes 512 renderers per frame), no limit on outstanding
/// requests (1024 in Unity).
pub fn unity_budget(assets: &[RuleAsset<'_>], budget: u64, max_level_reduction: u32) -> RuleOutput {
    let n = assets.len();
    let mut target = vec![0u32; n];
    let mut priority = vec![0f32; n];
    let mut floor = vec![0u32; n];
    let mut desired = vec![0u32; n];
    let mut meshes = 0u64;
    for (i, a) in assets.iter().enumerate() {
        if a.mesh {
            target[i] = a.clamp(a.wanted);
            meshes += a.at(target[i]);
            priority[i] = 1e30; // not streamed: there from the start
            continue;
        }
        floor[i] = a.clamp(a.finest.saturating_add(max_level_reduction));
        desired[i] = if a.visible {
            a.clamp(a.wanted).min(floor[i])
        } else {
            floor[i]
        };
        priority[i] = nearest_first(a.lod);
    }
    let streaming = budget.saturating_sub(meshes);
    let textures = |extra: u32, target: &mut [u32]| -> (u64, bool) {
        let (mut sum, mut all_floor) = (0u64, true);
        for (i, a) in assets.iter().enumerate().filter(|(_, a)| !a.mesh) {
            target[i] = desired[i].saturating_add(extra).min(floor[i]);
            all_floor &= target[i] == floor[i];
            sum += a.at(target[i]);
        }
        (sum, all_floor)
    };
    let mut extra = 0;
    let mut used = loop {
        let (sum, all_floor) = textures(extra, &mut target);
        if sum <= streaming || all_floor {
            break sum;
        }
        extra += 1;
    };
    let over_budget = used > streaming;
    if !over_budget {
        // cached mips: resident finer than the target, kept while they fit
        let mut cached: Vec<(u64, usize)> = assets
            .iter()
            .enumerate()
            .filter(|(i, a)| !a.mesh && a.resident < target[*i])
            .map(|(i, a)| (a.at(a.clamp(a.resident)) - a.at(target[i]), i))
            .collect();
        cached.sort_unstable();
        for (extra, i) in cached {
            if used + extra <= streaming {
                used += extra;
                target[i] = assets[i].clamp(assets[i].resident);
            }
        }
    }
    RuleOutput {
        target,
        priority,
        bytes: used + meshes,
        over_budget,
    }
}

/// Bytes at or above which Unreal calls an asset huge (`8 MB`).
const UNREAL_HUGE: u64 = 8 << 20;
/// Bytes at or below which Unreal calls an asset small (`200 KB`).
const UNREAL_SMALL: u64 = 200 << 10;

/// Unreal Engine's texture streaming pool at Epic quality, from its source
/// (`Engine/Source/Runtime/Engine/Private/Streaming/AsyncTextureStreaming.cpp`:
/// `UpdateBudgetedMips_Async`, `UpdateRetentionPriority_Async`, `TryDropMips`,
/// `TryKeepMips`, `UpdateLoadAndCancelationRequests_Async`;
/// `StreamingTexture.cpp`: `GetWantedMipsFromSize`; the UE4 "Texture
/// Streaming Overview" states the same order):
///
/// - wanted mips from screen size; an asset no view draws is "hidden" and
///   wants one mip fewer (`HiddenPrimitiveScale` 0.5), remembered as one
///   missing mip (the caller computes `wanted` that way);
/// - the budgeted level is the wanted one, clamped to what may be resident
///   (the 64x64 tail always is, `NUM_INLINE_DERIVED_MIPS` 7);
/// - retention priority: +4096 a mesh (`PrioritizeMeshLODRetention`), +1024
///   visible, +512 not huge (< 8 MB at its budgeted level), +256 small
///   (<= 200 KB), and a hidden asset `clamp(255 - seconds since seen, 1,
///   255)`; ties by index, the higher first;
/// - while over the budget (`TryDropMips`): passes over the assets from the
///   lowest priority up, each dropping one mip from every asset not at its
///   floor (a hidden asset spends its missing mip instead), stopping the
///   moment the total fits; a mesh is passed over while its one-LOD saving is
///   smaller than the smallest one-mip saving of a texture that can still
///   drop;
/// - with room left (`TryKeepMips`): passes from the highest priority down,
///   each keeping one already-resident finer mip per asset while it fits;
/// - loads (`UpdateLoadOrderPriority_Async`): +1024 visible, +256 more than
///   two mips missing, then recency.
///
/// Left out, each to Unreal's advantage here: the pool's `MemoryMargin` (5 MB,
/// larger than some budgets benchmarked) and the rule that the budget grows
/// only when the headroom exceeds temp memory plus margin; slicing the wanted
/// update over 5 frames; the 50 MB temp-memory cap on requests. `MipBias` 0
/// (Epic) means no per-texture max-resolution bias (`TryDropMaxResolutions`).
pub fn unreal_pool(assets: &[RuleAsset<'_>], budget: u64) -> RuleOutput {
    let n = assets.len();
    let mut bud: Vec<u32> = assets.iter().map(|a| a.clamp(a.wanted)).collect();
    let mut missing: Vec<u32> = assets.iter().map(|a| u32::from(!a.visible)).collect();
    let retention: Vec<u32> = assets
        .iter()
        .zip(&bud)
        .map(|(a, &b)| {
            let size = a.at(b);
            let recency = if a.visible {
                0
            } else {
                (255.0 - a.secs_since_seen).clamp(1.0, 255.0) as u32
            };
            4096 * u32::from(a.mesh)
                + 1024 * u32::from(a.visible)
                + 512 * u32::from(size < UNREAL_HUGE)
                + 256 * u32::from(size <= UNREAL_SMALL)
                + recency
        })
        .collect();
    // highest priority first; ties: higher index first
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| retention[b].cmp(&retention[a]).then(b.cmp(&a)));
    let mut used: u64 = assets.iter().zip(&bud).map(|(a, &b)| a.at(b)).sum();
    let saving = |a: &RuleAsset<'_>, b: u32| a.at(b) - a.at(b + 1);
    // TryDropMips
    while used > budget {
        let smallest_texture_saving = assets
            .iter()
            .zip(&bud)
            .filter(|(a, &b)| !a.mesh && b < a.coarsest)
            .map(|(a, &b)| saving(a, b))
            .min()
            .unwrap_or(0);
        let mut changed = false;
        for &i in order.iter().rev() {
            if used <= budget {
                break;
            }
            let a = &assets[i];
            if bud[i] >= a.coarsest {
                continue;
            }
            if a.mesh && saving(a, bud[i]) < smallest_texture_saving {
                continue;
            }
            changed = true;
            if missing[i] > 0 {
                missing[i] -= 1;
                continue;
            }
            used -= saving(a, bud[i]);
            bud[i] += 1;
        }
        if !changed {
            break;
        }
    }
    // TryKeepMips: resident finer mips, highest priority first, one per pass
    let mut keep: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&i| assets[i].clamp(assets[i].resident) < bud[i])
        .collect();
    while !keep.is_empty() {
        keep.retain(|&i| {
            let a = &assets[i];
            let add = a.at(bud[i] - 1) - a.at(bud[i]);
            if used + add > budget {
                return false;
            }
            used += add;
            bud[i] -= 1;
            a.clamp(a.resident) < bud[i]
        });
    }
    let priority = assets
        .iter()
        .zip(&bud)
        .map(|(a, &b)| {
            let recency = (255.0 - a.secs_since_seen).clamp(1.0, 255.0);
            (1024 * u32::from(a.visible) + 256 * u32::from(a.resident > b + 2)) as f32 + recency
        })
        .collect();
    RuleOutput {
        over_budget: used > budget,
        target: bud,
        priority,
        bytes: used,
    }
}

/// Every texture `bias` mips below its finest, every mesh `bias` LODs below
/// its finest (a game's quality setting: loaded up front, so the load order
/// is nearest first only for the start).
pub fn uniform_bias(assets: &[RuleAsset<'_>], bias: u32) -> RuleOutput {
    fixed(assets, |a| a.clamp(a.finest.saturating_add(bias)))
}

/// Each texture at the level its screen size asks for, never more than
/// `max_reduction` mips below its finest, with no budget; meshes at the LOD
/// their screen size asks for; loads nearest first (Unity's mipmap streaming
/// with the memory budget switched off).
pub fn distance_only(assets: &[RuleAsset<'_>], max_reduction: u32) -> RuleOutput {
    fixed(assets, |a| {
        if a.mesh {
            a.clamp(a.wanted)
        } else {
            a.clamp(a.wanted.min(a.finest.saturating_add(max_reduction)))
        }
    })
}

fn fixed(assets: &[RuleAsset<'_>], level: impl Fn(&RuleAsset<'_>) -> u32) -> RuleOutput {
    let target: Vec<u32> = assets.iter().map(&level).collect();
    RuleOutput {
        bytes: assets.iter().zip(&target).map(|(a, &t)| a.at(t)).sum(),
        priority: assets.iter().map(|a| nearest_first(a.lod)).collect(),
        target,
        over_budget: false,
    }
}

/// Which asset a rule input is.
#[derive(Debug, Clone, Copy)]
enum Slot {
    Texture(usize),
    Mesh(usize),
}

/// A rule input before its byte table is borrowed.
#[derive(Debug, Clone, Copy)]
struct Input {
    slot: Slot,
    finest: u32,
    coarsest: u32,
    wanted: u32,
    visible: bool,
    secs_since_seen: f32,
    resident: u32,
    lod: f32,
}

impl Planner {
    /// Plans by the fixed [`Policy`] in force: the same wanted levels as the
    /// budget fit (same densities, hysteresis, look-ahead), the rule's targets
    /// and load order, full tier only.
    pub(super) fn plan_by_policy(
        &mut self,
        budget: u64,
        resident: &[ResidentState],
        meshes: &[MeshResident],
        frame: u64,
    ) {
        let policy = self.policy;
        let fps = match policy {
            Policy::UnrealPool { frames_per_second } => frames_per_second.max(1) as f32,
            _ => 60.0,
        };
        let secs = |seen: u64| {
            if seen == u64::MAX {
                1e9
            } else {
                frame.saturating_sub(seen) as f32 / fps
            }
        };
        let mut inputs = Vec::new();
        for slot in 0..self.textures.len() {
            let Some(t) = self.textures[slot] else {
                continue;
            };
            let sum = self.sums[slot + 1];
            let visible = sum.visible_lod.is_finite();
            if visible {
                self.last_seen[slot] = frame;
            }
            // Unreal: a hidden instance counts at half its screen size (one
            // mip coarser), where the common model says OFFSCREEN_LOD_BIAS
            let lod = match policy {
                Policy::UnrealPool { .. } => sum
                    .visible_lod
                    .min(sum.hidden_lod - (OFFSCREEN_LOD_BIAS - 1.0)),
                _ => sum.lod(),
            };
            let wanted = self.wanted_level(&t, lod, self.wanted[slot]);
            self.wanted[slot] = wanted;
            inputs.push(Input {
                slot: Slot::Texture(slot),
                finest: t.finest_allowed,
                coarsest: t.tail_level,
                wanted,
                visible,
                secs_since_seen: secs(self.last_seen[slot]),
                resident: resident.get(slot).map_or(t.tail_level, |r| r.level),
                lod,
            });
        }
        let mut mesh_bytes: Vec<Vec<u64>> = Vec::new();
        for slot in 0..self.meshes.len() {
            let Some(m) = self.meshes[slot].as_ref() else {
                continue;
            };
            let need = self.mesh_need.get(slot).copied().unwrap_or_default();
            let wanted = self.mesh_wanted_lod(m, need.k, self.mesh_wanted[slot]);
            let coarsest = m.coarsest();
            mesh_bytes.push((0..=coarsest).map(|l| m.bytes(l)).collect());
            self.mesh_wanted[slot] = wanted;
            if need.visible {
                self.mesh_last_seen[slot] = frame;
            }
            inputs.push(Input {
                slot: Slot::Mesh(slot),
                finest: 0,
                coarsest,
                wanted,
                visible: need.visible,
                secs_since_seen: secs(self.mesh_last_seen[slot]),
                resident: meshes.get(slot).map_or(coarsest, |r| r.lod.min(coarsest)),
                lod: if need.k > 0.0 {
                    -need.k.log2()
                } else {
                    f32::INFINITY
                },
            });
        }
        let out = {
            let mut next_mesh = mesh_bytes.iter();
            let assets: Vec<RuleAsset<'_>> = inputs
                .iter()
                .map(|i| RuleAsset {
                    bytes: match i.slot {
                        Slot::Texture(slot) => {
                            let t = self.textures[slot].as_ref().expect("listed above");
                            let start = t.start as usize;
                            &self.pool[start..start + t.levels as usize]
                        }
                        Slot::Mesh(_) => next_mesh.next().expect("one per mesh"),
                    },
                    finest: i.finest,
                    coarsest: i.coarsest,
                    wanted: i.wanted,
                    visible: i.visible,
                    secs_since_seen: i.secs_since_seen,
                    resident: i.resident,
                    mesh: matches!(i.slot, Slot::Mesh(_)),
                    lod: i.lod,
                })
                .collect();
            let rule = |budget: u64| match policy {
                Policy::Budget => unreachable!("the budget fit plans elsewhere"),
                Policy::UniformBias { bias } => uniform_bias(&assets, bias),
                Policy::DistanceOnly { max_reduction } => distance_only(&assets, max_reduction),
                Policy::UnityBudget {
                    max_level_reduction,
                } => unity_budget(&assets, budget, max_level_reduction),
                Policy::UnrealPool { .. } => unreal_pool(&assets, budget),
            };
            match policy {
                Policy::UnityBudget { .. } | Policy::UnrealPool { .. } => {
                    with_growth_room(&assets, budget, self.restaged_growth, rule)
                }
                _ => (rule(budget), 0),
            }
        };
        self.write_rule_plan(&inputs, &out.0, budget);
        self.plan.growth_room = out.1;
    }

    fn write_rule_plan(&mut self, inputs: &[Input], out: &RuleOutput, budget: u64) {
        self.plan.textures.clear();
        self.plan
            .textures
            .resize(self.textures.len(), TexturePlan::default());
        self.plan.meshes.clear();
        self.plan
            .meshes
            .resize(self.meshes.len(), MeshPlan::default());
        self.plan.tail_bytes = 0;
        for (k, i) in inputs.iter().enumerate() {
            let (target, priority) = (out.target[k], out.priority[k]);
            let limit = (target > i.wanted).then_some(Limit::Budget);
            match i.slot {
                Slot::Texture(slot) => {
                    let t = self.textures[slot].as_ref().expect("listed");
                    self.plan.tail_bytes += t.bytes(&self.pool, t.tail_level, Tier::Full);
                    let sum = self.sums[slot + 1];
                    self.plan.textures[slot] = TexturePlan {
                        lod: sum.lod(),
                        coverage: sum.coverage,
                        wanted: i.wanted,
                        target,
                        tier: Tier::Full,
                        limit,
                        priority: if target < i.resident { priority } else { 0.0 },
                        prefetch: false,
                    };
                }
                Slot::Mesh(slot) => {
                    let m = self.meshes[slot].as_ref().expect("listed");
                    self.plan.tail_bytes += m.bytes(m.coarsest());
                    let need = self.mesh_need.get(slot).copied().unwrap_or_default();
                    self.plan.meshes[slot] = MeshPlan {
                        pixels_per_unit: need.k,
                        coverage: need.coverage,
                        wanted: i.wanted,
                        target,
                        limit,
                        priority: if target < i.resident { priority } else { 0.0 },
                    };
                }
            }
        }
        self.plan.bytes = out.bytes;
        self.plan.budget = budget;
        self.plan.growth_room = 0;
        self.plan.over_budget = out.over_budget;
    }
}

/// The most bytes growing into `out`'s targets needs beside what is held at
/// once: a growing asset's new copy is built beside its old one.
fn largest_growth(assets: &[RuleAsset<'_>], out: &RuleOutput, restaged: bool) -> u64 {
    assets
        .iter()
        .zip(&out.target)
        .filter(|(a, &t)| t < a.resident && t < a.coarsest)
        .map(|(a, &t)| {
            // without GPU copies a texture's kept levels are staged again
            let kept = if restaged && !a.mesh {
                a.bytes[(a.resident as usize).min(a.bytes.len() - 1)]
            } else {
                0
            };
            a.bytes[t as usize] + kept
        })
        .max()
        .unwrap_or(0)
}

/// A budgeted rule with the advantage the budget fit gives itself: its plan
/// keeps room for the largest growth it chooses, so the streamer can carry
/// the plan out (a growth needs its new copy beside the old one). The rule
/// runs on the budget less that room, again if its new plan grows larger
/// (three times at most); returns the plan and the room it keeps. Rules
/// without a budget run once.
fn with_growth_room(
    assets: &[RuleAsset<'_>],
    budget: u64,
    restaged: bool,
    rule: impl Fn(u64) -> RuleOutput,
) -> (RuleOutput, u64) {
    let mut out = rule(budget);
    let mut room = 0;
    for _ in 0..3 {
        let need = largest_growth(assets, &out, restaged);
        if out.over_budget || out.bytes + need <= budget || need <= room {
            break;
        }
        room = need;
        out = rule(budget.saturating_sub(room));
    }
    (out, room)
}

#[cfg(test)]
mod tests;
