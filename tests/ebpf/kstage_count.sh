#!/usr/bin/env bash
# Counts tempo.ko's STAGE completions while a command runs, with tempostat attached to the
# tempo:* tracepoints only (no USDT). For the VM suite, which knows how many it issued:
#   tests/ebpf/kstage_count.sh build-ebpf -- ./stage-test 100
# prints tempostat's kernel counters as one JSON object and exits with the command's status;
# exits 2 when tempo.ko's tracepoints are absent.
set -euo pipefail
build=${1:?usage: kstage_count.sh BUILD_DIR -- COMMAND...}
shift
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "kstage_count.sh: no command given" >&2; exit 2; }
tracefs=/sys/kernel/tracing
[ -d $tracefs/events ] || mount -t tracefs nodev $tracefs
[ -d $tracefs/events/tempo ] || { echo "kstage_count.sh: tempo.ko is not loaded (no $tracefs/events/tempo)" >&2; exit 2; }

out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$build/tempostat" -j 1 >"$out" 2>"$err" &
tool=$!
# tempostat says "tracing" once its programs are attached.
for _ in $(seq 100); do
  grep -q '^tempostat: tracing' "$err" && break
  kill -0 $tool 2>/dev/null || { cat "$err" >&2; exit 1; }
  sleep 0.1
done
status=0
"$@" || status=$?
sleep 0.2
kill -INT $tool
wait $tool
python3 - "$out" <<'PY'
import json, sys
total = {}
for line in open(sys.argv[1]):
    for k, v in json.loads(line)["kernel"].items():
        total[k] = total.get(k, 0) + v
print(json.dumps(total))
PY
exit $status
