"""Prints docs/error-model.md's certificate table from what benches/certify.sh
wrote (target/plans-<scene><share>-certified.json; points without the file
are left out): per point, how many plans are the integer optimum of the fit's
problem (locks kept), the worst and mean distance to it, the worst distance
to the free optimum (no locks), and how far the LP gap the streamer reported
is from the exact one."""
import json
import os

SCENES = [
    ("sponza", "Sponza (annotated)"),
    ("default", "built-in scene"),
    ("helmet", "FlightHelmet"),
    ("barn", "AnisotropyBarnLamp (out-of-sample)"),
]


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target")
    print("| scene | share | plans at the optimum (locks kept) | worst above it | mean | worst above the free optimum | reported LP gap against the exact one |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for key, name in SCENES:
        for share in ["25", "50", "100"]:
            path = os.path.join(root, f"plans-{key}{share}-certified.json")
            if not os.path.exists(path):
                continue
            fr = json.load(open(path))["frames"]
            at = sum(1 for f in fr if f["optimum_gap"] <= 1e-9)
            worst = max(fr, key=lambda f: f["optimum_gap"])
            free = max(fr, key=lambda f: f["free_optimum_gap"])
            mean = sum(f["optimum_gap"] for f in fr) / len(fr)
            diffs = [abs(f["reported_lp_gap"] - f["lp_gap"]) for f in fr if f["reported_lp_gap"] is not None]
            gap = lambda g, f: f"{100 * g:.2f}% (frame {f['frame']})" if g > 1e-9 else "0%"
            notes = []
            if not all(f["proven"] for f in fr):
                notes.append("some optima unproven")
            if not all(f["plan_keeps_locks"] for f in fr):
                notes.append("a plan breaks a lock")
            print(
                f"| {name} | {share}% | {at} of {len(fr)} | {gap(worst['optimum_gap'], worst)} | {100 * mean:.2f}% "
                f"| {gap(free['free_optimum_gap'], free)} | within {100 * max(diffs or [0]):.3f} points |"
                + (f" ({'; '.join(notes)})" if notes else "")
            )


if __name__ == "__main__":
    main()
