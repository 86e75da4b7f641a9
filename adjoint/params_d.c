// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Derivatives of the continuous dynamics in model parameters p at a fixed state (q, v, act, u):
//   r(p) = f(q, v, act, u; p) - ID(q, v, acc; p) - hdamp B(p) acc,   DrDp = dr/dp (nv x np)
//   adot = g(act, u; p),                                             DadotDp = dg/dp (na x np)
// f: every applied force (MuJoCo's springs, dampers, actuators, J' xfrc_applied and the smooth
// forces of plugin/smooth.c), ID = M a + c of rne_d.c, B the integrator's diagonal implicit term
// (mjdiff_dampB: Euler's dof damping; MuJoCo 3's implicitfast adds -G^2 biasprm[2] per actuator
// with an affine bias on a hinge or slide, so dr_j = -hdamp (2 B_a / G) acc_j in its gear G and
// -hdamp (-G^2) acc_j in biasprm[2], j its dof). Notation as in
// rne_d.c: S_j = cdof_j, I_b = cinert_b, v_b = cvel_b, all about the root's subtree com o_b (the
// point moves with the masses, but tau = S . F does not depend on it, so we keep it fixed);
// J_b' W = (S_j . W for j in chain(b)); e_j a dof's unit vector, J_t a tendon's Jacobian row.
//
// Inertia (body b; mju_inertCom: I_b = [Irot, c = m r, m], r = xipos - o, R = ximat):
//   ID = sum_b J_b' (I_b a_b + v_b x* I_b v_b),
//   a_b = a_parent + sum_{j in b} (Sdot_j v_j + S_j acc_j),  a_world = (0; -g), so
//   dr = -J_b' (dI a_b + v_b x* dI v_b) with
//   mass      dI = [|r|^2 E - r r', r, 1]
//   inertia_k dI = [R_k R_k', 0, 0]                       (R_k column k of ximat)
//   ipos_k    dI = [m (2 r.d E - d r' - r d'), m d, 0],  d = xmat e_k = d xipos
//             and xfrc_applied (f, tau) acts at xipos:  dr += J_b' [d x f; 0]
// Gravity: d a_b / d g_k = (0; -e_k) for every body:  dr = sum_b J_b' I_b (0; e_k).
// Gravity compensation (MuJoCo 3, body b with factor c): f = -c m g at xipos, so
//   mass: dr += J_b' [r x (-c g); -c g];  gravity_k: dr += J_b' [r x (-c m e_k); -c m e_k];
//   ipos_k: dr += J_b' [d x f; 0]  (r = xipos - o_b, d as for ipos)
// Dof damping: f = -b v, plus Euler's implicit term:  dr_j = -v_j - hdamp acc_j.
// Armature: ID_j += arm_j acc_j:  dr_j = -acc_j.
// Friction loss (smooth law, floss > 0): f = -floss rho(v / v_f), rho(u) = u / sqrt(1 + u^2):
//   dr_j = -rho(v_j / v_f)  (tendon: along J_t with the tendon velocity).
// Joint springs (mj_passive): hinge/slide f = -k (q - q_s): dr/dk = -(q - q_s), dr/dq_s = k;
//   ball: f = -k subQuat(q, q_s): dr/dk = -subQuat(q, q_s); free: translation as slide, then ball.
// Tendon spring/damper: f = (-k (L - L_s) - b Ldot) J_t:
//   dr/dk = -(L - L_s) J_t,  dr/db = -Ldot J_t.
//
// Contacts (smooth.c): prm = pairParams(g1, g2) = (k, c, w, v_s, w_s), x = w - (dist - o) (o the
// contact's includemargin, constant),
//   g = k s(x; w), e = -c s'(x; w) vn, fn = D(g, e) (law.h), local force
//   (fn, -fn mu_0 r_1, -fn mu_1 r_2), torque (-fn mu_2 rho_n, -fn mu_3 r'_1, -fn mu_4 r'_2),
//   r = reg(vt / v_e), rho_n = reg(wn / w_e), r' = reg(wt / w_e'), world F = frame' force,
//   v_e = v_s + h A_t mu_0 fn, w_e = w_s + h A_r mu_2 fn, w_e' = w_s + h A_r mu_3 fn (law.h).
//   dfn/dk = D_g s,  dfn/dc = -D_e s' vn,  dfn/dw = D_g k S_w - D_e c vn DS_w, where the total
//   w-derivatives of s(w - dist; w) and s'(w - dist; w) are, with y = x (x <= w) or 2w - x
//   (w < x <= 2w), 0 elsewhere:  S_w = y^2/(2w^2) - y^3/(3w^3),
//   DS_w = +-(y/w^2 - y^2/w^3) (+ for x <= w).
//   Friction terms scale with fn; d reg(a/v)/dv = -q^3 u / v (u = a/v, q = 1/sqrt(1 + |u|^2)),
//   so with dv_e = dv_s + h A (fn dmu + mu dfn): d(-fn mu r) = -mu r dfn - fn r dmu
//   + fn mu q^3 u / v_e dv_e.
//   dr += J_b2' W - J_b1' W,  W = [dT + (p - o) x dF; dF]   (wrenches as in smooth.c)
//   Parameter -> pair value (mjdiff_pairParams): both explicit: mean (1/2 each); one explicit:
//   that one (1); neither: the model-wide value (1). A selected geom counts as explicit.
//   Geom friction -> contact friction (mj_collideGeoms): the higher-priority geom's, else the max
//   (tie: 1/2 each), clamped below at mjMINMU (derivative 0 there); explicit pairs use their own.
// Limits (value x in [lo, hi], velocity v): L = sum_sides sgn D(k s(xx), -c s'(xx) sgn v),
//   xx = w - (x - lo) (sgn +1) or w - (hi - x) (sgn -1); dL/d(k, c, w) as for contacts; applied
//   along e_j (hinge, slide), the axis of a ball joint's rotation vector, or J_t.
// Friction-loss speed: d(-floss rho(v/v_f))/dv_f = floss q^3 u / v_f.
// Equalities: every equality force is -k e - c edot (linear in (k, c)), so df/dk is the equality
//   force with (k, c) = (1, 0) and df/dc with (0, 1) (mjdiff_addForces with only equalities on).
// Actuators (force = gain in + bias, gain = p0 (+ p1 L + p2 V if affine), bias = b0 + b1 L + b2 V
//   if affine; in = clamp(ctrl) or act; qfrc = moment' force; 0 past a force limit):
//   dr/dgainprm = moment (in, L in, V in),  dr/dbiasprm = moment (1, L, V);
//   gear G (joint or tendon transmission: moment = G a, L = G x, V = G xdot):
//   dr/dG = a (force + G (f_L x + f_V xdot)),  f_L = p1 in + b1, f_V = p2 in + b2.
//   Filter dynamics adot = (clamp(ctrl) - act) / tau:  dadot/dtau = -(clamp(ctrl) - act) / tau^2.
// Fluid forces (MuJoCo's, in qfrc_passive): density, viscosity, wind, and the terms of the
//   inertia-box bodies' mass, inertia and com, in fluid_d.c (mjdiff_fluidParamColumn).
//
// At a fixed state nothing moves, so no contact geometry Jacobian is needed for the parameters
// above: the function always returns 0 (NaN columns if d's stack cannot hold the scratch).
//
// Geometry. A geom's size s_g[k] or its position p_g[k] in its body's frame (body b) moves, at the
// fixed state, the contacts of g and, where the compiler inferred b's inertials from its geoms
// (design_d.c), b's mass, com and inertia; nothing else in the dynamics (the columns below are
// taken only where that holds: no fluid forces, which read the inertials and in 3.x the geom
// sizes, and g no wrapping object of a spatial tendon; otherwise design_d.c differences them).
//   Contacts (smooth forces), each contact c of g with law F, T (world, on body b2 at pos, minus
//   on b1) and partials DF, DT in y = (dist, n, v, w) (forces_d.c):
//     dy_geom = (ddist, dn, dpos) = Js e_{3 side + k}  (size: geom_d.c's size Jacobian, side 0
//               for geom1, 1 for geom2)  or  G (dx_g; 0) with dx_g = R_b e_k  (position: the
//               geom moves rigidly along its body's axis k, no rotation; G the pose Jacobian)
//     dv = (w2 - w1) x dpos   (the relative velocity is read at the moved point), dw = 0
//     dF = DF dy, dT = DT dy (y's rows dist, n, v; w's zero)
//     the wrench about the origin W = [T + pos x F; F] moves by [dT + dpos x F + pos x dF; dF]
//     col += J_b2' dW - J_b1' dW   (addWrench's convention: torque dT + dpos x F at pos, dF).
//   Inertials (other forces: -(M acc + c)), with J = mjdiff_designInertialJacobian's column
//     (dm, dc (body frame), dT_b (body frame, about the com)), R = xmat_b, r = xipos_b - o:
//     dr = R dc,  dIrot = R dT_b R' + dm (|r|^2 E - r r') + m (2 r.dr E - dr r' - r dr'),
//     d(m r) = dm r + m dr,  then col -= J_b' (dI a_b + v_b x* dI v_b) as for a body's mass,
//     and xfrc_applied (f, tau) at xipos adds J_b' [dr x f; 0].
// A site's position enters the dynamics only through spatial tendons passing it or using it as a
// side site and site transmissions: without them its column is zero; so is a slide joint's
// anchor's (a slide's motion axis has no point).
// A body's position body:B:pos[k] translates B's subtree along e = R_parent e_k (R_parent the
// parent's xmat) at fixed q: a virtual slide dof at B's root with motion T = (0; e), zero velocity
// and acceleration. The inverse dynamics' column is rne_d.c's (mjdiff_rneTranslationColumn). An
// applied force reads the motion axes S_j of the dofs j of B's subtree (D), dS_j = T x S_j =
// (0; e x a_j) with a_j S_j's angular part, and the points the forces act at:
//   contacts with a geom in the subtree (side i: dx_i = e, no rotation):
//     dy_geom = G (in_1 e; 0; in_2 e; 0),
//     dv = sum_i sgn_i in_i e x (w_i - w_-) + (w2 - w1) x dpos,  dw = 0
//     (a body of the subtree moves with spatial velocity (0; e x (w_b - w_-)) about any point,
//     w_- the parent's angular velocity: rne_d.c's dv_b = T x v_b - T x v-), then dF, dT, dW as for
//     a geom's position, and f_j += (e x a_j) . Fsub_b(j) for j in D (Fsub: the contacts' forces
//     on b(j)'s subtree);
//   xfrc_applied (f, tau) at xipos of a body in the subtree: dW = (e x f; 0), and the same dS term.
// The column is formed so where nothing else reads the subtree's placement: no fluid forces, no
// spatial tendon through a site or geom of the subtree, no connect or weld equality on a body of
// it, only joint and tendon transmissions, B no mocap body.
// A hinge or ball joint's anchor joint:J:pos[k] (in B's frame before J, mj_kinematics: xanchor =
// xpos + R_before pos, then xpos = xanchor - R_after pos) moves J's axis line by R_before e_k and
// what follows J by (R_before - R_after) e_k: two virtual slides, one inserted before J along
// a1 = R_before e_k (J's axis and all after it) and one after J along a2 = -R_after e_k (what
// follows J), each a translation column as above with v-, w- those at its insertion and D the
// dofs after it (mjdiff_rneTranslationColumn's `first`); formed where B is translatable.
// A body's scale body:B:scale (value c, design_d.c) sets every position in B's frame to c times
// its reference: its column is the sum of what that moves, each along its reference (components
// the selection sets explicitly do not follow the scale and are left out):
//   each child C's subtree translates along R_B pos0_C  (the translation above),
//   each geom g of B moves in B's frame by pos0_g and a capsule's or cylinder's half-length by
//   size0_g[1]  (the contacts' part above, with both motions at once),
//   B's inertials move by the compile map's column of the scale  (the inertials' part above),
//   B's hinge and ball anchors move by their references (the anchor columns above),
//   B's sites: formed only where that adds nothing (sites no tendon or actuator reads).
// The other geometry parameters (sites on tendons) come from design_d.c (differenced), as do the
// columns above where their conditions fail.

#include <math.h>
#include <string.h>

#include "compat.h"
#include "convex.h"
#include "derivative.h"
#include "internal.h"
#include "law.h"
#include "params_internal.h"
#include "spatial.h"

#define DISABLED(m, flag) ((m)->opt.disableflags & (flag))

// contact quantities z: the pair's smooth values (GP_* order), then the three friction kinds
enum { Z_K = GP_STIFFNESS, Z_C = GP_DAMPING, Z_W = GP_WIDTH, Z_VS = GP_FRICTION_SPEED,
       Z_WS = GP_SPIN_SPEED, Z_MU0 = GP_COUNT, Z_COUNT = GP_COUNT + 3 };

//---------------------------------- spatial helpers -----------------------------------------------

// col_j += scale * S_j . W for the dofs j of the chain from body b to the root
static void addChain(const mjModel* m, const mjData* d, int b, const mjtNum W[6], mjtNum scale,
                     mjtNum* col) {
  for (int j = spatial_chainLastDof(m, b); j >= 0; j = m->dof_parentid[j]) {
    col[j] += scale * mju_dot(d->cdof + 6 * j, W, 6);
  }
}

// W_b += scale [T + (p - o_b) x F; F] about b's tree origin (smooth.c's convention)
static void addWrench(const mjModel* m, const mjData* d, mjtNum* wrench, int b, const mjtNum p[3],
                      const mjtNum F[3], const mjtNum T[3], mjtNum scale) {
  if (b == 0) return;
  mjtNum r[3], rf[3];
  mju_sub3(r, p, d->subtree_com + 3 * m->body_rootid[b]);
  mju_cross(rf, r, F);
  for (int i = 0; i < 3; i++) {
    wrench[6 * b + i] += scale * (T[i] + rf[i]);
    wrench[6 * b + 3 + i] += scale * F[i];
  }
}

// col += J' W for body wrenches W (summed over subtrees in place)
static void wrenchToCol(const mjModel* m, const mjData* d, mjtNum* wrench, mjtNum* col) {
  for (int b = m->nbody - 1; b > 0; b--) {
    int parent = m->body_parentid[b];
    if (parent > 0) mju_addTo(wrench + 6 * parent, wrench + 6 * b, 6);
  }
  for (int j = 0; j < m->nv; j++) {
    col[j] += mju_dot(d->cdof + 6 * j, wrench + 6 * m->dof_bodyid[j], 6);
  }
}

// velocity of the point p fixed to body b (world frame)
static void pointVelocity(const mjModel* m, const mjData* d, int b, const mjtNum p[3],
                          mjtNum lin[3], mjtNum ang[3]) {
  const mjtNum* cvel = d->cvel + 6 * b;
  mjtNum r[3];
  mju_sub3(r, p, d->subtree_com + 3 * m->body_rootid[b]);
  mju_copy3(ang, cvel);
  spatial_pointMotion(lin, cvel, r);
}

//---------------------------------- scalar laws ---------------------------------------------------

// total derivatives in w of s(x; w) and s'(x; w) with x = w - dist (dist fixed)
static void rampWidth(mjtNum x, mjtNum w, mjtNum* Sw, mjtNum* DSw) {
  *Sw = *DSw = 0;
  if (x <= 0 || x > 2 * w) return;
  int inner = x <= w;
  mjtNum y = inner ? x : 2 * w - x, w2 = w * w, w3 = w2 * w;
  *Sw = y * y / (2 * w2) - y * y * y / (3 * w3);
  *DSw = (inner ? 1 : -1) * (y / w2 - y * y / w3);
}

// partials of fn = D(k s(x), -c s'(x) vn) in (k, c, w); returns fn
static mjtNum normalParams(mjtNum k, mjtNum c, mjtNum w, mjtNum x, mjtNum vn, mjtNum dfn[3]) {
  dfn[0] = dfn[1] = dfn[2] = 0;
  if (x <= 0) return 0;
  mjtNum ds, s = law_ramp(x, w, &ds), Sw, DSw, Dg, De;
  rampWidth(x, w, &Sw, &DSw);
  mjtNum fn = law_damped(k * s, -c * ds * vn, &Dg, &De);
  dfn[0] = Dg * s;
  dfn[1] = -De * ds * vn;
  dfn[2] = Dg * k * Sw - De * c * vn * DSw;
  return fn;
}

// partials of the limit force L (smooth.c limitForce) in (k, c, w)
static void limitParams(const mjtNum law[EP_COUNT], mjtNum x, mjtNum v, mjtNum lo, mjtNum hi,
                        mjtNum dL[3]) {
  dL[0] = dL[1] = dL[2] = 0;
  mjtNum w = law[EP_WIDTH];
  for (int side = 0; side < 2; side++) {
    mjtNum sgn = side ? -1 : 1;
    mjtNum xx = side ? w - (hi - x) : w - (x - lo), dfn[3];
    if (xx <= 0) continue;
    normalParams(law[EP_STIFFNESS], law[EP_DAMPING], w, xx, sgn * v, dfn);
    for (int i = 0; i < 3; i++) dL[i] += sgn * dfn[i];
  }
}

//---------------------------------- contacts ------------------------------------------------------

// one active contact: bodies, geoms, and the partials of its world force F and torque T on body2
// in z (3 x Z_COUNT each)
typedef struct contactPartial_ {
  mjtNum DF[3 * Z_COUNT];
  mjtNum DT[3 * Z_COUNT];
  int con;                     // index in d->contact
  int g1, g2, b1, b2;
  int pair;                    // friction from an explicit <pair>
} contactPartial;

// 1 if the contact between g1 and g2 came from an explicit <pair> (mj_collision: pairs merged
// with the dynamic ones, the geom pair then skipped there)
static int fromPair(const mjModel* m, int g1, int g2) {
  if (!compat_collidesDynamic(m)) return 1;
  return mjdiff_pairIndex(m, g1, g2) >= 0;
}

// partials of contact i; 0 if inactive
static int contactPartials(const mjModel* m, const mjData* d, const mjdiffModel* s, int i,
                           contactPartial* cp) {
  const mjContact* con = d->contact + i;
  int g1 = compat_contactGeom1(con), g2 = compat_contactGeom2(con);
  mjtNum prm[GP_COUNT];
  mjdiff_pairParams(s, g1, g2, prm);
  mjtNum x = mjdiff_contactDepth(m, con, prm[GP_WIDTH]);
  if (x <= 0) return 0;
  memset(cp, 0, sizeof(*cp));
  cp->con = i;
  cp->g1 = g1;
  cp->g2 = g2;
  cp->b1 = m->geom_bodyid[g1];
  cp->b2 = m->geom_bodyid[g2];
  cp->pair = fromPair(m, g1, g2);

  // relative velocity at the contact point in the contact frame
  mjtNum lin1[3], ang1[3], lin2[3], ang2[3], lin[3], ang[3], vc[3], wc[3];
  pointVelocity(m, d, cp->b1, con->pos, lin1, ang1);
  pointVelocity(m, d, cp->b2, con->pos, lin2, ang2);
  mju_sub3(lin, lin2, lin1);
  mju_sub3(ang, ang2, ang1);
  mju_mulMatVec(vc, con->frame, lin, 3, 3);
  mju_mulMatVec(wc, con->frame, ang, 3, 3);

  // local partials: force (normal, t1, t2), torque (normal, t1, t2)
  mjtNum Df[3 * Z_COUNT] = {0}, Dt[3 * Z_COUNT] = {0}, dfn[3];
  mjtNum fn = normalParams(prm[GP_STIFFNESS], prm[GP_DAMPING], prm[GP_WIDTH], x, vc[0], dfn);
  for (int z = 0; z < 3; z++) Df[z] = dfn[z];

  // friction on a tangential quantity a (n components from a0) with speed sp and friction mu
  // (one per component): row r of D (force or torque), z column of the speed and of mu
  // (the effective speed se = sp + hA mu_0 fn of each kind, law.h, moves with fn and mu_0)
  mjtNum At, Ar, h = mjdiff_timestep(m, s);
  mjdiff_contactInvweight(s, g1, g2, &At, &Ar);
  struct {
    int on, n, row, zs, zmu;
    const mjtNum* a;
    const mjtNum* mu;
    mjtNum sp, hA;
    mjtNum* D;
  } kinds[3] = {
    {con->dim >= 3, 2, 1, Z_VS, Z_MU0, vc + 1, con->friction, prm[GP_FRICTION_SPEED], h * At, Df},
    {con->dim >= 4, 1, 0, Z_WS, Z_MU0 + 1, wc, con->friction + 2, prm[GP_SPIN_SPEED], h * Ar, Dt},
    {con->dim >= 6, 2, 1, Z_WS, Z_MU0 + 2, wc + 1, con->friction + 3, prm[GP_SPIN_SPEED], h * Ar,
     Dt},
  };
  for (int k = 0; k < 3; k++) {
    if (!kinds[k].on) continue;
    mjtNum u[2], r[2], mu0 = kinds[k].mu[0];
    mjtNum se = law_frictionSpeed(kinds[k].sp, 1, kinds[k].hA, mu0, fn);
    for (int j = 0; j < kinds[k].n; j++) u[j] = kinds[k].a[j] / se;
    mjtNum q = law_regular(r, u, kinds[k].n);
    for (int j = 0; j < kinds[k].n; j++) {
      mjtNum* row = kinds[k].D + Z_COUNT * (kinds[k].row + j);
      mjtNum mu = kinds[k].mu[j];
      // d(-fn mu r_j) = -mu r_j dfn - fn r_j dmu + fn mu q^3 u_j / se dse,
      // dse = dsp + hA (fn dmu_0 + mu_0 dfn)
      mjtNum Dse = fn * mu * q * q * q * u[j] / se;
      for (int z = 0; z < 3; z++) row[z] = -mu * r[j] * dfn[z] + Dse * kinds[k].hA * mu0 * dfn[z];
      row[kinds[k].zs] = Dse;
      row[kinds[k].zmu] = -fn * r[j] + Dse * kinds[k].hA * fn;
    }
  }

  // to world: D = frame' D_local
  for (int r = 0; r < 3; r++) {
    for (int z = 0; z < Z_COUNT; z++) {
      mjtNum f = 0, t = 0;
      for (int l = 0; l < 3; l++) {
        f += con->frame[3 * l + r] * Df[Z_COUNT * l + z];
        t += con->frame[3 * l + r] * Dt[Z_COUNT * l + z];
      }
      cp->DF[Z_COUNT * r + z] = f;
      cp->DT[Z_COUNT * r + z] = t;
    }
  }

  // the share (plugin/smooth.c): sigma D, and F dsigma/dw in the width's column
  mjdiffShare sh;
  mjtNum share = mjdiff_contactShare(m, d, s, i, &sh);
  if (share != 1) {
    mju_scl(cp->DF, cp->DF, share, 3 * Z_COUNT);
    mju_scl(cp->DT, cp->DT, share, 3 * Z_COUNT);
  }
  if (sh.varies) {
    for (int r = 0; r < 3; r++) {
      cp->DF[Z_COUNT * r + Z_W] += sh.F[r] * sh.dwidth;
      cp->DT[Z_COUNT * r + Z_W] += sh.T[r] * sh.dwidth;
    }
  }
  return 1;
}

// weight of geom g's friction component c in the contact's friction (mj_collideGeoms)
static mjtNum frictionWeight(const mjModel* m, const contactPartial* cp, int g, int c) {
  if (cp->pair || (g != cp->g1 && g != cp->g2)) return 0;
  int other = g == cp->g1 ? cp->g2 : cp->g1;
  mjtNum fg = m->geom_friction[3 * g + c], fo = m->geom_friction[3 * other + c];
  if (m->geom_priority[g] != m->geom_priority[other]) {
    if (m->geom_priority[g] < m->geom_priority[other]) return 0;
    return fg < mjMINMU ? 0 : 1;
  }
  if (mju_max(fg, fo) < mjMINMU || fg < fo) return 0;
  return fg > fo ? 1 : 0.5;
}

// column of a contact parameter e: sum over contacts of (dz/dp) . (dF, dT)
static void contactColumn(const mjModel* m, const mjData* d, const mjdiffModel* s,
                          const paramEntry* e, const contactPartial* cps, int ncp,
                          mjtNum* wrench, mjtNum* col) {
  mju_zero(wrench, 6 * m->nbody);
  int any = 0;
  for (int i = 0; i < ncp; i++) {
    const contactPartial* cp = cps + i;
    mjtNum weight = 0;
    int z = 0;
    if (e->kind == PK_SMOOTH) {
      z = mjdiff_smoothFieldGeom(e->comp);
      weight = !s->geom_set[GP_COUNT * cp->g1 + z] && !s->geom_set[GP_COUNT * cp->g2 + z];
    } else if (e->kind == PK_GEOM_SMOOTH) {
      z = e->comp;
      if (e->id == cp->g1) weight = s->geom_set[GP_COUNT * cp->g2 + z] ? 0.5 : 1;
      if (e->id == cp->g2) weight = s->geom_set[GP_COUNT * cp->g1 + z] ? 0.5 : 1;
    } else {
      z = Z_MU0 + e->comp;
      weight = frictionWeight(m, cp, e->id, e->comp);
    }
    if (weight == 0) continue;
    mjtNum F[3], T[3];
    for (int r = 0; r < 3; r++) {
      F[r] = weight * cp->DF[Z_COUNT * r + z];
      T[r] = weight * cp->DT[Z_COUNT * r + z];
    }
    const mjtNum* pos = d->contact[cp->con].pos;
    addWrench(m, d, wrench, cp->b2, pos, F, T, 1);
    addWrench(m, d, wrench, cp->b1, pos, F, T, -1);
    any = 1;
  }
  if (any) wrenchToCol(m, d, wrench, col);
}

//---------------------------------- other columns -------------------------------------------------

// col -= J_b' (dI a_b + v_b x* dI v_b) for a change dI of body b's cinert, plus J_b' [dx x f; 0]
// for the applied force f acting at xipos if that moves by dx (nullable)
static void inertialChange(const mjModel* m, const mjData* d, int b, const mjtNum dI[10],
                           const mjtNum* dx, const mjtNum* cacc, mjtNum* col) {
  mjtNum f[6], h[6], t[6];
  const mjtNum* v = d->cvel + 6 * b;
  spatial_mulInert(f, dI, cacc + 6 * b);
  spatial_mulInert(h, dI, v);
  spatial_crossForce(t, v, h);
  mju_addTo(f, t, 6);
  addChain(m, d, b, f, -1, col);

  // the applied wrench and the gravity compensation act at the moving com: d(xipos x f) = dx x f
  if (dx) {
    mjtNum x[3], W[6] = {0};
    compat_comForce(m, d, b, x);
    mju_cross(W, dx, x);
    if (!mju_isZero(W, 3)) addChain(m, d, b, W, 1, col);
  }
}

// the gravity compensation force of body b (MuJoCo 3) changed by df at its com: col += J_b' [r x
// df; df], r = xipos - o_b
static void gravcompChange(const mjModel* m, const mjData* d, int b, const mjtNum df[3],
                           mjtNum* col) {
  mjtNum r[3], W[6];
  mju_sub3(r, d->xipos + 3 * b, d->subtree_com + 3 * m->body_rootid[b]);
  mju_cross(W, r, df);
  mju_copy3(W + 3, df);
  addChain(m, d, b, W, 1, col);
}

// inertial parameter of body b: col -= J_b' (dI a_b + v_b x* dI v_b) (+ the xfrc_applied term)
static void inertiaColumn(const mjModel* m, const mjData* d, const paramEntry* e,
                          const mjtNum* cacc, mjtNum* col) {
  int b = e->id, k = e->comp;
  mjtNum dI[10] = {0}, r[3], dl[3];
  mju_sub3(r, d->xipos + 3 * b, d->subtree_com + 3 * m->body_rootid[b]);
  if (e->kind == PK_BODY_MASS) {
    dI[0] = r[1] * r[1] + r[2] * r[2];
    dI[1] = r[0] * r[0] + r[2] * r[2];
    dI[2] = r[0] * r[0] + r[1] * r[1];
    dI[3] = -r[0] * r[1];
    dI[4] = -r[0] * r[2];
    dI[5] = -r[1] * r[2];
    mju_copy3(dI + 6, r);
    dI[9] = 1;
  } else if (e->kind == PK_BODY_INERTIA) {
    const mjtNum* R = d->ximat + 9 * b;
    mjtNum a[3] = {R[k], R[3 + k], R[6 + k]};
    dI[0] = a[0] * a[0];
    dI[1] = a[1] * a[1];
    dI[2] = a[2] * a[2];
    dI[3] = a[0] * a[1];
    dI[4] = a[0] * a[2];
    dI[5] = a[1] * a[2];
  } else {
    const mjtNum* R = d->xmat + 9 * b;
    mjtNum mass = m->body_mass[b], rd;
    dl[0] = R[k];
    dl[1] = R[3 + k];
    dl[2] = R[6 + k];
    rd = mju_dot3(r, dl);
    for (int i = 0; i < 3; i++) dI[i] = mass * (2 * rd - 2 * dl[i] * r[i]);
    dI[3] = -mass * (dl[0] * r[1] + r[0] * dl[1]);
    dI[4] = -mass * (dl[0] * r[2] + r[0] * dl[2]);
    dI[5] = -mass * (dl[1] * r[2] + r[1] * dl[2]);
    mju_scl3(dI + 6, dl, mass);
  }

  inertialChange(m, d, b, dI, e->kind == PK_BODY_IPOS ? dl : NULL, cacc, col);

  // mass: the gravity compensation -gravcomp m g grows with it
  mjtNum gc = compat_gravcomp(m, b);
  if (e->kind == PK_BODY_MASS && gc != 0) {
    mjtNum df[3];
    mju_scl3(df, m->opt.gravity, -gc);
    gravcompChange(m, d, b, df, col);
  }
}

// gravity component k: col = sum_b J_b' I_b (0; e_k)
static void gravityColumn(const mjModel* m, const mjData* d, int k, mjtNum* wrench, mjtNum* col) {
  if (DISABLED(m, mjDSBL_GRAVITY)) return;
  mjtNum a[6] = {0};
  a[3 + k] = 1;
  mju_zero(wrench, 6 * m->nbody);
  for (int b = 1; b < m->nbody; b++) spatial_mulInert(wrench + 6 * b, d->cinert + 10 * b, a);
  wrenchToCol(m, d, wrench, col);

  // the gravity compensation -gravcomp m g of each body
  for (int b = 1; b < m->nbody; b++) {
    mjtNum gc = compat_gravcomp(m, b);
    if (gc == 0) continue;
    mjtNum df[3] = {0, 0, 0};
    df[k] = -gc * m->body_mass[b];
    gravcompChange(m, d, b, df, col);
  }
}

// body accelerations a_b (nbody x 6) of mj_rne with acceleration acc, world (0; -g)
static void bodyAcc(const mjModel* m, const mjData* d, const mjtNum* acc, mjtNum* cacc) {
  mju_zero(cacc, 6);
  if (!DISABLED(m, mjDSBL_GRAVITY)) mju_scl3(cacc + 3, m->opt.gravity, -1);
  for (int b = 1; b < m->nbody; b++) {
    mjtNum* a = cacc + 6 * b;
    mju_copy(a, cacc + 6 * m->body_parentid[b], 6);
    for (int j = m->body_dofadr[b]; j < m->body_dofadr[b] + m->body_dofnum[b]; j++) {
      mju_addToScl(a, d->cdof_dot + 6 * j, d->qvel[j], 6);
      mju_addToScl(a, d->cdof + 6 * j, acc[j], 6);
    }
  }
}

// regularised direction rho(u) = u / sqrt(1 + u^2) of a scalar, and q = 1 / sqrt(1 + u^2)
static mjtNum rho1(mjtNum u, mjtNum* q) {
  mjtNum r;
  *q = law_regular(&r, &u, 1);
  return r;
}

// smooth-model column of the model-wide limit or friction-loss field f
static void scalarSmoothColumn(const mjModel* m, const mjData* d, const mjdiffModel* s, int f,
                               mjtNum* col) {
  if (f == SF_FRICTIONLOSS_SPEED) {
    if (DISABLED(m, mjDSBL_FRICTIONLOSS)) return;
    mjtNum vf = s->opt.frictionloss_speed, q;  // explicit: makeParams refuses a derived field
    for (int j = 0; j < m->nv; j++) {
      mjtNum floss = m->dof_frictionloss[j];
      if (floss <= 0) continue;
      mjtNum u = d->qvel[j] / vf;
      rho1(u, &q);
      col[j] += floss * q * q * q * u / vf;
    }
    for (int t = 0; t < m->ntendon; t++) {
      mjtNum floss = m->tendon_frictionloss[t];
      if (floss <= 0) continue;
      mjtNum u = d->ten_velocity[t] / vf;
      rho1(u, &q);
      compat_addTendonForce(m, d, t, floss * q * q * q * u / vf, col);
    }
    return;
  }

  // limits: k, c, w
  if (DISABLED(m, mjDSBL_LIMIT)) return;
  int which = f == SF_LIMIT_STIFFNESS ? 0 : f == SF_LIMIT_DAMPING ? 1 : 2;
  for (int j = 0; j < m->njnt; j++) {
    if (!m->jnt_limited[j]) continue;
    int qa = m->jnt_qposadr[j], da = m->jnt_dofadr[j], type = m->jnt_type[j];
    const mjtNum* range = m->jnt_range + 2 * j;
    mjtNum dL[3], law[EP_COUNT];
    mjdiff_limitParams(s, 0, j, law);
    if (type == mjJNT_HINGE || type == mjJNT_SLIDE) {
      limitParams(law, d->qpos[qa], d->qvel[da], range[0], range[1], dL);
      col[da] += dL[which];
    } else if (type == mjJNT_BALL) {
      mjtNum r[3];
      mju_quat2Vel(r, d->qpos + qa, 1);
      mjtNum theta = mju_norm3(r);
      if (theta <= 0) continue;
      mjtNum axis[3] = {r[0] / theta, r[1] / theta, r[2] / theta};
      limitParams(law, theta, mju_dot3(axis, d->qvel + da), -mjMAXVAL, range[1], dL);
      for (int i = 0; i < 3; i++) col[da + i] += dL[which] * axis[i];
    }
  }
  for (int t = 0; t < m->ntendon; t++) {
    if (!m->tendon_limited[t]) continue;
    const mjtNum* range = m->tendon_range + 2 * t;
    mjtNum dL[3], law[EP_COUNT];
    mjdiff_limitParams(s, 1, t, law);
    limitParams(law, d->ten_length[t], d->ten_velocity[t], range[0], range[1], dL);
    if (dL[which] != 0) compat_addTendonForce(m, d, t, dL[which], col);
  }
}

// equality fields: the equality forces with unit stiffness or damping (they are linear in both)
static void equalityColumn(const mjModel* m, mjData* d, const mjdiffModel* s, int f,
                           mjtNum* col) {
  if (DISABLED(m, mjDSBL_EQUALITY)) return;
  mjModel view = *m;
  view.opt.disableflags |= mjDSBL_CONTACT | mjDSBL_LIMIT | mjDSBL_FRICTIONLOSS;
  struct mjdiffModel_ unit = *s;
  unit.opt.eq_stiffness = f == SF_EQ_STIFFNESS;
  unit.opt.eq_damping = f == SF_EQ_DAMPING;
  unit.attached = NULL;
  mjdiff_addForces(&view, d, &unit, col);
}

// actuator parameter: DrDp column and DadotDp column (na, may be NULL)
static void actuatorColumn(const mjModel* m, const mjData* d, const paramEntry* e, mjtNum* col,
                           mjtNum* adot) {
  int nu = m->nu, na = m->na, i = e->id;
  if (nu == 0 || DISABLED(m, mjDSBL_ACTUATION)) return;
  int clamp = !DISABLED(m, mjDSBL_CLAMPCTRL) && m->actuator_ctrllimited[i];
  int ia = i - (nu - na), stateful = m->actuator_dyntype[i] != mjDYN_NONE;
  mjtNum ctrl = clamp ? mju_clip(d->ctrl[i], m->actuator_ctrlrange[2 * i],
                                 m->actuator_ctrlrange[2 * i + 1]) : d->ctrl[i];
  if (e->kind == PK_ACT_DYNPRM) {
    mjtNum tau = m->actuator_dynprm[mjNDYN * i];
    if (adot && tau >= mjMINVAL) adot[ia] = -(ctrl - d->act[ia]) / (tau * tau);
    return;
  }
  mjtNum in = stateful ? d->act[ia] : ctrl;
  mjtNum L = d->actuator_length[i], V = d->actuator_velocity[i];
  const mjtNum* gain = m->actuator_gainprm + mjNGAIN * i;
  const mjtNum* bias = m->actuator_biasprm + mjNBIAS * i;
  int gaffine = m->actuator_gaintype[i] == mjGAIN_AFFINE;
  int baffine = m->actuator_biastype[i] == mjBIAS_AFFINE;
  int clamped = 0;
  if (m->actuator_forcelimited[i]) {
    const mjtNum* fr = m->actuator_forcerange + 2 * i;
    mjtNum force = d->actuator_force[i];
    clamped = force <= fr[0] || force >= fr[1];
  }

  // gain and bias: moment' dforce
  if (e->kind == PK_ACT_GAINPRM || e->kind == PK_ACT_BIASPRM) {
    mjtNum lv[3] = {1, L, V}, df = 0;
    if (e->kind == PK_ACT_GAINPRM && (e->comp == 0 || gaffine)) df = lv[e->comp] * in;
    if (e->kind == PK_ACT_BIASPRM && baffine) df = lv[e->comp];
    if (clamped || df == 0) return;
    compat_addActuatorForce(m, d, i, df, col);
    return;
  }

  // gear: a (force + G (f_L x + f_V xdot)), a and x the joint's or the tendon's
  mjtNum G = m->actuator_gear[6 * i];
  int id = m->actuator_trnid[2 * i], tendon = m->actuator_trntype[i] == mjTRN_TENDON;
  mjtNum x = tendon ? d->ten_length[id] : d->qpos[m->jnt_qposadr[id]];
  mjtNum xdot = tendon ? d->ten_velocity[id] : d->qvel[m->jnt_dofadr[id]];
  mjtNum fL = (gaffine ? gain[1] * in : 0) + (baffine ? bias[1] : 0);
  mjtNum fV = (gaffine ? gain[2] * in : 0) + (baffine ? bias[2] : 0);
  mjtNum df = d->actuator_force[i] + (clamped ? 0 : G * (fL * x + fV * xdot));
  if (tendon) {
    compat_addTendonForce(m, d, id, df, col);
  } else {
    col[m->jnt_dofadr[id]] += df;
  }
}

// joint, dof and tendon parameters of MuJoCo's passive forces, armature and friction loss
static void scalarColumn(const mjModel* m, const mjData* d, const mjdiffModel* s,
                         const paramEntry* e, const mjtNum* acc, mjtNum hdamp, mjtNum* col) {
  int spring = !compat_passiveOff(m) && !compat_springOff(m);
  int damper = !compat_passiveOff(m) && !compat_damperOff(m);
  int loss = !DISABLED(m, mjDSBL_CONSTRAINT | mjDSBL_FRICTIONLOSS) && !compat_passiveOff(m);
  int id = e->id;
  mjtNum q;
  switch (e->kind) {
    case PK_DOF_DAMPING:
      // B holds the dof damping (mjdiff_dampBHasDofDamping): -hdamp acc_j, else none
      col[id] = (damper ? -d->qvel[id] : 0) - (mjdiff_dampBHasDofDamping(m) ? hdamp : 0) * acc[id];
      break;
    case PK_DOF_ARMATURE:
      col[id] = -acc[id];
      break;
    case PK_DOF_FRICTIONLOSS:
      if (loss) col[id] = -rho1(d->qvel[id] / mjdiff_lossSpeed(s, 0, id), &q);
      break;
    case PK_JNT_STIFFNESS: {
      if (!spring) break;
      int qa = m->jnt_qposadr[id], da = m->jnt_dofadr[id], type = m->jnt_type[id];
      if (type == mjJNT_HINGE || type == mjJNT_SLIDE) {
        col[da] = -(d->qpos[qa] - m->qpos_spring[qa]);
        break;
      }
      if (type == mjJNT_FREE) {
        for (int i = 0; i < 3; i++) col[da + i] = -(d->qpos[qa + i] - m->qpos_spring[qa + i]);
        qa += 3;
        da += 3;
      }
      mjtNum dif[3];
      mju_subQuat(dif, d->qpos + qa, m->qpos_spring + qa);
      for (int i = 0; i < 3; i++) col[da + i] = -dif[i];
      break;
    }
    case PK_JNT_SPRINGREF:
      if (spring) col[m->jnt_dofadr[id]] = m->jnt_stiffness[id];
      break;
    case PK_TEN_STIFFNESS:
      if (spring) {
        compat_addTendonForce(m, d, id, -(d->ten_length[id] - compat_tendonLengthSpring(m, id)), col);
      }
      break;
    case PK_TEN_DAMPING:
      if (damper) compat_addTendonForce(m, d, id, -d->ten_velocity[id], col);
      break;
    case PK_TEN_FRICTIONLOSS:
      if (loss) {
        mjtNum r = rho1(d->ten_velocity[id] / mjdiff_lossSpeed(s, 1, id), &q);
        compat_addTendonForce(m, d, id, -r, col);
      }
      break;
    default:
      break;
  }
}

//---------------------------------- entry point ---------------------------------------------------

// the forces parameter kind k acts through: the smooth model's (friction loss is a smooth force)
// or the others
static int paramPart(int kind) {
  switch (kind) {
    case PK_DOF_FRICTIONLOSS:
    case PK_TEN_FRICTIONLOSS:
    case PK_GEOM_FRICTION:
    case PK_GEOM_SMOOTH:
    case PK_SMOOTH:
      return MJDIFF_FORCES_SMOOTH;
    default:
      return MJDIFF_FORCES_OTHER;
  }
}

int mjdiff_paramDerivative(const mjModel* mu, mjData* d, const mjdiffModel* s,
                           const mjdiffParams* p, const mjtNum* acc, mjtNum hdamp, mjtNum* DrDp,
                           mjtNum* DadotDp) {
  return mjdiff_paramDerivativeParts(mu, d, s, p, MJDIFF_FORCES_ALL, acc, hdamp, DrDp, DadotDp);
}

int mjdiff_paramDerivativeParts(const mjModel* mu, mjData* d, const mjdiffModel* s,
                                const mjdiffParams* p, int parts, const mjtNum* acc,
                                mjtNum hdamp, mjtNum* DrDp, mjtNum* DadotDp) {
  return mjdiff_paramDerivativeWith(NULL, mu, d, s, p, parts, acc, hdamp, DrDp, DadotDp);
}

//---------------------------------- geometry columns ----------------------------------------------

// 1 if nothing in the dynamics reads site i's position (header): no spatial tendon passes it or
// uses it as a side site, no actuator transmits through it (3.x's site equalities are refused)
static int siteUnread(const mjModel* m, int i) {
  for (int w = 0; w < m->nwrap; w++) {
    int t = m->wrap_type[w];
    if (t == mjWRAP_SITE && m->wrap_objid[w] == i) return 0;
    if ((t == mjWRAP_SPHERE || t == mjWRAP_CYLINDER) && (int)mju_round(m->wrap_prm[w]) == i) {
      return 0;
    }
  }
  for (int a = 0; a < m->nu; a++) {
    int t = m->actuator_trntype[a];
    if ((t == mjTRN_SITE || t == mjTRN_SLIDERCRANK) &&
        (m->actuator_trnid[2 * a] == i || m->actuator_trnid[2 * a + 1] == i)) {
      return 0;
    }
  }
  return 1;
}

// 1 if body b is body or one of its descendants
static int inSubtree(const mjModel* m, int b, int body) {
  for (; b > 0; b = m->body_parentid[b]) {
    if (b == body) return 1;
  }
  return 0;
}

// 1 if a translation of body's subtree is formed here (header)
static int translatable(const mjModel* m, const mjdiffParams* p, int body) {
  if (mjdiff_designDifferenced(p) || m->body_mocapid[body] >= 0) return 0;
  if (m->opt.density != 0 || m->opt.viscosity != 0) return 0;
  for (int w = 0; w < m->nwrap; w++) {
    int t = m->wrap_type[w], b = -1;
    if (t == mjWRAP_SITE) b = m->site_bodyid[m->wrap_objid[w]];
    if (t == mjWRAP_SPHERE || t == mjWRAP_CYLINDER) {
      int side = (int)mju_round(m->wrap_prm[w]);
      if (inSubtree(m, m->geom_bodyid[m->wrap_objid[w]], body)) return 0;
      if (side >= 0) b = m->site_bodyid[side];
    }
    if (b >= 0 && inSubtree(m, b, body)) return 0;
  }
  for (int i = 0; i < m->neq; i++) {
    if ((m->eq_type[i] == mjEQ_CONNECT || m->eq_type[i] == mjEQ_WELD) &&
        (inSubtree(m, compat_eqBody(m, i, 0), body) || inSubtree(m, compat_eqBody(m, i, 1), body))) {
      return 0;
    }
  }
  for (int a = 0; a < m->nu; a++) {
    int t = m->actuator_trntype[a];
    if (t != mjTRN_JOINT && t != mjTRN_JOINTINPARENT && t != mjTRN_TENDON) return 0;
  }
  return 1;
}

// the change of contact con's wrenches when its geometry moves by dy = (ddist, dn, dpos) at the
// fixed state, its share by dsig (sh: its gradient and law force, nullable), and its relative
// velocity also by dvx (nullable): dv = (w2 - w1) x dpos + dvx,
// dF, dT from the law's partials (mjdiff_contactLawY's F, DF, DT, w), the torque at pos also by
// dpos x F; the body wrenches of geom2 (+) and geom1 (-) accumulate in wrench (header)
static void addContactChange(const mjModel* m, const mjData* d, const mjContact* con,
                             const mjtNum F[3], const mjtNum DF[30], const mjtNum DT[30],
                             const mjtNum w[3], const mjtNum dy[7], const mjtNum* dvx,
                             const mjdiffShare* sh, mjtNum dsig, mjtNum* wrench) {
  mjtNum y[10] = {0}, dF[3], dT[3], t[3];
  mju_copy(y, dy, 4);
  mju_cross(y + 4, w, dy + 4);
  if (dvx) mju_addTo3(y + 4, dvx);
  for (int r = 0; r < 3; r++) {
    dF[r] = mju_dot(DF + 10 * r, y, 10);
    dT[r] = mju_dot(DT + 10 * r, y, 10);
  }
  if (sh && sh->varies) {  // the share's change dsig (plugin/smooth.c)
    mju_addToScl3(dF, sh->F, dsig);
    mju_addToScl3(dT, sh->T, dsig);
  }
  mju_cross(t, dy + 4, F);
  mju_addTo3(dT, t);
  addWrench(m, d, wrench, m->geom_bodyid[compat_contactGeom2(con)], con->pos, dF, dT, 1);
  addWrench(m, d, wrench, m->geom_bodyid[compat_contactGeom1(con)], con->pos, dF, dT, -1);
}

// the applied forces' part of the translation of body's subtree along e (header): contacts
// (smooth) and xfrc_applied (other), for the parts asked; fsub (3 nbody) scratch. Returns 0, or
// -1 if a contact of the subtree has no geometry Jacobian.
static int translationForces(const mjModel* m, const mjData* d, const mjdiffModel* s, int body,
                             int first, const mjtNum e[3], int parts, int contacts,
                             mjtNum* wrench, mjtNum* fsub, mjtNum* col) {
  int nbody = m->nbody, any = 0, adr = m->body_dofadr[body];
  if (first < 0) first = adr;
  // the angular velocity before the insertion: the parent's, then B's dofs before `first`
  mjtNum wpar[3];
  mju_copy3(wpar, d->cvel + 6 * m->body_parentid[body]);
  for (int j = adr; j < first; j++) mju_addToScl3(wpar, d->cdof + 6 * j, d->qvel[j]);
  mju_zero(wrench, 6 * nbody);
  mju_zero(fsub, 3 * nbody);
  if ((parts & MJDIFF_FORCES_SMOOTH) && contacts) {
    for (int c = 0; c < d->ncon; c++) {
      const mjContact* con = d->contact + c;
      int g[2] = {compat_contactGeom1(con), compat_contactGeom2(con)};
      int b[2] = {m->geom_bodyid[g[0]], m->geom_bodyid[g[1]]};
      int in[2] = {inSubtree(m, b[0], body), inSubtree(m, b[1], body)};
      if (!in[0] && !in[1]) continue;
      mjtNum F[3], T[3], DF[30], DT[30], w[3], G[7 * 12], dy[7] = {0}, geff[12], dsig = 0;
      mjdiffShare sh;
      if (!mjdiff_contactLawY(m, d, s, con, F, T, DF, DT, w, &sh)) continue;
      if (mjdiff_contactGeomJacobian(m, d, con, G)) return -1;
      if (sh.varies && mjdiff_shareGeometry(m, d, &sh, c, G, 0, geff)) return -1;
      for (int i = 0; i < 2; i++) {
        if (!in[i]) continue;
        for (int r = 0; r < 7; r++) dy[r] += mju_dot3(G + 12 * r + 6 * i, e);
        if (sh.varies) dsig += mju_dot3(geff + 6 * i, e);
      }
      // the moved bodies' material points: e x (w_b - w_-), geom2's minus geom1's
      mjtNum dvx[3] = {0, 0, 0}, t[3], wd[3];
      for (int i = 0; i < 2; i++) {
        if (!in[i]) continue;
        mju_sub3(wd, d->cvel + 6 * b[i], wpar);
        mju_cross(t, e, wd);
        mju_addToScl3(dvx, t, i ? 1 : -1);
      }
      addContactChange(m, d, con, F, DF, DT, w, dy, dvx, &sh, dsig, wrench);
      if (b[1]) mju_addTo3(fsub + 3 * b[1], F);
      if (b[0]) mju_subFrom3(fsub + 3 * b[0], F);
      any = 1;
    }
  }
  if (parts & MJDIFF_FORCES_OTHER) {
    for (int b = 1; b < nbody; b++) {
      const mjtNum* x = d->xfrc_applied + 6 * b;
      if (!inSubtree(m, b, body) || mju_isZero((mjtNum*)x, 3)) continue;
      mjtNum zero[3] = {0, 0, 0}, t[3];
      mju_cross(t, e, x);
      addWrench(m, d, wrench, b, d->xipos + 3 * b, zero, t, 1);
      mju_addTo3(fsub + 3 * b, x);
      any = 1;
    }
  }
  if (!any) return 0;
  wrenchToCol(m, d, wrench, col);
  // dS_j = (0; e x a_j) for the dofs of the subtree against the forces on b(j)'s subtree
  for (int b = nbody - 1; b > 0; b--) {
    int par = m->body_parentid[b];
    if (par > 0) mju_addTo3(fsub + 3 * par, fsub + 3 * b);
  }
  for (int j = 0; j < m->nv; j++) {
    int b = m->dof_bodyid[j];
    if (!inSubtree(m, b, body) || (b == body && j < first)) continue;
    mjtNum ea[3];
    mju_cross(ea, e, d->cdof + 6 * j);
    col[j] += mju_dot3(ea, fsub + 3 * b);
  }
  return 0;
}

static int geomAnalytic(const mjModel* m, const mjdiffParams* p, int g);
static int siteUnread(const mjModel* m, int i);
static int geomContactMotion(const mjModel* m, const mjData* d, const mjdiffModel* s, int g,
                             const mjtNum* dpl, const mjtNum* dsz, mjtNum* wrench, mjtNum* col);
static void geomInertialColumn(const mjModel* m, const mjData* d, int b, const mjtNum* Jd,
                               int np, int i, const mjtNum* cacc, mjtNum* col);

// the column of a hinge or ball joint's anchor moving by dl (joint frame = B's frame before the
// joint) (header): a virtual slide before the joint along R_before dl (its axis and all after
// it) and one after it along -R_after dl (what follows the joint); returns 0, or -1
static int anchorColumn(const mjModel* m, mjData* d, const mjdiffModel* s, int jnt,
                        const mjtNum dl[3], int parts, const mjtNum* acc, int contacts,
                        mjtNum* wrench, mjtNum* fsub, mjtNum* col) {
  int b = m->jnt_bodyid[jnt], jd = m->jnt_dofadr[jnt];
  int n = m->jnt_type[jnt] == mjJNT_BALL ? 3 : 1;
  // B's frame before the joint: parent * body_quat, then B's earlier joints' rotations
  // (mj_kinematics: hinge axisangle(axis, q - q0), ball the normalised quaternion)
  mjtNum q[4], qloc[4], Rb[9], Ra[9], e1[3], e2[3];
  mju_mulQuat(q, d->xquat + 4 * m->body_parentid[b], m->body_quat + 4 * b);
  for (int j = m->body_jntadr[b]; j <= jnt; j++) {
    int adr = m->jnt_qposadr[j];
    if (j == jnt) mju_quat2Mat(Rb, q);
    if (m->jnt_type[j] == mjJNT_HINGE) {
      mju_axisAngle2Quat(qloc, m->jnt_axis + 3 * j, d->qpos[adr] - m->qpos0[adr]);
    } else if (m->jnt_type[j] == mjJNT_BALL) {
      mju_copy4(qloc, d->qpos + adr);
      mju_normalize4(qloc);
    } else {
      continue;
    }
    mju_mulQuat(q, q, qloc);
  }
  mju_quat2Mat(Ra, q);
  mju_mulMatVec(e1, Rb, dl, 3, 3);
  mju_mulMatVec(e2, Ra, dl, 3, 3);
  mju_scl3(e2, e2, -1);
  for (int k = 0; k < 2; k++) {
    const mjtNum* e = k ? e2 : e1;
    int first = k ? jd + n : jd;
    if ((parts & MJDIFF_FORCES_OTHER) && mjdiff_rneTranslationColumn(m, d, acc, b, first, e, col)) {
      return -1;
    }
    if (translationForces(m, d, s, b, first, e, parts, contacts, wrench, fsub, col)) return -1;
  }
  return 0;
}

// 1 if joint jnt's anchor has a column formed here (a hinge or ball, B translatable)
static int anchorAnalytic(const mjModel* m, const mjdiffParams* p, int jnt) {
  int t = m->jnt_type[jnt];
  return (t == mjJNT_HINGE || t == mjJNT_BALL) && translatable(m, p, m->jnt_bodyid[jnt]);
}

// 1 if the scale of body b is formed here (header)
static int scalable(const mjModel* m, const mjdiffParams* p, int b) {
  if (mjdiff_designDifferenced(p)) return 0;
  for (int s = 0; s < m->nsite; s++) {
    if (m->site_bodyid[s] == b && !siteUnread(m, s)) return 0;
  }
  for (int j = m->body_jntadr[b]; j >= 0 && j < m->body_jntadr[b] + m->body_jntnum[b]; j++) {
    int t = m->jnt_type[j];
    if ((t == mjJNT_HINGE || t == mjJNT_BALL) && !anchorAnalytic(m, p, j)) return 0;
  }
  for (int g = m->body_geomadr[b]; g >= 0 && g < m->body_geomadr[b] + m->body_geomnum[b]; g++) {
    if (!geomAnalytic(m, p, g)) return 0;
  }
  for (int c = b + 1; c < m->nbody; c++) {
    if (m->body_parentid[c] == b && !translatable(m, p, c)) return 0;
  }
  return 1;
}

// column of entry i, the scale of body b (header), for the parts asked; Jd, fsub scratch.
// Returns 0, or -1 (col partly formed) if a contact has no geometry Jacobian or the stack is full.
static int scaleColumn(const mjModel* m, mjData* d, const mjdiffModel* s, const mjdiffParams* p,
                       int i, int parts, const mjtNum* acc, const mjtNum* cacc, int contacts,
                       mjtNum* wrench, mjtNum* Jd, mjtNum* fsub, mjtNum* col) {
  int b = p->entry[i].id, np = p->n;
  const mjtNum* R = d->xmat + 9 * b;
  for (int c = b + 1; c < m->nbody; c++) {
    if (m->body_parentid[c] != b) continue;
    const mjtNum* ref = mjdiff_designRef(p, PK_BODY_POS, c);
    mjtNum dl[3], dir[3];
    for (int a = 0; a < 3; a++) dl[a] = mjdiff_designSelected(p, PK_BODY_POS, c, a) ? 0 : ref[a];
    if (mju_isZero(dl, 3)) continue;
    mju_mulMatVec(dir, R, dl, 3, 3);
    if ((parts & MJDIFF_FORCES_OTHER) && mjdiff_rneTranslationColumn(m, d, acc, c, -1, dir, col)) {
      return -1;
    }
    if (translationForces(m, d, s, c, -1, dir, parts, contacts, wrench, fsub, col)) return -1;
  }
  if ((parts & MJDIFF_FORCES_SMOOTH) && contacts) {
    for (int g = m->body_geomadr[b]; g >= 0 && g < m->body_geomadr[b] + m->body_geomnum[b];
         g++) {
      const mjtNum* pos0 = mjdiff_designRef(p, PK_GEOM_POS, g);
      const mjtNum* size0 = mjdiff_designRef(p, PK_GEOM_SIZE, g);
      mjtNum dpl[3], dsz[3] = {0, 0, 0};
      for (int a = 0; a < 3; a++) {
        dpl[a] = mjdiff_designSelected(p, PK_GEOM_POS, g, a) ? 0 : pos0[a];
      }
      int t = m->geom_type[g];
      if ((t == mjGEOM_CAPSULE || t == mjGEOM_CYLINDER) &&
          !mjdiff_designSelected(p, PK_GEOM_SIZE, g, 1)) {
        dsz[1] = size0[1];
      }
      if (mju_isZero(dpl, 3) && mju_isZero(dsz, 3)) continue;
      if (geomContactMotion(m, d, s, g, dpl, dsz, wrench, col)) return -1;
    }
  }
  for (int j = m->body_jntadr[b]; j >= 0 && j < m->body_jntadr[b] + m->body_jntnum[b]; j++) {
    int t = m->jnt_type[j];
    if (t != mjJNT_HINGE && t != mjJNT_BALL) continue;
    const mjtNum* ref = mjdiff_designRef(p, PK_JNT_POS, j);
    mjtNum dl[3];
    for (int a = 0; a < 3; a++) dl[a] = mjdiff_designSelected(p, PK_JNT_POS, j, a) ? 0 : ref[a];
    if (mju_isZero(dl, 3)) continue;
    if (anchorColumn(m, d, s, j, dl, parts, acc, contacts, wrench, fsub, col)) return -1;
  }
  if (parts & MJDIFF_FORCES_OTHER) {
    int ij = mjdiff_designInertialJacobian(m, p, b, Jd);
    if (ij == -2) return -1;
    if (ij == 0) geomInertialColumn(m, d, b, Jd, np, i, cacc, col);
  }
  return 0;
}

// 1 if geom g's size and position columns are formed here (header: no fluid forces, g wraps no
// spatial tendon, the analytic columns not switched off)
static int geomAnalytic(const mjModel* m, const mjdiffParams* p, int g) {
  if (mjdiff_designDifferenced(p)) return 0;
  if (m->opt.density != 0 || m->opt.viscosity != 0) return 0;
  for (int w = 0; w < m->nwrap; w++) {
    if ((m->wrap_type[w] == mjWRAP_SPHERE || m->wrap_type[w] == mjWRAP_CYLINDER) &&
        m->wrap_objid[w] == g) {
      return 0;
    }
  }
  return 1;
}

// the contacts' part of a motion of geom g in its body's frame, its position by dpl (body frame)
// and its size by dsz (nullable each): col += sum_c J' dW_c (header); returns 0, or -1 if a
// contact of the geom has no geometry Jacobian
static int geomContactMotion(const mjModel* m, const mjData* d, const mjdiffModel* s, int g,
                             const mjtNum* dpl, const mjtNum* dsz, mjtNum* wrench, mjtNum* col) {
  int any = 0;
  mjtNum a[3] = {0, 0, 0};
  if (dpl) mju_mulMatVec(a, d->xmat + 9 * m->geom_bodyid[g], dpl, 3, 3);
  mju_zero(wrench, 6 * m->nbody);
  for (int c = 0; c < d->ncon; c++) {
    const mjContact* con = d->contact + c;
    int g1 = compat_contactGeom1(con), g2 = compat_contactGeom2(con);
    if (g1 != g && g2 != g) continue;
    mjtNum F[3], T[3], DF[30], DT[30], w[3], dy[7] = {0}, geff[12], dsig = 0;
    mjdiffShare sh;
    if (!mjdiff_contactLawY(m, d, s, con, F, T, DF, DT, w, &sh)) continue;
    int side = g2 == g;
    if (dsz) {
      mjtNum Js[7 * 6];
      if (mjdiff_contactGeomSizeJacobian(m, d, con, Js)) return -1;
      for (int r = 0; r < 7; r++) dy[r] += mju_dot3(Js + 6 * r + 3 * side, dsz);
      if (sh.varies && mjdiff_shareGeometry(m, d, &sh, c, Js, 1, geff)) return -1;
      if (sh.varies) dsig += mju_dot3(geff + 3 * side, dsz);
    }
    if (dpl) {
      mjtNum G[7 * 12];
      if (mjdiff_contactGeomJacobian(m, d, con, G)) return -1;
      for (int r = 0; r < 7; r++) dy[r] += mju_dot3(G + 12 * r + 6 * side, a);
      if (sh.varies && mjdiff_shareGeometry(m, d, &sh, c, G, 0, geff)) return -1;
      if (sh.varies) dsig += mju_dot3(geff + 6 * side, a);
    }
    addContactChange(m, d, con, F, DF, DT, w, dy, NULL, &sh, dsig, wrench);
    any = 1;
  }
  if (any) wrenchToCol(m, d, wrench, col);
  return 0;
}

// the contacts' part of geometry entry e (geom size or position component)
static int geomContactColumn(const mjModel* m, const mjData* d, const mjdiffModel* s,
                             const paramEntry* e, mjtNum* wrench, mjtNum* col) {
  mjtNum unit[3] = {0, 0, 0};
  unit[e->comp] = 1;
  return geomContactMotion(m, d, s, e->id, e->kind == PK_GEOM_POS ? unit : NULL,
                           e->kind == PK_GEOM_SIZE ? unit : NULL, wrench, col);
}

// the inertials' part of geometry entry i (column i of Jd, mjdiff_designInertialJacobian of the
// geom's body, 10 x np): col -= J_b' (dI a_b + v_b x* dI v_b) (header)
static void geomInertialColumn(const mjModel* m, const mjData* d, int b, const mjtNum* Jd,
                               int np, int i, const mjtNum* cacc, mjtNum* col) {
  mjtNum dm = Jd[i], dc[3] = {Jd[np + i], Jd[2 * np + i], Jd[3 * np + i]};
  mjtNum t6[6], dTb[9], dT[9], tmp[9], r[3], dr[3], dI[10];
  for (int a = 0; a < 6; a++) t6[a] = Jd[(4 + a) * np + i];
  dTb[0] = t6[0], dTb[4] = t6[1], dTb[8] = t6[2];
  dTb[1] = dTb[3] = t6[3], dTb[2] = dTb[6] = t6[4], dTb[5] = dTb[7] = t6[5];
  const mjtNum* R = d->xmat + 9 * b;
  mju_mulMatMat(tmp, R, dTb, 3, 3, 3);
  mju_mulMatMatT(dT, tmp, R, 3, 3, 3);
  mju_mulMatVec(dr, R, dc, 3, 3);
  mju_sub3(r, d->xipos + 3 * b, d->subtree_com + 3 * m->body_rootid[b]);
  mjtNum mass = m->body_mass[b], rr = mju_dot3(r, r), rd = mju_dot3(r, dr);
  const int iu[6] = {0, 1, 2, 0, 0, 1}, ju[6] = {0, 1, 2, 1, 2, 2};
  for (int a = 0; a < 6; a++) {
    int p = iu[a], q = ju[a];
    dI[a] = dT[3 * p + q] + dm * ((p == q) * rr - r[p] * r[q]) +
            mass * ((p == q) * 2 * rd - dr[p] * r[q] - r[p] * dr[q]);
  }
  for (int a = 0; a < 3; a++) dI[6 + a] = dm * r[a] + mass * dr[a];
  dI[9] = dm;
  inertialChange(m, d, b, dI, dr, cacc, col);
}

// column (col, zeroed by the caller) of geometry entry i for the parts asked, analytic (header):
// 1 if formed, 0 if its conditions fail or a contact has no geometry Jacobian (the caller
// differences it). scratch: Jd (10 np, a body's compile-map Jacobian) then 3 nbody.
static int geometryColumn(const mjModel* m, mjData* d, const mjdiffModel* s,
                          const mjdiffParams* p, int i, int parts, const mjtNum* acc,
                          const mjtNum* cacc, int contacts, mjtNum* wrench, mjtNum* Jd,
                          mjtNum* col) {
  const paramEntry* e = p->entry + i;
  int np = p->n, id = e->id;
  mjtNum* fsub = Jd + 10 * np;
  if (mjdiff_designDifferenced(p)) return 0;
  switch (e->kind) {
    case PK_SITE_POS:
      return siteUnread(m, id);  // nothing in the dynamics reads it: zero
    case PK_JNT_POS: {
      if (m->jnt_type[id] == mjJNT_SLIDE) return 1;  // a slide's motion axis has no point: zero
      if (!anchorAnalytic(m, p, id)) return 0;
      mjtNum dl[3] = {0, 0, 0};
      dl[e->comp] = 1;
      return !anchorColumn(m, d, s, id, dl, parts, acc, contacts, wrench, fsub, col);
    }
    case PK_BODY_POS: {
      // a translation of the subtree (rne_d.c, translationForces)
      if (!translatable(m, p, id)) return 0;
      const mjtNum* R = d->xmat + 9 * m->body_parentid[id];
      mjtNum dir[3] = {R[e->comp], R[3 + e->comp], R[6 + e->comp]};
      if ((parts & MJDIFF_FORCES_OTHER) &&
          mjdiff_rneTranslationColumn(m, d, acc, id, -1, dir, col)) {
        return 0;
      }
      return !translationForces(m, d, s, id, -1, dir, parts, contacts, wrench, fsub, col);
    }
    case PK_BODY_SCALE:
      return scalable(m, p, id) &&
             !scaleColumn(m, d, s, p, i, parts, acc, cacc, contacts, wrench, Jd, fsub, col);
    case PK_GEOM_SIZE:
    case PK_GEOM_POS: {
      // contacts (smooth part), inertials (other part)
      if (!geomAnalytic(m, p, id)) return 0;
      int b = m->geom_bodyid[id];
      if ((parts & MJDIFF_FORCES_SMOOTH) && contacts &&
          geomContactColumn(m, d, s, e, wrench, col)) {
        return 0;
      }
      if (parts & MJDIFF_FORCES_OTHER) {
        int ij = mjdiff_designInertialJacobian(m, p, b, Jd);
        if (ij == -2) return 0;  // inertials that follow more geoms than the Jacobian takes
        if (ij == 0) geomInertialColumn(m, d, b, Jd, np, i, cacc, col);
      }
      return 1;
    }
    default:
      return 0;
  }
}

int mjdiff_paramDerivativeWith(mjdiffDesignScratch* scratch, const mjModel* mu, mjData* d,
                               const mjdiffModel* s, const mjdiffParams* p, int parts,
                               const mjtNum* acc, mjtNum hdamp, mjtNum* DrDp, mjtNum* DadotDp) {
  mjModel userView;
  const mjModel* m = mjdiff_userModel(mu, s, &userView);
  int nv = m->nv, na = m->na, np = p->n, nbody = m->nbody;
  if (np == 0) return 0;
  mju_zero(DrDp, nv * np);
  if (DadotDp && na) mju_zero(DadotDp, na * np);

  // what the selection needs
  int needAcc = 0, needContacts = 0;
  for (int i = 0; i < np; i++) {
    int kind = p->entry[i].kind;
    if (!(paramPart(kind) & parts)) continue;
    needAcc |= kind == PK_BODY_MASS || kind == PK_BODY_INERTIA || kind == PK_BODY_IPOS ||
               kind == PK_GEOM_SIZE || kind == PK_GEOM_POS || kind == PK_BODY_SCALE;
    needContacts |= kind == PK_GEOM_FRICTION || kind == PK_GEOM_SMOOTH ||
                    (kind == PK_SMOOTH && mjdiff_smoothFieldGeom(p->entry[i].comp) >= 0);
  }
  int contacts = needContacts && d->ncon > 0 &&
                 !DISABLED(m, mjDSBL_CONSTRAINT | mjDSBL_CONTACT) && !compat_passiveOff(m);
  int perContact = (int)((sizeof(contactPartial) + sizeof(mjtNum) - 1) / sizeof(mjtNum));
  int need = 6 * nbody * 2 + nv + na + 1 + (contacts ? perContact * d->ncon : 0) + np +
             10 * np + 3 * nbody;
  if (compat_stackSpace(d) < need) {
    for (int i = 0; i < nv * np; i++) DrDp[i] = NAN;
    if (DadotDp) {
      for (int i = 0; i < na * np; i++) DadotDp[i] = NAN;
    }
    return 0;
  }

  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* cacc = compat_stackAllocNum(d, 6 * nbody);
  mjtNum* wrench = compat_stackAllocNum(d, 6 * nbody);
  mjtNum* col = compat_stackAllocNum(d, nv);
  mjtNum* adot = compat_stackAllocNum(d, na ? na : 1);
  // a body's compile-map Jacobian (10 x np), then translationForces' subtree forces (3 nbody)
  mjtNum* Jd = compat_stackAllocNum(d, 10 * np + 3 * nbody);
  mjtNum* done = compat_stackAllocNum(d, np);     // 1: a geometry column formed here
  int* clip = (int*)compat_stackAllocNum(d, nv / 2 + 1);  // dofs of clipped actuator force (3.x)
  int nclip = compat_clippedActuatorDofs(m, d, clip);
  int geomContacts = d->ncon > 0 && !DISABLED(m, mjDSBL_CONSTRAINT | mjDSBL_CONTACT) &&
                     !compat_passiveOff(m);
  contactPartial* cps = NULL;
  int ncp = 0;
  if (contacts) {
    cps = (contactPartial*)compat_stackAllocNum(d, perContact * d->ncon);
    for (int i = 0; i < d->ncon; i++) ncp += contactPartials(m, d, s, i, cps + ncp);
  }
  if (needAcc) bodyAcc(m, d, acc, cacc);

  for (int i = 0; i < np; i++) {
    const paramEntry* e = p->entry + i;
    mju_zero(col, nv);
    if (na) mju_zero(adot, na);
    done[i] = 0;
    if (PK_IS_DESIGN(e->kind)) {
      // analytic where its conditions hold (geometryColumn), else differenced below
      done[i] = geometryColumn(m, d, s, p, i, parts, acc, cacc, geomContacts, wrench, Jd, col);
      for (int r = 0; done[i] && r < nv; r++) DrDp[(size_t)np * r + i] = col[r];
      continue;
    }
    if (!(paramPart(e->kind) & parts)) {
      for (int r = 0; r < nv; r++) DrDp[(size_t)np * r + i] = 0;
      continue;  // DadotDp: zero already
    }
    switch (e->kind) {
      case PK_BODY_MASS:
      case PK_BODY_INERTIA:
      case PK_BODY_IPOS:
        inertiaColumn(m, d, e, cacc, col);
        break;
      case PK_GRAVITY:
        gravityColumn(m, d, e->comp, wrench, col);
        break;
      case PK_GEOM_FRICTION:
      case PK_GEOM_SMOOTH:
        if (ncp) contactColumn(m, d, s, e, cps, ncp, wrench, col);
        break;
      case PK_SMOOTH:
        if (DISABLED(m, mjDSBL_CONSTRAINT) || compat_passiveOff(m)) break;
        if (mjdiff_smoothFieldGeom(e->comp) >= 0) {
          if (ncp) contactColumn(m, d, s, e, cps, ncp, wrench, col);
        } else if (e->comp == SF_EQ_STIFFNESS || e->comp == SF_EQ_DAMPING) {
          equalityColumn(m, d, s, e->comp, col);
        } else {
          scalarSmoothColumn(m, d, s, e->comp, col);
        }
        break;
      case PK_ACT_GEAR:
      case PK_ACT_GAINPRM:
      case PK_ACT_BIASPRM:
      case PK_ACT_DYNPRM:
        actuatorColumn(m, d, e, col, adot);
        // MuJoCo 3's joint actuator force limits: no actuator term where the clip is active
        for (int c = 0; c < nclip; c++) col[clip[c]] = 0;
        // implicitfast: the actuator's part of B (mjdiff_dampB), -hdamp dB/dp acc
        if (hdamp > 0 && (e->kind == PK_ACT_GEAR || (e->kind == PK_ACT_BIASPRM && e->comp == 2))) {
          for (int j = 0; j < nv; j++) {
            col[j] -= hdamp * mjdiff_dampBActuator(m, d, e->id, e->kind == PK_ACT_GEAR, j) * acc[j];
          }
        }
        break;
      default:
        scalarColumn(m, d, s, e, acc, hdamp, col);
        break;
    }
    mjdiff_fluidParamColumn(m, d, e, col);  // density, viscosity, wind; box bodies' inertia
    for (int r = 0; r < nv; r++) DrDp[(size_t)np * r + i] = col[r];
    if (DadotDp) {
      for (int r = 0; r < na; r++) DadotDp[(size_t)np * r + i] = adot[r];
    }
  }
  // the other geometry parameters (design_d.c): the forces' change with the moved geometry,
  // differenced
  // (before d's stack is freed: done lives there; the differences run on their own copy)
  int rest = 0;
  for (int i = 0; i < np; i++) rest |= PK_IS_DESIGN(p->entry[i].kind) && !done[i];
  if (rest && mjdiff_designColumns(scratch, m, d, s, p, parts, acc, done, DrDp)) {
    for (int i = 0; i < np; i++) {
      if (!PK_IS_DESIGN(p->entry[i].kind) || done[i]) continue;
      for (int r = 0; r < nv; r++) DrDp[(size_t)np * r + i] = NAN;
    }
  }
  compat_stackFree(d, mark);
  return 0;
}
