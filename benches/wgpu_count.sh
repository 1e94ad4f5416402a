#!/usr/bin/env bash
# docs/results.md's "The budget by wgpu's count" runs: the four Results scenes at
# 25%, 50% and 100% of the working set, lockstep, 1280x720, 300 frames, each
# on the default books and on `--release-at-once` (the old books), JSON into
# target/bench-<scene>-{new,old}.json. About 8 runs of 7 to 11 minutes on
# lavapipe. Then `python3 benches/wgpu_count.py` prints the section.
# The default books' runs also give the verdict and per-scene tables
# (`python3 benches/verdict.py`, `python3 benches/per_scene.py`) and the charts
# (target/plots-<scene>/).
#   benches/wgpu_count.sh [scene ...]   (sponza builtin helmet barn; default all)
#   BOOKS=new benches/wgpu_count.sh     (the default books only)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/rel/release/mipstream
CARGO_TARGET_DIR=target/rel cargo build --release -p mipstream-tools --bin mipstream
[ -d target/sponza-annotated ] || "$bin" annotate ../shared/data/sponza-textures -o target/sponza-annotated
declare -A scene=(
  [sponza]=target/sponza-annotated
  [builtin]=default
  [helmet]=../shared/data/scenes/FlightHelmet/FlightHelmet.gltf
  [barn]=../shared/data/scenes/AnisotropyBarnLamp/AnisotropyBarnLamp.gltf
)
for s in "${@:-sponza builtin helmet barn}"; do
  for s1 in $s; do
    for books in ${BOOKS:-new old}; do
      # the default books' run also draws docs/results.md's charts
      extra=(--plots "target/plots-$s1")
      [ "$books" = old ] && extra=(--release-at-once)
      echo "=== $s1 ($books books) ==="
      WGPU_BACKEND=vulkan "$bin" bench --scene "${scene[$s1]}" --width 1280 --height 720 --frames 300 \
        --budget-fraction 0.5 --sweep-fractions 0.25,1 --sweep-frames 300 --lockstep --error-model both \
        "${extra[@]}" --json "target/bench-$s1-$books.json"
    done
  done
done
