#!/usr/bin/env bash
# The first hour of a new user, scripted so that it cannot silently break,
# as `make test`'s last step: `make run` in the background, which brings
# up the kind-style cluster of three nodes; the demo's containers must
# have run on every node and its worker log must hold its echo; the
# MapReduce command it prints, run verbatim, must SUCCEED with its
# estimate on the console, and so must the DistributedShell and SparkPi
# commands it prints; `make stop` must leave no namespace or process of
# the run; then `make run-embedded` must start cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.weft/newcomer
rm -rf "$out" && mkdir -p "$out"
say() { echo "newcomer: $*"; }
fail() {
  say "FAILED: $*"
  for f in "$out"/*.log; do echo "---- $f (last 40 lines)"; tail -40 "$f"; done
  [ -n "${emb:-}" ] && kill -TERM -- "-$emb" 2>/dev/null
  make stop >/dev/null 2>&1 || true
  exit 1
}

# until_logged PATTERN LOG PID SECONDS WHAT: waits for PATTERN in LOG while PID runs.
until_logged() {
  for _ in $(seq "$4"); do
    grep -q "$1" "$2" && return
    kill -0 "$3" 2>/dev/null || fail "$5 exited"
    sleep 1
  done
  fail "$5: no '$1' in $2 within $4 s"
}

# What the tree holds before the run (a developer's uncommitted work), so
# that what the run leaves in it shows apart.
tree() { git status --porcelain --untracked-files=all -- . ':!.weft'; }
tree >"$out/tree-before"

say "make run (in the background; log $out/run.log)"
make run >"$out/run.log" 2>&1 &
run=$!
until_logged 'jar examples pi' "$out/run.log" "$run" 1200 "make run"
say "$(grep -m1 '^Ready in' "$out/run.log" | cut -d. -f1)"
grep -q 'ran on 3 of 3 nodes' "$out/run.log" || fail "the demo's containers did not run on every node: $(grep -m1 'ran on' "$out/run.log")"
say "the demo's containers ran on every node: $(grep -m1 'ran on' "$out/run.log" | xargs)"
grep -q 'hello from Weft' "$out/run.log" || fail "the demo's worker log does not hold its echo"
say "the demo's worker log holds its echo: $(grep -m1 'hello from Weft' "$out/run.log" | xargs)"

cmd=$(grep -m1 -o 'go run .* jar examples pi 4 1000' "$out/run.log")
say "running the printed command verbatim: $cmd"
bash -c "$cmd" >"$out/pi.log" 2>&1 || fail "the printed pi command failed"
grep -q 'Estimated value of Pi is 3\.1' "$out/pi.log" || fail "no estimate of pi on the console"
client=${cmd% jar examples*}
# The pi application (the newest, should the list hold several), once its
# AM container has exited after unregistering (FINISHING reads RUNNING).
for _ in $(seq 30); do
  $client yarn application -list -appStates ALL >"$out/list.log" 2>&1 || fail "yarn application -list"
  app=$(grep -Eo 'application_[0-9]+_[0-9]+\s+QuasiMonteCarlo' "$out/list.log" | awk '{print $1}' | sort | tail -1)
  [ -n "$app" ] || fail "no QuasiMonteCarlo application listed"
  grep -Eq "^$app\s.*FINISHED\s+SUCCEEDED" "$out/list.log" && break
  sleep 2
done
grep -Eq "^$app\s.*FINISHED\s+SUCCEEDED" "$out/list.log" || fail "$app is not FINISHED SUCCEEDED"
say "$app FINISHED SUCCEEDED"
say "$(grep -m1 'Estimated value of Pi' "$out/pi.log")"
[ "$(grep -c 'weft-demo' "$out/list.log")" = 1 ] || fail "the list holds other runs' demo applications: $(grep weft-demo "$out/list.log")"
say "the run lists only its own applications"

# The other printed commands, verbatim: DistributedShell and SparkPi.
cmd=$(grep -m1 -o "go run .* jar distributedshell .*'$" "$out/run.log") || fail "no DistributedShell command printed"
say "running the printed command verbatim: $cmd"
# Its client exits 0 only when the application completed successfully
# (2 otherwise); the client's console shows warnings only.
bash -c "$cmd" >"$out/ds.log" 2>&1 || fail "the printed DistributedShell command failed"
say "DistributedShell: completed successfully (exit 0)"
cmd=$(grep -m1 -o 'go run .* spark-submit .* examples 10' "$out/run.log") || fail "no spark-submit command printed"
say "running the printed command verbatim: $cmd"
bash -c "$cmd" >"$out/spark.log" 2>&1 || fail "the printed spark-submit command failed"
grep -q 'final status: SUCCEEDED' "$out/spark.log" || fail "SparkPi did not end SUCCEEDED"
say "SparkPi: final status: SUCCEEDED"
left=$(tree | grep -vxFf "$out/tree-before" || true)
[ -z "$left" ] || fail "the run left files in the repository: $(echo "$left" | head)"

say "make stop"
make stop >"$out/stop.log" 2>&1 || fail "make stop"
for _ in $(seq 50); do kill -0 "$run" 2>/dev/null || break; sleep 0.2; done
kill -0 "$run" 2>/dev/null && fail "make run still runs after make stop"
wait "$run" || true
cat "$out/stop.log"

say "make run-embedded"
# Its own process group, as a terminal's foreground job: Ctrl-C (SIGINT to
# the group) is what stops it, and a background job of a script would
# ignore SIGINT.
set -m
make run-embedded >"$out/embedded.log" 2>&1 &
emb=$!
set +m
until_logged 'Look: REST' "$out/embedded.log" "$emb" 300 "make run-embedded"
grep -q 'weft-demo' "$out/embedded.log" || fail "make run-embedded listed no demo application"
kill -INT -- "-$emb" # Ctrl-C
for _ in $(seq 100); do kill -0 "$emb" 2>/dev/null || break; sleep 0.2; done
kill -0 "$emb" 2>/dev/null && fail "make run-embedded did not stop on Ctrl-C"
if timeout 1 bash -c 'exec 3<>/dev/tcp/127.0.0.1/8088' 2>/dev/null; then fail "8088 still held after make run-embedded stopped"; fi
say "passed: make run (3 nodes) → printed pi, DistributedShell and SparkPi commands SUCCEEDED → make stop (nothing left) → make run-embedded"
