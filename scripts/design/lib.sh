# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
# Helpers of the design example scripts (sourced): reading mjdiff-design's JSON report and history.

# the best objective of a report: jbest PREFIX.json
jbest() { sed -n 's/.*"J_best": *\([-0-9.e+]*\).*/\1/p' "$1"; }

# rollouts and seconds of the first row of a history CSV with J <= $2 ("-1 nan" if none)
first() { awk -F, -v t="$2" 'NR > 1 && $4 != "" && $4 <= t { print $2, $3; f = 1; exit }
  END { if (!f) print "-1 nan" }' "$1"; }

# the target for the baselines: a report's best objective loosened by 1e-4 of its size (J 1.0001
# for a positive J, J + 1e-4 |J| for a negative one), 9 digits: jtarget PREFIX.json
jtarget() { jbest "$1" | awk '{printf "%.9g", $1 + 0.0001 * ($1 < 0 ? -$1 : $1)}'; }

# one line per run: its rollouts, seconds, first and best objective, and the rollouts and seconds
# it took to reach J <= TARGET: report NAME PREFIX TARGET (PREFIX.json and PREFIX.csv)
report() {
  printf '%-13s %s rollouts_to_target %s seconds_to_target %s\n' "$1" \
    "$(sed -n 's/.*"rollouts":\([0-9]*\),"seconds": *\([0-9.e+-]*\),"J_initial": *\([-0-9.e+]*\),"J_best": *\([-0-9.e+]*\).*/rollouts \1 seconds \2 J0 \3 J \4/p' "$2.json")" \
    $(first "$2.csv" "$3")
}
