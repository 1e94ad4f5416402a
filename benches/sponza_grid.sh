#!/bin/bash
# issue 48 item 5's grid: annotated Sponza, 25% and 50% of the working set,
# three resolutions, lockstep, 300 frames; measured vs geometric, and Unreal's pool
# (docs/results.md, "Against the geometric model at three sizes"). About 15 minutes
# on lavapipe. Output: target/grid-sponza-<size>.{txt,json}.
#   benches/sponza_grid.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
CARGO_TARGET_DIR=target/rel cargo build --release -p mipstream-tools --bin mipstream
[ -d target/sponza-annotated ] || target/rel/release/mipstream annotate ../shared/data/sponza-textures -o target/sponza-annotated
echo "commit $(git rev-parse --short HEAD) start $(date -u +%FT%T)"
for size in 960x540 1280x720 1920x1080; do
  w=${size%x*}; h=${size#*x}
  s=$(date +%s)
  target/rel/release/mipstream bench --scene target/sponza-annotated --width $w --height $h --frames 300 \
    --budget-fraction 0.25 --sweep-fractions 0.5 --sweep-frames 300 --lockstep --error-model both \
    --strategies full,mipstream,mipstream_geometric,unreal_pool --json target/grid-sponza-$size.json > target/grid-sponza-$size.txt
  echo "$size: $(( $(date +%s) - s )) s, $(date -u +%FT%T)"
  sed -n '/^fraction/,/^wrote/p' target/grid-sponza-$size.txt
done
