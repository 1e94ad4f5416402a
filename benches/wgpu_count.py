"""Prints docs/results.md's "The budget by wgpu's count" table and summary from
the JSON that benches/wgpu_count.sh writes (target/bench-<scene>-{new,old}.json;
scenes without both files are left out)."""
import json
import os

SCENES = [
    ("sponza", "Sponza (annotated)", "Sponza"),
    ("builtin", "built-in scene", "the built-in scene"),
    ("helmet", "FlightHelmet (glTF)", "FlightHelmet"),
    ("barn", "AnisotropyBarnLamp (glTF, out-of-sample)", "AnisotropyBarnLamp"),
]
RULES = ["unreal_pool", "mipstream"]
FRACTIONS = [0.25, 0.5, 1.0]


def points(d):
    """(PSNR, FLIP, frames over by wgpu) per budget fraction and rule."""
    pick = lambda r: (r["psnr_db_mean"], r["flip_mean"], r["frames_over_budget_by_wgpu"])
    out = {p["budget_fraction"]: {k: pick(p[k]) for k in RULES} for p in d["sweep"]}
    out[0.5] = {k: pick(d["strategies"][k]) for k in RULES}
    return out


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target")
    have = [s for s in SCENES if all(os.path.exists(os.path.join(root, f"bench-{s[0]}-{m}.json")) for m in ["new", "old"])]
    lines = ["| scene | rule | books | 25% | 50% | 100% |", "|---|---|---|---|---|---|"]
    cost = {k: [] for k in RULES}
    over_old = {k: [] for k in RULES}
    over_new = 0
    leads = []
    for key, row_name, name in have:
        new = points(json.load(open(os.path.join(root, f"bench-{key}-new.json"))))
        old = points(json.load(open(os.path.join(root, f"bench-{key}-old.json"))))
        for k in RULES:
            for books, d in [("retiring counted (default)", new), ("released at once (`--release-at-once`)", old)]:
                cells = " | ".join(f"{d[f][k][0]:.2f} / {d[f][k][1]:.4f} / {d[f][k][2]}" for f in FRACTIONS)
                first = books.startswith("retiring")
                lines.append(f"| {row_name if k == 'unreal_pool' and first else ''} | {k if first else ''} | {books} | {cells} |")
            for f in FRACTIONS:
                cost[k].append((new[f][k][0] - old[f][k][0], name, f))
                over_old[k].append(old[f][k][2])
                over_new += new[f][k][2]
        leads.append((name, [new[f]["mipstream"][0] - new[f]["unreal_pool"][0] for f in FRACTIONS]))
    pct = lambda f: f"{int(f * 100)}%"
    worst = {k: min(cost[k]) for k in RULES}
    best = max(cost["mipstream"])
    print("\n".join(lines))
    print()
    print(f"On the default books neither rule goes over its budget by wgpu's count ({over_new} frames in all); on the old books mipstream went over in up to {max(over_old['mipstream'])} of 300 frames and `unreal_pool` in up to {max(over_old['unreal_pool'])}.")
    print(f"Waiting for memory to come back costs mipstream at most {-worst['mipstream'][0]:.2f} dB ({worst['mipstream'][1]} at {pct(worst['mipstream'][2])}) and `unreal_pool` at most {-worst['unreal_pool'][0]:.2f} dB ({worst['unreal_pool'][1]} at {pct(worst['unreal_pool'][2])}); the largest change the other way is {best[0]:+.2f} dB for mipstream ({best[1]} at {pct(best[2])}).")
    print("mipstream's lead over `unreal_pool` on the default books, at 25/50/100%: " + "; ".join(f"{n} {l[0]:+.2f} / {l[1]:+.2f} / {l[2]:+.2f} dB" for n, l in leads) + ".")


if __name__ == "__main__":
    main()
