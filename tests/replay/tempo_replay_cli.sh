#!/bin/sh
# tempo-replay's deployment options refuse bad input with exit 2 and a one-line reason,
# running nothing; good input runs (an engine count of 2, both routers, a pool); the default
# comparison adds a 4-engine run.
# usage: tempo_replay_cli.sh TEMPO_REPLAY SCRATCH_DIR
set -u
bin=$1
out=$2
rm -rf "$out"
mkdir -p "$out"
fails=0
exits() {  # expected exit status and message fragment, then the arguments; nothing written
  status=$1
  want=$2
  shift 2
  "$bin" -o "$out" "$@" >"$out/stdout" 2>"$out/stderr"
  rc=$?
  if [ "$rc" -ne "$status" ] || ! grep -qF -- "$want" "$out/stderr" || [ -d "$out/compare" ]; then
    echo "FAIL: tempo-replay $* -> exit $rc, stderr: $(cat "$out/stderr")"
    fails=$((fails + 1))
  fi
}
refuse() { exits 2 "$@"; }  # bad command lines
refuse "--engines takes a number of engines from 1 to 256" --engines 0
refuse "--engines takes a number of engines from 1 to 256" --engines 257
refuse "--engines takes a number of engines from 1 to 256" --engines-per-host x
refuse "--hosts takes a number of hosts from 1 to 256" --hosts -1
refuse "--hosts takes a number of hosts from 1 to 256" --hosts 99999999999
refuse "unknown router 'random': accepted round-robin, prefix-affinity" --router random
refuse "--known-outputs applies to the sim and uring devices" --device daemon --known-outputs
refuse "invalid byte count '0'" --cluster-rate 0
refuse "invalid --cluster-latency 'soon'" --cluster-latency soon
refuse "--hosts and the cluster tier apply to the sim device only" --hosts 2 -d uring
refuse "--hosts and the cluster tier apply to the sim device only" --cluster -d uring
refuse "--speedup applies to the uring device only" --speedup 8
refuse "--speedup: '0.5' is out of range" --speedup 0.5 -d uring
# Values that once aborted (bad_alloc), ran for hours of ticks, or ran with overflowed times.
refuse "invalid value '4097' for 'staging_slots': accepted an integer from 1 to 4096" --slots 4097
refuse "--documents: '100001' is out of range [1, 100000]" --documents 100001
refuse "--first: '0' is out of range" --first 0 -t /dev/null
refuse "staging_rate below 1MiB (bytes/s)" --staging-rate 1
refuse "demand_rate below 1MiB (bytes/s)" --set demand_rate=1048575
# Settings of the stack: any key of the table, through the one parser, in order.
refuse "unknown key 'bogus'" --set bogus=1
refuse "--set takes key=value, not 'budget_bytes'" --set budget_bytes
refuse "'budget_bytes' (2147483648) must be below 'fast_tier_bytes'" --fast-tier 1GiB \
  --set budget_bytes=2GiB
printf 'fast_tier_bytes = 1GiB\nbudget_bytes = 2GiB\n' >"$out/small.conf"
refuse "must be below 'fast_tier_bytes'" -c "$out/small.conf"
refuse "'uring.store_path' is not a setting a replay runs: accepted fast_tier_bytes" \
  --set uring.store_path=/tmp/x
refuse "the replay's policies are -p/--policy, not 'policy'" --set policy=demand
printf 'no_such_key = 1\n' >"$out/bad.conf"
refuse "unknown key 'no_such_key'" --config "$out/bad.conf"
refuse "--cluster-rate below 1MiB (bytes/s)" --cluster-rate 1KiB
# A workload that cannot be replayed: exit 1 with the reason, nothing written.
unrunnable() { exits 1 "$@"; }
printf '\n\n' >"$out/blank.jsonl"
unrunnable "blank.jsonl: no requests to replay" -t "$out/blank.jsonl"
printf '%s\n' '{"timestamp": 0, "input_length": 600, "output_length": 4, "hash_ids": [1, 2]}' \
  '{"timestamp": 5, "input_length": 600, "output_length": 4, "hash_ids": [1, 3]}' >"$out/two.jsonl"
unrunnable "no requests to replay after --skip 2" -t "$out/two.jsonl" --skip 2
unrunnable "past the replay's time range (146 years)" -t "$out/two.jsonl" --time-scale 1e308
unrunnable "past the replay's time range (146 years): a higher --rate" --rate 1e-300
unrunnable "/: cannot read: Is a directory" -t /
unrunnable "/dev/zero:1: line longer than 16777216 bytes" -t /dev/zero
unrunnable "/dev/zero: larger than 1 MiB: not a model spec" -m /dev/zero
# Llama's 32 MiB chunks at 1/8193 fall below a 4 KiB block (they were held at 4 KiB and
# counted as 128 x the model's bytes at 1/2^20, a step of half a minute).
unrunnable "at most 8192 for this model and workload" -d uring --byte-scale 8193 \
  --store "$out/store"
"$bin" -o "$out" --engines 2 --router prefix-affinity --hosts 2 --cluster -p tempo \
  >"$out/stdout" 2>"$out/stderr" || {
  echo "FAIL: a valid deployment did not run: $(cat "$out/stderr")"
  fails=$((fails + 1))
}
grep -q "^tempo .*p95 TTFT per engine (s):\( [0-9.]*\)\{4\}$" "$out/stdout" || {
  echo "FAIL: no per-engine line for 4 engines in: $(cat "$out/stdout")"
  fails=$((fails + 1))
}
[ "$(wc -l <"$out/compare/engines.csv")" -eq 5 ] || {
  echo "FAIL: engines.csv should have a header and 4 rows"
  fails=$((fails + 1))
}
# The default comparison (sim device, two policies): the one-engine table, then the same
# policies with 4 engines sharing the device, each engine serving requests.
rm -rf "$out/compare"
"$bin" -o "$out" --default-comparison -p immediate,tempo >"$out/stdout" 2>"$out/stderr" || {
  echo "FAIL: the default comparison did not run: $(cat "$out/stderr")"
  fails=$((fails + 1))
}
grep -q "^4 engines sharing one device and budget" "$out/stdout" || {
  echo "FAIL: no 4-engine table after the one-engine one in: $(cat "$out/stdout")"
  fails=$((fails + 1))
}
for p in immediate tempo; do
  [ "$(grep -c "^$p " "$out/stdout")" -eq 3 ] &&
    grep -q "^$p .*p95 TTFT per engine (s):\( [0-9.]*\)\{4\}$" "$out/stdout" || {
    echo "FAIL: $p: not one row per table and a per-engine line: $(cat "$out/stdout")"
    fails=$((fails + 1))
  }
  served=$(awk -F, -v p="$p" '$4 == p && $6 > 0 { print $5 }' "$out/compare/engines-4/engines.csv" |
    sort -u | tr '\n' ' ')
  [ "$served" = "0 1 2 3 " ] || {
    echo "FAIL: $p: engines with completed requests in engines-4/engines.csv: '$served'"
    fails=$((fails + 1))
  }
done
[ "$(wc -l <"$out/compare/engines-4/summary.csv")" -eq 3 ] && [ ! -f "$out/compare/engines.csv" ] || {
  echo "FAIL: compare/engines-4/summary.csv should have 2 rows, compare/ no engines.csv"
  fails=$((fails + 1))
}
# A request over the model's context is rejected and left out of the figures: the table says
# so (a run of only such requests printed a p95 TTFT of 0.000 and nothing else).
printf '%s\n' '{"timestamp": 0, "input_length": 600, "output_length": 16777216, "hash_ids": [1]}' \
  '{"timestamp": 5, "input_length": 600, "output_length": 4, "hash_ids": [1, 3]}' >"$out/long.jsonl"
"$bin" -o "$out" -t "$out/long.jsonl" -p tempo >"$out/stdout" 2>"$out/stderr" &&
  grep -q "^1 of 2 requests rejected on arrival" "$out/stdout" || {
  echo "FAIL: a rejected request not reported: $(cat "$out/stdout" "$out/stderr")"
  fails=$((fails + 1))
}
# A CSV that cannot be written (a full disk) fails the run; its buffered tail used to fail
# unseen, with exit 0.
rm -rf "$out/compare"
mkdir -p "$out/compare"
ln -s /dev/full "$out/compare/requests.csv"
"$bin" -o "$out" -e compare -p tempo >"$out/stdout" 2>"$out/stderr"
rc=$?
if [ "$rc" -ne 1 ] || ! grep -qF "cannot write the CSVs under $out/compare" "$out/stderr"; then
  echo "FAIL: a CSV on a full disk -> exit $rc, stderr: $(cat "$out/stderr")"
  fails=$((fails + 1))
fi
# Asked for by name, the comparison has no 4-engine part.
rm -rf "$out/compare"
"$bin" -o "$out" -e compare -p tempo >"$out/stdout" 2>"$out/stderr"
if grep -q "engines sharing" "$out/stdout" || [ -d "$out/compare/engines-4" ]; then
  echo "FAIL: -e compare ran a 4-engine part"
  fails=$((fails + 1))
fi
rm -rf "$out"
[ "$fails" -eq 0 ] && echo "tempo_replay_cli: ok"
exit "$fails"
