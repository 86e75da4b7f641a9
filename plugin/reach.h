// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The long-range ("reach") contact term of the smooth model, for optimisation (private; shared
// by plugin/smooth.c and adjoint/forces_d.c). Off by default: reach_strength = 0.
//
// Why: the penalty force of smooth.c is exactly zero beyond the activation width w (about 1 mm),
// so a rollout in which two bodies never come within w of each other has a zero derivative in
// everything that would bring them together ("no gradient before contact"). After Mordatch,
// Todorov and Popovic's contact-invariant optimisation (SIGGRAPH 2012: "contacts from distance"),
// a weak force that acts across a gap gives that derivative a direction, and a continuation
// anneals it to zero (<mjdiff/reach.h>) so the optimum found is one of the true model.
//
// Law, for every contact MuJoCo reports between geom1 and geom2 (signed distance dist, normal n
// from geom1 to geom2, point p), with strength a >= 0 (N) and width R > 0 (m):
//   t    = dist / R
//   S(t) = 1                               t <= 0
//          (1 - t)^3 (1 + 3 t + 6 t^2)     0 < t < 1   (= 1 - (10 t^3 - 15 t^4 + 6 t^5))
//          0                               t >= 1
//   f_r  = a S(t)               on geom2 along +n (geom1 gets -f_r n), at p; no torque
//   S'(t)  = -30 t^2 (1 - t)^2,   S''(t) = -60 t (1 - t) (1 - 2 t)   inside (0, 1), 0 outside
//   df_r/ddist = a S'(t) / R,     d2f_r/ddist2 = a S''(t) / R^2
// S is the complement of the quintic smootherstep: S', S'' vanish at t = 0 and t = 1, so f_r is
// C2 in dist on the whole line (its derivative, which the adjoint and the implicit step's Newton
// use, is C1), monotone non-increasing, bounded by a, and exactly zero, with two derivatives,
// from dist = R on. Contacts are reported out to dist = R (mjdiff_collide raises the collision
// margins to R while the term is on), so a contact appearing at the margin starts at zero force,
// slope and curvature, as the penalty contacts do at w.
//
// Choices:
//   - repulsive, along the normal only. The total normal force k s(w - dist) + a S(dist / R) is
//     then monotone decreasing in dist over the whole line: the term extends the real contact's
//     force, with the real contact's sign, to a distance, and a -> 0 is a homotopy to the true
//     model. Its derivative tells an optimiser what the real contact would: "come closer on the far
//     side and the object is pushed harder". An attractive potential gives a nonzero gradient too,
//     but of a sign no contact has (it pulls the box toward the pusher): descent then learns to
//     pull from the near side, a strategy that disappears as the strength is annealed and leaves
//     the pusher on the wrong side of the object. Friction and damping at a distance would need
//     a tangential law with no physical meaning; the signal needed lives in the distance alone.
//   - a force law rather than a potential: the smooth model is force-based (U = a R int_t^1 S is
//     its potential if one is wanted: f_r = -dU/ddist).
//   - a per-contact term on every reported pair, or (reach_static = 0) only on pairs of two
//     moving bodies: on the support contacts of a body resting on the static world it would
//     lighten the body by a per contact, which a manipulation task does not want (the signal it
//     needs is between the manipulator and the object); locomotion wants the ground pairs. a
//     stays small against the weights involved (README, "Gradients before contact").
// Exactly zero for a = 0: reach_strength = 0 leaves every force, the collision margins and so
// the step bit for bit as without the term (tests/test_reach.cc).
//
// The term adds to the world force F of the contact in smooth.c (contactWrenches) and to its
// partials in adjoint/forces_d.c (contactDeriv) with y = (dist, n, v, w):
//   F += f_r n,   dF/ddist += n df_r/ddist,   dF/dn += f_r I
// The touch sensor and mjdiff_contactForce report the penalty force only.

#ifndef MJDIFF_PLUGIN_REACH_H_
#define MJDIFF_PLUGIN_REACH_H_

#include <mujoco/mujoco.h>

#include "compat.h"
#include "internal.h"

// S(t) of the header, S'(t) in *ds if not NULL
static inline mjtNum reach_shape(mjtNum t, mjtNum* ds) {
  if (t <= 0) {
    if (ds) *ds = 0;
    return 1;
  }
  if (t >= 1) {
    if (ds) *ds = 0;
    return 0;
  }
  mjtNum u = 1 - t;
  if (ds) *ds = -30 * t * t * u * u;
  return u * u * u * (1 + 3 * t + 6 * t * t);
}

// the reach force f_r of contact con under s's options, df_r/ddist in *dfr if not NULL; 0 (and
// 0) when the term is off, or for a pair with a geom on the static world when reach_static is 0
static inline mjtNum reach_force(const mjModel* m, const mjdiffModel* s, const mjContact* con,
                                 mjtNum* dfr) {
  mjtNum a = s->opt.reach_strength, R = s->opt.reach_width;
  if (dfr) *dfr = 0;
  if (!(a > 0)) return 0;
  if (!s->opt.reach_static && (m->body_weldid[m->geom_bodyid[compat_contactGeom1(con)]] == 0 ||
                               m->body_weldid[m->geom_bodyid[compat_contactGeom2(con)]] == 0)) {
    return 0;
  }
  mjtNum ds, f = a * reach_shape(con->dist / R, &ds);
  if (dfr) *dfr = a * ds / R;
  return f;
}

// the collision margin the term needs: R while it is on, else 0
static inline mjtNum reach_margin(const mjdiffModel* s) {
  return s->opt.reach_strength > 0 ? s->opt.reach_width : 0;
}

#endif  // MJDIFF_PLUGIN_REACH_H_
