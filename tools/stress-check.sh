#!/usr/bin/env bash
# The suite on a busy machine: a clean clone of HEAD, `npm ci`, then `npm test` RUNS times in a row
# (default 5), each beside `stress-ng --cpu 2` (Debian package stress-ng) keeping both cores busy.
# Stops at the first failure and says which run; prints one line per run with its time and counts.
# Usage: tools/stress-check.sh [RUNS]   (from the repository; needs git, npm and stress-ng)
set -euo pipefail
runs="${1:-5}"
command -v stress-ng >/dev/null || { echo "stress-ng is not installed (apt-get install stress-ng)" >&2; exit 2; }
repo="$(git rev-parse --show-toplevel)"
work="$(mktemp -d "${TMPDIR:-/tmp}/pmtape-stress-XXXXXX")"
# mktemp makes the folder private; as root the suite also serves a replica as another user
# (test/selfhost/scale-out.test.ts), who must be able to read the clone.
chmod 755 "$work"
trap 'kill "${hog:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
git clone -q "$repo" "$work/clone"
cd "$work/clone"
npm ci >"$work/npm-ci.log" 2>&1 || { echo "npm ci failed: $work/npm-ci.log" >&2; exit 1; }
for i in $(seq 1 "$runs"); do
  stress-ng --cpu 2 --timeout 3600s >/dev/null 2>&1 &
  hog=$!
  start=$(date +%s)
  if npm test >"$work/run$i.log" 2>&1; then rc=0; else rc=$?; fi
  kill "$hog" 2>/dev/null || true
  wait "$hog" 2>/dev/null || true
  echo "run $i/$runs: exit $rc in $(( $(date +%s) - start )) s, $(grep -a '^# {' "$work/run$i.log" | tail -1)"
  if [ "$rc" != 0 ]; then
    cp "$work/run$i.log" "$repo/stress-check-run$i.log"
    echo "failed: the run's output is in stress-check-run$i.log" >&2
    exit 1
  fi
done
echo "$runs runs passed beside stress-ng --cpu 2"
