#!/usr/bin/env bash
# benchmarks/first_run.sh: time `./dev plan` as on an empty machine (docs/benchmarks.md).
#
# Clones this repository (its committed HEAD) into a temporary folder and runs
# `./dev plan` there with an empty tool cache (IAC_CACHE_DIR), a clean
# environment (PATH: Go and the system's bin folders) and `nice -n 10`. Prints
# the wall time, each tool's build line, the peak size of the tool cache
# (sampled every 30 s), what is left, and Go's default caches before and after.
# Set PYTHON to choose the interpreter. Takes minutes to an hour: run it once.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d)
cache=$work/cache
git clone -q "$repo" "$work/repo"
go_dir=$(dirname "$(command -v go)")
go_caches() { du -sh "$(go env GOMODCACHE)" "$(go env GOCACHE)" 2>/dev/null || true; }

echo "Go's caches before:"; go_caches
(while :; do du -sm "$cache" 2>/dev/null | cut -f1 || true; sleep 30; done) >"$work/samples" &
sampler=$!
start=$(date +%s)
status=0
env -i HOME="$HOME" PATH="$go_dir:/usr/local/bin:/usr/bin:/bin" IAC_CACHE_DIR="$cache" \
  ${PYTHON:+PYTHON="$PYTHON"} nice -n 10 "$work/repo/dev" plan >"$work/plan.out" 2>"$work/plan.err" ||
  status=$?
end=$(date +%s)
kill "$sampler"

echo "./dev plan: exit $status, $((end - start)) s wall"
grep -E ': built in |: downloaded in ' "$work/plan.err" || true
echo "peak tool cache: $(sort -n "$work/samples" | tail -1) MB"
echo "left:"; du -sh "$cache" "$work/repo/.venv" "$work/repo/.iac"
echo "Go's caches after:"; go_caches
echo "output in $work"
