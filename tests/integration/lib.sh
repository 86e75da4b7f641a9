# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# Shared by the integration scripts (sourced, not a test itself: tests/CMakeLists.txt leaves it
# out), after the script has set NAME (and BUILD_DIR, SOURCE_DIR from its arguments):
#   fail MSG...      "NAME: FAIL: MSG" on stderr, exit 1
#   note MSG...      "NAME: MSG" on stderr
#   absolute_dirs    BUILD_DIR and SOURCE_DIR made absolute; fails naming a missing one
#   make_tmp PREFIX  TMP = a new directory ${TMPDIR:-/tmp}/PREFIX.XXXXXX (the caller removes it)
#   run CMD...       runs CMD: RC its exit status, OUT its stdout, ERR its stderr (through $TMP)
#   numpy_python     PYNP = the python with numpy of the configure step (ctest sets
#                    MJDIFF_NUMPY_PYTHON; the first python3 on PATH may lack numpy), else the
#                    first one found; none is a failure, as in test_nn

fail() {
  echo "$NAME: FAIL: $*" >&2
  exit 1
}
note() {
  echo "$NAME: $*" >&2
}

absolute_dirs() {
  local build=$BUILD_DIR source=$SOURCE_DIR
  BUILD_DIR=$(cd "$build" 2>/dev/null && pwd) || fail "no build directory $build"
  SOURCE_DIR=$(cd "$source" 2>/dev/null && pwd) || fail "no source directory $source"
}

make_tmp() {
  TMP=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || fail "cannot make a temp directory"
}

run() {
  "$@" >"$TMP/out" 2>"$TMP/err"
  RC=$?
  OUT=$(cat "$TMP/out")
  ERR=$(cat "$TMP/err")
}
numpy_python() {
  PYNP=${MJDIFF_NUMPY_PYTHON:-}
  if [[ -z "$PYNP" ]]; then
    for p in /usr/bin/python3 python3; do
      if command -v "$p" >/dev/null && "$p" -c 'import numpy' 2>/dev/null; then
        PYNP=$p
        break
      fi
    done
  fi
  [[ -n "$PYNP" ]] || fail "no python3 with numpy: install python3-numpy (scripts/setup.sh)"
}
