"""Where one strategy loses to another, from a `mipstream bench --trace FILE`
run: per budget, each texture's squared error (against `full`) summed over
the compared frames, the strategy's less the base's, largest first; the
share of it from frames where the strategy held the texture in the compact
tier and the base did not; and the frames that lost most, with the textures
behind them (wanted / planned / resident level, tier, the planner's
coverage, the pixels the picture shows, the squared error).

    python3 benches/trace_diff.py TRACE [STRATEGY] [BASE] [--top N]
    python3 benches/trace_diff.py TRACE STRATEGY --across-budgets [--top N]

STRATEGY defaults to mipstream_feedback, BASE to mipstream. With
`--across-budgets` each budget of STRATEGY after the first is set against
the run's first budget (`--budget-fraction`) of the same strategy: where a
larger budget loses (docs/results.md, "How much one point says"). docs/feedback.md
("Against an oracle") reads its 960x540 findings from this.
"""
import json
import sys
from collections import defaultdict


def load(path):
    runs = defaultdict(dict)
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            runs[(r["strategy"], r["budget"])][r["frame"]] = r
    return runs


def row(t):
    # [label, wanted, planned, resident, compact, bytes, coverage, pixels, sse,
    #  lods, planned compact (traces since the planned tier was added)]
    tier = "BC1" if t[4] else "full"
    if len(t) > 10 and t[10] != t[4]:
        tier += " (planned BC1)" if t[10] else " (planned full)"
    return f"{t[1]}/{t[2]}/{t[3]} {tier}, coverage {t[6]:.0f}, {t[7]} px, sse {t[8]:.0f}"


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    across = "--across-budgets" in sys.argv
    top = 5
    if "--top" in sys.argv:
        top = int(sys.argv[sys.argv.index("--top") + 1])
        args.remove(str(top))
    if not args:
        print(__doc__)
        sys.exit(2)
    path = args[0]
    strategy = args[1] if len(args) > 1 else "mipstream_feedback"
    base = args[2] if len(args) > 2 else "mipstream"
    runs = load(path)
    # budgets in the order the run made them: its first is --budget-fraction
    budgets = list(dict.fromkeys(b for (s, b) in runs if s == strategy))
    if not budgets:
        sys.exit(f"{path}: no {strategy} rows (strategies: {sorted({s for s, _ in runs})})")
    if across:
        base = strategy
    # what each budget is set against, in the headings and the frame rows
    against = f"{base} at {budgets[0]} bytes" if across else base
    for budget in budgets[1:] if across else budgets:
        mine = runs[(strategy, budget)]
        theirs = runs.get((base, budgets[0] if across else budget))
        if theirs is None:
            print(f"budget {budget}: no {base} run")
            continue
        by_texture = defaultdict(float)
        compact = defaultdict(float)
        frames = []
        for frame in sorted(set(mine) & set(theirs)):
            a, b = mine[frame]["textures"], theirs[frame]["textures"]
            lost = 0.0
            for ta, tb in zip(a, b):
                d = ta[8] - tb[8]
                by_texture[ta[0]] += d
                if ta[4] and not tb[4]:
                    compact[ta[0]] += d
                lost += d
            frames.append((lost, frame))
        total = sum(by_texture.values())
        print(f"budget {budget} bytes: {strategy} against {against}, squared error "
              f"{total:+.0f} over {len(frames)} compared frames")
        for name, d in sorted(by_texture.items(), key=lambda x: -x[1])[:top]:
            c = compact.get(name, 0.0)
            note = f" ({c:+.0f} of it where {strategy} held BC1 and {base} did not)" if c else ""
            print(f"  {name}: {d:+.0f}{note}")
        for lost, frame in sorted(frames, reverse=True)[:top]:
            if lost <= 0:
                break
            print(f"  frame {frame}: {lost:+.0f}")
            a, b = mine[frame]["textures"], theirs[frame]["textures"]
            worst = sorted(zip(a, b), key=lambda p: p[1][8] - p[0][8])[:3]
            for ta, tb in worst:
                if ta[8] <= tb[8]:
                    break
                print(f"    {ta[0]}: {row(ta)} | {against}: {row(tb)}")


if __name__ == "__main__":
    main()
