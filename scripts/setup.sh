#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# Install the Debian 12 packages mjdiff needs to build, test and plot. Idempotent: returns at once
# when everything is already installed. Uses sudo only when not run as root.
set -euo pipefail

# required packages
REQUIRED=(
  build-essential cmake
  libmujoco-dev libmujoco-samples    # MuJoCo 2.2.2 library, headers, mujoco-simulate
  libglfw3-dev                       # viewer
  libblis-dev                        # dense linear algebra
  libgtest-dev googletest            # unit tests
  xvfb xauth imagemagick x11-utils   # headless viewer tests and screenshots (xvfb-run needs xauth)
  xdotool                            # X keyboard and mouse events for the viewer's input test
  gnuplot-nox                        # plots
  python3                            # sysid scripts: servos, tables, benchmark
  python3-numpy                      # test_nn: .npz round trip with numpy
  clang                              # fuzz targets (libFuzzer, scripts/fuzz.sh)
  libgl-dev libx11-dev libxrandr-dev libxinerama-dev libxcursor-dev libxi-dev libxext-dev
                                     # MuJoCo 3.12 from ../shared/mujoco3 (scripts/test-mj3.sh)
)
# optional packages: installed when available, never a failure
OPTIONAL=(valgrind)

missing() {
  local p status
  for p in "$@"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [[ "$status" == installed ]] || echo "$p"
  done
}

mapfile -t need < <(missing "${REQUIRED[@]}")
mapfile -t want < <(missing "${OPTIONAL[@]}")
if [[ ${#need[@]} -eq 0 && ${#want[@]} -eq 0 ]]; then
  echo "setup: all packages installed"
  exit 0
fi

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: not root and sudo not found" >&2; exit 1; }
  SUDO=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
APT=("${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o Dpkg::Use-Pty=0)

echo "setup: installing ${need[*]} ${want[*]}"
"${APT[@]}" update
if [[ ${#need[@]} -gt 0 ]]; then
  "${APT[@]}" install --no-install-recommends "${need[@]}"
fi
if [[ ${#want[@]} -gt 0 ]]; then
  "${APT[@]}" install --no-install-recommends "${want[@]}" ||
    echo "setup: optional packages not installed: ${want[*]}" >&2
fi

# check
mapfile -t still < <(missing "${REQUIRED[@]}")
if [[ ${#still[@]} -gt 0 ]]; then
  echo "setup: still missing: ${still[*]}" >&2
  exit 1
fi
echo "setup: done"
