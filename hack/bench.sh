#!/usr/bin/env bash
# Runs every benchmark at full size, one job after another, and writes the
# figures page docs/figures.md and its data docs/figures.json from that one
# run (hack/figures: which benchmark measures what, each target, the median
# and range of the runs, the command). Never run by CI: about an hour on
# 2 cores. Sets everything up first, as hack/test.sh does.
#
#   hack/bench.sh               every job; writes docs/figures.{md,json}
#   hack/bench.sh gap3 zones    only those jobs; writes bin/figures.{md,json}
#                               (a page of part of a run never replaces the committed one)
#   go run ./hack/figures jobs  the jobs and their commands
#
# A job that fails does not stop the others: its rows say "not measured", the
# page names it, and the script exits non-zero. Each job's output is kept in
# bin/bench/NAME.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
export KUBEBUILDER_ASSETS
KUBEBUILDER_ASSETS=$(hack/setup.sh)

declare -A cmds
names=()
jobs=$(go run ./hack/figures jobs)
while IFS=$'\t' read -r name cmd; do
  cmds[$name]=$cmd
  names+=("$name")
done <<<"$jobs"
page=docs/figures.md json=docs/figures.json
if (($#)); then
  for n in "$@"; do [[ -n "${cmds[$n]:-}" ]] || { echo "bench: no job $n (jobs: ${names[*]})" >&2; exit 2; }; done
  names=("$@")
  page=bin/figures.md json=bin/figures.json
fi

out=bin/bench
rm -rf "$out" && mkdir -p "$out"
began=$(date -u '+%Y-%m-%d %H:%M UTC')
commit=$(git rev-parse --short HEAD)
[[ -z "$(git status --porcelain --untracked-files=no)" ]] || commit+=" (with uncommitted changes)"
failed=()
for n in "${names[@]}"; do
  echo "=== bench $n: ${cmds[$n]}"
  start=$(date +%s)
  rc=0
  bash -c "${cmds[$n]}" 2>&1 | tee "$out/$n.txt" || rc=$?
  took=$(( $(date +%s) - start ))
  echo "$n $took $rc" >> "$out/jobs.tsv"
  echo "=== bench $n: $took s, exit $rc"
  ((rc == 0)) || failed+=("$n")
done
ended=$(date -u '+%Y-%m-%d %H:%M UTC')
go run ./hack/figures render --results "$out" --commit "$commit" --began "$began" --ended "$ended" --page "$page" --json "$json"
echo "wrote $page and $json"
if ((${#failed[@]})); then echo "FAILED jobs: ${failed[*]}"; exit 1; fi
