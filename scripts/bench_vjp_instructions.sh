#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# VJP/step in instructions (callgrind), the repeatable twin of mjdiff-bench-step's timed ratio:
# per model, the instructions of one mjdiff_stepVJP over those of one mjdiff_step, both averaged
# over the calls mjdiff-bench-step makes (10 states, one round). Needs valgrind (not installed by
# scripts/setup.sh: apt-get install valgrind).
# Usage: scripts/bench_vjp_instructions.sh [BUILD_DIR] MODEL.xml...
set -uo pipefail
BUILD=build
if [[ $# -gt 0 && -d "$1" ]]; then BUILD=$1; shift; fi
[[ $# -gt 0 ]] || { echo "usage: $0 [BUILD_DIR] MODEL.xml..." >&2; exit 2; }
command -v valgrind >/dev/null || { echo "$0: valgrind not found (apt-get install valgrind)" >&2; exit 1; }
BENCH="$BUILD/tools/mjdiff-bench-step"
[[ -x "$BENCH" ]] || { echo "$0: missing $BENCH (build first)" >&2; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mjdiff_vjpi.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
printf '%-16s %12s %12s %9s\n' model step_instr vjp_instr vjp/step
for model in "$@"; do
  name=$(basename "$model" .xml)
  valgrind --tool=callgrind --callgrind-out-file="$TMP/$name.out" "$BENCH" --rounds 1 \
      --min-time 0.0001 --states 10 "$model" >/dev/null 2>"$TMP/$name.err" ||
    { echo "$name: valgrind failed: $(tail -1 "$TMP/$name.err")" >&2; continue; }
  callgrind_annotate --threshold=100 --tree=caller "$TMP/$name.out" >"$TMP/$name.txt" 2>/dev/null
  python3 - "$TMP/$name.txt" "$name" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split('\n')
def per_call(fn):
    # the caller lines ('<') above the function's own line ('*') sum to its inclusive cost
    for i, l in enumerate(lines):
        if re.search(r'\*\s+\S*:' + re.escape(fn) + r' \[', l):
            total = calls = 0
            j = i - 1
            while j >= 0 and '<' in lines[j]:
                m = re.match(r'\s*([\d,]+).*\((\d[\d,]*)x\)', lines[j])
                if m:
                    total += int(m.group(1).replace(',', ''))
                    calls += int(m.group(2).replace(',', ''))
                j -= 1
            return total / calls if calls else float('nan')
    return float('nan')
s, v = per_call('mjdiff_step'), per_call('mjdiff_stepVJP')
print('%-16s %12.0f %12.0f %9.2f' % (sys.argv[2], s, v, v / s))
PY
done
