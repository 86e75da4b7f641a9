#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# README code blocks always compile: install BUILD_DIR into a fresh prefix, extract every ```c
# block of README.md, plugin/README.md, adjoint/README.md and examples/README.md, and build them
# with the programs of examples/ as an outside project (find_package(mjdiff), -Wall -Wextra
# -Werror); run every whole program on the installed arm_box model.
#   whole program   a block with "int main(": compiled as it stands and run; a block opening
#                   with "// examples/NAME.c" must equal that file byte for byte
#   fragment        any other block: compiled inside a function whose parameters declare the
#                   variables the READMEs' fragments use (FRAGMENT_PARAMS below), as an inner block
#                   (so a fragment may declare its own), and linked
# usage: bash readme_examples.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

build=$(cd "${1:?usage: readme_examples.sh BUILD_DIR SOURCE_DIR}" && pwd)
source_dir=$(cd "${2:?usage: readme_examples.sh BUILD_DIR SOURCE_DIR}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/mjdiff-readme.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "readme_examples: FAIL: $*" >&2; exit 1; }
unset LD_LIBRARY_PATH LD_PRELOAD

cmake --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
for h in mjdiff base smooth adjoint params state rollout loss args; do
  [[ -e "$prefix/include/mjdiff/$h.h" ]] || fail "missing include/mjdiff/$h.h"
done

mkdir -p "$work/blocks"
python3 - "$source_dir" "$work/blocks" <<'PY'
import os, re, sys
src, out = sys.argv[1], sys.argv[2]
FRAGMENT_PARAMS = """mjModel* m, mjData* d, mjdiffModel* s, mjdiffStepDeriv* w, mjdiffParams* p,
    mjdiffRollout* r, int T, mjtNum* A, mjtNum* B, mjtNum* P, mjtNum* adj_next, mjtNum* adj_x,
    mjtNum* adj_ctrl, mjtNum* adj_param, mjtNum* dx, mjtNum* du, mjtNum* dp, mjtNum* dx_next,
    mjtNum* ctrl, mjtNum* states, mjtNum* sensordata, mjtNum* dLdx, mjtNum* dLdu, mjtNum* dLds,
    mjtNum* grad_x0, mjtNum* grad_ctrl, mjtNum* grad_param"""
n = 0
for readme in ["README.md", "plugin/README.md", "adjoint/README.md", "examples/README.md"]:
    path = os.path.join(src, readme)
    if not os.path.exists(path):
        continue
    text = open(path).read()
    for i, mt in enumerate(re.finditer(r"^```c\n(.*?)^```$", text, re.S | re.M)):
        body = mt.group(1)
        line = text[:mt.start()].count("\n") + 1
        tag = "%s:%d" % (readme, line)
        name = "readme_%02d" % n
        n += 1
        first = body.split("\n", 1)[0]
        ref = re.match(r"// (examples/[\w.]+\.c)", first)
        if ref:
            file = os.path.join(src, ref.group(1))
            if not os.path.exists(file) or open(file).read() != body:
                sys.exit("%s: the block differs from %s" % (tag, ref.group(1)))
        if "int main(" in body:
            code = "// %s (whole program)\n%s" % (tag, body)
            kind = "program"
        else:
            code = ("// %s (fragment)\n#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
                    "#include <mjdiff/mjdiff.h>\n\nvoid %s(%s);\nvoid %s(%s) {\n  char err[1000] = \"\";\n"
                    "  (void)err;\n  {\n%s  }\n}\n\nint main(void) {\n  return 0;\n}\n"
                    % (tag, name, FRAGMENT_PARAMS, name, FRAGMENT_PARAMS, body))
            kind = "fragment"
        open(os.path.join(out, name + ".c"), "w").write(code)
        open(os.path.join(out, name + ".kind"), "w").write(kind + " " + tag + "\n")
print("extracted %d C blocks" % n)
PY

sources=$(ls "$work"/blocks/*.c | tr '\n' ';')
[[ -n "$sources" ]] || fail "no C blocks found"
# the same MuJoCo as the build (on a MuJoCo 3 host its prefix, from the build's mujoco_DIR)
mjprefix=""
if [[ $(sed -n 's/^MJDIFF_HOST_MUJOCO3:INTERNAL=//p' "$build/CMakeCache.txt") == ON ]]; then
  mjprefix=";$(sed -n 's/^mujoco_DIR:PATH=//p' "$build/CMakeCache.txt")/../../.."
fi
cmake -S "$source_dir/examples" -B "$work/app" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix$mjprefix" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON \
      "-DEXTRA_SOURCES=$sources" >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configure"; }
cmake --build "$work/app" -j2 -- -k >"$work/build.log" 2>&1 || { grep -E "error|warning|readme_|examples/" "$work/build.log" | head -60; fail "a README block or example does not compile"; }

# run the whole programs: the examples and the README's programs
model="$prefix/share/mjdiff/models/arm_box.xml"
nrun=0
for src in "$source_dir"/examples/*.c; do
  name=$(basename "$src" .c)
  "$work/app/$name" "$model" >"$work/$name.out" 2>&1 || { cat "$work/$name.out"; fail "examples/$name.c exits $?"; }
  echo "examples/$name.c: $(tail -1 "$work/$name.out")"
  nrun=$((nrun + 1))
done
for kind in "$work"/blocks/*.kind; do
  name=$(basename "$kind" .kind)
  read -r k tag <"$kind"
  if [[ $k == program ]]; then
    "$work/app/$name" "$model" >"$work/$name.out" 2>&1 || { cat "$work/$name.out"; fail "$tag exits $?"; }
    nrun=$((nrun + 1))
  fi
  echo "$tag: $k OK"
done
echo "readme_examples: OK ($(ls "$work"/blocks/*.c | wc -l) README blocks compiled, $nrun programs run)"
