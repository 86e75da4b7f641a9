// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The scalar force laws of the smooth model, with their derivatives (shared with the adjoint).
//
//   ramp     s(x) = 0                              x <= 0
//                   x^3 / (6 w^2)                  0 < x <= w
//                   x - w + (2w - x)^3 / (6 w^2)   w < x <= 2w
//                   x - w                          x > 2w
//            s'(x) = x^2/(2w^2), 1 - (2w-x)^2/(2w^2), 1;   s''(x) = x/w^2, (2w-x)/w^2, 0
//            (the ramp max(x - w, 0) smoothed by a triangle of half-width w: C2, monotone, convex)
//   damped   spring g = k s(x) >= 0 plus damping e = c s'(x) (-v)  (v: separating speed; the damping
//            fades in with s' over the same width as the spring)
//            f(g, e) = g + e                       e >= -g/2
//                      g^2 / (-4 e)                e < -g/2
//            df/dg = 1, -g / (2 e);  df/de = 1, g^2 / (4 e^2)
//            (C1, f > 0 whenever g > 0 and f = 0 when g = 0: the damping never pulls)
//   regular  r(u) = u / sqrt(1 + |u|^2)            componentwise over a vector u, |r| < 1
//            dr_i/du_j = (delta_ij (1 + |u|^2) - u_i u_j) / (1 + |u|^2)^(3/2)

#ifndef MJDIFF_LAW_H_
#define MJDIFF_LAW_H_

#include <math.h>
#include <mujoco/mujoco.h>

// smoothed ramp s(x) with width w > 0; derivative in *ds if not NULL
static inline mjtNum law_ramp(mjtNum x, mjtNum w, mjtNum* ds) {
  if (x <= 0) {
    if (ds) *ds = 0;
    return 0;
  }
  mjtNum iw2 = 1 / (w * w);
  if (x <= w) {
    if (ds) *ds = 0.5 * x * x * iw2;
    return x * x * x * iw2 / 6;
  }
  if (x <= 2 * w) {
    mjtNum r = 2 * w - x;
    if (ds) *ds = 1 - 0.5 * r * r * iw2;
    return x - w + r * r * r * iw2 / 6;
  }
  if (ds) *ds = 1;
  return x - w;
}

// inverse of the ramp for f > 0 (used by tests and documentation of rest penetration)
static inline mjtNum law_rampInverse(mjtNum f, mjtNum w) {
  if (f <= 0) return 0;
  if (f >= w) return f + w;
  mjtNum x = (f <= w / 6) ? cbrt(6 * f * w * w) : 1.5 * w;
  for (int i = 0; i < 50; i++) {
    mjtNum ds, s = law_ramp(x, w, &ds);
    mjtNum dx = (s - f) / ds;
    x -= dx;
    if (fabs(dx) < 1e-15 * w) break;
  }
  return x;
}

// damped normal force f(g, e) for spring g >= 0 and damping e; partials in *dg, *de if not NULL
static inline mjtNum law_damped(mjtNum g, mjtNum e, mjtNum* dg, mjtNum* de) {
  if (e >= -0.5 * g) {
    if (dg) *dg = 1;
    if (de) *de = 1;
    return g + e;
  }
  if (dg) *dg = -0.5 * g / e;
  if (de) *de = 0.25 * g * g / (e * e);
  return -0.25 * g * g / e;
}

// regularised unit direction: r = u / sqrt(1 + |u|^2) for u of size n, returns 1/sqrt(1 + |u|^2)
static inline mjtNum law_regular(mjtNum* r, const mjtNum* u, int n) {
  mjtNum q = 1;
  for (int i = 0; i < n; i++) q += u[i] * u[i];
  mjtNum inv = 1 / sqrt(q);
  for (int i = 0; i < n; i++) r[i] = u[i] * inv;
  return inv;
}

// effective regularisation speed of a friction law under normal force fn >= 0:
//   v_eff = v + h A mu fn
// the speed v plus the slip one explicit step of length h gives a contact of inverse inertia A
// under the friction bound mu fn. It keeps the law's slope mu fn / v_eff below 1 / (h A): the
// explicit step of friction stays stable under any load (the local implicit friction of one step,
// linearised at rest), and v_eff = v in the limit h -> 0. d v_eff = dv + h A (fn dmu + mu dfn).
// The smooth model scales derived friction speeds only (A = 0 where the user set the speed).
static inline mjtNum law_frictionSpeed(mjtNum v, mjtNum h, mjtNum A, mjtNum mu, mjtNum fn) {
  return v + h * A * mu * fn;
}

#endif  // MJDIFF_LAW_H_
