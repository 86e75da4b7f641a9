// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Box-box contact depth. MuJoCo 2.2.2's mjc_BoxBox (engine_collision_box.c) first picks the
// separating axis of least overlap among the 15 candidates (3 face normals of each box, 9 edge
// cross products), then builds the contacts in one of two ways:
//   face case (code < 12): reference face of box R, incident box I, face coordinates with z along
//     the outward face normal from the face plane. Each contact point W of the incident box (a
//     corner, an edge cut by a side of the face, a face corner over the incident face) has depth
//     W_z (< 0 in overlap); the engine admits it by W_z <= margin and reports
//       dist = W_z / 2,   pos = p_R + F (W_x, W_y, W_z/2 + hz),   n = +-f_z;
//   edge case (code >= 12): dist = the full separation of each point along the axis N.
// The face case thus reports half the depth: the signed distance of pos's two surface points
// (the incident point W and its projection onto the face plane) along n is W_z, not W_z/2.
//
// Why mjdiff corrects it. The smooth force is a function of dist (g = k s(w - dist)), so the
// halving makes it discontinuous where the engine's case switches:
//   - face <-> edge: at a switch the two cases give the same points and normal but dist jumps by a
//     factor 2. Two boxes of equal width stacked flush (their side faces coplanar) sit on such a
//     switch: a face normal and an edge cross product give the same overlap to first order in any
//     tilt out of the flush plane, the edge one is smaller at second order, so the engine takes the
//     face case at the flush pose and the edge case at every tilt of about 1e-8 rad or more on
//     either side. The force jumped by the factor 2 in depth and a finite difference of it (whose
//     two evaluations both lie off the flush pose) saw another function than the derivative at
//     the flush pose: d f/dq of two such boxes on a plane off by 36% along tilts (7.6e3 of 2.1e4).
//     tests/test_geom_d.cc, GeomJacobianBoxStack.FlushStackContinuousAcrossFaceEdgeSwitch.
//   - appearance: a face-case point is admitted at W_z = margin, i.e. at dist = margin / 2, where
//     the ramp s(w - dist) is not zero (mjdiff_collide sets margin >= w): the force would pop in.
// With dist = W_z both cases report the same function at a switch and a face point appears at
// dist = margin, where the force is zero with two derivatives.
//
// Forward (mjdiff_boxBoxDepth, after mj_collision): for each box-box contact, the engine's code is
// recomputed from the geom poses, sizes and margin by mjdiff_boxBoxAxis (the engine's own
// arithmetic, so that it takes the same decisions to the last bit); a face-case contact gets
//   dist <- 2 dist  (= W_z, exact: multiplying by 2 is exact in floating point);
// pos and frame are kept (pos already is the midpoint of W and its projection). mjdiff_boxBoxAxis:
//   pos21 = R1'(p2 - p1), pos12 = R2'(p1 - p2), rot = R1' R2, plen2 = |rot| s2, plen1 = |rot|' s1,
//   face i of box 1: c = -|pos21_i| + s1_i + plen2_i,  of box 2: c = -|pos12_i| + s2_i + plen1_i,
//   edge (i, j): a = e_i x rot e_j normalised (skipped if |e_i x rot e_j| < mjMINVAL),
//     c = sum_{k != i} s1_k |a_k| + sum_{k != j} s2_k |rot_{i,3-k-j}| / |e_i x rot e_j|
//         - |pos21.a|,
//   in the engine's order (box-1 face i, box-2 face i, i = 0..2, then the edges i, j), keeping the
//   first strict minimum (edges must beat it by the factor 1 - 1e-12), starting from
//   margin + 3 (sum s1 + sum s2); any c < -margin: apart (code -1).
//
// Derivative (adjoint/geom_d.c, box-box face case): d dist = d W_z instead of d W_z / 2, the rest
// unchanged. No allocation; the model is only read.
//
// What remains at flush poses (engine case switches, not derivative errors; measured on the
// two-box stack on a plane, equal boxes offset 0.01 m along x, after 3 and 20 implicit steps):
//   - normal: across the tie the engine's n is the reference face normal at the pose and an edge
//     cross product off it (beyond tilts of about sqrt(1e-12 |overlap| / height), 2e-7 rad here),
//     with another dn; where both boxes tilt the two sides can take different edge pairs (a kink).
//     d f/dq against central differences (the same at every step from 1e-5 to 1e-6): along the
//     four directions of the report 0.3% (3 steps) to 1.9% (20 steps), along random directions up
//     to 15%; along directions in the flush plane (no tilt out of it, no sideways shift) 3e-7
//     (tests/test_geom_d.cc, GeomJacobianBoxStack.SmoothForceJacobianOfStacks);
//   - sideways: a corner on a flush side becomes two contacts a translation apart (the incident
//     corner and the side's cut of its edge) under any sideways shift of either box: the smooth
//     force jumps by one corner's share (7.1 N of the 20 N load). MuJoCo's contact set is the
//     overlap polygon's vertices; a penalty summed over them jumps where two vertices merge.

#include "boxbox.h"

#include <math.h>

#include "compat.h"
#include "convex.h"

mjdiffBoxAxis mjdiff_boxBoxAxis(const mjtNum* p1, const mjtNum* R1, const mjtNum* s1,
                                const mjtNum* p2, const mjtNum* R2, const mjtNum* s2, mjtNum margin,
                                mjtNum rot[9]) {
  mjdiffBoxAxis res = {-1, 0, 0, 0};
  mjtNum tmp[3], pos21[3], pos12[3], rotabs[9], plen1[3], plen2[3];
  mju_sub3(tmp, p2, p1);
  mju_rotVecMatT(pos21, tmp, R1);
  mju_sub3(tmp, p1, p2);
  mju_rotVecMatT(pos12, tmp, R2);
  mju_mulMatTMat(rot, R1, R2, 3, 3, 3);
  for (int i = 0; i < 9; i++) rotabs[i] = fabs(rot[i]);
  mju_rotVecMat(plen2, s2, rotabs);
  mju_rotVecMatT(plen1, s1, rotabs);

  mjtNum pen = margin;
  for (int i = 0; i < 3; i++) pen += s1[i] * 3 + s2[i] * 3;

  // face normals
  for (int i = 0; i < 3; i++) {
    mjtNum c1 = -fabs(pos21[i]) + s1[i] + plen2[i];
    mjtNum c2 = -fabs(pos12[i]) + s2[i] + plen1[i];
    if (c1 < -margin || c2 < -margin) {
      res.code = -1;
      return res;
    }
    if (c1 < pen) {
      pen = c1;
      res.code = i + 3 * (pos21[i] < 0);
    }
    if (c2 < pen) {
      pen = c2;
      res.code = i + 3 * (pos12[i] < 0) + 6;
    }
  }

  // edge cross products: box-1 axis i x box-2 axis j, in the box-1 frame
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) {
      mjtNum b[3] = {rot[j], rot[3 + j], rot[6 + j]}, ax[3] = {0, 0, 0};
      if (i == 0) {
        ax[1] = -b[2];
        ax[2] = +b[1];
      } else if (i == 1) {
        ax[0] = +b[2];
        ax[2] = -b[0];
      } else {
        ax[0] = -b[1];
        ax[1] = +b[0];
      }
      mjtNum len = mju_normalize3(ax);
      if (len < mjMINVAL) continue;
      mjtNum c2 = mju_dot3(pos21, ax), c3 = 0;
      for (int k = 0; k < 3; k++) {
        if (k != i) c3 += s1[k] * fabs(ax[k]);
      }
      for (int k = 0; k < 3; k++) {
        if (k != j) c3 += s2[k] * rotabs[3 * i + 3 - k - j] / len;
      }
      c3 -= fabs(c2);
      if (c3 < -margin) {
        res.code = -1;
        return res;
      }
      if (c3 < pen * (1 - 1e-12)) {
        pen = c3;
        res.cle1 = res.cle2 = 0;
        for (int k = 0; k < 3; k++) {
          if (k != i && ((ax[k] > 0) ^ (c2 < 0))) res.cle1 += 1 << k;
          if (k != j && ((rot[3 * i + 3 - k - j] > 0) ^ (c2 < 0) ^ ((k - j + 3) % 3 == 1))) {
            res.cle2 += 1 << k;
          }
        }
        res.code = 12 + 3 * i + j;
        res.in = c2 < 0;
      }
    }
  }
  return res;
}

void mjdiff_boxBoxDepth(const mjModel* m, mjData* d) {
  int g1 = -1, g2 = -1, face = 0;
  for (int i = 0; i < d->ncon; i++) {
    mjContact* con = d->contact + i;
    int c1 = compat_contactGeom1(con), c2 = compat_contactGeom2(con);
    if (c1 < 0 || c2 < 0 || m->geom_type[c1] != mjGEOM_BOX || m->geom_type[c2] != mjGEOM_BOX) {
      continue;
    }
    // one pair's contacts are consecutive: its case once per run
    if (c1 != g1 || c2 != g2) {
      g1 = c1;
      g2 = c2;
      mjtNum rot[9];
      mjdiffBoxAxis ax =
          mjdiff_boxBoxAxis(d->geom_xpos + 3 * g1, d->geom_xmat + 9 * g1, m->geom_size + 3 * g1,
                            d->geom_xpos + 3 * g2, d->geom_xmat + 9 * g2, m->geom_size + 3 * g2,
                            mjdiff_contactMargin(m, con), rot);
      face = ax.code >= 0 && ax.code < 12;
    }
    if (face) con->dist *= 2;
  }
}
