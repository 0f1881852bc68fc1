#!/usr/bin/env bash
# Runs every test tier and a smoke of every benchmark, printing how long each
# took. Sets everything up first (hack/setup.sh), so it works on a fresh
# machine. The benchmarks at full size, and the figures page, are
# hack/bench.sh's: never CI's.
#
#   static       no tracked file over 1 MB, gofmt, golangci-lint (.golangci.yml, go vet's checks among them),
#                generated code, CRDs, OVSDB models and the API reference up to date, and
#                the docs: README at most 250 lines, every relative link resolves, every
#                netshift/netshift-lab command they show exists with its flags, the
#                bad-input table (docs/security.md) names real tests
#   unit         the pure core and everything that needs no real part; each fuzz target's
#                seeds and saved inputs (the fuzzing itself: hack/fuzz.sh)
#   integration  controllers, CLI and API against a real kube-apiserver + etcd
#   e2e          the lab: real namespaces, Open vSwitch, OVN, API server, traffic, QEMU guests (root)
#   bench-smoke  every benchmark outside the lab once (go test -short -benchtime 1x)
#   lab-bench-smoke  every lab benchmark (test/e2e) once, its lab at its smallest size;
#                both smokes assert what must never happen (a broken connection, a per-port
#                migration datagram lost, a leaked port, namespace or process), not targets
#
# The lab tiers (e2e, then lab-bench-smoke) run in the background beside the
# others (static, unit, integration, bench-smoke, one after the other at a
# lower priority).
# With CI=true a test whose real prerequisite is missing fails instead of
# skipping. Set TIERS="unit integration" to run only some.
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/.."
export PATH=/usr/local/go/bin:$PATH
# Test binaries without DWARF (no debugger reads them here): every tier links
# dozens of them, and on two cores their debug information costs minutes.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-ldflags=-w"
export KUBEBUILDER_ASSETS
# A lane of a run (see the end of this file) is set up already.
lane=${NETSHIFT_TEST_LANE:-}
setup_took=$(date +%s)
[[ -n "$lane" ]] || KUBEBUILDER_ASSETS=$(hack/setup.sh)
setup_took=$(( $(date +%s) - setup_took ))
tiers=${TIERS:-static unit integration bench-smoke e2e lab-bench-smoke}

# End-to-end packages live under test/e2e; integration packages are the others
# whose tests use a real part (the control plane, real nodes, Open vSwitch,
# through testenv or a test harness built on it); the rest is unit.
e2e=$(go list ./test/e2e/...)
integration=$(go list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... |
  awk '/netshift.io\/netshift\/internal\/(testenv|lab\/kubenode\/kubenodetest|ovs\/ovstest)( |$)/ {print $1}' | grep -vxF -f <(printf '%s\n' $e2e))
unit=$(go list ./... | grep -vxF -f <(printf '%s\n' $integration $e2e))

# Each tier's time and outcome go to a file of its own: the lab tiers run in a
# background process of their own (see the end of this file).
if [[ -n "$lane" ]]; then
  results=$lane
else
  results=$(mktemp -d)
  trap 'rm -rf "$results"' EXIT
fi
run_tier() {
  local name=$1 start outcome=""; shift
  start=$(date +%s)
  echo "=== tier $name"
  # The tier's lines are kept too: the summary quotes a failed tier's failures,
  # so the end of a long log says what failed.
  "$@" 2>&1 | tee "$results/$name.log" || outcome=", FAILED"
  echo "$(( $(date +%s) - start )) s$outcome" > "$results/$name"
  echo "=== tier $name: $(cat "$results/$name")"
}

static() {
  local bad
  # Nothing big is committed (builds go to bin/, which is ignored).
  bad=$(git ls-files -z 2>/dev/null | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$1 > 1048576 {print $2}')
  if [[ -n "$bad" ]]; then echo "tracked files over 1 MB: $bad"; return 1; fi
  bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
  if [[ -n "$bad" ]]; then echo "gofmt would change: $bad"; return 1; fi
  # golangci-lint runs go vet's analyzers (govet) too, on both builds.
  local lint
  lint=$(hack/golangci-lint.sh) || return 1
  "$lint" run --build-tags lab ./... || return 1
  "$lint" run ./cmd/netshift/ || return 1        # the product build's own file
  generated_current || return 1
  docs
}

# hack/generate.sh, run on a copy of the tree: the lab lane compiles the
# packages it rewrites at the same time. What it writes must be what is here.
generated_current() {
  local copy stale rc=0
  copy=$(mktemp -d)
  tar --exclude=./.git --exclude=./bin -cf - . | tar -xf - -C "$copy"
  if ! (cd "$copy" && hack/generate.sh); then rm -rf "$copy"; return 1; fi
  stale=$(diff -rq api "$copy/api"; diff -rq config/crd "$copy/config/crd"; diff -rq internal/ovs/model "$copy/internal/ovs/model"; diff -q docs/api.md "$copy/docs/api.md")
  if [[ -n "$stale" ]]; then
    echo "generated code, CRDs, OVSDB models or the API reference are stale: run hack/generate.sh and commit"
    echo "$stale"; rc=1
  fi
  rm -rf "$copy"
  return $rc
}

# The docs: the README stays a front door, every test the bad-input table
# names exists, and hack/doccheck finds every link and shown command real.
docs() {
  local n missing="" bin tests
  n=$(wc -l < README.md)
  if ((n > 250)); then echo "README.md has $n lines: at most 250 (the rest belongs in docs/)"; return 1; fi
  tests=$(sed -n '/<!-- bad-input-table:start -->/,/<!-- bad-input-table:end -->/p' docs/security.md | grep -oE '`(Test|Fuzz)[A-Za-z0-9_]*`' | tr -d '`' | sort -u)
  if [[ -z "$tests" ]]; then echo "docs/security.md has no bad-input table between its markers, or it names no test"; return 1; fi
  for t in $tests; do
    grep -rqE "^func $t\(" --include='*_test.go' . || missing+=" $t"
  done
  if [[ -n "$missing" ]]; then echo "docs/security.md's bad-input table names tests that do not exist:$missing"; return 1; fi
  bin=$(mktemp -d)
  hack/build.sh "$bin" || { rm -rf "$bin"; return 1; }
  go run ./hack/doccheck --netshift "$bin/netshift" --netshift-lab "$bin/netshift-lab" \
    README.md CONTRIBUTING.md $(git ls-files 'docs/*.md'; git ls-files --others --exclude-standard 'docs/*.md')
  local rc=$?
  rm -rf "$bin"
  return $rc
}
# Every fuzz target runs its seeds and every input that ever failed it (its
# testdata/fuzz) as a test here; the fuzzing itself is hack/fuzz.sh's (an
# instrumented build of every package a target needs costs a fresh machine
# minutes, for a few seconds of fuzzing).
unit_tests() { go test -count=1 $unit; }
integration_tests() { go test -count=1 -p 1 -timeout 20m $integration; }
# A test's log lines and their continuations (indented 8 spaces: a failure's output) are kept,
# and every test's and subtest's outcome (a subtest's indented).
e2e_tests() { go test -count=1 -p 1 -timeout 60m -v $e2e | grep --line-buffered -E '^(=== RUN|\s*--- |\s+\S+_test.go:|        |ok|FAIL|PASS|panic)'; return "${PIPESTATUS[0]}"; }
# Every benchmark once, each lab at its smallest size; the full sizes are
# hack/bench.sh's. The lab's benchmarks (test/e2e) are a tier of their own,
# in the lab lane.
bench_smoke() {
  local pkgs
  pkgs=$(git ls-files '*_test.go' | xargs -r grep -l '^func Benchmark' | xargs -r -n1 dirname | sort -u | sed 's|^|./|' | grep -vx ./test/e2e)
  go test -short -run '^$' -bench . -benchtime 1x -p 1 -timeout 20m $pkgs
}
lab_bench_smoke() { go test -short -run '^$' -bench . -benchtime 1x -timeout 30m ./test/e2e; }

# failures reads a tier's lines and prints what failed: each failed test with
# the messages before it (go test -v prints a test's messages as they come,
# then its --- FAIL line; a test that failed in its own body or cleanup, not
# in a subtest, has nothing after it) and the lines after it (without -v, the
# messages follow), a panic, a build error.
failures() {
  awk '
    /^=== RUN/ { n = 0; more = 0; next }
    /^[[:space:]]*--- FAIL/ {
      if (n > 15) print "        ..."
      for (i = (n > 15 ? n - 15 : 0); i < n; i++) print ring[i % 15]
      n = 0; print; more = 30; indented = 1; next
    }
    /^FAIL|^panic:|^# |\.go:[0-9]+:[0-9]+: / { print; more = 12; indented = 0; next }
    more > 0 && (!indented || /^[[:space:]]/) && !/^(ok|\?) / { print; more--; next }
    { more = 0 }
    /^[[:space:]]+[^[:space:]]+_test\.go:[0-9]+: / || /^        / { ring[n++ % 15] = $0 }
  '
}

tier_command() {
  case $1 in
    static) echo static ;;
    unit) echo unit_tests ;;
    integration) echo integration_tests ;;
    e2e) echo e2e_tests ;;
    bench-smoke) echo bench_smoke ;;
    lab-bench-smoke) echo lab_bench_smoke ;;
    *) echo "unknown tier $1" >&2; return 2 ;;
  esac
}
lab_tiers=() other_tiers=()
for t in $tiers; do
  tier_command "$t" >/dev/null || exit 2
  case $t in e2e|lab-bench-smoke) lab_tiers+=("$t") ;; *) other_tiers+=("$t") ;; esac
done

# A lane: its tiers one after the other, their outcomes in the run's files.
if [[ -n "$lane" ]]; then
  for t in $tiers; do run_tier "$t" "$(tier_command "$t")"; done
  exit 0
fi

# The tiers that run labs (e2e, then lab-bench-smoke: one lab at a time on a
# machine) run beside the others, whose work is mostly compiling: a lab spends
# most of its time waiting on its nodes. The others are a lane of their own
# session at a low priority (nice 10, about a tenth of the CPU when a lab
# wants all of it): the kernel shares CPU between sessions first
# (autogroups), and only then by nice within one, so a plain nice would leave
# a compile half of the CPU against a lab's nodes. Not the lowest priority:
# the integration tier's real servers must still answer in seconds. The lab
# tiers' lines carry a "lab| " prefix.
start=$(date +%s)
lab_pid="" compile_pid=""
# Each lane is a session of its own: a signal to this script stops both.
stop_lanes() {
  local pid
  for pid in $lab_pid $compile_pid; do kill -- "-$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap 'stop_lanes; exit 130' INT
trap 'stop_lanes; exit 143' TERM
if ((${#lab_tiers[@]})); then
  NETSHIFT_TEST_LANE=$results TIERS="${lab_tiers[*]}" setsid "$self" > >(sed -u 's/^/lab| /') 2>&1 &
  lab_pid=$!
fi
if ((${#other_tiers[@]})); then
  NETSHIFT_TEST_LANE=$results TIERS="${other_tiers[*]}" setsid \
    nice -n 10 bash -c '{ echo 10 > /proc/self/autogroup; } 2>/dev/null; exec "$0"' "$self" &
  compile_pid=$!
fi
for pid in $compile_pid $lab_pid; do wait "$pid" || true; done
wait 2>/dev/null || true # the lab lane's prefixing sed, to its last line
trap - INT TERM

echo
echo "=== time per tier (${lab_tiers[*]:-no lab tier} beside ${other_tiers[*]:-nothing}; $(( $(date +%s) - start )) s in all, after a setup of $setup_took s)"
failed=()
for t in $tiers; do
  took=$(cat "$results/$t" 2>/dev/null || echo "did not end")
  printf '  %-16s %s\n' "$t" "$took"
  [[ "$took" == *s ]] || failed+=("$t")
done
if ((${#failed[@]})); then
  for t in "${failed[@]}"; do
    echo
    echo "=== what failed in tier $t"
    quote=$({ failures < "$results/$t.log"; } 2>/dev/null | head -n 80 || true)
    # A tier that failed outside a test (a lint, a stale file): its last lines.
    [[ -n "$quote" ]] || quote=$(tail -n 15 "$results/$t.log" 2>/dev/null || true)
    echo "$quote"
  done
  echo
  echo "FAILED tiers: ${failed[*]}"
  exit 1
fi
