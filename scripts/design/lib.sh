# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
# Helpers of the design example scripts (sourced): reading mjdiff-design's JSON report and history.

# the best objective of a report: jbest PREFIX.json
jbest() { sed -n 's/.*"J_best": *\([-0-9.e+]*\).*/\1/p' "$1"; }

# rollouts and seconds of the first row of a history CSV with J <= $2 ("-1 nan" if none)
first() { awk -F, -v t="$2" 'NR > 1 && $4 != "" && $4 <= t { print $2, $3; f = 1; exit }
  END { if (!f) print "-1 nan" }' "$1"; }
