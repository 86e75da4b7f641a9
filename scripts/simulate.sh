#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# Run Debian's MuJoCo viewer (mujoco-simulate) with the mjdiff preload library, so that models with
# mjdiff_* custom numerics run with the smooth model and other models run as before.
set -euo pipefail

PROG=$(basename "$0")
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() {
  cat <<EOF
Usage: $PROG [--help] MODEL.xml [SIMULATE_ARGS...]

Run mujoco-simulate on MODEL.xml with libmjdiff_preload.so in LD_PRELOAD. Models with
mjdiff_* custom numerics get the smooth model; others run with MuJoCo's hard constraints.

Options:
  --help         print this help and exit

Environment:
  MJDIFF_PRELOAD   path of libmjdiff_preload.so (default: the first that exists of
                   $SCRIPT_DIR/../build/libmjdiff_preload.so,
                   <prefix of mujoco-simulate>/lib/libmjdiff_preload.so,
                   <prefix of mujoco-simulate>/lib/<multiarch>/libmjdiff_preload.so,
                   /usr/local/lib/libmjdiff_preload.so)
  MJDIFF_SIMULATE  viewer to run (default: mujoco-simulate from PATH, else /usr/bin/mujoco-simulate)
  MJDIFF_LOG       file the preload library appends its log to (default: stderr)

Exit status: the viewer's; 1 if the model, the viewer or the preload library is missing;
2 on a usage error.
EOF
}

die() {
  echo "$PROG: error: $*" >&2
  exit 1
}

# arguments
if [[ $# -eq 0 ]]; then
  echo "$PROG: usage error: missing MODEL.xml (see --help)" >&2
  exit 2
fi
case "$1" in
  -h | --help)
    usage
    exit 0
    ;;
  --)
    shift
    [[ $# -gt 0 ]] || { echo "$PROG: usage error: missing MODEL.xml (see --help)" >&2; exit 2; }
    ;;
  -*)
    echo "$PROG: usage error: unknown option $1 (see --help)" >&2
    exit 2
    ;;
esac
MODEL=$1
shift

# the model, made absolute (the viewer resolves relative paths against its own directory)
[[ -f "$MODEL" ]] || die "model file not found: $MODEL"
[[ -r "$MODEL" ]] || die "model file not readable: $MODEL"
MODEL="$(cd "$(dirname "$MODEL")" && pwd)/$(basename "$MODEL")"

# the viewer
SIMULATE=${MJDIFF_SIMULATE:-}
if [[ -z "$SIMULATE" ]]; then
  SIMULATE=$(command -v mujoco-simulate || true)
  [[ -n "$SIMULATE" ]] || SIMULATE=/usr/bin/mujoco-simulate
fi
[[ -x "$SIMULATE" ]] ||
  die "viewer not found: $SIMULATE (install libmujoco-samples: scripts/setup.sh)"

# the preload library
LIBNAME=libmjdiff_preload.so
if [[ -n "${MJDIFF_PRELOAD:-}" ]]; then
  PRELOAD=$MJDIFF_PRELOAD
  [[ -f "$PRELOAD" ]] || die "MJDIFF_PRELOAD names a missing file: $PRELOAD"
else
  PREFIX=$(cd "$(dirname "$SIMULATE")/.." && pwd)
  MULTIARCH=$(gcc -print-multiarch 2>/dev/null ||
              dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || true)
  CANDIDATES=("$SCRIPT_DIR/../build/$LIBNAME" "$PREFIX/lib/$LIBNAME")
  [[ -n "$MULTIARCH" ]] && CANDIDATES+=("$PREFIX/lib/$MULTIARCH/$LIBNAME")
  CANDIDATES+=("/usr/local/lib/$LIBNAME")
  [[ -n "$MULTIARCH" ]] && CANDIDATES+=("/usr/local/lib/$MULTIARCH/$LIBNAME")
  PRELOAD=
  for c in "${CANDIDATES[@]}"; do
    if [[ -f "$c" ]]; then
      PRELOAD=$c
      break
    fi
  done
  if [[ -z "$PRELOAD" ]]; then
    {
      echo "$PROG: error: $LIBNAME not found; looked in:"
      printf '  %s\n' "${CANDIDATES[@]}"
      echo "build it (cmake -S . -B build && cmake --build build) or set MJDIFF_PRELOAD"
    } >&2
    exit 1
  fi
fi
PRELOAD="$(cd "$(dirname "$PRELOAD")" && pwd)/$(basename "$PRELOAD")"

echo "$PROG: $SIMULATE $MODEL (preload $PRELOAD)" >&2
export LD_PRELOAD="$PRELOAD${LD_PRELOAD:+:$LD_PRELOAD}"
exec "$SIMULATE" "$MODEL" "$@"
