#!/bin/bash
# How much one benchmark point says: the same comparison at budgets a percent
# or two either side of it (docs/results.md, "How much one point says").
# Lockstep runs are deterministic, so a point's figure repeats exactly; what it
# does not say is whether a difference between two strategies holds a step
# away, where no setting a user would call different has changed.
#   benches/sensitivity.sh WxH FRACTION,FRACTION,... [STRATEGIES]
#   benches/sensitivity.sh 960x540 0.24,0.26,0.49,0.51
# Output: target/sensitivity-<size>.{txt,json}; then
#   python3 benches/sensitivity.py target/sensitivity-<size>.json [more.json]
set -euo pipefail
cd "$(dirname "$0")/.."
size=$1; fractions=$2
strategies=${3:-full,mipstream,mipstream_geometric,mipstream_feedback}
w=${size%x*}; h=${size#*x}
first=${fractions%%,*}; rest=${fractions#*,}
[ "$rest" = "$fractions" ] && rest=""
export WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
CARGO_TARGET_DIR=target/rel cargo build --release -p mipstream-tools --bin mipstream
[ -d target/sponza-annotated ] || target/rel/release/mipstream annotate ../shared/data/sponza-textures -o target/sponza-annotated
echo "commit $(git rev-parse --short HEAD) start $(date -u +%FT%T)"
sweep=()
[ -n "$rest" ] && sweep=(--sweep-fractions "$rest" --sweep-frames 300)
target/rel/release/mipstream bench --scene target/sponza-annotated --width "$w" --height "$h" --frames 300 \
  --budget-fraction "$first" "${sweep[@]}" --lockstep --error-model both \
  --strategies "$strategies" --json "target/sensitivity-$size.json" > "target/sensitivity-$size.txt"
echo "end $(date -u +%FT%T)"
python3 benches/sensitivity.py "target/sensitivity-$size.json"
