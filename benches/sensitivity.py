"""Each budget of `mipstream bench --json` runs (the base budget and its
sweep), as a share of the working set, with every strategy's PSNR of the
mean error and the two differences issues 47 and 48 judge by:
`mipstream` less `mipstream_geometric` and `mipstream_feedback` less
`mipstream` (dB), sorted by size, share and the run's
`--min-residency-frames`. See benches/sensitivity.sh.

    python3 benches/sensitivity.py RUN.json [RUN.json ...]
"""
import json
import sys


def budgets(run):
    ws = run["working_set_bytes"]
    yield run["budget_bytes"] / ws, run["strategies"]
    for s in run.get("sweep", []):
        yield s["budget_bytes"] / ws, {k: v for k, v in s.items() if isinstance(v, dict)}


def main():
    rows = []
    names = []
    for path in sys.argv[1:]:
        run = json.load(open(path))
        size = f'{run["width"]}x{run["height"]}'
        locks = run.get("min_residency_frames", "")
        for share, strategies in budgets(run):
            psnr = {k: v["psnr_db_mean"] for k, v in strategies.items() if k != "full"}
            names += [k for k in psnr if k not in names]
            rows.append((size, share, locks, psnr))
    rows.sort(key=lambda r: (int(r[0].split("x")[0]), r[1], -(r[2] or 0)))

    def diff(p, a, b):
        return f"{p[a] - p[b]:+.2f}" if a in p and b in p else ""

    print("| size | share | `min_residency_frames` | " + " | ".join(f"`{n}`" for n in names)
          + " | measured - geometric | feedback - mipstream |")
    print("|---|---:|---:|" + "---:|" * (len(names) + 2))
    for size, share, locks, p in rows:
        cells = [f"{p[n]:.2f}" if n in p else "" for n in names]
        print(f"| {size} | {100 * share:.0f}% | {locks} | " + " | ".join(cells) + " | "
              + diff(p, "mipstream", "mipstream_geometric") + " | "
              + diff(p, "mipstream_feedback", "mipstream") + " |")


if __name__ == "__main__":
    main()
