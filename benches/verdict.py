"""Prints docs/results.md's verdict table ("The verdict, at 25%, 50% and 100%
of the working set") and its tallies from the default-books runs that
benches/wgpu_count.sh writes (target/bench-<scene>-new.json; scenes without
the file are left out).

A cell is PSNR (dB) / mean FLIP; `*` marks a run over its budget (by the
books or by wgpu's count). Bold: mipstream (the default) ahead of every
engine rule that kept to the budget by at least 1 dB with a lower FLIP."""
import json
import os

SCENES = [
    ("sponza", "Sponza (51 textures on boxes, annotated)", "Sponza"),
    ("builtin", "built-in scene", "the built-in scene"),
    ("helmet", "FlightHelmet (glTF)", "FlightHelmet"),
    ("barn", "AnisotropyBarnLamp (glTF, out-of-sample)", "AnisotropyBarnLamp"),
]
ENGINE = ["unity_budget", "unreal_pool"]
ROWS = ENGINE + ["mipstream", "mipstream_geometric"]
NAMES = {"mipstream_geometric": "mipstream, geometric"}
FRACTIONS = [0.25, 0.5, 1.0]


def points(d):
    """Per budget fraction and rule: (PSNR, FLIP, over budget)."""
    def pick(r):
        over = r["frames_over_budget"] > 0 or (r.get("frames_over_budget_by_wgpu") or 0) > 0
        return (r["psnr_db_mean"], r["flip_mean"], over)

    out = {p["budget_fraction"]: {k: pick(p[k]) for k in ROWS if k in p} for p in d["sweep"]}
    # the run's own fraction (benches/wgpu_count.sh: 0.5) is not in the sweep
    out[0.5] = {k: pick(d["strategies"][k]) for k in ROWS if k in d["strategies"]}
    return out


def bold(pt):
    """mipstream at least 1 dB ahead of every engine rule within budget, lower FLIP."""
    m = pt["mipstream"]
    if m[2]:
        return False
    return all(m[0] >= e[0] + 1.0 and m[1] < e[1] for e in (pt[k] for k in ENGINE) if not e[2])


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target")
    lines = ["| scene | rule | 25% | 50% | 100% |", "|---|---|---|---|---|"]
    met, met_geo, total, ahead, below = 0, 0, 0, [], []
    for key, row_name, name in SCENES:
        path = os.path.join(root, f"bench-{key}-new.json")
        if not os.path.exists(path):
            continue
        pts = points(json.load(open(path)))
        for i, k in enumerate(ROWS):
            cells = []
            for f in FRACTIONS:
                p, fl, over = pts[f][k]
                cell = f"{p:.2f} / {fl:.4f}{'*' if over else ''}"
                if k == "mipstream" and bold(pts[f]):
                    cell = f"**{cell}**"
                cells.append(cell)
            lines.append(f"| {row_name if i == 0 else ''} | {NAMES.get(k, k)} | " + " | ".join(cells) + " |")
        for f in FRACTIONS:
            total += 1
            met += bold(pts[f])
            geo = dict(pts[f], mipstream=pts[f]["mipstream_geometric"])
            met_geo += bold(geo)
            d = pts[f]["mipstream"][0] - pts[f]["mipstream_geometric"][0]
            (ahead if d >= 0 else below).append(f"{name} {int(f * 100)}% {d:+.2f}")
    print("\n".join(lines))
    print()
    print(f"mipstream meets that bar at {met} of the {total} points (the geometric model at {met_geo}).")
    print("Measured loss against the geometric model: at or above it at " + f"{len(ahead)} of {total} points ({'; '.join(ahead)}); below at {len(below)} ({'; '.join(below) or 'none'}).")


if __name__ == "__main__":
    main()
