// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Smooth-model values derived from what the MJCF already says, so that a model nobody tuned is
// stable at its own timestep and rests about as deep as under MuJoCo's native step.
//
// MuJoCo's soft constraints (engine_core_constraint.c). From solref = (timeconst tc, dampratio dr)
// (tc raised to 2h unless refsafe is disabled) or direct (-K, -B), and solimp = (dmin, dmax, width,
// mid, power), the reference acceleration of a constraint at violation r, velocity v, is
//   aref = -b v - d k r,   k = 1 / (dmax^2 tc^2 dr^2),  b = 2 / (dmax tc)   (direct: K/dmax^2,
// B/dmax; mj_referenceConstraint scales k by the impedance d) and the solver returns, in one
// dimension with inverse inertia A, a = d aref + (1 - d) a0 (R = (1 - d)/d A), d the impedance in
// [dmin, dmax]. At rest under a load a0 = -g: r = (1 - d)/d^2 g/k (0.2-0.4 mm with the defaults:
// MuJoCo's contacts are firm), and the motion about that rest is a spring-damper of natural
// frequency d sqrt(k), damping ratio dr.
//
// The penalty law of the smooth model, with stiffness K (N/m) and damping C on an effective mass
// m_eff = 1/A, rests at r = m_eff g / K. The same rest depth as MuJoCo's needs
//   omega_match^2 = K / m_eff = k dbar^2 / (1 - dbar),   dbar = (dmin + dmax)/2,
//   zeta = b / (2 sqrt(k))  (= dr for the standard format).
// The law takes omega_match^2 = k dbar / (1 - dbar), 1/dbar firmer (8% at MuJoCo's default
// solimp, 6% at the humanoid sample's): it was derived without the impedance's factor on k in
// aref, and the exact value, tried on 2026-12-07, raised the worst Newton iterations of the
// implicit step on the humanoid under controls from 39 to 67
// (Implicit.HumanoidUnderControlsConverges) and moved the state that
// Implicit.ContinuationFindsTheRootNewtonMissed was built on; it was not adopted. The
// semi-implicit Euler step of x'' = -omega^2 x - 2 zeta omega x' is stable while
//   (omega h)^2 + 4 zeta omega h < 4,  i.e.  omega h < 2 (sqrt(zeta^2 + 1) - zeta)
// (0.83 for zeta = 1). Several contacts on one body act in parallel and invweight0 is an average
// over directions, so the derived law keeps a safety factor beta = 0.4 below that bound:
//   omega = min(omega_match, beta 2 (sqrt(zeta^2 + 1) - zeta) / h)
//   K = omega^2 m_eff,  C = 2 zeta omega m_eff,  width w = max(solimp width, 1e-4)
// m_eff is MuJoCo's own approximation of the constraint's inverse inertia (its efc_diagApprox,
// from the compile-time body_invweight0, dof_invweight0, tendon_invweight0 at qpos0): constant per
// element at make time, so that every derived value stays a plain parameter.
//
// Elements:
//   geom g (contacts)  solref, solimp of the geom; A = A_t + rho^2 A_r, MuJoCo's translational
//                      and rotational body_invweight0 of the geom's body with rho a bound on the
//                      normal's lever about the body's centre of mass c: a contact at p with
//                      normal n moves the body along n by A_t + |(p - c) x n|^2 A_r. With o the
//                      geom's centre, |o - c| = |geom_pos - body_ipos|:
//                        sphere   p - o = r n, so |(p - c) x n| = |(o - c) x n| <= |o - c|
//                        capsule  p - s = r n, s on the core segment: <= |o - c| + half-length
//                        others   (box corners, cylinder caps, ellipsoids, meshes, where the
//                                 normal passes beside the centre) <= |o - c| + geom_rbound
//                      and, where a lever w = (p - c) x n has at most dperp along a direction u
//                      (a sphere's offset, dperp 0; a capsule's axis, dperp = |u x (o - c)|),
//                      A_r = (tr R - u'Ru) / 2 + (dperp / rho)^2 u'Ru with R = J_r M^-1 J_r' at
//                      qpos0 (MuJoCo's A_r is tr R / 3: a thin capsule's spin about its axis,
//                      which no normal turns, weighed in at twice the inverse inertia of its
//                      tumble); on the other shapes, whose normals may pass beside the centre
//                      in any direction, A_r = lambda_max(R), a bound (3x MuJoCo's mean on a
//                      body that turns about one hinge; since 2026-12-07, leverInvweight). On
//                      spheres and capsules A_r stays a mean over directions, not a bound:
//                      the worst lever direction can see up to 2x it (3x MuJoCo's mean), which
//                      the safety factor BETA must cover. Where convex.c's exact solve fails and
//                      MuJoCo's MPR contact is kept (depths of several cm), its normal need not
//                      pass through a sphere's centre
//                      (geom_invweightn, the explicit step's; the implicit step's normal law
//                      takes MuJoCo's own A_t, below). Friction acts along
//                      the tangents, whose lever reaches the farthest point of every shape: its
//                      load scaling (law.h) and the tangential stability bound keep rho =
//                      |o - c| + geom_rbound (geom_invweight). Against an immovable partner.
//                      MuJoCo's own efc_diagApprox of a contact row drops the lever (A_t alone).
//                      A pair of two geoms combines their K and C
//                      in series (1/K = 1/K1 + 1/K2: for equal omega exactly omega^2 / (A1 + A2),
//                      the A of the pair); a static geom (A = 0) is infinitely stiff and leaves
//                      the pair its partner's law. An MJCF <pair> uses its own solref and solimp
//                      with A = A1 + A2.
//                      friction speed v_s = max(0.02, 5 mu |gravity| h): the friction slope
//                      mu fn / v_s under a load fn ~ m g stays within the explicit step's bound
//   joint limit        jnt_solref, jnt_solimp; A = dof_invweight0 of the joint's first dof; for the
//                      explicit step's hinges and slides the largest (M^-1)_ii over sampled
//                      configurations (limitInvweight below)
//   tendon limit       tendon_solref_lim, tendon_solimp_lim; A = tendon_invweight0
//   friction loss      speed v_f = max(0.01, 4 h floss A) (the slope floss / v_f on A)
//   equality           eq_solref, eq_solimp; connect, weld: translation A = sum of the two
//                      bodies' body_invweight0[2 b], weld rotation A = sum of body_invweight0[2b+1];
//                      joint: sum of dof_invweight0; tendon: sum of tendon_invweight0
// Explicit mjdiff_* values (model-wide or per geom) always win over derived ones.
//
// Substeps. The cap binds where omega_match h > beta 2 (sqrt(zeta^2 + 1) - zeta) = cap h, a ratio
// r = omega_match h / (cap h) that does not depend on the mass (MuJoCo's default solref and
// solimp: r = 1.11 at 2 ms, 2.8 at 5 ms; refsafe's tc >= 2h bounds it by 5.6 for dmax = 0.95). The
// rest depth goes as omega^-2, so a capped law rests r^2 deeper than MuJoCo's firmness would. With
// n substeps of h / n each (plugin/step.c) the cap is n times larger: the derived n is the smallest
// with r / n <= 1 where r > 1.5 (1 otherwise; at most 8), r the largest over the contacts of
// moving geoms that MuJoCo's filters let meet another geom, and MJCF <pair>s, whose contact
// stiffness is derived (an explicit stiffness, on the geom or model-wide, asks for none). Every
// law above then uses h / n (MuJoCo's refsafe rule keeps the model's h). Not under the implicit
// step, nor where MuJoCo's own mj_step integrates (the 2.2 adapter, the 3.x engine plugin): there
// n = 1.
//
// With the implicit smooth step (opt.integrator = MJDIFF_INT_IMPLICIT, plugin/implicit.c) the
// backward-Euler step of the spring-damper is stable for every omega h (it scales each mode by
// 1 / |1 - h lambda| < 1, lambda an eigenvalue of the spring-damper, Re lambda <= 0), so the
// cap goes: omega = omega_match, as firm as MuJoCo's own contacts (whose refsafe rule tc >= 2h
// already bounds omega h to about 2).
// Friction needs no load scaling either; its speed is the slip that the explicit step's
// velocity change under gravity would give at a tenth, v_s = max(1e-3, 0.1 |gravity| h) m/s,
// and friction loss's v_f = 1e-3: Newton resolves the steep law (README, "Implicit step").
// Its contact laws need no lever on the normal either: they take MuJoCo's own efc_diagApprox of
// a contact's normal row, A = A_t (the sum over the pair's two bodies, in series as above), with
// which MuJoCo's solver computes its R = (1 - d)/d A. At rest under a normal load fn, MuJoCo's
// row holds a = aref - R fn = 0, so d k r = R fn, r = (1 - d)/d^2 A_t fn / k; the law's K =
// k dbar/(1 - dbar) / A_t rests at fn / K beyond its width, dbar times that depth for d = dbar
// (above; at depths within the width the law's ramp holds less deep). That is the elliptic
// cone; under the pyramidal cone MuJoCo's edges' R scale the depth by mu^2 (1 + mu^2) /
// (2 impratio) for condim 3 at a fixed d, 1 at mu = 1: a 1 kg sphere at rest on 2.2.2 sinks
// 0.19, 0.59, 1 and 1.43x its elliptic depth at mu 0.5, 0.8, 1 and 1.2, which the isotropic
// smooth law does not follow. 3.x's
// mjENBL_DIAGEXACT (the exact J M^-1 J' in place of efc_diagApprox) is not followed either. A body
// that cannot move its centre of mass (A_t = 0) keeps a finite law (normalInvweight). Until
// 2026-12-07 they took the explicit step's per-shape lever, whose larger A rested 1.9-7.6x deeper
// than now on the Menagerie's G1, Booster T1, Berkeley Humanoid and ANYmal C (README,
// "Fidelity"). Newton splits a stalled step (plugin/implicit.c).

#include <math.h>

#include <mjdiff/random.h>

#include "compat.h"
#include "internal.h"

#define BETA 0.4          // safety factor below the single spring-damper stability bound
#define MIN_WIDTH 1e-4    // smallest derived width (m or rad)
#define IMPLICIT_FIRM 10  // the implicit normal law's A: at least the lever's A over this

mjtNum mjdiff_derivedWidth(const mjtNum* solimp) {
  return mju_max(solimp[2], MIN_WIDTH);
}

// MuJoCo's reference stiffness k, damping b (acceleration units) and mean impedance of a
// solref/solimp, with its own checks (mixed format -> defaults, refsafe, impedance clamps)
static void reference(const mjModel* m, const mjtNum* solref, const mjtNum* solimp, mjtNum* k,
                      mjtNum* b, mjtNum* dbar) {
  mjtNum ref[2] = {solref[0], solref[1]};
  if ((ref[0] > 0) ^ (ref[1] > 0)) {
    ref[0] = 0.02;
    ref[1] = 1;
  }
  if (!(m->opt.disableflags & mjDSBL_REFSAFE) && ref[0] > 0) {
    ref[0] = mju_max(ref[0], 2 * m->opt.timestep);
  }
  mjtNum dmin = mju_clip(solimp[0], mjMINIMP, mjMAXIMP);
  mjtNum dmax = mju_clip(solimp[1], mjMINIMP, mjMAXIMP);
  if (ref[0] > 0) {
    *k = 1 / mju_max(mjMINVAL, dmax * dmax * ref[0] * ref[0] * ref[1] * ref[1]);
    *b = 2 / mju_max(mjMINVAL, dmax * ref[0]);
  } else {
    *k = -ref[0] / (dmax * dmax);
    *b = -ref[1] / dmax;
  }
  *dbar = 0.5 * (dmin + dmax);
}

// the derived law (omega^2, 2 zeta omega, width) of a solref/solimp at m's timestep: K and C
// follow by dividing by the inverse inertia A
static void law(const mjModel* m, const mjdiffModel* s, const mjtNum* solref,
                const mjtNum* solimp, mjtNum* omega2, mjtNum* zomega2, mjtNum* width) {
  mjtNum k, b, dbar;
  reference(m, solref, solimp, &k, &b, &dbar);
  mjtNum zeta = k > 0 ? b / (2 * sqrt(k)) : 1;
  mjtNum omega = sqrt(mju_max(0, k) * dbar / (1 - dbar));
  mjtNum h = mjdiff_timestep(m, s);
  if (h > 0 && !mjdiff_implicit(s)) {
    omega = mju_min(omega, BETA * 2 * (sqrt(zeta * zeta + 1) - zeta) / h);
  }
  *omega2 = omega * omega;
  *zomega2 = 2 * zeta * omega;
  *width = mjdiff_derivedWidth(solimp);
}

// K and C of a law on inverse inertia A (infinite on an immovable element)
static void scaleLaw(mjtNum omega2, mjtNum zomega2, mjtNum A, mjtNum* K, mjtNum* C) {
  if (A < mjMINVAL) {
    *K = *C = INFINITY;
    return;
  }
  *K = omega2 / A;
  *C = zomega2 / A;
}

static mjtNum frictionSpeed(const mjModel* m, const mjdiffModel* s, mjtNum mu) {
  mjtNum h = mjdiff_timestep(m, s);
  if (mjdiff_implicit(s)) return mju_max(1e-3, 0.1 * mju_norm3(m->opt.gravity) * h);
  return mju_max(0.02, 5 * mu * mju_norm3(m->opt.gravity) * h);
}

static mjtNum lossSpeed(const mjModel* m, const mjdiffModel* s, mjtNum floss, mjtNum A) {
  if (mjdiff_implicit(s)) return 1e-3;
  return mju_max(0.01, 4 * mjdiff_timestep(m, s) * floss * A);
}

// the contact values (GP_COUNT) of a solref/solimp on inverse inertia A with sliding friction mu
static void contactValues(const mjModel* m, const mjdiffModel* s, const mjtNum* solref,
                          const mjtNum* solimp, mjtNum A, mjtNum mu, mjtNum p[GP_COUNT]) {
  mjtNum omega2, zomega2;
  law(m, s, solref, solimp, &omega2, &zomega2, p + GP_WIDTH);
  scaleLaw(omega2, zomega2, A, p + GP_STIFFNESS, p + GP_DAMPING);
  p[GP_FRICTION_SPEED] = frictionSpeed(m, s, mu);
  p[GP_SPIN_SPEED] = s->opt.spin_speed;
}

// the limit law (EP_COUNT values) of a solref/solimp on inverse inertia A
static void limitValues(const mjModel* m, const mjdiffModel* s, const mjtNum* solref, const mjtNum* solimp, mjtNum A,
                        mjtNum p[EP_COUNT]) {
  mjtNum omega2, zomega2;
  law(m, s, solref, solimp, &omega2, &zomega2, p + EP_WIDTH);
  scaleLaw(omega2, zomega2, A, p + EP_STIFFNESS, p + EP_DAMPING);
}

// equality i's inverse inertia from MuJoCo's invweight0 (the fallback of eqInvweight below)
static void eqInvweight0(const mjModel* m, int i, mjtNum* At, mjtNum* Ar) {
  int o1 = m->eq_obj1id[i], o2 = m->eq_obj2id[i];  // joints or tendons
  *At = *Ar = 0;
  switch (m->eq_type[i]) {
    case mjEQ_CONNECT:
    case mjEQ_WELD: {
      // at each anchor: the body's translational invweight0 plus rho^2 its rotational one, rho
      // the anchor's distance from the body's com (a force at the anchor turns the body: a
      // connect at the tip of a slender link or the corner of a box moves several times more
      // easily than the com)
      compatEq eq;
      compat_eqGeometry(m, i, &eq);
      for (int j = 0; j < 2; j++) {
        int b = eq.b[j];
        if (b <= 0) continue;  // the world
        mjtNum rho2 = 0;
        for (int k = 0; k < 3; k++) {
          mjtNum dk = eq.anchor[j][k] - m->body_ipos[3 * b + k];
          rho2 += dk * dk;
        }
        *At += m->body_invweight0[2 * b] + rho2 * m->body_invweight0[2 * b + 1];
        *Ar += m->body_invweight0[2 * b + 1];
      }
      break;
    }
    case mjEQ_JOINT:
      *At = m->dof_invweight0[m->jnt_dofadr[o1]] +
            (o2 >= 0 ? m->dof_invweight0[m->jnt_dofadr[o2]] : 0);
      break;
    case mjEQ_TENDON:
      *At = m->tendon_invweight0[o1] + (o2 >= 0 ? m->tendon_invweight0[o2] : 0);
      break;
    default:
      break;
  }
}

// scratch for the make-time passes below: an mjData of view (m without engine plugins, filled in)
// at m's reference configuration qpos0 and n numbers; NULL (nothing left allocated) when either
// cannot be had
static mjData* scratchData(const mjModel* m, mjModel* view, size_t n, mjtNum** buf) {
  *view = *m;
  compat_viewWithoutPlugins(view);
  mjData* d = mj_makeData(view);
  *buf = d ? (mjtNum*)mju_malloc(sizeof(mjtNum) * n) : NULL;
  if (!*buf && d) {
    mj_deleteData(d);
    d = NULL;
  }
  return d;
}

// the mass matrix of d's configuration, factored (and the kinematics it needs)
static void factorMass(const mjModel* m, mjData* d) {
  mj_kinematics(m, d);
  mj_comPos(m, d);
  compat_makeM(m, d);
  mj_factorM(m, d);
}

// the inverse inertia each equality's law is scaled with (neq x 2: translation or scalar, rotation).
// Connect and weld: the largest eigenvalue of the 3 x 3 block G = J M^-1 J' of their own law, J =
// J_p(b1, p1) - J_p(b2, p2) at the anchors (translation) and J = J_r(b1) - J_r(b2) (rotation,
// smooth.c's bodyEqualities), the largest over qpos0 and keyframe 0. A scalar from invweight0 (the
// bodies' means over three directions, the anchor's lever added) misses by the block's spread:
// on Agility's Cassie (MuJoCo Menagerie) the plantar rod's connect, a four-bar loop, has lambda_max
// 28.8 against 9.1 from invweight0 (the explicit law 3.2x too stiff: the step ran away within 0.1 s
// at the model's 0.5 ms), and the achilles rod's 30.7 against 5738 (its slender rod turns easily
// about its own axis, which does not move the anchor: the law 190x too soft). Joint and tendon
// equalities, and connect and weld where no mjData can be made: eqInvweight0.
static void eqInvweight(const mjModel* m, mjtNum* A) {
  int any = 0;
  for (int i = 0; i < m->neq; i++) {
    eqInvweight0(m, i, A + 2 * i, A + 2 * i + 1);
    any = any || m->eq_type[i] == mjEQ_CONNECT || m->eq_type[i] == mjEQ_WELD;
  }
  if (!any || m->nv == 0) return;
  int nv = m->nv;
  mjModel view;
  mjtNum* buf;
  mjData* d = scratchData(m, &view, 18 * (size_t)nv, &buf);
  if (!d) return;
  m = &view;
  mjtNum *jp = buf, *jr = buf + 3 * nv, *jp2 = buf + 6 * nv, *jr2 = buf + 9 * nv;
  mjtNum* y = buf + 12 * nv;
  for (int pass = 0; pass < 1 + (m->nkey > 0); pass++) {
    if (pass) mj_resetDataKeyframe(m, d, 0);
    factorMass(m, d);
    for (int i = 0; i < m->neq; i++) {
      if (m->eq_type[i] != mjEQ_CONNECT && m->eq_type[i] != mjEQ_WELD) continue;
      compatEq eq;
      compat_eqGeometry(m, i, &eq);
      mjtNum p[2][3];
      for (int j = 0; j < 2; j++) {
        mju_rotVecMat(p[j], eq.anchor[j], d->xmat + 9 * eq.b[j]);
        mju_addTo3(p[j], d->xpos + 3 * eq.b[j]);
      }
      mj_jac(m, d, jp, jr, p[0], eq.b[0]);
      mj_jac(m, d, jp2, jr2, p[1], eq.b[1]);
      mju_subFrom(jp, jp2, 3 * nv);
      mju_subFrom(jr, jr2, 3 * nv);
      for (int r = 0; r < 1 + eq.weld; r++) {
        const mjtNum* J = r ? jr : jp;
        mj_solveM(m, d, y, J, 3);
        mjtNum G[9], val[3], vec[9], quat[4];
        mju_mulMatMatT(G, J, y, 3, nv, 3);
        mju_eig3(val, vec, quat, G);
        mjtNum top = mju_max(val[0], mju_max(val[1], val[2]));
        if (top > mjMINVAL) A[2 * i + r] = pass ? mju_max(A[2 * i + r], top) : top;
      }
    }
  }
  mju_free(buf);
  mj_deleteData(d);
}

void mjdiff_eqInvweight(const mjdiffModel* s, int i, mjtNum* At, mjtNum* Ar) {
  *At = s->eq_invweight[2 * i];
  *Ar = s->eq_invweight[2 * i + 1];
}

// the inverse inertia a joint limit's law is scaled with, per joint (njnt): MuJoCo's
// dof_invweight0 (M^-1 at qpos0), and for the explicit step's limited hinges and slides the largest
// (M^-1)_ii over LIMIT_SAMPLES configurations (keyframe 0 or qpos0, every hinge and slide drawn in
// its range, or +-pi for an unlimited hinge; the library's generator, seed 1). The explicit bound
// holds at the configuration, and a limb's inverse inertia varies with the rest of the body: on
// MuJoCo's humanoid the hip_x dofs reach 9.7x their qpos0 value, past the law's 6.25x margin
// (BETA^-2), and 0.7% of two-second random-control runs ran away through such a limit. Falls back
// to dof_invweight0 if no mjData can be made.
#define LIMIT_SAMPLES 32
static void limitInvweight(const mjModel* m, const mjdiffModel* s, mjtNum* A) {
  for (int j = 0; j < m->njnt; j++) A[j] = m->dof_invweight0[m->jnt_dofadr[j]];
  if (mjdiff_implicit(s) || m->nv == 0) return;
  int any = 0;
  for (int j = 0; j < m->njnt; j++) {
    int t = m->jnt_type[j];
    any = any || (m->jnt_limited[j] && (t == mjJNT_HINGE || t == mjJNT_SLIDE));
  }
  if (!any) return;
  mjModel view;
  mjtNum* e;
  mjData* d = scratchData(m, &view, 2 * (size_t)m->nv, &e);
  if (!d) return;
  m = &view;
  mjtNum* x = e + m->nv;
  mjdiffRng rng;
  mjdiff_rngSeed(&rng, 1);
  for (int k = 0; k < LIMIT_SAMPLES; k++) {
    if (m->nkey > 0) {
      mj_resetDataKeyframe(m, d, 0);
    } else {
      mj_resetData(m, d);
    }
    for (int j = 0; j < m->njnt && k > 0; j++) {  // sample 0: the reference configuration
      int t = m->jnt_type[j];
      if (t != mjJNT_HINGE && t != mjJNT_SLIDE) continue;
      mjtNum lo = -mjPI, hi = mjPI;
      if (m->jnt_limited[j]) {
        lo = m->jnt_range[2 * j];
        hi = m->jnt_range[2 * j + 1];
      } else if (t == mjJNT_SLIDE) {
        continue;
      }
      d->qpos[m->jnt_qposadr[j]] = lo + (hi - lo) * mjdiff_rngUniform(&rng);
    }
    factorMass(m, d);
    for (int j = 0; j < m->njnt; j++) {
      int t = m->jnt_type[j], i = m->jnt_dofadr[j];
      if (!m->jnt_limited[j] || (t != mjJNT_HINGE && t != mjJNT_SLIDE)) continue;
      mju_zero(e, m->nv);
      e[i] = 1;
      mj_solveM(m, d, x, e, 1);
      A[j] = mju_max(A[j], x[i]);
    }
  }
  mju_free(e);
  mj_deleteData(d);
}

// Equalities in a network (MuJoCo's composites: a cloth's particles held by dozens of tendon
// equalities, a soft box's by hundreds of joint equalities): each element's law is capped on
// its own inverse inertia, but elements that share bodies add up. With G = J M^-1 J' over the
// equality rows at qpos0 (J MuJoCo's own efc_J of the equalities, contacts and limits off) and
// each element's stiffness K_i = omega_i^2 / G_ii, Gershgorin's bound on the coupled
// spring-damper's rates is
//   lambda_max(K^1/2 G K^1/2) <= max_i omega_i^2 s_i,   s_i = sum_j |G_ij| / sqrt(G_ii G_jj)
// over row i and the other elements' rows (a connect's or weld's own rows are one spring, whose
// law already holds on its own: s_i = 1 for an element that shares no dof with another; 2 for
// a link of a chain of equal masses, whose alternating mode runs at sqrt(2) omega), and the
// same for the damping's rate
// 2 zeta omega_i s_i. Scaling element i's K by min(1, cap^2 / (s_i omega_i^2)) and C by
// min(1, cap / (s_i omega_i)) (cap: the single element's capped omega) keeps each row's sum
// where a lone element at the cap would be. factor[2i], factor[2i+1]: the scales of K and C of
// equality i, 1 where no rows were made. Explicit step only (the implicit step needs no cap).
static void eqNetwork(const mjModel* m, const mjdiffModel* s, mjtNum* factor) {
  for (int i = 0; i < 2 * m->neq; i++) factor[i] = 1;
  if (mjdiff_implicit(s) || m->neq < 2 || m->nv == 0 || !(mjdiff_timestep(m, s) > 0)) return;
  // the user's own flags: attached to MuJoCo's mj_step (mjdiff_attach), m has its equalities off
  mjModel user;
  mjModel view = *mjdiff_userModel(m, s, &user);
  compat_viewWithoutPlugins(&view);
  view.opt.jacobian = mjJAC_DENSE;
  view.opt.disableflags |= mjDSBL_CONTACT | mjDSBL_LIMIT | mjDSBL_FRICTIONLOSS;
  mjData* d = mj_makeData(&view);
  if (!d) return;
  mj_fwdPosition(&view, d);
  int n = d->nefc, nv = m->nv;
  mjtNum* Y = n > 1 ? (mjtNum*)mju_malloc(sizeof(mjtNum) * ((size_t)n * nv + n)) : NULL;
  if (!Y) {
    mj_deleteData(d);
    return;
  }
  mjtNum* diag = Y + (size_t)n * nv;
  mj_solveM(&view, d, Y, d->efc_J, n);  // Y = J M^-1, row by row
  for (int r = 0; r < n; r++) diag[r] = mju_dot(d->efc_J + (size_t)nv * r, Y + (size_t)nv * r, nv);
  for (int r = 0; r < n; r++) {
    int i = d->efc_id[r];
    if (d->efc_type[r] != mjCNSTR_EQUALITY || i < 0 || i >= m->neq || !(diag[r] > mjMINVAL)) {
      continue;
    }
    // the element's own other rows (a connect's three, a weld's six) are the same spring
    mjtNum sum = 0;
    for (int q = 0; q < n; q++) {
      if (d->efc_type[q] != mjCNSTR_EQUALITY || !(diag[q] > mjMINVAL)) continue;
      if (q != r && d->efc_id[q] == i) continue;
      mjtNum g = mju_dot(d->efc_J + (size_t)nv * r, Y + (size_t)nv * q, nv);
      sum += mju_abs(g) / sqrt(diag[r] * diag[q]);
    }
    // the element's own law and the cap it was held to
    mjtNum omega2, zomega2, w, kref, bref, dbar;
    law(m, s, m->eq_solref + mjNREF * i, m->eq_solimp + mjNIMP * i, &omega2, &zomega2, &w);
    reference(m, m->eq_solref + mjNREF * i, m->eq_solimp + mjNIMP * i, &kref, &bref, &dbar);
    mjtNum zeta = kref > 0 ? bref / (2 * sqrt(kref)) : 1;
    mjtNum cap = BETA * 2 * (sqrt(zeta * zeta + 1) - zeta) / mjdiff_timestep(m, s);
    mjtNum omega = sqrt(omega2);
    if (!(sum > 1) || !(omega > 0)) continue;
    factor[2 * i] = mju_min(factor[2 * i], mju_min(1, cap * cap / (sum * omega2)));
    factor[2 * i + 1] = mju_min(factor[2 * i + 1], mju_min(1, cap / (sum * omega)));
  }
  mju_free(Y);
  mj_deleteData(d);
}

// omega_match h over the explicit step's cap of a solref/solimp: how many times firmer MuJoCo's own
// law is than the explicit step at m's timestep allows (the cap does not depend on the mass)
static mjtNum capRatio(const mjModel* m, const mjtNum* solref, const mjtNum* solimp) {
  mjtNum k, b, dbar;
  reference(m, solref, solimp, &k, &b, &dbar);
  mjtNum zeta = k > 0 ? b / (2 * sqrt(k)) : 1;
  mjtNum omega = sqrt(mju_max(0, k) * dbar / (1 - dbar));
  return omega * m->opt.timestep / (BETA * 2 * (sqrt(zeta * zeta + 1) - zeta));
}

// s->nsub: the option where set; 1 under the implicit step or MuJoCo's own mj_step; 1 where the
// contacts' cap ratio r (of every moving geom that MuJoCo's filters let meet another, and every
// MJCF <pair>) is at most SUBSTEP_SLACK; else the smallest n with r / n <= 1, at most SUBSTEP_MAX.
// The rest depth goes as omega^-2: a ratio r left leaves the contacts r^2 times deeper than at
// MuJoCo's firmness.
#define SUBSTEP_SLACK 1.5
#define SUBSTEP_MAX 8
// 1 if geom g, on a moving body, can meet some geom by MuJoCo's filters: another weld body,
// contype/conaffinity compatible, not its parent or child (unless the filter is off or the parent
// is the world)
static int canCollide(const mjModel* m, int g) {
  int b = m->body_weldid[m->geom_bodyid[g]];
  if (b == 0 || !(m->geom_contype[g] || m->geom_conaffinity[g])) return 0;
  int filter = !(m->opt.disableflags & mjDSBL_FILTERPARENT);
  for (int o = 0; o < m->ngeom; o++) {
    int bo = m->body_weldid[m->geom_bodyid[o]];
    if (bo == b) continue;
    if (!((m->geom_contype[g] & m->geom_conaffinity[o]) ||
          (m->geom_contype[o] & m->geom_conaffinity[g]))) {
      continue;
    }
    int pb = m->body_weldid[m->body_parentid[b]], po = m->body_weldid[m->body_parentid[bo]];
    if (filter && ((pb == bo && bo != 0) || (po == b))) continue;
    return 1;
  }
  return 0;
}

// 1 if geom g's contact stiffness is derived (neither set on the geom nor model-wide): only then
// does its solref ask for substeps (an explicit stiffness is the user's, whatever the timestep)
static int derivedStiffness(const mjdiffModel* s, int g) {
  return s->opt.contact_stiffness == MJDIFF_DERIVED && !s->geom_set[GP_COUNT * g + GP_STIFFNESS];
}

static int substepCount(const mjModel* m, const mjdiffModel* s) {
  if (mjdiff_implicit(s) || s->single || !(m->opt.timestep > 0)) return 1;
  if (s->opt.substeps != MJDIFF_DERIVED) return (int)s->opt.substeps;
  // no contact forces (the user's flags, as the smooth forces read them: smooth.c): no contact
  // law to reach, no substeps (dm_control's acrobot, pendulum, cartpole took 6 before)
  mjModel user;
  const mjModel* mu = mjdiff_userModel(m, s, &user);
  if ((mu->opt.disableflags & (mjDSBL_CONSTRAINT | mjDSBL_CONTACT)) || compat_passiveOff(mu)) {
    return 1;
  }
  mjtNum r = 0;
  for (int g = 0; g < m->ngeom; g++) {
    if (!canCollide(m, g) || !derivedStiffness(s, g)) continue;  // an immovable geom's law drops
                                                                 // out of its pairs
    r = mju_max(r, capRatio(m, m->geom_solref + mjNREF * g, m->geom_solimp + mjNIMP * g));
  }
  for (int i = 0; i < m->npair; i++) {
    if (!derivedStiffness(s, m->pair_geom1[i]) && !derivedStiffness(s, m->pair_geom2[i])) continue;
    r = mju_max(r, capRatio(m, m->pair_solref + mjNREF * i, m->pair_solimp + mjNIMP * i));
  }
  if (!(r > SUBSTEP_SLACK)) return 1;
  return r >= SUBSTEP_MAX ? SUBSTEP_MAX : (int)ceil(r);
}

// the distance |o - c| of geom g's centre from its body's centre of mass, and the bound rho on its
// contact normals' lever about that centre of mass (header: plus 0 for a sphere, whose normals pass
// through its centre, the half-length for a capsule's core segment, geom_rbound otherwise)
static mjtNum normalLever(const mjModel* m, int g, mjtNum* offset) {
  mjtNum o[3];
  mju_sub3(o, m->geom_pos + 3 * g, m->body_ipos + 3 * m->geom_bodyid[g]);
  *offset = mju_norm3(o);
  switch (m->geom_type[g]) {
    case mjGEOM_SPHERE:
      return *offset;
    case mjGEOM_CAPSULE:
      return *offset + m->geom_size[3 * g + 1];
    default:
      return *offset + m->geom_rbound[g];
  }
}

// the direction u along which a normal's lever on geom g (a torque axis (p - c) x n) has the
// smallest part, at qpos0 (world frame, from d's kinematics), and that part's bound dperp:
//   sphere   u the offset o - c of its centre o from the centre of mass c: every lever is
//            (o - c) x n, normal to u (dperp 0)
//   capsule  u its axis a: a lever (s - c) x n, s = o + t a on the core, has the part
//            ((o - c) x n) . a = n . (a x (o - c)) along u, at most dperp = |a x (o - c)| (0 when c
//            lies on the axis)
// 0 for other shapes and for a sphere centred on c (no lever at all)
static int leverAxis(const mjModel* m, const mjData* d, int g, mjtNum u[3], mjtNum* dperp) {
  int b = m->geom_bodyid[g];
  mjtNum o[3];
  mju_sub3(o, d->geom_xpos + 3 * g, d->xipos + 3 * b);
  mjtNum no = mju_norm3(o);
  *dperp = 0;
  if (m->geom_type[g] == mjGEOM_SPHERE) {
    if (no < mjMINVAL) return 0;
    mju_scl3(u, o, 1 / no);
    return 1;
  }
  if (m->geom_type[g] != mjGEOM_CAPSULE) return 0;
  const mjtNum* R = d->geom_xmat + 9 * g;
  u[0] = R[2];
  u[1] = R[5];
  u[2] = R[8];
  mjtNum c[3];
  mju_cross(c, u, o);
  *dperp = mju_norm3(c);
  return 1;
}

// per geom, the rotational inverse inertia its normal levers act on (header, "geom g"), with R =
// J_r M^-1 J_r' of the geom's body at qpos0: a lever w = (p - c) x n of length at most rho
// (normalLever) with at most dperp along u turns the body by about |w_perp|^2 times R's mean
// over the two directions normal to u plus (w . u)^2 u'Ru, so
//   A_r = (tr R - u'Ru) / 2 + (dperp / rho)^2 u'Ru
// (continuous as c leaves a capsule's axis). On every other shape (a box's corner, a cylinder's
// rim, an ellipsoid, a mesh: a normal may pass beside the centre in any direction) the largest
// eigenvalue of R, the bound over directions: MuJoCo's own mean over three, body_invweight0
// (trace / 3 of the same R, engine_setconst.c), is a third of it on a body that turns about one
// hinge, and a plank hinged through its centre of mass, its law held to that mean, gained energy
// at every bounce until it ran away under the explicit step without a named divergence
// (Defaults.HingedPlankBouncesWithoutGain). A body without rotational freedom keeps 0.
static void leverInvweight(const mjModel* m, mjtNum* Ar) {
  for (int g = 0; g < m->ngeom; g++) Ar[g] = m->body_invweight0[2 * m->geom_bodyid[g] + 1];
  int any = 0;
  for (int g = 0; g < m->ngeom && !any; g++) any = Ar[g] > 0;
  if (!any || m->nv == 0) return;
  mjModel view;
  mjtNum* jac;
  mjData* d = scratchData(m, &view, 6 * (size_t)m->nv, &jac);
  if (!d) return;
  m = &view;
  mjtNum* x = jac + 3 * m->nv;
  factorMass(m, d);
  int rb = -1;  // the body whose R (and its largest eigenvalue Rmax) is held
  mjtNum R[9], Rmax = 0;
  for (int g = 0; g < m->ngeom; g++) {
    mjtNum u[3], dperp;
    if (!(Ar[g] > 0)) continue;
    int t = m->geom_type[g], axis = leverAxis(m, d, g, u, &dperp);
    if (!axis && (t == mjGEOM_SPHERE || t == mjGEOM_CAPSULE)) continue;
    if (m->geom_bodyid[g] != rb) {  // R = J_r M^-1 J_r', once per body
      rb = m->geom_bodyid[g];
      mj_jacBody(m, d, NULL, jac, rb);
      mj_solveM(m, d, x, jac, 3);
      mju_mulMatMatT(R, jac, x, 3, m->nv, 3);
      mjtNum val[3], vec[9], quat[4], Rs[9];
      for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) Rs[3 * i + j] = 0.5 * (R[3 * i + j] + R[3 * j + i]);
      }
      mju_eig3(val, vec, quat, Rs);
      Rmax = mju_max(0, mju_max(val[0], mju_max(val[1], val[2])));
    }
    if (!axis) {
      Ar[g] = Rmax;
      continue;
    }
    mjtNum offset, rho = normalLever(m, g, &offset);
    mjtNum Ru[3];
    mju_mulMatVec(Ru, R, u, 3, 3);
    mjtNum uRu = mju_dot3(u, Ru), f = rho > mjMINVAL ? dperp / rho : 0;
    Ar[g] = mju_max(0, 0.5 * (R[0] + R[4] + R[8] - uRu) + f * f * uRu);
  }
  mju_free(jac);
  mj_deleteData(d);
}

int mjdiff_substepsStale(const mjModel* m, const mjdiffModel* s) {
  return substepCount(m, s) != s->nsub;
}

// the inverse inertia that scales geom g's normal law: the explicit step's per-shape lever
// (geom_invweightn, which its stability needs), or under the implicit step MuJoCo's own
// efc_diagApprox of a contact's normal row, the body's translational invweight0, so that the law
// rests under a load about as deep as MuJoCo's solver holds it (header: within a factor dbar)
static mjtNum normalInvweight(const mjModel* m, const mjdiffModel* s, int g) {
  if (!mjdiff_implicit(s)) return s->geom_invweightn[g];
  // a body that cannot move its centre of mass (a see-saw, a wheel hinged through its centre) has
  // A_t = 0: MuJoCo's R falls to mjMINVAL there, a hard contact; the law keeps a finite stiffness,
  // at most IMPLICIT_FIRM times that on the lever
  mjtNum At = m->body_invweight0[2 * m->geom_bodyid[g]];
  return mju_max(At, s->geom_invweightn[g] / IMPLICIT_FIRM);
}

void mjdiff_deriveParams(const mjModel* m, mjdiffModel* s) {
  s->nsub = substepCount(m, s);

  // geoms, against an immovable partner: the normal law on the normal's lever (header)
  mjtNum* Arn = m->ngeom > 0 ? (mjtNum*)mju_malloc(sizeof(mjtNum) * m->ngeom) : NULL;
  if (Arn) leverInvweight(m, Arn);
  for (int g = 0; g < m->ngeom; g++) {
    int b = m->geom_bodyid[g];
    mjtNum c, rhon = normalLever(m, g, &c), rho = c + m->geom_rbound[g];
    mjtNum At = m->body_invweight0[2 * b], Ar = m->body_invweight0[2 * b + 1];
    s->geom_invweight[g] = At + rho * rho * Ar;
    s->geom_invweightn[g] = At + rhon * rhon * (Arn ? Arn[g] : Ar);
    contactValues(m, s, m->geom_solref + mjNREF * g, m->geom_solimp + mjNIMP * g,
                  normalInvweight(m, s, g), m->geom_friction[3 * g],
                  s->geom_derived + GP_COUNT * g);
  }
  mju_free(Arn);

  // MJCF pairs
  for (int i = 0; i < m->npair; i++) {
    contactValues(m, s, m->pair_solref + mjNREF * i, m->pair_solimp + mjNIMP * i,
                  normalInvweight(m, s, m->pair_geom1[i]) +
                      normalInvweight(m, s, m->pair_geom2[i]),
                  m->pair_friction[5 * i], s->pair_derived + GP_COUNT * i);
  }

  // joint limits and dof friction loss
  mjtNum* Alim = m->njnt > 0 ? (mjtNum*)mju_malloc(sizeof(mjtNum) * m->njnt) : NULL;
  if (Alim) limitInvweight(m, s, Alim);
  for (int j = 0; j < m->njnt; j++) {
    limitValues(m, s, m->jnt_solref + mjNREF * j, m->jnt_solimp + mjNIMP * j,
                Alim ? Alim[j] : m->dof_invweight0[m->jnt_dofadr[j]], s->jnt_limit + EP_COUNT * j);
  }
  mju_free(Alim);
  for (int j = 0; j < m->nv; j++) {
    s->dof_lossspeed[j] = lossSpeed(m, s, m->dof_frictionloss[j], m->dof_invweight0[j]);
  }

  // tendon limits and friction loss
  for (int t = 0; t < m->ntendon; t++) {
    limitValues(m, s, m->tendon_solref_lim + mjNREF * t, m->tendon_solimp_lim + mjNIMP * t,
                m->tendon_invweight0[t], s->ten_limit + EP_COUNT * t);
    s->ten_lossspeed[t] = lossSpeed(m, s, m->tendon_frictionloss[t], m->tendon_invweight0[t]);
  }

  // equalities: translation, rotation, scaled down where they form a network
  if (m->neq > 0) eqInvweight(m, s->eq_invweight);
  mjtNum* net = m->neq > 0 ? (mjtNum*)mju_malloc(sizeof(mjtNum) * 2 * m->neq) : NULL;
  if (net) eqNetwork(m, s, net);
  for (int i = 0; i < m->neq; i++) {
    mjtNum* p = s->eq_law + 4 * i;
    mjtNum omega2, zomega2, w, At, Ar;
    law(m, s, m->eq_solref + mjNREF * i, m->eq_solimp + mjNIMP * i, &omega2, &zomega2, &w);
    mjdiff_eqInvweight(s, i, &At, &Ar);
    if (net) {
      omega2 *= net[2 * i];
      zomega2 *= net[2 * i + 1];
    }
    scaleLaw(omega2, zomega2, At, p, p + 1);
    scaleLaw(omega2, zomega2, Ar > 0 ? Ar : At, p + 2, p + 3);
  }
  mju_free(net);
}

mjtNum mjdiff_stableTimestep(mjtNum k, mjtNum c, mjtNum invw) {
  mjtNum w2 = k * invw, g2 = c * invw;  // omega^2, 2 zeta omega
  if (!(w2 > 0) && !(g2 > 0)) return INFINITY;
  mjtNum h = w2 > 0 ? (-g2 + sqrt(g2 * g2 + 4 * w2)) / w2 : INFINITY;
  if (g2 > 0) h = mju_min(h, 2 / g2);
  return h;
}
