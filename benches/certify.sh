#!/usr/bin/env bash
# docs/error-model.md's certificate table: the four Results scenes at 25%, 50%
# and 100% of the working set (1280x720, lockstep, 300 frames, every tenth
# frame and the cut dumped), each dumped plan solved exactly by
# `mipstream certify`; then `python3 benches/certify_table.py` prints the table.
# About 10 minutes on lavapipe. Output: target/plans-<scene><share>/ and
# target/plans-<scene><share>-certified.json.
#   benches/certify.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
bin=target/rel/release/mipstream
CARGO_TARGET_DIR=target/rel cargo build --release -p mipstream-tools --bin mipstream
[ -d target/sponza-annotated ] || "$bin" annotate ../shared/data/sponza-textures -o target/sponza-annotated
declare -A fraction=([25]=0.25 [50]=0.5 [100]=1.0)
declare -A scene=(
  [sponza]=target/sponza-annotated
  [default]=default
  [helmet]=../shared/data/scenes/FlightHelmet/FlightHelmet.gltf
  [barn]=../shared/data/scenes/AnisotropyBarnLamp/AnisotropyBarnLamp.gltf
)
echo "commit $(git rev-parse --short HEAD) start $(date -u +%FT%T)"
for s in sponza default helmet barn; do
  for share in 25 50 100; do
    out=target/plans-$s$share
    rm -rf "$out"
    "$bin" bench --scene "${scene[$s]}" --width 1280 --height 720 --frames 300 \
      --budget-fraction "${fraction[$share]}" --lockstep --quality-every 10 \
      --strategies full,mipstream --dump-plans "$out" > "$out.log"
    echo "$s $share%: $("$bin" certify "$out" --json "$out-certified.json" | tail -1)"
  done
done
