#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# The generated model assets are what their scripts write: models/hopper_terrain.png equals the
# output of models/hopper_terrain.py byte for byte (so the committed height field and its
# documented formula cannot drift apart).
# Usage (ctest): bash models_assets.sh BUILD_DIR SOURCE_DIR
set -uo pipefail

SOURCE_DIR=${2:?usage: models_assets.sh BUILD_DIR SOURCE_DIR}
NAME=models_assets

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v python3 >/dev/null || fail "python3 not found"
SCRIPT="$SOURCE_DIR/models/hopper_terrain.py"
PNG="$SOURCE_DIR/models/hopper_terrain.png"
[[ -f "$SCRIPT" && -f "$PNG" ]] || fail "missing $SCRIPT or $PNG"
make_tmp mjdiff_models_assets
trap 'rm -rf "$TMP"' EXIT
python3 "$SCRIPT" "$TMP/terrain.png" >/dev/null || fail "$SCRIPT failed"
cmp -s "$TMP/terrain.png" "$PNG" || fail "$PNG differs from what $SCRIPT writes (rerun the script)"
echo "$NAME: PASS ($(stat -c %s "$PNG") bytes)" >&2
exit 0
