"""Prints docs/results.md's per-scene tables ("Per scene") from the
default-books runs that benches/wgpu_count.sh writes
(target/bench-<scene>-new.json; scenes without the file are left out): per
scene the run at 50% of the working set, every strategy, then PSNR / FLIP at
each budget of the sweep."""
import json
import os

SCENES = [
    ("sponza", "Sponza (51 textures on boxes, annotated)", "bench", "Sponza"),
    ("builtin", "built-in scene", "bench-default", "The built-in scene"),
    ("helmet", "FlightHelmet (glTF)", "bench-helmet", "FlightHelmet"),
    ("barn", "AnisotropyBarnLamp (glTF, out-of-sample)", "bench-barnlamp", "AnisotropyBarnLamp (out-of-sample)"),
]
ORDER = ["full", "uniform_bias", "distance_only", "unity_budget", "unreal_pool", "mipstream", "mipstream_geometric"]
NAMES = {"mipstream": "**mipstream**", "mipstream_geometric": "mipstream, geometric"}
MIB = 1024.0 * 1024.0


def mib(b):
    return "-" if b is None else f"{b / MIB:.2f} MiB"


def pct(m, x):
    return "-" if m is None else f"{100 * m:.2f}% / {100 * x:.1f}%"


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target")
    out = []
    for key, title, shots, alt in SCENES:
        path = os.path.join(root, f"bench-{key}-new.json")
        if not os.path.exists(path):
            continue
        d = json.load(open(path))
        compared = len(d["compared_frames"])
        out.append(
            f"**{title}**: working set {mib(d['working_set_bytes'])}, budget {mib(d['budget_bytes'])}, "
            f"full residency {mib(d['full_residency_bytes'])}, {d['frames']} frames, {compared} compared (the run at 50%):"
        )
        out.append("")
        out.append(
            "| strategy | setting | peak held | texture memory (wgpu counter) | allocator allocated | frames over budget "
            "| over by wgpu | PSNR (dB) | worst frame | FLIP | largest upload | converged after cut "
            "| update p50 / p99 (ms) | certificates p50 / p99 (ms) | LP gap mean / max | knapsack gap mean / max |"
        )
        out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for k in ORDER:
            s = d["strategies"].get(k)
            if s is None:
                continue
            ref = k == "full"
            upd = s["streamer_update_ms_p50_p99"]
            certs = s["certificate_ms_p50_p99"]
            cells = [
                NAMES.get(k, k),
                s["setting"],
                mib(s["peak_resident_bytes"]),
                mib(s["gpu_texture_memory_peak_bytes"]),
                mib(s["allocator_allocated_peak_bytes"]),
                str(s["frames_over_budget"]),
                str(s["frames_over_budget_by_wgpu"]),
                "(reference)" if ref else f"{s['psnr_db_mean']:.2f}",
                "" if ref else f"{s['psnr_db_min']:.2f}",
                "" if ref else f"{s['flip_mean']:.4f}",
                f"{s['max_upload_bytes_in_a_frame'] / 1024:.0f} KiB",
                str(s["frames_to_converge_after_cut"]),
                f"{upd[0]:.2f} / {upd[1]:.2f}",
                f"{certs[0]:.2f} / {certs[1]:.2f}",
                pct(s.get("fit_gap_lp_mean"), s.get("fit_gap_lp_max")),
                pct(s.get("fit_gap_knapsack_mean"), s.get("fit_gap_knapsack_max")),
            ]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
        out.append("PSNR (dB) / FLIP at each budget (`*`: over the budget, by the books or by wgpu's count):")
        out.append("")
        points = {p["budget_fraction"]: p for p in d["sweep"]}
        points[0.5] = d["strategies"]
        fr = sorted(points)
        out.append("| fraction of working set | " + " | ".join(f"{f:g}" for f in fr) + " |")
        out.append("|---|" + "---|" * len(fr))
        for k in ORDER[1:]:
            if k not in points[fr[0]]:
                continue
            cells = []
            for f in fr:
                r = points[f][k]
                over = r["frames_over_budget"] > 0 or (r.get("frames_over_budget_by_wgpu") or 0) > 0
                cells.append(f"{r['psnr_db_mean']:.2f} / {r['flip_mean']:.4f}{'*' if over else ''}")
            out.append(f"| {NAMES.get(k, k)} | " + " | ".join(cells) + " |")
        out.append("")
        out.append(f"![{alt}: quality against memory held](../assets/screenshots/{shots}/quality_vs_memory.png)")
        out.append(f"![{alt}: FLIP against budget](../assets/screenshots/{shots}/flip_vs_budget.png)")
        out.append("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
