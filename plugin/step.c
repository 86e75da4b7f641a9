// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The smooth step: MuJoCo's forward pipeline with hard constraints off, plus the smooth forces, then
// MuJoCo's integrators.
//
//   forward   qacc = M(q)^-1 (qfrc_passive + qfrc_smooth_model - qfrc_bias + qfrc_actuator + ...)
//   Euler     v' = v + h (M + h B)^-1 (M qacc)   (B = diag(dof_damping): MuJoCo's implicit damping)
//             q' = q (+) h v',  act' = clip(act + h act_dot),  t' = t + h
//   RK4       X_i = X_0 (+) h sum_j A_ij F_j,  F_i = f(X_i, t + c_i h)   (MuJoCo's tableau)
//             X' = X_0 (+) h sum_i B_i F_i
//   implicit  (opt.integrator = MJDIFF_INT_IMPLICIT, for Euler and RK4 models alike): backward
//             Euler on the smooth forces, Newton-solved (implicit.c)
//   substeps  (mjdiff_substepCount n > 1, explicit step) n of the steps above at h / n, controls
//             and applied forces held; sensors read at the first (the step's start state, as
//             mj_step's); time advanced by h exactly; on failure the start state restored
//   sensors   MuJoCo's, but touch: s = sum of the smooth normal forces fn of the contacts its rule
//             counts (mjdiff_smoothTouch), then MuJoCo's noise and cutoff

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compat.h"
#include "internal.h"

// MuJoCo's classic RK4 tableau
static const mjtNum kRK4A[9] = {0.5, 0, 0, 0, 0.5, 0, 0, 0, 1};
static const mjtNum kRK4B[4] = {1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6};
static const mjtNum kRK4C[3] = {0.5, 0.5, 1};

// first non-finite entry of x (n x 1), or -1
static int firstBad(const mjtNum* x, int n) {
  for (int i = 0; i < n; i++) {
    if (!isfinite(x[i])) return i;
  }
  return -1;
}

static mjdiffStatus checkInputs(const mjModel* m, mjData* d, char* err, int errsz) {
  struct {
    const char* name;
    const mjtNum* x;
    int n;
    int warning;
  } arrays[] = {
    {"qpos", d->qpos, m->nq, mjWARN_BADQPOS},
    {"qvel", d->qvel, m->nv, mjWARN_BADQVEL},
    {"act", d->act, m->na, mjWARN_BADQVEL},
    {"ctrl", d->ctrl, m->nu, mjWARN_BADCTRL},
    {"qfrc_applied", d->qfrc_applied, m->nv, mjWARN_BADQACC},
    {"xfrc_applied", d->xfrc_applied, 6 * m->nbody, mjWARN_BADQACC},
  };
  if (!isfinite(d->time)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE, "time is not finite (%g)", d->time);
  }
  for (int a = 0; a < (int)(sizeof(arrays) / sizeof(arrays[0])); a++) {
    int i = firstBad(arrays[a].x, arrays[a].n);
    if (i >= 0) {
      d->warning[arrays[a].warning].number++;
      d->warning[arrays[a].warning].lastinfo = i;
      return mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE, "%s[%d] is not finite (%g) at time %g",
                          arrays[a].name, i, arrays[a].x[i], d->time);
    }
  }
  return MJDIFF_OK;
}

static mjdiffStatus checkAcc(const mjModel* m, mjData* d, char* err, int errsz) {
  int i = firstBad(d->qacc, m->nv);
  if (i < 0 && m->na) {
    int ia = firstBad(d->act_dot, m->na);
    if (ia >= 0) {
      d->warning[mjWARN_BADQACC].number++;
      d->warning[mjWARN_BADQACC].lastinfo = m->nv + ia;
      return mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE,
                          "act_dot[%d] is not finite after the smooth forward pass at time %g", ia,
                          d->time);
    }
  }
  if (i >= 0) {
    d->warning[mjWARN_BADQACC].number++;
    d->warning[mjWARN_BADQACC].lastinfo = i;
    return mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE,
                        "qacc[%d] is not finite after the smooth forward pass at time %g (forces "
                        "too stiff for the timestep?)", i, d->time);
  }
  return MJDIFF_OK;
}

// mj_sensorAcc on view, then the touch sensors read the smooth normal force (mjdiff_smoothTouch;
// MuJoCo's touch sums constraint forces, of which there are none). MuJoCo's order per touch
// sensor is kept: reading, noise (with mjENBL_SENSORNOISE: for a positive reading, max(0, s + noise
// N(0, 1)); one draw per noisy touch sensor, as MuJoCo, which is told their noise is 0), cutoff
// min(s, cutoff). mu: the model as its user configured it.
static void sensorAcc(const mjModel* mu, mjModel* view, mjData* d, const mjdiffModel* s) {
  int ntouch = 0, noisy = 0;
  int noise = compat_sensorNoise(view);
  for (int i = 0; i < view->nsensor; i++) {
    if (view->sensor_type[i] != mjSENS_TOUCH) continue;
    ntouch++;
    noisy |= noise && view->sensor_noise[i] > 0;
  }
  if (!ntouch || (view->opt.disableflags & mjDSBL_SENSOR)) {
    compat_sensorAcc(view, d);
    return;
  }

  // MuJoCo's pass, with no noise drawn for the touch sensors
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* sensor_noise = view->sensor_noise;
  if (noisy) {
    mjtNum* zeroed = compat_stackAllocNum(d, view->nsensor);
    for (int i = 0; i < view->nsensor; i++) {
      zeroed[i] = view->sensor_type[i] == mjSENS_TOUCH ? 0 : sensor_noise[i];
    }
    view->sensor_noise = zeroed;
  }
  compat_sensorAcc(view, d);
  view->sensor_noise = sensor_noise;
  compat_stackFree(d, mark);

  // the smooth readings, noise, cutoff
  mjdiff_smoothTouch(mu, d, s, d->sensordata);
  for (int i = 0; i < view->nsensor; i++) {
    if (view->sensor_type[i] != mjSENS_TOUCH) continue;
    mjtNum* x = d->sensordata + view->sensor_adr[i];
    if (noise && sensor_noise[i] > 0) {
      mjtNum rnd = mju_standardNormal(NULL);
      if (*x > 0) *x = mju_max(0, *x + rnd * sensor_noise[i]);
    }
    if (view->sensor_cutoff[i] > 0) *x = mju_min(view->sensor_cutoff[i], *x);
  }
}

// the pipeline of mj_forward on a view of m with the hard constraints off
static void forwardCore(const mjModel* m, mjData* d, const mjdiffModel* s, int skipsensor) {
  mjModel view = *m, user;
  view.opt.disableflags |= COMPAT_DSBL_HARD;
  const mjModel* mu = mjdiff_userModel(m, s, &user);
  int energy = m->opt.enableflags & mjENBL_ENERGY;

  mj_fwdPosition(&view, d);
  mjdiff_collide(mu, d, s);
  if (!skipsensor) mj_sensorPos(&view, d);
  if (energy) mj_energyPos(&view, d);

  mj_fwdVelocity(&view, d);
  mjdiff_addForces(mu, d, s, d->qfrc_passive);
  if (!skipsensor) mj_sensorVel(&view, d);
  if (energy) mj_energyVel(&view, d);

  if (mjcb_control) mjcb_control(&view, d);
  mj_fwdActuation(&view, d);
  mj_fwdAcceleration(&view, d);
  mj_fwdConstraint(&view, d);
  if (!skipsensor) sensorAcc(mu, &view, d, s);
}

mjdiffStatus mjdiff_forward(const mjModel* m, mjData* d, const mjdiffModel* s, char* err,
                            int errsz) {
  if (!d) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "data is NULL");
  mjdiffStatus st = mjdiff_checkPair(m, s, err, errsz);
  if (st != MJDIFF_OK) return st;
  st = checkInputs(m, d, err, errsz);
  if (st != MJDIFF_OK) return st;
  forwardCore(m, d, s, 0);
  return checkAcc(m, d, err, errsz);
}

// act += h act_dot (clamped)
static void advanceAct(const mjModel* m, mjData* d, const mjdiffModel* s, const mjtNum* act_dot) {
  mjtNum h = mjdiff_timestep(m, s);
  for (int i = 0; i < m->na; i++) {
    d->act[i] += h * act_dot[i];
    int iu = i + m->nu - m->na;
    if (m->actuator_actlimited[iu]) {
      const mjtNum* range = m->actuator_actrange + 2 * iu;
      d->act[i] = mju_clip(d->act[i], range[0], range[1]);
    }
  }
}

// act += h act_dot (clamped), qvel += h qacc, qpos (+)= h vel, time += h
static void advance(const mjModel* m, mjData* d, const mjdiffModel* s, const mjtNum* act_dot,
                    const mjtNum* qacc, const mjtNum* vel) {
  mjtNum h = mjdiff_timestep(m, s);
  advanceAct(m, d, s, act_dot);
  mju_addToScl(d->qvel, qacc, h, m->nv);
  mj_integratePos(m, d->qpos, vel, h);
  d->time += h;
}

// RK4 with the smooth forward at every stage; d's state is restored on failure
static mjdiffStatus rk4(const mjModel* m, mjData* d, const mjdiffModel* s, char* err, int errsz) {
  int nq = m->nq, nv = m->nv, na = m->na;
  mjtNum h = mjdiff_timestep(m, s), time = d->time;
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* dX = compat_stackAllocNum(d, 2 * nv + na);
  mjtNum *X[4], *F[4];
  for (int i = 0; i < 4; i++) {
    X[i] = compat_stackAllocNum(d, nq + nv + na);
    F[i] = compat_stackAllocNum(d, nv + na);
  }

  // stage 0: the forward pass already done
  mju_copy(X[0], d->qpos, nq);
  mju_copy(X[0] + nq, d->qvel, nv);
  mju_copy(X[0] + nq + nv, d->act, na);
  mju_copy(F[0], d->qacc, nv);
  mju_copy(F[0] + nv, d->act_dot, na);

  mjdiffStatus st = MJDIFF_OK;
  for (int i = 1; i < 4 && st == MJDIFF_OK; i++) {
    // dX = sum_j A_ij [v_j; F_j]
    mju_zero(dX, 2 * nv + na);
    for (int j = 0; j < i; j++) {
      mjtNum a = kRK4A[3 * (i - 1) + j];
      mju_addToScl(dX, X[j] + nq, a, nv);
      mju_addToScl(dX + nv, F[j], a, nv + na);
    }

    // X_i = X_0 (+) h dX
    mju_copy(X[i], X[0], nq + nv + na);
    mj_integratePos(m, X[i], dX, h);
    mju_addToScl(X[i] + nq, dX + nv, h, nv + na);

    mju_copy(d->qpos, X[i], nq);
    mju_copy(d->qvel, X[i] + nq, nv);
    mju_copy(d->act, X[i] + nq + nv, na);
    d->time = time + kRK4C[i - 1] * h;
    forwardCore(m, d, s, 1);
    st = checkAcc(m, d, err, errsz);
    mju_copy(F[i], d->qacc, nv);
    mju_copy(F[i] + nv, d->act_dot, na);
  }

  // restore X_0 and time, then advance with the B-weighted increments
  d->time = time;
  mju_copy(d->qpos, X[0], nq);
  mju_copy(d->qvel, X[0] + nq, nv);
  mju_copy(d->act, X[0] + nq + nv, na);
  if (st == MJDIFF_OK) {
    mju_zero(dX, 2 * nv + na);
    for (int j = 0; j < 4; j++) {
      mju_addToScl(dX, X[j] + nq, kRK4B[j], nv);
      mju_addToScl(dX + nv, F[j], kRK4B[j], nv + na);
    }
    advance(m, d, s, dX + 2 * nv, dX + nv, dX);
  }
  compat_stackFree(d, mark);
  return st;
}

// kinetic energy v'M v / 2 with the mass matrix of the last forward pass; tmp (nv) scratch
static mjtNum kinetic(const mjModel* m, const mjData* d, const mjtNum* v, mjtNum* tmp) {
  mj_mulM(m, d, tmp, v);
  return 0.5 * mju_dot(v, tmp, m->nv);
}

// the kinetic energy gain the actuators and applied forces alone would give over the step, from
// the start velocity v0: with tau = qfrc_actuator + qfrc_applied + J' xfrc_applied (the start
// state's, still in d after the integrator) and M's factor,
//   K(v0 + h M^-1 tau) - K(v0) = h v0' tau + h^2 tau' M^-1 tau / 2.
// A gain they explain is driven motion, not divergence; a run-away velocity cannot hide behind
// it (the work h vbar' tau at the run-away velocity would). tmp, sol: nv
static mjtNum drivenGain(const mjModel* m, mjData* d, const mjdiffModel* s, const mjtNum* v0,
                         mjtNum* tmp, mjtNum* sol) {
  int nv = m->nv;
  mjtNum h = mjdiff_timestep(m, s);
  mju_add(tmp, d->qfrc_actuator, d->qfrc_applied, nv);
  for (int b = 1; b < m->nbody; b++) {
    const mjtNum* f = d->xfrc_applied + 6 * b;
    if (mju_isZero((mjtNum*)f, 6)) continue;
    mj_applyFT(m, d, f, f + 3, d->xipos + 3 * b, b, tmp);
  }
  if (mju_isZero(tmp, nv)) return 0;
  mj_solveM(m, d, sol, tmp, 1);
  return h * mju_dot(v0, tmp, nv) + 0.5 * h * h * mju_dot(tmp, sol, nv);
}

void mjdiff_saveState(const mjModel* m, const mjData* d, mjtNum* x) {
  mju_copy(x, d->qpos, m->nq);
  mju_copy(x + m->nq, d->qvel, m->nv);
  mju_copy(x + m->nq + m->nv, d->act, m->na);
  x[m->nq + m->nv + m->na] = d->time;
}

void mjdiff_loadState(const mjModel* m, mjData* d, const mjtNum* x) {
  mju_copy(d->qpos, x, m->nq);
  mju_copy(d->qvel, x + m->nq, m->nv);
  mju_copy(d->act, x + m->nq + m->nv, m->na);
  d->time = x[m->nq + m->nv + m->na];
}

void mjdiff_describeCulprit(const mjModel* m, mjData* d, const mjdiffModel* s, char* err,
                            int errsz) {
  if (!err || errsz <= 0) return;
  mjModel user;
  const mjModel* mu = mjdiff_userModel(m, s, &user);
  mjdiffStability w;
  mjdiff_stability(mu, d, s, 1, &w);
  int len = (int)strlen(err);
  if (len + 3 < errsz) {
    snprintf(err + len, (size_t)(errsz - len), "; ");
    mjdiff_describeStability(mu, &w, err + len + 2, errsz - len - 2);
  }
}

int mjdiff_eulerLike(const mjModel* m) {
  return m->opt.integrator == mjINT_EULER || m->opt.integrator == COMPAT_INT_IMPLICITFAST;
}

int mjdiff_integratorOk(const mjModel* m) {
  return mjdiff_eulerLike(m) || m->opt.integrator == mjINT_RK4;
}

mjdiffStatus mjdiff_checkIntegrator(const mjModel* m, const mjdiffModel* s, char* err, int errsz) {
  if (!mjdiff_integratorOk(m)) return mjdiff_checkSupported(m, &s->opt, err, errsz);
  if (m->opt.integrator != COMPAT_INT_IMPLICITFAST) return MJDIFF_OK;
  return mjdiff_implicitFastCovered(m, err, errsz);
}

// 1 if tendon t is fixed (joint wraps only) on hinges and slides whose dofs pairwise lie on
// different branches (neither an ancestor of the other): MuJoCo's implicitfast keeps D's entries
// in M's sparsity only, so a servo on such a tendon (a gripper's two fingers) adds to the diagonal
// alone
int mjdiff_tendonDiagonal(const mjModel* m, int t) {
  int adr = m->tendon_adr[t], num = m->tendon_num[t];
  for (int w = adr; w < adr + num; w++) {
    int j = m->wrap_objid[w];
    if (m->wrap_type[w] != mjWRAP_JOINT ||
        (m->jnt_type[j] != mjJNT_HINGE && m->jnt_type[j] != mjJNT_SLIDE)) {
      return 0;
    }
    for (int o = adr; o < w; o++) {
      int a = m->jnt_dofadr[m->wrap_objid[o]], b = m->jnt_dofadr[j];
      if (a == b) continue;  // (the same joint twice: its coefficients add)
      int lo = a < b ? a : b, hi = a < b ? b : a;
      for (int p = hi; p >= 0; p = m->dof_parentid[p]) {
        if (p == lo) return 0;
      }
    }
  }
  return 1;
}

// the damping actuator i adds to B_dof under implicitfast, 0 where it adds none: -gear^2
// dforce/dvelocity of an affine bias (biasprm[2]) times the square of its moment on the dof
// (1 on its hinge or slide; a diagonal fixed tendon's summed coefficients); off or clamped by its
// forcerange (d not NULL): 0. The gain's own velocity term and other transmissions with a kv are
// refused (mjdiff_checkSupported)
static mjtNum actuatorDampB(const mjModel* m, const mjData* d, int i, int dof) {
  int trn = m->actuator_trntype[i], j = m->actuator_trnid[2 * i];
  if (m->actuator_biastype[i] != mjBIAS_AFFINE || m->actuator_biasprm[mjNBIAS * i + 2] == 0 ||
      compat_actuatorOff(m, i)) {
    return 0;
  }
  mjtNum moment = 0;
  if (trn == mjTRN_JOINT || trn == mjTRN_JOINTINPARENT) {
    if (m->jnt_type[j] != mjJNT_HINGE && m->jnt_type[j] != mjJNT_SLIDE) return 0;
    moment = m->jnt_dofadr[j] == dof;
  } else if (trn == mjTRN_TENDON && mjdiff_tendonDiagonal(m, j)) {
    for (int w = m->tendon_adr[j]; w < m->tendon_adr[j] + m->tendon_num[j]; w++) {
      if (m->jnt_dofadr[m->wrap_objid[w]] == dof) moment += m->wrap_prm[w];
    }
  }
  if (moment == 0) return 0;
  if (d && m->actuator_forcelimited[i]) {
    const mjtNum* range = m->actuator_forcerange + 2 * i;
    mjtNum f = d->actuator_force[i];
    if (f <= range[0] || f >= range[1]) return 0;
  }
  mjtNum gear = m->actuator_gear[6 * i];
  return -gear * gear * moment * moment * m->actuator_biasprm[mjNBIAS * i + 2];
}

mjtNum mjdiff_dampBActuator(const mjModel* m, const mjData* d, int i, int gear, int dof) {
  if (m->opt.integrator != COMPAT_INT_IMPLICITFAST) return 0;
  mjtNum b = actuatorDampB(m, d, i, dof);
  if (b == 0) return 0;
  mjtNum G = m->actuator_gear[6 * i];
  return gear ? 2 * b / G : b / m->actuator_biasprm[mjNBIAS * i + 2];
}

void mjdiff_dampB(const mjModel* m, const mjData* d, mjtNum* B) {
  int nv = m->nv;
  if (m->opt.integrator != COMPAT_INT_IMPLICITFAST) {
    int on = compat_eulerImplicit(m);
    for (int i = 0; i < nv; i++) B[i] = on ? m->dof_damping[i] : 0;
    return;
  }
  int damper = !compat_damperOff(m);
  for (int i = 0; i < nv; i++) B[i] = damper ? m->dof_damping[i] : 0;

  // each actuator on the dofs it can damp: its joint's, or its fixed tendon's (each dof once)
  for (int a = 0; a < m->nu; a++) {
    int trn = m->actuator_trntype[a], j = m->actuator_trnid[2 * a];
    if (trn == mjTRN_JOINT || trn == mjTRN_JOINTINPARENT) {
      if (m->jnt_type[j] == mjJNT_HINGE || m->jnt_type[j] == mjJNT_SLIDE) {
        B[m->jnt_dofadr[j]] += actuatorDampB(m, d, a, m->jnt_dofadr[j]);
      }
    } else if (trn == mjTRN_TENDON) {
      int adr = m->tendon_adr[j], num = m->tendon_num[j];
      for (int w = adr; w < adr + num; w++) {
        if (m->wrap_type[w] != mjWRAP_JOINT) continue;
        int dof = m->jnt_dofadr[m->wrap_objid[w]], seen = 0;
        for (int o = adr; o < w && !seen; o++) {
          seen = m->wrap_type[o] == mjWRAP_JOINT && m->jnt_dofadr[m->wrap_objid[o]] == dof;
        }
        if (!seen) B[dof] += actuatorDampB(m, d, a, dof);
      }
    }
  }
}

int mjdiff_dampBHasDofDamping(const mjModel* m) {
  if (m->opt.integrator == COMPAT_INT_IMPLICITFAST) return !compat_damperOff(m);
#if MJDIFF_MUJOCO_3
  return !(m->opt.disableflags & (mjDSBL_EULERDAMP | mjDSBL_DAMPER));  // compat_eulerImplicit's
#else
  return 1;
#endif
}

int mjdiff_hasDampB(const mjModel* m) {
  if (m->opt.integrator != COMPAT_INT_IMPLICITFAST) return compat_eulerImplicit(m);
  for (int i = 0; i < m->nv; i++) {
    if (!compat_damperOff(m) && m->dof_damping[i] != 0) return 1;
    for (int a = 0; a < m->nu; a++) {
      if (actuatorDampB(m, NULL, a, i) != 0) return 1;
    }
  }
  return 0;
}

//---------------------------------- implicitfast: standalone free bodies --------------------------
//
// MuJoCo 3's implicitfast (engine_forward.c mj_implicitSkip, engine_derivative.c mjd_freeMhat)
// takes the bias force of a standalone free body (mj_isFreeBody: one free joint, a tree of 6 dofs,
// no mass below) implicitly, in the body's own 6 x 6 block solved apart from the global factor
// (the tree shares no entry of M or B with the others):
//   A_b acc_b = qfrc_smooth_b,   A_b = M_bb + h diag(B_b) + h G_b,   G_b = d qfrc_bias_b / d qvel_b
// The bias at the body's angular velocity om (qvel_b[3..5], body frame), without gravity (which G
// does not see), as MuJoCo writes it:
//   w = R om, s = xipos - xpos, I_w = Xi diag(inertia) Xi',  f = m w x (w x s),  tau = w x I_w w,
//   c(om) = [f; R' (s x f + tau)]
// c is quadratic in om, so G's rotational columns are exact differences (its linear ones are 0):
//   G e_j = c(om + e_j) - c(om) - c(e_j)
// Derivatives (adjoint/step_d.c): A_b dacc_b = X_b - h d(G_b acc_b). With a the rotational part of
// acc_b, G a = c(om + a) - c(om) - c(a), bilinear in (om, a):
//   d(G a)/d om = G(a), G at the angular velocity a;
//   in q: in the body frame c's rotational rows are s_l x u + om x I_l om (s_l = R' s,
//   I_l = R' I_w R, u = m om x (om x s_l)), constant; its linear rows are R u, which a rotation
//   dth of the body (the free joint's tangent, body frame) turns: d(R u_a) = -R [u_a]x dth,
//   u_a = u(om + a) - u(om) - u(a).

int mjdiff_freeBlockBody(const mjModel* m, int b) {
#if MJDIFF_MUJOCO_3
  if (m->opt.integrator != COMPAT_INT_IMPLICITFAST || b <= 0 || b >= m->nbody) return 0;
  int j = m->body_jntadr[b];
  if (m->body_jntnum[b] != 1 || m->jnt_type[j] != mjJNT_FREE) return 0;
  return m->body_subtreemass[b] == m->body_mass[b] &&
         m->tree_dofnum[m->dof_treeid[m->jnt_dofadr[j]]] == 6;
#else
  (void)m;
  (void)b;
  return 0;  // (MuJoCo 2.2 has no implicitfast)
#endif
}

int mjdiff_hasFreeBlock(const mjModel* m) {
  for (int b = 1; b < m->nbody; b++) {
    if (mjdiff_freeBlockBody(m, b)) return b;
  }
  return 0;
}

// c(om) of body b (header), and u = m om x (om x s_l) in the body frame (nullable)
static void freeBias(const mjModel* m, const mjData* d, int b, const mjtNum om[3], mjtNum c[6],
                     mjtNum* u) {
  const mjtNum *R = d->xmat + 9 * b, *Xi = d->ximat + 9 * b, *in = m->body_inertia + 3 * b;
  mjtNum mass = m->body_mass[b], w[3], s[3], ws[3], f[3], Iw[3], t[3], tau[3], rot[3];
  mju_mulMatVec(w, R, om, 3, 3);
  mju_sub3(s, d->xipos + 3 * b, d->xpos + 3 * b);
  mju_cross(ws, w, s);
  mju_cross(f, w, ws);
  mju_scl3(f, f, mass);
  mju_mulMatTVec(t, Xi, w, 3, 3);  // I_w w = Xi diag(inertia) Xi' w
  for (int i = 0; i < 3; i++) t[i] *= in[i];
  mju_mulMatVec(Iw, Xi, t, 3, 3);
  mju_cross(tau, w, Iw);
  mju_cross(t, s, f);
  mju_addTo3(t, tau);
  mju_mulMatTVec(rot, R, t, 3, 3);
  mju_copy3(c, f);
  mju_copy3(c + 3, rot);
  if (u) mju_mulMatTVec(u, R, f, 3, 3);
}

void mjdiff_freeBiasG(const mjModel* m, const mjData* d, int b, const mjtNum om[3], mjtNum G[18]) {
  // probes of the size of om (exact by bilinearity at any size; a unit probe against a spin of
  // 1e5 rad/s would lose digits to the difference)
  mjtNum c0[6], cj[6], ej[6], x[3], sigma = mju_max(1, mju_norm3(om));
  freeBias(m, d, b, om, c0, NULL);
  for (int j = 0; j < 3; j++) {
    mju_copy3(x, om);
    x[j] += sigma;
    freeBias(m, d, b, x, cj, NULL);
    mjtNum e[3] = {sigma * (j == 0), sigma * (j == 1), sigma * (j == 2)};
    freeBias(m, d, b, e, ej, NULL);
    for (int r = 0; r < 6; r++) G[3 * r + j] = (cj[r] - c0[r] - ej[r]) / sigma;
  }
}

void mjdiff_freeBiasLinQ(const mjModel* m, const mjData* d, int b, const mjtNum om[3],
                         const mjtNum a[3], mjtNum D[9]) {
  mjtNum c[6], x[3], ua[3], u[3];
  mju_add3(x, om, a);
  freeBias(m, d, b, x, c, ua);
  freeBias(m, d, b, om, c, u);
  mju_subFrom3(ua, u);
  freeBias(m, d, b, a, c, u);
  mju_subFrom3(ua, u);
  // D = -R [u_a]x, whose column k is R (e_k x u_a)
  const mjtNum* R = d->xmat + 9 * b;
  for (int k = 0; k < 3; k++) {
    mjtNum e[3] = {k == 0, k == 1, k == 2}, t[3], col[3];
    mju_cross(t, e, ua);
    mju_mulMatVec(col, R, t, 3, 3);
    for (int r = 0; r < 3; r++) D[3 * r + k] = col[r];
  }
}

// dc/dp at om for the body's inertials (header): mass (kind 0), principal inertia k (kind 1),
// body-frame com component k (kind 2), body-frame inertia tensor component k (kind 3: xx yy zz
// xy xz yz, the layout of mjdiff_designInertialJacobian). c is linear in m and in the inertia,
// and s = R s_l enters f = m R (om x (om x s_l)) and R'(s x f) = m s_l x (om x (om x s_l)):
//   dc/dm = [R (om x (om x s_l)); s_l x (om x (om x s_l))]
//   dc/dI_k = [0; om x (x_k (x_k . om))]   (x_k the inertia's axis k in the body frame, R' Xi e_k)
//   dc/dT_k = [0; om x (E_k om)]           (E_k: 1 at (i, i), or at (i, j) and (j, i))
//   dc/ds_k = m [R (om x (om x e_k)); e_k x (om x (om x s_l)) + s_l x (om x (om x e_k))]
static void freeBiasParam(const mjModel* m, const mjData* d, int b, int kind, int k,
                          const mjtNum om[3], mjtNum dc[6]) {
  const mjtNum* R = d->xmat + 9 * b;
  mjtNum s[3], sl[3], t[3], u[3], ek[3] = {k == 0, k == 1, k == 2}, lin[3];
  mju_sub3(s, d->xipos + 3 * b, d->xpos + 3 * b);
  mju_mulMatTVec(sl, R, s, 3, 3);
  mju_zero(dc, 6);
  if (kind == 0) {
    mju_cross(t, om, sl);
    mju_cross(u, om, t);
    mju_mulMatVec(dc, R, u, 3, 3);
    mju_cross(dc + 3, sl, u);
  } else if (kind == 3) {
    static const int kI[6] = {0, 1, 2, 0, 0, 1}, kJ[6] = {0, 1, 2, 1, 2, 2};
    int i = kI[k], j = kJ[k];
    mjtNum Eom[3] = {0, 0, 0};
    Eom[i] += om[j];
    if (i != j) Eom[j] += om[i];
    mju_cross(dc + 3, om, Eom);
  } else if (kind == 1) {
    const mjtNum* Xi = d->ximat + 9 * b;
    mjtNum xw[3] = {Xi[k], Xi[3 + k], Xi[6 + k]}, x[3];
    mju_mulMatTVec(x, R, xw, 3, 3);
    mju_scl3(t, x, mju_dot3(x, om));
    mju_cross(dc + 3, om, t);
  } else {
    mjtNum mass = m->body_mass[b], ue[3], us[3];
    mju_cross(t, om, ek);
    mju_cross(ue, om, t);  // om x (om x e_k)
    mju_cross(t, om, sl);
    mju_cross(us, om, t);  // om x (om x s_l)
    mju_mulMatVec(lin, R, ue, 3, 3);
    mju_scl3(dc, lin, mass);
    mju_cross(t, ek, us);
    mju_cross(u, sl, ue);
    mju_add3(dc + 3, t, u);
    mju_scl3(dc + 3, dc + 3, mass);
  }
}

void mjdiff_freeBiasParamChange(const mjModel* m, const mjData* d, int b, int kind, int k,
                                const mjtNum om[3], const mjtNum a[3], mjtNum out[6]) {
  mjtNum x[3], c[6];
  mju_add3(x, om, a);
  freeBiasParam(m, d, b, kind, k, x, out);
  freeBiasParam(m, d, b, kind, k, om, c);
  mju_subFrom(out, c, 6);
  freeBiasParam(m, d, b, kind, k, a, c);
  mju_subFrom(out, c, 6);
}

void mjdiff_freeBlock(const mjModel* m, mjData* d, int b, mjtNum h, const mjtNum* B,
                      mjtNum Hbb[36], mjtNum A[36]) {
  int nv = m->nv, adr = m->jnt_dofadr[m->body_jntadr[b]];
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* x = compat_stackAllocNum(d, nv);
  mjtNum* y = compat_stackAllocNum(d, nv);
  mju_zero(x, nv);
  for (int j = 0; j < 6; j++) {  // M's columns of the block (no entry outside the tree)
    x[adr + j] = 1;
    mj_mulM(m, d, y, x);
    x[adr + j] = 0;
    for (int r = 0; r < 6; r++) Hbb[6 * r + j] = y[adr + r];
  }
  compat_stackFree(d, mark);
  for (int r = 0; r < 6; r++) Hbb[7 * r] += h * B[adr + r];
  mjtNum G[18];
  mjdiff_freeBiasG(m, d, b, d->qvel + adr + 3, G);
  mju_copy(A, Hbb, 36);
  for (int r = 0; r < 6; r++) {
    for (int j = 0; j < 3; j++) A[6 * r + 3 + j] += h * G[3 * r + j];
  }
}

int mjdiff_freeBlockSolve(const mjModel* m, mjData* d, mjtNum h, const mjtNum* B,
                          const mjtNum* rhs, mjtNum* acc) {
  int singular = 0;
  for (int b = 1; b < m->nbody; b++) {
    if (!mjdiff_freeBlockBody(m, b)) continue;
    int adr = m->jnt_dofadr[m->body_jntadr[b]], piv[6];
    mjtNum Hbb[36], A[36], x[6];
    mjdiff_freeBlock(m, d, b, h, B, Hbb, A);
    if (mjdiff_luFactor(6, A, piv)) {  // left as the global solve gave it (MuJoCo's rule too)
      if (!singular) singular = b;
      continue;
    }
    mju_copy(x, rhs + adr, 6);
    mjdiff_luSolve(6, A, piv, x);
    mju_copy(acc + adr, x, 6);
  }
  return singular;
}

int mjdiff_freeBlockRows(const mjModel* m, const mjData* d, mjtNum* Gr, int* badr) {
  int n = 0;
  for (int i = 0; i < m->nv; i++) badr[i] = -1;
  for (int b = 1; b < m->nbody; b++) {
    if (!mjdiff_freeBlockBody(m, b)) continue;
    int adr = m->jnt_dofadr[m->body_jntadr[b]];
    mjtNum G[18];
    mjdiff_freeBiasG(m, d, b, d->qvel + adr + 3, G);
    for (int r = 0; r < 6; r++) {
      badr[adr + r] = adr;
      mju_copy3(Gr + 3 * (adr + r), G + 3 * r);
    }
    n++;
  }
  return n;
}

void mjdiff_freeBlockAddDense(int nv, const mjtNum* Gr, const int* badr, mjtNum scale,
                              mjtNum* N) {
  for (int i = 0; i < nv; i++) {
    if (badr[i] < 0) continue;
    for (int k = 0; k < 3; k++) N[(size_t)nv * i + badr[i] + 3 + k] += scale * Gr[3 * i + k];
  }
}

void mjdiff_freeBlockMul(int nv, const mjtNum* Gr, const int* badr, mjtNum scale,
                         const mjtNum* x, mjtNum* out) {
  for (int i = 0; i < nv; i++) {
    if (badr[i] < 0) continue;
    out[i] += scale * mju_dot3(Gr + 3 * i, x + badr[i] + 3);
  }
}

// MuJoCo 3's implicitfast step (mjdiff_eulerLike): acc = (M + h B)^-1 qfrc_smooth (B =
// mjdiff_dampB at d's state, added to M in MuJoCo's sparse layout and factored there; a
// standalone free body's rows by its own block A_b, above), then MuJoCo's Euler advance with that
// acceleration and its own damping off (d->qacc restored after: mj_step leaves the forward pass's
// there)
static void implicitFast(const mjModel* m, mjData* d, const mjdiffModel* s) {
  int nv = m->nv;
  mjtNum h = mjdiff_timestep(m, s);
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* H = compat_stackAllocNum(d, compat_massSize(m));
  mjtNum* acc = compat_stackAllocNum(d, nv);
  mjtNum* qacc = compat_stackAllocNum(d, nv);
  mjtNum* B = compat_stackAllocNum(d, nv);
  mjdiff_dampB(m, d, B);
  compat_massCopy(m, d, H);
  for (int i = 0; i < nv; i++) *compat_massDiag(m, H, i) += h * B[i];
  compat_massFactor(m, H);
  mju_copy(acc, d->qfrc_smooth, nv);
  compat_massSolve(m, H, acc, 1);
  mjdiff_freeBlockSolve(m, d, h, B, d->qfrc_smooth, acc);  // (a singular block: left as solved)
  mju_copy(qacc, d->qacc, nv);
  mju_copy(d->qacc, acc, nv);
  mjModel view = *m;
  view.opt.disableflags |= COMPAT_DSBL_HARD | COMPAT_DSBL_EULERDAMP;
  view.opt.integrator = mjINT_EULER;
  view.opt.timestep = h;
  mj_Euler(&view, d);
  mju_copy(d->qacc, qacc, nv);
  compat_stackFree(d, mark);
}

// the (sub)step's integration from the state in d after its smooth forward pass, with the
// divergence checks; d's state is restored on failure
static mjdiffStatus integrate(const mjModel* m, mjData* d, const mjdiffModel* s, int* newton,
                              char* err, int errsz) {
  // the state before the step (restored if it diverges) and its kinetic energy
  mjdiffStatus st = MJDIFF_OK;
  int nq = m->nq, nv = m->nv, na = m->na;
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* x0 = compat_stackAllocNum(d, nq + nv + na + 1);
  mjtNum* tmp = compat_stackAllocNum(d, nv > 0 ? nv : 1);
  mjtNum* sol = compat_stackAllocNum(d, nv > 0 ? nv : 1);
  mjdiff_saveState(m, d, x0);
  mjtNum K0 = kinetic(m, d, d->qvel, tmp);

  int implicit = mjdiff_implicit(s);
  if (implicit) {
    // backward Euler on the smooth forces (implicit.c): sets qpos, qvel
    int iters;
    mjtNum correction;
    st = mjdiff_implicitSolve(m, d, s, NULL, &iters, &correction, err, errsz);
    if (st == MJDIFF_ERR_NONFINITE && newton) *newton = 1;  // (not a refusal, nor the stack)
    if (st == MJDIFF_OK) {
      advanceAct(m, d, s, d->act_dot);
      d->time += mjdiff_timestep(m, s);
    }
  } else if (m->opt.integrator == mjINT_RK4) {
    st = rk4(m, d, s, err, errsz);
  } else if (m->opt.integrator == COMPAT_INT_IMPLICITFAST) {
    implicitFast(m, d, s);
  } else {
    mjModel view = *m;
    view.opt.disableflags |= COMPAT_DSBL_HARD;
    view.opt.timestep = mjdiff_timestep(m, s);
    mj_Euler(&view, d);
  }

  // divergence: a non-finite state, or an energy gain with an unstable element (stability.c)
  if (st == MJDIFF_OK) {
    int bad = firstBad(d->qpos, nq), badv = firstBad(d->qvel, nv), bada = firstBad(d->act, na);
    if (bad >= 0 || badv >= 0 || bada >= 0) {
      st = mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE,
                        "the smooth step diverged at time %g: %s[%d] is not finite", x0[nq + nv + na],
                        bad >= 0 ? "qpos" : badv >= 0 ? "qvel" : "act",
                        bad >= 0 ? bad : badv >= 0 ? badv : bada);
    } else {
      mjtNum K1 = kinetic(m, d, d->qvel, tmp);
      mjtNum floor = 0.5 * m->body_subtreemass[0];  // (1 m/s)^2 per kg
      if (K1 > 4 * K0 + floor && (!implicit || K1 > 100 * K0 + floor) &&
          drivenGain(m, d, s, x0 + nq, tmp, sol) < 0.5 * (K1 - K0)) {
        mjModel user;
        mjdiffStability w = {0};
        if (!implicit) mjdiff_stability(mjdiff_userModel(m, s, &user), d, s, 1, &w);
        // an element that alone would quadruple its energy per step; elements whose linearised
        // step amplifies together while a moving body's energy grows tenfold (stability.c, the
        // group test); or a hundredfold gain of a body already moving (from rest, a jump is the
        // release of a violated constraint's or a contact's stored energy: a model that starts
        // with a weld apart; a divergence from rest is caught at the next step, when it grows
        // again)
        // (the stability ratios are the explicit step's bound: under the implicit step, stable at
        // any stiffness, only the last test applies: gym's Ant starts with its ankles 0.52 rad
        // outside their range, and the implicit step's release of that limit from rest was
        // named a divergence at step 0)
        // (together: two or more elements in the mode, and their ratio above each one's own;
        // a single contact's normal and friction rows alone are left to (b))
        int together = !implicit && K0 > floor && !(w.ratio > 1.5) &&
                       mjdiff_unstableTogether(&w) && K1 > 10 * K0 + floor;
        if ((!implicit && w.ratio > 1.5) || together ||
            (K1 > 100 * K0 + floor && K0 > floor)) {
          st = mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE,
                            "the smooth step diverged at time %g: kinetic energy %.3g -> %.3g J in "
                            "one step%s", x0[nq + nv + na], K0, K1,
                            together ? ", with smooth forces unstable together" : "");
        }
      }
    }
    if (st != MJDIFF_OK) {
      if (!implicit) mjdiff_describeCulprit(m, d, s, err, errsz);
      d->warning[mjWARN_BADQACC].number++;
    }
  } else if (!implicit) {
    // (the explicit step's stability bound means nothing to the implicit step, whose failure
    // names the dof Newton could not settle and the contacts)
    mjdiff_describeCulprit(m, d, s, err, errsz);
  }
  if (st != MJDIFF_OK) mjdiff_loadState(m, d, x0);
  compat_stackFree(d, mark);
  return st;
}

// one smooth (sub)step of mjdiff_timestep(m, s) from the state in d, sensors read unless
// skipsensor; d's state is restored on failure; *newton (or NULL) set to 1 if the implicit step's
// Newton solve failed
static mjdiffStatus stepOnce(const mjModel* m, mjData* d, const mjdiffModel* s, int skipsensor,
                             int* newton, char* err, int errsz) {
  forwardCore(m, d, s, skipsensor);
  mjdiffStatus st = checkAcc(m, d, err, errsz);
  if (st != MJDIFF_OK) {
    mjdiff_describeCulprit(m, d, s, err, errsz);
    return st;
  }
  return integrate(m, d, s, newton, err, errsz);
}

// the implicit step of m's timestep from the state in d (depth 0: the model's); where its Newton
// solve fails, two implicit steps of half that timestep instead, each split again the same way,
// down to 2^-implicit_split of the model's timestep (the laws' timestep-dependent values, as
// the friction speed, follow the step's timestep, as under substeps). rec (or NULL): each step
// taken, appended. d's state is restored on failure
static mjdiffStatus implicitStep(const mjModel* m, mjData* d, const mjdiffModel* s, int depth,
                                 int skipsensor, mjdiffPieces* rec, char* err, int errsz) {
  int sz = m->nq + m->nv + m->na + 1, n0 = rec ? rec->n : 0, newton = 0;
  if (rec && rec->n < rec->max) mjdiff_saveState(m, d, rec->state + (size_t)sz * rec->n);
  mjdiffStatus st = stepOnce(m, d, s, skipsensor, &newton, err, errsz);
  if (st == MJDIFF_OK) {
    if (rec && rec->n < rec->max) rec->h[rec->n] = m->opt.timestep;
    if (rec) rec->n++;
    return st;
  }
  if (!newton || depth >= (int)s->opt.implicit_split) return st;

  // two half steps (the sensors were read at the start state by the step that failed), on a view
  // of the model as its user configured it (an attached model's view would lose its constraints:
  // mjdiff_userModel knows the attached model by its address)
  mjModel user, half = *mjdiff_userModel(m, s, &user);
  half.opt.timestep = 0.5 * m->opt.timestep;
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* x0 = compat_stackAllocNum(d, sz);
  mjdiff_saveState(m, d, x0);
  st = MJDIFF_OK;
  for (int i = 0; i < 2 && st == MJDIFF_OK; i++) {
    st = implicitStep(&half, d, s, depth + 1, 1, rec, err, errsz);
  }
  if (st == MJDIFF_OK && depth == 0) {
    d->time = x0[sz - 1] + m->opt.timestep;  // (exactly, as after substeps)
  } else if (st != MJDIFF_OK) {
    mjdiff_loadState(m, d, x0);
    if (rec) rec->n = n0;
    int len = err ? (int)strlen(err) : 0;
    if (err && depth == 0 && len + 2 < errsz) {
      snprintf(err + len, (size_t)(errsz - len), " (the step split into steps down to %g failed "
               "too: implicit_split %d)", m->opt.timestep / (1 << (int)s->opt.implicit_split),
               (int)s->opt.implicit_split);
    }
  }
  compat_stackFree(d, mark);
  return st;
}

mjdiffStatus mjdiff_implicitPieces(const mjModel* m, mjData* d, const mjdiffModel* s,
                                   mjdiffPieces* rec, char* err, int errsz) {
  rec->n = 0;
  mjdiffStatus st = implicitStep(m, d, s, 0, 1, rec, err, errsz);
  if (st == MJDIFF_OK && rec->n > rec->max) {
    mjdiff_loadState(m, d, rec->state);
    st = mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "the implicit step took %d steps, more than "
                      "the %d its record holds", rec->n, rec->max);
  }
  size_t sz = (size_t)(m->nq + m->nv + m->na + 1);
  if (st == MJDIFF_OK) mjdiff_saveState(m, d, rec->state + sz * rec->n);
  return st;
}

mjdiffStatus mjdiff_substepForwarded(const mjModel* m, mjData* d, const mjdiffModel* s,
                                     char* err, int errsz) {
  return integrate(m, d, s, NULL, err, errsz);
}

mjdiffStatus mjdiff_substep(const mjModel* m, mjData* d, const mjdiffModel* s, char* err,
                            int errsz) {
  return stepOnce(m, d, s, 1, NULL, err, errsz);
}

mjdiffStatus mjdiff_step(const mjModel* m, mjData* d, const mjdiffModel* s, char* err,
                         int errsz) {
  if (!d) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "data is NULL");
  mjdiffStatus st = mjdiff_checkPair(m, s, err, errsz);
  if (st != MJDIFF_OK) return st;
  st = mjdiff_checkIntegrator(m, s, err, errsz);
  if (st != MJDIFF_OK) return st;
  st = checkInputs(m, d, err, errsz);
  if (st != MJDIFF_OK) return st;
  // on failure the state is restored as the caller gave it, bit for bit (a forward pass
  // normalises qpos's quaternions in place, MuJoCo's mj_kinematics, before the (sub)step saves
  // the state it restores)
  int n = mjdiff_substepCount(s), nq = m->nq, nv = m->nv, na = m->na;
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* x0 = compat_stackAllocNum(d, nq + nv + na + 1);
  mjdiff_saveState(m, d, x0);
  if (n == 1 && mjdiff_implicit(s)) {
    st = implicitStep(m, d, s, 0, 0, NULL, err, errsz);
  } else if (n == 1) {
    st = stepOnce(m, d, s, 0, NULL, err, errsz);
  } else {
    // substeps: controls and applied forces held, sensors read at the start state (the first
    // substep's forward pass), the time advanced by the model's timestep exactly
    for (int k = 0; k < n && st == MJDIFF_OK; k++) {
      st = stepOnce(m, d, s, k > 0, NULL, err, errsz);
    }
    if (st == MJDIFF_OK) d->time = x0[nq + nv + na] + m->opt.timestep;
  }
  if (st != MJDIFF_OK) mjdiff_loadState(m, d, x0);
  compat_stackFree(d, mark);
  return st;
}
