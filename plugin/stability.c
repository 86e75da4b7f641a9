// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Divergence of the smooth step, and the element that causes it.
//
// Each smooth force is, near its state, a spring-damper on one coordinate with inverse inertia A
// (MuJoCo's invweight0 approximation, as in derive.c):
//   contact (normal)  slope k s'(x), damping c s'(x);  A = geom_invweightn of the two geoms
//   contact friction  damping mu fn / v_e (sliding; v_e = v_s + h A mu fn, law.h)
//   joint or tendon limit  k s'(x), c s'(x);  A = dof_invweight0 or tendon_invweight0
//   friction loss     damping floss / v_f (the regulariser's slope at v = 0)
//   equality          k, c;  A of the constrained objects (translation and, welds, rotation)
// With exact, A is the inverse inertia at the current configuration instead: e' M^-1 e for a dof,
// J M^-1 J' for a tendon, and for a contact the relative point motion along the normal (and the
// larger tangent, for friction), from mj_jac and a solve with the forward pass's factor of M.
// Semi-implicit Euler on x'' = -omega^2 x - 2 gamma x' (omega^2 = k A, 2 gamma = c A) is stable
// while h < h_max = (-2 gamma + sqrt(4 gamma^2 + 4 omega^2)) / omega^2 and h < 1 / gamma
// (mjdiff_stableTimestep). The element's stability ratio is r = h / h_max (r > 1: unstable alone).
//
// The test (mjdiff_step): a step diverges when
//   (a) its accelerations or resulting state are not finite, or
//   (b) the most unstable active element (exact inverse inertia) has r > 1.5 (alone, its
//       damped oscillation at least doubles in amplitude per step) and the kinetic energy
//       K = v'Mv/2 more than quadrupled in the step, beyond the scale of slow motion
//       (K' > 4 K + M/2 (1 m/s)^2, M the model's total mass): a velocity doubling that the
//       element's law cannot supply when integrated stably; or
//   (c) the kinetic energy grew more than a hundredfold in the step (K' > 100 K + M/2 (1 m/s)^2),
//       whatever the elements' ratios say, for bodies already moving (K > M/2 (1 m/s)^2); or
//   (d) the elements together amplify (below, "Elements together").
// Slower growth runs on until (a) or until the motion slows.
// (b), (c) and (d) apply only to a gain the actuators and applied forces do not explain: the gain
// they alone would give from the start velocity, h v'tau + h^2 tau'M^-1 tau / 2 (tau =
// qfrc_actuator + qfrc_applied + J' xfrc_applied), below half of K' - K (a strong motor that
// accelerates a body from rest is driven motion, not divergence).
// The error then names that element, its law, the effective mass 1/A and h_max.
//
// Elements together (exact only). Elements that act on one motion add their stiffness: a plank
// hinged through its centre resting on two corners is stable under each corner's law alone and
// unstable under both (each corner's ratio 0.74, the plank's speed doubling at each bounce until
// it ran away at 1e3 rad/s before (c) held). Linearised at the state, the active elements are
//   M dv/dt = -K dx - C dv,   K = sum_i k_i J_i' J_i,   C = sum_i c_i J_i' J_i
// over their rows J_i (1 x nv: a contact's normal row with the law's slopes times its share, its
// two tangent rows with the friction slope, a limit's or friction loss's dof or tendon row).
// Semi-implicit Euler on the modes of M^-1 K is stable while h < h_max(lambda_K, lambda_C) of
// mjdiff_stableTimestep with A = 1, lambda_K = lambda_max(M^-1 K) = lambda_max(B_K),
//   B_K = D_k^1/2 S D_k^1/2,   S = J M^-1 J' (nr x nr, S_ii the row's own A),
// and lambda_C likewise (taking both largest values is exact where C is proportional to K on the
// worst mode, else a bound: stableTimestep falls in both). lambda >= k_i S_ii for every row
// (Rayleigh), so the group's ratio is at least each of its rows' own ratio (an element's own
// ratio, from consider, takes a contact's law without its share: a shared contact's can be
// larger than the group's). Power iteration on the symmetric B (Rayleigh quotients, a lower
// bound converging from below). The mode's largest
// participant is the row with the largest component of B's leading eigenvector; the elements with
// at least a tenth of its squared component are counted. Equalities are not rows here (their
// networks are bounded at make time, derive.c); neither are rows past the stack's space.
// The step's test (d): the group's ratio > 1 (the linearised step amplifies) and the kinetic
// energy grew more than tenfold in the step (K' > 10 K + M/2 (1 m/s)^2) from above the
// slow-motion scale (K > M/2 (1 m/s)^2), a gain the actuators do not explain. (Smaller factors
// stopped the derived defaults' own bursts, which runs ride out: 2.2x and 2.5x in the test suite,
// 4.3x on the height-field hopper under a trial friction law; the plank's run-away gains 3.4x,
// then 16x. Set from these samples, not derived.)

#include <math.h>
#include <stdio.h>

#include "compat.h"
#include "convex.h"
#include "internal.h"
#include "law.h"

static const char* nameOf(const mjModel* m, int type, int id) {
  const char* name = mj_id2name(m, type, id);
  return name ? name : "";
}

// exact inverse inertia: scratch for a row J (nv) and M^-1 J' (nv); NULL for invweight0
typedef struct exactCtx_ {
  const mjModel* m;
  mjData* d;
  mjtNum* row;
  mjtNum* sol;
  mjtNum* jac;                 // 3 x nv, twice
  // the active elements' rows for the group test: J (cap x nv), slopes, element of each row
  int nr, cap, nel;
  mjtNum *J, *k, *c;
  int *kind, *id, *id2, *el;   // el: the element's index (a contact's three rows share it)
} exactCtx;

// keep the row last formed in x->row (an element's, with its stiffness and damping slopes); a
// new element unless more is set (a contact's tangent rows after its normal row)
static void keepRow(exactCtx* x, mjtNum k, mjtNum c, int kind, int id, int id2, int more) {
  if (!x) return;
  if (!more) x->nel++;
  if (x->nr >= x->cap || !(k > 0 || c > 0)) return;
  int r = x->nr++;
  x->el[r] = x->nel - 1;
  mju_copy(x->J + r * x->m->nv, x->row, x->m->nv);
  x->k[r] = k;
  x->c[r] = c;
  x->kind[r] = kind;
  x->id[r] = id;
  x->id2[r] = id2;
}

// J M^-1 J' for the row in x->row (M's factor from the forward pass)
static mjtNum rowInvweight(exactCtx* x) {
  mj_solveM(x->m, x->d, x->sol, x->row, 1);
  return mju_dot(x->row, x->sol, x->m->nv);
}

// e_j' M^-1 e_j with the exact context, else MuJoCo's dof_invweight0
static mjtNum dofInvweight(exactCtx* x, const mjModel* m, int j) {
  if (!x) return m->dof_invweight0[j];
  mju_zero(x->row, x->m->nv);
  x->row[j] = 1;
  return rowInvweight(x);
}

// J M^-1 J' of tendon t with the exact context, else MuJoCo's tendon_invweight0
static mjtNum tendonInvweight(exactCtx* x, const mjModel* m, const mjData* d, int t) {
  if (!x) return m->tendon_invweight0[t];
  compat_tendonRow(m, d, t, x->row);
  return rowInvweight(x);
}

// inverse inertia of the relative motion of b2 against b1 at p along the unit direction a
static mjtNum pointInvweight(exactCtx* x, int b1, int b2, const mjtNum p[3], const mjtNum a[3]) {
  int nv = x->m->nv;
  mjtNum *j1 = x->jac, *j2 = x->jac + 3 * nv;
  mju_zero(j1, 6 * nv);
  if (b1 > 0) mj_jac(x->m, x->d, j1, NULL, p, b1);
  if (b2 > 0) mj_jac(x->m, x->d, j2, NULL, p, b2);
  for (int i = 0; i < nv; i++) {
    x->row[i] = a[0] * (j2[i] - j1[i]) + a[1] * (j2[nv + i] - j1[nv + i]) +
                a[2] * (j2[2 * nv + i] - j1[2 * nv + i]);
  }
  return rowInvweight(x);
}

// keep the worst: element with ratio r, described by what (k, c, A as given)
static void consider(mjdiffStability* w, mjtNum h, mjtNum k, mjtNum c, mjtNum A, int kind,
                     int id, int id2) {
  if (!(A > 0)) return;
  mjtNum hmax = mjdiff_stableTimestep(k, c, A);
  mjtNum r = isfinite(hmax) ? h / hmax : 0;
  if (!(r > w->ratio)) return;
  w->ratio = r;
  w->hmax = hmax;
  w->stiffness = k;
  w->damping = c;
  w->mass = 1 / A;
  w->kind = kind;
  w->id = id;
  w->id2 = id2;
}

// largest eigenvalue of the symmetric positive semidefinite n x n matrix B and its unit
// eigenvector v (power iteration, Rayleigh quotients from below, at least B's largest diagonal
// entry: the start is the diagonal's square roots times a factor in [1, 1.5) that does not
// repeat along the rows, so that no symmetric pair of rows starts orthogonal to the leading
// vector); u scratch
static mjtNum largestEig(const mjtNum* B, int n, mjtNum* v, mjtNum* u) {
  mjtNum diag = 0;
  for (int i = 0; i < n; i++) {
    mjtNum frac = fmod(0.6180339887498949 * (i + 1), 1.0);  // golden-ratio sequence
    v[i] = mju_sqrt(mju_max(B[i * n + i], 0)) * (1 + 0.5 * frac);
    diag = mju_max(diag, B[i * n + i]);
  }
  mjtNum nrm = mju_norm(v, n), lambda = 0;
  if (!(nrm > 0)) return 0;
  mju_scl(v, v, 1 / nrm, n);
  for (int it = 0; it < 200; it++) {
    mju_mulMatVec(u, B, v, n, n);
    mjtNum next = mju_dot(v, u, n);  // the Rayleigh quotient at v
    nrm = mju_norm(u, n);
    if (!(nrm > 0)) return 0;
    mju_scl(v, u, 1 / nrm, n);
    if (it > 5 && next - lambda <= 1e-9 * next) return mju_max(next, diag);
    lambda = next;
  }
  return mju_max(lambda, diag);
}

// the group test (top of file): the ratio of the kept rows' elements together, and the worst
// mode's largest participant
static void group(exactCtx* x, mjtNum h, mjdiffStability* w) {
  const mjModel* m = x->m;
  mjData* d = x->d;
  int nr = x->nr, nv = m->nv;
  mjtNum* MinvJ = compat_stackAllocNum(d, nr * nv);
  mjtNum* S = compat_stackAllocNum(d, nr * nr);
  mjtNum* B = compat_stackAllocNum(d, nr * nr);
  mjtNum *vk = compat_stackAllocNum(d, nr), *vc = compat_stackAllocNum(d, nr);
  mjtNum* u = compat_stackAllocNum(d, nr);
  mj_solveM(m, d, MinvJ, x->J, nr);
  mju_mulMatMatT(S, x->J, MinvJ, nr, nv, nr);
  mjtNum lambda[2];
  for (int which = 0; which < 2; which++) {
    const mjtNum* g = which ? x->c : x->k;
    for (int i = 0; i < nr; i++) {
      for (int j = 0; j < nr; j++) {
        B[i * nr + j] = mju_sqrt(mju_max(g[i], 0) * mju_max(g[j], 0)) * S[i * nr + j];
      }
    }
    lambda[which] = largestEig(B, nr, which ? vc : vk, u);
  }
  mjtNum hmax = mjdiff_stableTimestep(lambda[0], lambda[1], 1);
  if (!isfinite(hmax)) return;
  w->group_ratio = h / hmax;
  w->group_hmax = hmax;
  // the worse mode alone decides whose participants are named
  mjtNum* v = mjdiff_stableTimestep(lambda[0], 0, 1) <= mjdiff_stableTimestep(0, lambda[1], 1) ?
              vk : vc;
  int top = 0;
  for (int i = 1; i < nr; i++) {
    if (v[i] * v[i] > v[top] * v[top]) top = i;
  }
  w->group_kind = x->kind[top];
  w->group_id = x->id[top];
  w->group_id2 = x->id2[top];
  // count the elements (a contact with its tangent rows is one) in the mode
  w->group_count = 0;
  for (int i = 0; i < nr; i++) {
    if (!(v[i] * v[i] >= 0.1 * v[top] * v[top])) continue;
    int seen = 0;
    for (int j = 0; j < i && !seen; j++) {
      seen = x->el[j] == x->el[i] && v[j] * v[j] >= 0.1 * v[top] * v[top];
    }
    w->group_count += !seen;
  }
}

void mjdiff_stability(const mjModel* m, mjData* d, const mjdiffModel* s, int exact,
                      mjdiffStability* w) {
  mjtNum h = mjdiff_timestep(m, s);
  exactCtx xc = {.m = m, .d = d}, *ex = NULL;
  mjdiffStackMark mark = compat_stackMark(d);
  if (exact && m->nv > 0 && compat_stackSpace(d) > 8 * m->nv) {
    xc.row = compat_stackAllocNum(d, m->nv);
    xc.sol = compat_stackAllocNum(d, m->nv);
    xc.jac = compat_stackAllocNum(d, 6 * m->nv);
    ex = &xc;
    // rows for the group test: at most 3 per contact, 1 per limit and friction loss; J and
    // M^-1 J' (cap x nv each), S and B (cap x cap), 9 numbers per row besides, in half the
    // space left
    int cap = 3 * d->ncon + m->njnt + 2 * m->ntendon + m->nv;
    mjtNum room = 0.5 * compat_stackSpace(d);
    while (cap > 0 && (mjtNum)cap * (2 * m->nv + 2 * cap + 9) > room) cap /= 2;
    if (cap > 0) {
      xc.cap = cap;
      xc.J = compat_stackAllocNum(d, cap * m->nv);
      xc.k = compat_stackAllocNum(d, cap);
      xc.c = compat_stackAllocNum(d, cap);
      // (the element of each row as ints, in numbers' space: 4 ints fit in 4 numbers)
      xc.kind = (int*)compat_stackAllocNum(d, 4 * cap);
      xc.id = xc.kind + cap;
      xc.id2 = xc.id + cap;
      xc.el = xc.id2 + cap;
    }
  }
  w->exact = ex != NULL;
  w->ratio = 0;
  w->kind = MJDIFF_STAB_NONE;
  w->id = w->id2 = -1;
  w->hmax = INFINITY;
  w->stiffness = w->damping = w->mass = 0;
  w->group_ratio = 0;
  w->group_hmax = INFINITY;
  w->group_count = 0;
  w->group_kind = MJDIFF_STAB_NONE;
  w->group_id = w->group_id2 = -1;
  if ((m->opt.disableflags & mjDSBL_CONSTRAINT) || compat_passiveOff(m)) {
    compat_stackFree(d, mark);
    return;
  }

  // contacts: normal law and friction
  if (!(m->opt.disableflags & mjDSBL_CONTACT)) {
    for (int i = 0; i < d->ncon; i++) {
      const mjContact* con = d->contact + i;
      int g1 = compat_contactGeom1(con), g2 = compat_contactGeom2(con);
      mjtNum p[GP_COUNT], ds;
      mjdiff_pairParams(s, g1, g2, p);
      mjtNum x = mjdiff_contactDepth(m, con, p[GP_WIDTH]);
      if (x <= 0) continue;
      mjtNum sx = law_ramp(x, p[GP_WIDTH], &ds);
      mjtNum A = s->geom_invweightn[g1] + s->geom_invweightn[g2], As, Ar;  // normal
      mjdiff_contactInvweight(s, g1, g2, &As, &Ar);
      mjtNum At = s->geom_invweight[g1] + s->geom_invweight[g2];  // tangential
      mjtNum k = p[GP_STIFFNESS] * ds, c = p[GP_DAMPING] * ds, cf = 0;
      if (con->dim >= 3) {
        mjtNum fn = p[GP_STIFFNESS] * sx;  // the spring part bounds the damped law's force
        mjtNum ve = law_frictionSpeed(p[GP_FRICTION_SPEED], h, As, con->friction[0], fn);
        cf = fn * con->friction[0] / ve;
      }
      if (ex) {
        int b1 = m->geom_bodyid[g1], b2 = m->geom_bodyid[g2];
        mjtNum share = mjdiff_contactShare(m, d, s, i, NULL);
        A = pointInvweight(ex, b1, b2, con->pos, con->frame);
        keepRow(ex, share * k, share * c, MJDIFF_STAB_CONTACT, g1, g2, 0);
        At = 0;
        for (int t = 1; t < 3 && con->dim >= 3; t++) {
          At = mju_max(At, pointInvweight(ex, b1, b2, con->pos, con->frame + 3 * t));
          keepRow(ex, 0, share * cf, MJDIFF_STAB_FRICTION, g1, g2, 1);
        }
      }
      consider(w, h, k, c, A, MJDIFF_STAB_CONTACT, g1, g2);
      if (con->dim >= 3) consider(w, h, 0, cf, At, MJDIFF_STAB_FRICTION, g1, g2);
    }
  }

  // limits
  if (!(m->opt.disableflags & mjDSBL_LIMIT)) {
    mjtNum law[EP_COUNT], ds;
    for (int j = 0; j < m->njnt; j++) {
      if (!m->jnt_limited[j] || m->jnt_type[j] == mjJNT_FREE) continue;
      mjdiff_limitParams(s, 0, j, law);
      const mjtNum* range = m->jnt_range + 2 * j;
      mjtNum q = d->qpos[m->jnt_qposadr[j]], r[3] = {0, 0, 0};
      if (m->jnt_type[j] == mjJNT_BALL) {
        mju_quat2Vel(r, d->qpos + m->jnt_qposadr[j], 1);
        q = mju_norm3(r);
      }
      mjtNum x = mju_max(law[EP_WIDTH] - (q - range[0]), law[EP_WIDTH] - (range[1] - q));
      if (m->jnt_type[j] == mjJNT_BALL) x = law[EP_WIDTH] - (range[1] - q);
      if (x <= 0) continue;
      law_ramp(x, law[EP_WIDTH], &ds);
      int dof = m->jnt_dofadr[j];
      mjtNum A;
      if (ex && m->jnt_type[j] == mjJNT_BALL && q > mjMINVAL) {
        // a ball's limit acts about its rotation's axis r / |r| (smooth.c), across its 3 dofs
        mju_zero(ex->row, m->nv);
        mju_scl3(ex->row + dof, r, 1 / q);
        A = rowInvweight(ex);
      } else {
        A = dofInvweight(ex, m, dof);
      }
      consider(w, h, law[EP_STIFFNESS] * ds, law[EP_DAMPING] * ds, A, MJDIFF_STAB_JOINT_LIMIT, j,
               -1);
      keepRow(ex, law[EP_STIFFNESS] * ds, law[EP_DAMPING] * ds, MJDIFF_STAB_JOINT_LIMIT, j,
              -1, 0);
    }
    for (int t = 0; t < m->ntendon; t++) {
      if (!m->tendon_limited[t]) continue;
      mjdiff_limitParams(s, 1, t, law);
      const mjtNum* range = m->tendon_range + 2 * t;
      mjtNum L = d->ten_length[t];
      mjtNum x = mju_max(law[EP_WIDTH] - (L - range[0]), law[EP_WIDTH] - (range[1] - L));
      if (x <= 0) continue;
      law_ramp(x, law[EP_WIDTH], &ds);
      consider(w, h, law[EP_STIFFNESS] * ds, law[EP_DAMPING] * ds, tendonInvweight(ex, m, d, t),
               MJDIFF_STAB_TENDON_LIMIT, t, -1);
      keepRow(ex, law[EP_STIFFNESS] * ds, law[EP_DAMPING] * ds, MJDIFF_STAB_TENDON_LIMIT, t,
              -1, 0);
    }
  }

  // friction loss
  if (!(m->opt.disableflags & mjDSBL_FRICTIONLOSS)) {
    for (int j = 0; j < m->nv; j++) {
      if (m->dof_frictionloss[j] > 0) {
        mjtNum c = m->dof_frictionloss[j] / mjdiff_lossSpeed(s, 0, j);
        consider(w, h, 0, c, dofInvweight(ex, m, j), MJDIFF_STAB_DOF_LOSS, j, -1);
        keepRow(ex, 0, c, MJDIFF_STAB_DOF_LOSS, j, -1, 0);
      }
    }
    for (int t = 0; t < m->ntendon; t++) {
      if (m->tendon_frictionloss[t] > 0) {
        mjtNum c = m->tendon_frictionloss[t] / mjdiff_lossSpeed(s, 1, t);
        consider(w, h, 0, c, tendonInvweight(ex, m, d, t), MJDIFF_STAB_TENDON_LOSS, t, -1);
        keepRow(ex, 0, c, MJDIFF_STAB_TENDON_LOSS, t, -1, 0);
      }
    }
  }

  // equalities
  if (!(m->opt.disableflags & mjDSBL_EQUALITY)) {
    for (int i = 0; i < m->neq; i++) {
      if (!compat_eqActive(m, d, i)) continue;
      mjtNum k, c, At, Ar;
      mjdiff_eqParams(s, i, 0, &k, &c);
      mjdiff_eqInvweight(s, i, &At, &Ar);
      consider(w, h, k, c, At, MJDIFF_STAB_EQUALITY, i, -1);
      if (m->eq_type[i] == mjEQ_WELD) {
        compatEq eq;
        compat_eqGeometry(m, i, &eq);
        mjtNum ts = eq.torquescale;
        mjdiff_eqParams(s, i, 1, &k, &c);
        consider(w, h, ts * k, ts * c, Ar, MJDIFF_STAB_EQUALITY, i, -1);
      }
    }
  }
  if (ex && xc.nr > 1) group(&xc, h, w);
  compat_stackFree(d, mark);
}

// "contact between geoms ...", "limit of joint ...": the element kind, id, id2 into what (0: none)
static int describeElement(const mjModel* m, int kind, int id, int id2, char* what, int n) {
  switch (kind) {
    case MJDIFF_STAB_CONTACT:
    case MJDIFF_STAB_FRICTION:
      snprintf(what, (size_t)n, "%s between geoms %d ('%s', body '%s') and %d ('%s', body '%s')",
               kind == MJDIFF_STAB_CONTACT ? "contact" : "contact friction", id,
               nameOf(m, mjOBJ_GEOM, id), nameOf(m, mjOBJ_BODY, m->geom_bodyid[id]), id2,
               nameOf(m, mjOBJ_GEOM, id2), nameOf(m, mjOBJ_BODY, m->geom_bodyid[id2]));
      return 1;
    case MJDIFF_STAB_JOINT_LIMIT:
      snprintf(what, (size_t)n, "limit of joint %d ('%s')", id, nameOf(m, mjOBJ_JOINT, id));
      return 1;
    case MJDIFF_STAB_TENDON_LIMIT:
      snprintf(what, (size_t)n, "limit of tendon %d ('%s')", id, nameOf(m, mjOBJ_TENDON, id));
      return 1;
    case MJDIFF_STAB_DOF_LOSS:
      snprintf(what, (size_t)n, "friction loss of dof %d (joint '%s')", id,
               nameOf(m, mjOBJ_JOINT, m->dof_jntid[id]));
      return 1;
    case MJDIFF_STAB_TENDON_LOSS:
      snprintf(what, (size_t)n, "friction loss of tendon %d ('%s')", id,
               nameOf(m, mjOBJ_TENDON, id));
      return 1;
    case MJDIFF_STAB_EQUALITY:
      snprintf(what, (size_t)n, "equality %d ('%s')", id, nameOf(m, mjOBJ_EQUALITY, id));
      return 1;
    default:
      return 0;
  }
}

int mjdiff_unstableTogether(const mjdiffStability* w) {
  return w->group_count > 1 && w->group_ratio > 1 && w->group_ratio > 1.01 * w->ratio;
}

int mjdiff_describeStability(const mjModel* m, const mjdiffStability* w, char* buf, int bufsz) {
  if (!buf || bufsz <= 0) return 0;
  char what[256];
  if (!describeElement(m, w->kind, w->id, w->id2, what, sizeof(what))) {
    return snprintf(buf, (size_t)bufsz, "no smooth force is near its stability limit");
  }
  mjtNum h = w->hmax * w->ratio;  // the step it was judged at (a substep: mjdiff_timestep)
  int len = snprintf(buf, (size_t)bufsz,
                     "most unstable smooth force: %s, stiffness %.3g, damping %.3g, effective mass "
                     "%.3g (%s); largest stable timestep about %.3g s, %s %g s (ratio %.2f)",
                     what, w->stiffness, w->damping, w->mass,
                     w->exact ? "at this configuration" : "MuJoCo's invweight0", w->hmax,
                     h < m->opt.timestep ? "substep" : "timestep", h, w->ratio);
  // elements that are unstable only together
  if (mjdiff_unstableTogether(w) &&
      describeElement(m, w->group_kind, w->group_id, w->group_id2, what, sizeof(what)) &&
      len >= 0 && len < bufsz) {
    len += snprintf(buf + len, (size_t)(bufsz - len),
                    "; together, %d smooth forces act on one motion (the largest: %s) and are "
                    "unstable: their largest stable timestep is about %.3g s (ratio %.2f)",
                    w->group_count, what, w->group_hmax, w->group_ratio);
  }
  return len;
}
