#!/usr/bin/env python3
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# Writes hopper_terrain.png, the height field of hopper_terrain.xml (MuJoCo 2.2.2 reads height
# fields only from files: its <hfield> has no inline elevation attribute). Python's standard
# library only; the output is deterministic, so the committed PNG is what this script writes:
#   python3 models/hopper_terrain.py && git diff --exit-code models/hopper_terrain.png
#
# The terrain (NCOL columns along x over [-16, 16] m, NROW identical rows along y: the hopper is
# planar):
#   e(x) = 0                                                   for |x| < 1.5 m (the start)
#   e(x) = r(x) max(0, 0.45 + 0.3 sin(1.7 x) + 0.2 sin(4.3 x + 1))   otherwise,
#   r(x) = min(1, (|x| - 1.5) / 2)                             (the bumps fade in over 2 m)
# scaled so that max e = 1 and stored as 8-bit grey, 255 e rounded. MuJoCo rescales the image to
# [0, 1] and multiplies by the elevation in the hfield's size (0.12 m in hopper_terrain.xml).
# PNG rows go from +y (first) to -y; with identical rows the order does not matter.

import math
import os
import struct
import sys
import zlib

NCOL, NROW, HALF = 161, 5, 16.0


def elevation():
    e = []
    for j in range(NCOL):
        x = -HALF + 2 * HALF * j / (NCOL - 1)
        ax = abs(x)
        if ax < 1.5:
            e.append(0.0)
            continue
        ramp = min(1.0, (ax - 1.5) / 2.0)
        e.append(ramp * max(0.0, 0.45 + 0.3 * math.sin(1.7 * x) + 0.2 * math.sin(4.3 * x + 1.0)))
    top = max(e)
    return [v / top for v in e]


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def png(rows):
    height, width = len(rows), len(rows[0])
    raw = b"".join(b"\x00" + bytes(r) for r in rows)  # filter type 0 per row
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) +
            chunk(b"IEND", b""))


def main():
    row = [int(round(255 * v)) for v in elevation()]
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hopper_terrain.png")
    if len(sys.argv) > 1:
        out = sys.argv[1]
    with open(out, "wb") as f:
        f.write(png([row] * NROW))
    print("wrote %s (%d x %d)" % (out, NCOL, NROW))


if __name__ == "__main__":
    main()
