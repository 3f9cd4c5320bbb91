#!/usr/bin/env bash
# Runs the speed-mirror scenarios with one or more fabricsim binaries, interleaved, best of
# REPS (default 3), and prints M link-hops per wall second and wall us per link-hop for each.
# Usage: scenarios/bench/compare.sh BIN [BIN...]   (e.g. an old build beside target/release/fabricsim)
# With THREADS=N each fabricsim run is `fabricsim run --threads N` (the fabric split by pod).
# Figures go into docs/performance.md; the machine is shared and noisy: compare in one run.
#
# With HTSIM=<htsim_roce binary> and CM=<dir of htsim's .cm files> (built and generated outside
# the repository as ../shared/reference/htsim-mirror.md says; HTSIM_PRELOAD=<time() shim .so>
# pins its seed), each scenario's htsim twin runs in the same interleaved rounds, and its
# M link-hops/s use the link-hop counts measured once with a counting copy of htsim (htsim
# prints none); each fabricsim row then ends with its link-hops/s as a multiple of htsim's.
set -euo pipefail
# htsim's paths as the caller gave them (from the caller's directory), before the cd below.
for v in HTSIM CM HTSIM_PRELOAD; do
  if [[ -n "${!v:-}" ]]; then
    printf -v "$v" '%s' "$(realpath "${!v}")"
  fi
done
cd "$(dirname "$0")"
REPS=${REPS:-3}
THREADS=${THREADS:-1}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-28s %-40s %12s %12s %10s%s\n' scenario binary "M hops/s" "us/hop" "link-hops" "${HTSIM:+    x htsim}"
declare -A hops=()
for sc in ${SCENARIOS:-roce_mirror_k8_perm roce_mirror_k16_perm roce_mirror_k16_incast512}; do
  declare -A best=()
  for rep in $(seq "$REPS"); do
    if [[ -n "${HTSIM:-}" ]]; then
      case $sc in
        roce_mirror_k8_perm) args="-tm $CM/perm_128_1GB.cm -nodes 128 -end 10000" ;;
        roce_mirror_k16_perm) args="-tm $CM/perm_1024_1GB.cm -nodes 1024 -end 1000" ;;
        roce_mirror_k16_incast512) args="-tm $CM/incast_1024_512x1MB.cm -nodes 1024 -end 50000" ;;
      esac
      t0=$(date +%s.%N)
      # In the scratch directory: htsim writes files of its own (idmap.txt) where it runs.
      # shellcheck disable=SC2086
      (cd "$out" && LD_PRELOAD=${HTSIM_PRELOAD:-} "$HTSIM" $args -linkspeed 100000 -mtu 4000 -q 1000 \
        -strat ecmp_host -paths 256 -o "$out/htsim.log" > /dev/null)
      w=$(python3 -c "print($(date +%s.%N) - $t0)")
      if [[ -z "${best[htsim]:-}" ]] || python3 -c "import sys;sys.exit(0 if $w < ${best[htsim]} else 1)"; then
        best[htsim]=$w
      fi
    fi
    for bin in "$@"; do
      d="$out/$(basename "$bin")-$sc"
      rm -rf "$d"
      "$bin" run "$sc.toml" --out "$d" -q --threads "$THREADS" > /dev/null
      w=$(python3 -c "import json;print(json.load(open('$d/timing.json'))['wall_seconds'])")
      if [[ -z "${best[$bin]:-}" ]] || python3 -c "import sys;sys.exit(0 if $w < ${best[$bin]} else 1)"; then
        best[$bin]=$w
      fi
      hops[$bin]=$(python3 -c "import json;print(json.load(open('$d/summary.json'))['run']['link_hops'])")
    done
  done
  if [[ -n "${HTSIM:-}" ]]; then
    case $sc in
      roce_mirror_k8_perm) h=17521644 ;;
      roce_mirror_k16_perm) h=13560687 ;;
      roce_mirror_k16_incast512) h=1599720 ;;
    esac
    python3 -c "h=$h; w=${best[htsim]}; print(f'%-28s %-40s %12.3f %12.3f %10d' % ('$sc', 'htsim_roce', h/w/1e6, w/h*1e6, h))"
    htsim_rate=$(python3 -c "print($h / ${best[htsim]})")
  fi
  for bin in "$@"; do
    # With htsim measured in the same rounds, each binary's link-hops/s as a multiple of htsim's.
    python3 -c "h=${hops[$bin]}; w=${best[$bin]}; r='${htsim_rate:-}'
x = f' {h / w / float(r):9.2f}x' if r else ''
print(f'%-28s %-40s %12.3f %12.3f %10d%s' % ('$sc', '$bin'[-40:], h/w/1e6, w/h*1e6, h, x))"
  done
  unset htsim_rate
  unset best
done
