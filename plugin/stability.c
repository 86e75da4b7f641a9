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
//       whatever the elements' ratios say (coupled elements can be unstable together while each
//       alone is stable). Slower growth runs on until (a) or until the motion slows.
// (b) and (c) apply only to a gain the actuators and applied forces do not explain: the gain they
// alone would give from the start velocity, h v'tau + h^2 tau'M^-1 tau / 2 (tau = qfrc_actuator +
// qfrc_applied + J' xfrc_applied), below half of K' - K (a strong motor that accelerates a body
// from rest is driven motion, not divergence).
// The error then names that element, its law, the effective mass 1/A and h_max.

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
} exactCtx;

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

void mjdiff_stability(const mjModel* m, mjData* d, const mjdiffModel* s, int exact,
                      mjdiffStability* w) {
  mjtNum h = mjdiff_timestep(m, s);
  exactCtx xc = {m, d, NULL, NULL, NULL}, *ex = NULL;
  mjdiffStackMark mark = compat_stackMark(d);
  if (exact && m->nv > 0 && compat_stackSpace(d) > 8 * m->nv) {
    xc.row = compat_stackAllocNum(d, m->nv);
    xc.sol = compat_stackAllocNum(d, m->nv);
    xc.jac = compat_stackAllocNum(d, 6 * m->nv);
    ex = &xc;
  }
  w->exact = ex != NULL;
  w->ratio = 0;
  w->kind = MJDIFF_STAB_NONE;
  w->id = w->id2 = -1;
  w->hmax = INFINITY;
  w->stiffness = w->damping = w->mass = 0;
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
      if (ex) {
        int b1 = m->geom_bodyid[g1], b2 = m->geom_bodyid[g2];
        A = pointInvweight(ex, b1, b2, con->pos, con->frame);
        At = mju_max(pointInvweight(ex, b1, b2, con->pos, con->frame + 3),
                     pointInvweight(ex, b1, b2, con->pos, con->frame + 6));
      }
      consider(w, h, p[GP_STIFFNESS] * ds, p[GP_DAMPING] * ds, A, MJDIFF_STAB_CONTACT, g1, g2);
      if (con->dim >= 3) {
        mjtNum fn = p[GP_STIFFNESS] * sx;  // the spring part bounds the damped law's force
        mjtNum ve = law_frictionSpeed(p[GP_FRICTION_SPEED], h, As, con->friction[0], fn);
        consider(w, h, 0, fn * con->friction[0] / ve, At, MJDIFF_STAB_FRICTION, g1, g2);
      }
    }
  }

  // limits
  if (!(m->opt.disableflags & mjDSBL_LIMIT)) {
    mjtNum law[EP_COUNT], ds;
    for (int j = 0; j < m->njnt; j++) {
      if (!m->jnt_limited[j] || m->jnt_type[j] == mjJNT_FREE) continue;
      mjdiff_limitParams(s, 0, j, law);
      const mjtNum* range = m->jnt_range + 2 * j;
      mjtNum q = d->qpos[m->jnt_qposadr[j]];
      if (m->jnt_type[j] == mjJNT_BALL) {
        mjtNum r[3];
        mju_quat2Vel(r, d->qpos + m->jnt_qposadr[j], 1);
        q = mju_norm3(r);
      }
      mjtNum x = mju_max(law[EP_WIDTH] - (q - range[0]), law[EP_WIDTH] - (range[1] - q));
      if (m->jnt_type[j] == mjJNT_BALL) x = law[EP_WIDTH] - (range[1] - q);
      if (x <= 0) continue;
      law_ramp(x, law[EP_WIDTH], &ds);
      int dof = m->jnt_dofadr[j];
      consider(w, h, law[EP_STIFFNESS] * ds, law[EP_DAMPING] * ds,
               dofInvweight(ex, m, dof), MJDIFF_STAB_JOINT_LIMIT, j, -1);
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
    }
  }

  // friction loss
  if (!(m->opt.disableflags & mjDSBL_FRICTIONLOSS)) {
    for (int j = 0; j < m->nv; j++) {
      if (m->dof_frictionloss[j] > 0) {
        consider(w, h, 0, m->dof_frictionloss[j] / mjdiff_lossSpeed(s, 0, j),
                 dofInvweight(ex, m, j), MJDIFF_STAB_DOF_LOSS, j, -1);
      }
    }
    for (int t = 0; t < m->ntendon; t++) {
      if (m->tendon_frictionloss[t] > 0) {
        consider(w, h, 0, m->tendon_frictionloss[t] / mjdiff_lossSpeed(s, 1, t),
                 tendonInvweight(ex, m, d, t), MJDIFF_STAB_TENDON_LOSS, t, -1);
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
  compat_stackFree(d, mark);
}

int mjdiff_describeStability(const mjModel* m, const mjdiffStability* w, char* buf, int bufsz) {
  if (!buf || bufsz <= 0) return 0;
  char what[256];
  switch (w->kind) {
    case MJDIFF_STAB_CONTACT:
    case MJDIFF_STAB_FRICTION:
      snprintf(what, sizeof(what), "%s between geoms %d ('%s', body '%s') and %d ('%s', body '%s')",
               w->kind == MJDIFF_STAB_CONTACT ? "contact" : "contact friction", w->id,
               nameOf(m, mjOBJ_GEOM, w->id), nameOf(m, mjOBJ_BODY, m->geom_bodyid[w->id]),
               w->id2, nameOf(m, mjOBJ_GEOM, w->id2),
               nameOf(m, mjOBJ_BODY, m->geom_bodyid[w->id2]));
      break;
    case MJDIFF_STAB_JOINT_LIMIT:
      snprintf(what, sizeof(what), "limit of joint %d ('%s')", w->id,
               nameOf(m, mjOBJ_JOINT, w->id));
      break;
    case MJDIFF_STAB_TENDON_LIMIT:
      snprintf(what, sizeof(what), "limit of tendon %d ('%s')", w->id,
               nameOf(m, mjOBJ_TENDON, w->id));
      break;
    case MJDIFF_STAB_DOF_LOSS:
      snprintf(what, sizeof(what), "friction loss of dof %d (joint '%s')", w->id,
               nameOf(m, mjOBJ_JOINT, m->dof_jntid[w->id]));
      break;
    case MJDIFF_STAB_TENDON_LOSS:
      snprintf(what, sizeof(what), "friction loss of tendon %d ('%s')", w->id,
               nameOf(m, mjOBJ_TENDON, w->id));
      break;
    case MJDIFF_STAB_EQUALITY:
      snprintf(what, sizeof(what), "equality %d ('%s')", w->id, nameOf(m, mjOBJ_EQUALITY, w->id));
      break;
    default:
      return snprintf(buf, (size_t)bufsz, "no smooth force is near its stability limit");
  }
  mjtNum h = w->hmax * w->ratio;  // the step it was judged at (a substep: mjdiff_timestep)
  return snprintf(buf, (size_t)bufsz,
                  "most unstable smooth force: %s, stiffness %.3g, damping %.3g, effective mass "
                  "%.3g (%s); largest stable timestep about %.3g s, %s %g s (ratio %.2f)",
                  what, w->stiffness, w->damping, w->mass,
                  w->exact ? "at this configuration" : "MuJoCo's invweight0", w->hmax,
                  h < m->opt.timestep ? "substep" : "timestep", h, w->ratio);
}
