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
// A stray point (2.2 only). The face case collects the incident box's corners that lie over the
// reference face (|x| < lx, |y| < ly in face coordinates), but 2.2.2's loop applies that test to
// every corner except the first (its clcorner, "if (i)" in the corner loop), which it admits on
// its depth alone. A 5 cm box resting on a table that is a box (0.9 x 1 m) then gets a fifth
// contact at the table's corner, 0.83 m from the box, in 3570 of 7200 yaws and tilts scanned
// (3.12: 0); the smooth force there pushed the resting box 0.9 mm sideways and turned it 0.04
// degrees in 2 s, and its lever made the contact's law 65x past its stable timestep (the arm
// with the gripper, models/arm_gripper.xml). mjdiff_boxBoxDepth drops a face-case point that is
// not over the reference face's rectangle (test: tests/test_share.cc,
// ContactShare.BoxOnBoxTableHasNoStrayCorner). The first corner now leaves the list when it
// crosses the face's edge within the margin (at up to the margin's depth), as on 3.12.
//
// MuJoCo 3.12 (mjc_BoxBox rewritten upstream): stage 1 takes the axis of largest separation,
//   face axes of box 1 (code 0..2), of box 2 (3..5), then edges (6 + 3 i + j), an edge winning
//   only by sep - 1e-6 |sep| > best and sep > the best face's; a winning edge within about 8 deg
//   of the best face axis (|axis . face normal| > 0.99) whose separation is within 5% of the
//   face's gives way to the face. Face case: the incident face (the incident box's face most
//   opposed to the reference normal) is clipped by the four side planes of the reference face
//   (Sutherland-Hodgman), every clipped vertex V (face coordinates, V_z above the face plane) with
//   V_z <= margin a contact: dist = V_z (the full depth: no quirk to correct), pos midway between
//   the face plane and V. Edge case: the closest points of the two supporting edge segments, dist
//   their separation along the unit axis, pos their midpoint. So on 3.x mjdiff_boxBoxDepth leaves
//   every contact alone, and mjdiff_boxBoxAxis recomputes 3.12's choice with 3.12's arithmetic,
//   reported in the 2.2 numbering above (box-1 face a: a + 3 (pos21_a < 0), box-2 face a:
//   6 + a + 3 (pos12_a < 0), edge (i, j): 12 + 3 i + j; cle1, cle2, in are 0). Its derivative:
//   adjoint/geom_d.c, "box-box on MuJoCo 3".
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
//     corner and the side's cut of its edge) under any sideways shift of either box. MuJoCo's
//     contact set is the overlap polygon's vertices; a penalty summed over them jumped by one
//     corner's load where two vertices merge (7.1 N of the 20 N load). The contact shares
//     (plugin/smooth.c) now split one contact's force among points that coincide, so the force
//     is continuous there (tests/test_share.cc).

#include "boxbox.h"

#include <math.h>

#include "compat.h"
#include "convex.h"

#if MJDIFF_MUJOCO_3
// 3.12's separation slack and tie rules (engine_collision_box.c, double precision)
#define SEPEPS3 1e-13
#define PAREPS3 1e-16
#define EDGEBIAS3 1e-6

mjdiffBoxAxis mjdiff_boxBoxAxis(const mjtNum* p1, const mjtNum* R1, const mjtNum* s1,
                                const mjtNum* p2, const mjtNum* R2, const mjtNum* s2, mjtNum margin,
                                mjtNum rot[9]) {
  mjdiffBoxAxis res = {-1, 0, 0, 0};
  mjtNum tmp[3], pos21[3], pos12[3], rotabs[9];
  mju_sub3(tmp, p2, p1);
  mju_mulMatTVec3(pos21, R1, tmp);
  mju_sub3(tmp, p1, p2);
  mju_mulMatTVec3(pos12, R2, tmp);
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) {
      rot[3 * i + j] = R1[i] * R2[j] + R1[3 + i] * R2[3 + j] + R1[6 + i] * R2[6 + j];
    }
  }
  for (int i = 0; i < 9; i++) rotabs[i] = fabs(rot[i]);
  mjtNum septol = margin + SEPEPS3 * (s1[0] + s1[1] + s1[2] + s2[0] + s2[1] + s2[2]);
  mjtNum best = -mjMAXVAL;
  int code = -1;
  for (int i = 0; i < 3; i++) {
    mjtNum r2 = rotabs[3 * i + 0] * s2[0] + rotabs[3 * i + 1] * s2[1] + rotabs[3 * i + 2] * s2[2];
    mjtNum sep = fabs(pos21[i]) - s1[i] - r2;
    if (sep > septol) return res;
    if (sep > best) {
      best = sep;
      code = i;
    }
  }
  for (int j = 0; j < 3; j++) {
    mjtNum r1 = rotabs[0 + j] * s1[0] + rotabs[3 + j] * s1[1] + rotabs[6 + j] * s1[2];
    mjtNum sep = fabs(pos12[j]) - s2[j] - r1;
    if (sep > septol) return res;
    if (sep > best) {
      best = sep;
      code = 3 + j;
    }
  }
  mjtNum sep_face = best;
  int code_face = code;
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) {
      int i1 = (i + 1) % 3, i2 = (i + 2) % 3, j1 = (j + 1) % 3, j2 = (j + 2) % 3;
      mjtNum ax1 = -rot[3 * i2 + j], ax2 = rot[3 * i1 + j];
      mjtNum norm2 = ax1 * ax1 + ax2 * ax2;
      if (norm2 < PAREPS3) continue;
      mjtNum inv = 1 / sqrt(norm2);
      ax1 *= inv;
      ax2 *= inv;
      mjtNum r1 = s1[i1] * fabs(ax1) + s1[i2] * fabs(ax2);
      mjtNum b1 = ax1 * rot[3 * i1 + j1] + ax2 * rot[3 * i2 + j1];
      mjtNum b2 = ax1 * rot[3 * i1 + j2] + ax2 * rot[3 * i2 + j2];
      mjtNum r2 = s2[j1] * fabs(b1) + s2[j2] * fabs(b2);
      mjtNum sep = fabs(ax1 * pos21[i1] + ax2 * pos21[i2]) - r1 - r2;
      if (sep > septol) return res;
      if (sep - EDGEBIAS3 * fabs(sep) > best && sep > sep_face) {
        best = sep;
        code = 6 + 3 * i + j;
      }
    }
  }
  if (code < 0) return res;
  if (code >= 6) {
    int i = (code - 6) / 3, j = (code - 6) % 3, i1 = (i + 1) % 3, i2 = (i + 2) % 3;
    mjtNum axis[3];
    axis[i] = 0;
    axis[i1] = -rot[3 * i2 + j];
    axis[i2] = rot[3 * i1 + j];
    mju_normalize3(axis);
    mjtNum dot;
    if (code_face < 3) {
      dot = fabs(axis[code_face]);
    } else {
      int f = code_face - 3;
      dot = fabs(axis[0] * rot[0 + f] + axis[1] * rot[3 + f] + axis[2] * rot[6 + f]);
    }
    if (dot > 0.99 && best < sep_face + 0.05 * fabs(sep_face) + mjMINVAL) code = code_face;
  }
  if (code < 3) {
    res.code = code + 3 * (pos21[code] < 0);
  } else if (code < 6) {
    res.code = 6 + (code - 3) + 3 * (pos12[code - 3] < 0);
  } else {
    res.code = 12 + (code - 6);
  }
  return res;
}

void mjdiff_boxBoxDepth(const mjModel* m, mjData* d) {
  (void)m;
  (void)d;  // 3.12 reports the full depth
}
#else
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

// 1 if a face-case contact's point lies over the reference face's rectangle (box R at pR, RR,
// half-sizes sR, face axis a; in the face's two axes, with a relative slack of 1e-9)
static int overFace(const mjtNum* pos, const mjtNum* pR, const mjtNum* RR, const mjtNum* sR,
                    int a) {
  mjtNum tmp[3], loc[3];
  mju_sub3(tmp, pos, pR);
  mju_rotVecMatT(loc, tmp, RR);
  for (int k = 0; k < 3; k++) {
    if (k != a && fabs(loc[k]) > sR[k] * (1 + 1e-9)) return 0;
  }
  return 1;
}

void mjdiff_boxBoxDepth(const mjModel* m, mjData* d) {
  int g1 = -1, g2 = -1, face = 0, ref = -1, axis = 0, n = 0;
  for (int i = 0; i < d->ncon; i++) {
    mjContact* con = d->contact + i;
    int c1 = compat_contactGeom1(con), c2 = compat_contactGeom2(con);
    int keep = 1;
    if (c1 >= 0 && c2 >= 0 && m->geom_type[c1] == mjGEOM_BOX && m->geom_type[c2] == mjGEOM_BOX) {
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
        ref = ax.code < 6 ? g1 : g2;
        axis = (ax.code % 6) % 3;
      }
      if (face) {
        con->dist *= 2;
        // the engine's stray point (top of file): the incident box's corner off the face
        keep = overFace(con->pos, d->geom_xpos + 3 * ref, d->geom_xmat + 9 * ref,
                        m->geom_size + 3 * ref, axis);
      }
    }
    if (keep && n != i) d->contact[n] = *con;
    n += keep;
  }
  d->ncon = n;
}
#endif
