#!/usr/bin/env bash
# Runs the speed-mirror scenarios with one or more fabricsim binaries, interleaved, best of
# REPS (default 3), and prints M link-hops/s and CPU us per link-hop for each.
# Usage: scenarios/bench/compare.sh BIN [BIN...]   (e.g. an old build beside target/release/fabricsim)
# Figures go into docs/performance.md; the machine is shared and noisy: compare in one run.
set -euo pipefail
cd "$(dirname "$0")"
REPS=${REPS:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-28s %-40s %12s %12s %10s\n' scenario binary "M hops/s" "us/hop" "link-hops"
declare -A hops=()
for sc in ${SCENARIOS:-roce_mirror_k8_perm roce_mirror_k16_perm roce_mirror_k16_incast512}; do
  declare -A best=()
  for rep in $(seq "$REPS"); do
    for bin in "$@"; do
      d="$out/$(basename "$bin")-$sc"
      rm -rf "$d"
      "$bin" run "$sc.toml" --out "$d" -q > /dev/null
      w=$(python3 -c "import json;print(json.load(open('$d/timing.json'))['wall_seconds'])")
      if [[ -z "${best[$bin]:-}" ]] || python3 -c "import sys;sys.exit(0 if $w < ${best[$bin]} else 1)"; then
        best[$bin]=$w
      fi
      hops[$bin]=$(python3 -c "import json;print(json.load(open('$d/summary.json'))['run']['link_hops'])")
    done
  done
  for bin in "$@"; do
    python3 -c "h=${hops[$bin]}; w=${best[$bin]}; print(f'%-28s %-40s %12.3f %12.3f %10d' % ('$sc', '$bin'[-40:], h/w/1e6, w/h*1e6, h))"
  done
  unset best
done
