// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Box-box contacts (MuJoCo 2.2.2's mjc_BoxBox, engine_collision_box.c): the engine's choice of
// separating axis, shared by the forward depth correction (plugin/boxbox.c, called from
// mjdiff_collide) and the geometry Jacobian (adjoint/geom_d.c). Internal header.

#ifndef MJDIFF_BOXBOX_H_
#define MJDIFF_BOXBOX_H_

#include <mjdiff/base.h>
#include <mujoco/mujoco.h>

#ifdef __cplusplus
extern "C" {
#endif

// the engine's separating axis of boxes (p1, R1, s1), (p2, R2, s2) at margin: code 0..5 a face of
// box 1 (axis code % 3, negative side if code >= 3), 6..11 a face of box 2 (code - 6 likewise),
// 12 + 3 i + j the cross product of box-1 axis i and box-2 axis j, with the engine's corner masks
// cle1, cle2 and side flag in for that case; -1 if the boxes are apart by more than the margin.
// rot (3 x 3) receives R1' R2. On MuJoCo 3.x: 3.12's choice (its stage 1 and face-for-edge
// substitution, plugin/boxbox.c) in the same numbering, cle1 = cle2 = in = 0.
typedef struct {
  int code;
  int cle1, cle2, in;
} mjdiffBoxAxis;

MJDIFF_API mjdiffBoxAxis mjdiff_boxBoxAxis(const mjtNum* p1, const mjtNum* R1, const mjtNum* s1,
                                           const mjtNum* p2, const mjtNum* R2, const mjtNum* s2,
                                           mjtNum margin, mjtNum rot[9]);

// the box-box contacts of d->contact that the engine's face case produced (code < 12) get their
// full depth as dist (the engine reports half of it), and a face-case point that does not lie
// over the reference face (2.2.2's stray first corner, boxbox.c) is removed from the list; the
// other contacts are left alone. On MuJoCo 3.x a no-op: 3.12's face case reports the full depth
// and tests every corner.
MJDIFF_API void mjdiff_boxBoxDepth(const mjModel* m, mjData* d);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_BOXBOX_H_
