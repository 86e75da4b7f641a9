// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The core of the smooth model: generalised forces from (m, d) alone, whatever attaches them.
//
// Notation: b1, b2 bodies of geom1, geom2; p the contact point; n, t1, t2 the rows of the contact
// frame (n points from geom1 to geom2); o_b = subtree_com[rootid[b]] the origin of b's tree;
// cvel_b = [w_b; v_b] the body's spatial velocity at o_b; cdof_j = [a_j; l_j] the dof's motion axis.
//
// relative motion  v = (v_b2 + w_b2 x (p - o_b2)) - (v_b1 + w_b1 x (p - o_b1)),   w = w_b2 - w_b1
//                  vn = n.v, vt = (t1.v, t2.v), wn = n.w, wt = (t1.w, t2.w)
// normal           x = w_c - (dist - o),  fn = f(k s(x), -c s'(x) vn)                (law.h)
//                  (o: the contact's includemargin, mjdiff_contactOffset; dx = -ddist)
// sliding          (f1, f2) = -fn (mu1 r1, mu2 r2),  r = reg(vt / v_e),          condim >= 3
//                  v_e = v_s + h A_t mu1 fn  (law.h law_frictionSpeed)
// torsional        tn = -fn mu3 reg(wn / w_e),  w_e = w_s + h A_r mu3 fn         condim >= 4
// rolling          (t1, t2) = -fn (mu4 r1, mu5 r2),  r = reg(wt / w_e'),          condim == 6
//                  w_e' = w_s + h A_r mu4 fn
//                  A_t, A_r: the pair's inverse inertia at a contact point, translation (the
//                  geoms' invweight, derive.c) and rotation (MuJoCo's body_invweight0 of the
//                  two bodies summed), h the timestep, where the pair's friction speed is
//                  derived; 0 (the speeds as given) where it is explicit
// on body2         F = fn n + f1 t1 + f2 t2,  T = tn n + t1 t1 + t2 t2  at p; body1 gets -F, -T
// body wrench      W_b += [T + (p - o_b) x F; F]        (about the tree origin, [torque; force])
// generalised      qfrc_j += cdof_j . sum_{c in subtree(body_j)} W_c      (one pass, leaves first)
// share            F, T *= share_c (below, "Contact shares": 1 unless contacts of one pair
//                  crowd together)
// long range      F += a S(dist / R) n  (reach.h; off unless reach_strength > 0)
// touch sensor     s = sum fn over the contacts MuJoCo 2.2.2's touch rule counts (site body, ray)
//
// Limits, friction loss and joint/tendon equalities act on scalar coordinates directly; connect
// and weld act through body wrenches like contacts (see the comments at each block).

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "boxbox.h"
#include "compat.h"
#include "convex.h"
#include "internal.h"
#include "law.h"
#include "reach.h"

#define DISABLED(m, flag) ((m)->opt.disableflags & (flag))

//---------------------------------- body motion and wrenches --------------------------------------

// velocity of the point p fixed to body b: linear lin, angular ang (world frame)
static void pointVelocity(const mjModel* m, const mjData* d, int b, const mjtNum p[3],
                          mjtNum lin[3], mjtNum ang[3]) {
  const mjtNum* cvel = d->cvel + 6 * b;
  const mjtNum* o = d->subtree_com + 3 * m->body_rootid[b];
  mjtNum r[3];
  mju_sub3(r, p, o);
  mju_copy3(ang, cvel);
  mju_cross(lin, cvel, r);
  mju_addTo3(lin, cvel + 3);
}

// W_b += scale * [t + (p - o_b) x f; f]; the world body takes no wrench
static void addWrench(const mjModel* m, const mjData* d, mjtNum* wrench, int b, const mjtNum p[3],
                      const mjtNum f[3], const mjtNum t[3], mjtNum scale) {
  if (b == 0) return;
  const mjtNum* o = d->subtree_com + 3 * m->body_rootid[b];
  mjtNum r[3], rf[3];
  mju_sub3(r, p, o);
  mju_cross(rf, r, f);
  mjtNum* w = wrench + 6 * b;
  for (int i = 0; i < 3; i++) {
    w[i] += scale * (t[i] + rf[i]);
    w[3 + i] += scale * f[i];
  }
}

// qfrc += J' W: accumulate subtree wrenches (children have larger ids), project on cdof
static void wrenchToQfrc(const mjModel* m, const mjData* d, mjtNum* wrench, mjtNum* qfrc) {
  for (int b = m->nbody - 1; b > 0; b--) {
    int parent = m->body_parentid[b];
    if (parent > 0) {
      for (int i = 0; i < 6; i++) wrench[6 * parent + i] += wrench[6 * b + i];
    }
  }
  for (int j = 0; j < m->nv; j++) {
    const mjtNum* cdof = d->cdof + 6 * j;
    const mjtNum* w = wrench + 6 * m->dof_bodyid[j];
    qfrc[j] += cdof[0] * w[0] + cdof[1] * w[1] + cdof[2] * w[2] + cdof[3] * w[3] +
               cdof[4] * w[4] + cdof[5] * w[5];
  }
}

//---------------------------------- contacts ------------------------------------------------------

void mjdiff_contactInvweight(const mjdiffModel* s, int g1, int g2, mjtNum* At, mjtNum* Ar) {
  const mjModel* m = s->m;
  int derived = !mjdiff_implicit(s) && s->opt.friction_speed == MJDIFF_DERIVED &&
                !s->geom_set[GP_COUNT * g1 + GP_FRICTION_SPEED] &&
                !s->geom_set[GP_COUNT * g2 + GP_FRICTION_SPEED];
  if (!derived) {
    *At = *Ar = 0;
    return;
  }
  int b1 = m->geom_bodyid[g1], b2 = m->geom_bodyid[g2];
  *At = s->geom_invweight[g1] + s->geom_invweight[g2];
  *Ar = m->body_invweight0[2 * b1 + 1] + m->body_invweight0[2 * b2 + 1];
}

// the normal force fn of one contact with its parameters p (mjdiff_pairParams) and the relative
// velocity of geom2 with respect to geom1 at the contact point in the contact frame, linear vc and
// angular wc; 0 if inactive (fn is then 0 too: the ramp is 0 at and below x = 0)
static int contactNormal(const mjModel* m, const mjData* d, const mjContact* con,
                         const mjtNum p[GP_COUNT], mjtNum vc[3], mjtNum wc[3], mjtNum* fn) {
  *fn = 0;
  // activation depth, measured from MuJoCo's includemargin (zero unless the MJCF sets a margin)
  mjtNum x = mjdiff_contactDepth(m, con, p[GP_WIDTH]);
  if (x <= 0) return 0;

  int b1 = m->geom_bodyid[compat_contactGeom1(con)], b2 = m->geom_bodyid[compat_contactGeom2(con)];
  mjtNum lin1[3], ang1[3], lin2[3], ang2[3], lin[3], ang[3];
  pointVelocity(m, d, b1, con->pos, lin1, ang1);
  pointVelocity(m, d, b2, con->pos, lin2, ang2);
  mju_sub3(lin, lin2, lin1);
  mju_sub3(ang, ang2, ang1);
  mju_mulMatVec(vc, con->frame, lin, 3, 3);
  mju_mulMatVec(wc, con->frame, ang, 3, 3);

  // normal: fn = f(k s(x), c s'(x) (-vn))
  mjtNum ds, sx = law_ramp(x, p[GP_WIDTH], &ds);
  *fn = law_damped(p[GP_STIFFNESS] * sx, -p[GP_DAMPING] * ds * vc[0], NULL, NULL);
  return 1;
}

int mjdiff_contactSlip(const mjModel* m, const mjData* d, const mjdiffModel* s,
                       const mjContact* con, mjtNum vt[2], mjtNum* ve) {
  int g1 = compat_contactGeom1(con), g2 = compat_contactGeom2(con);
  mjtNum p[GP_COUNT], vc[3], wc[3], fn, At, Ar;
  mjdiff_pairParams(s, g1, g2, p);
  if (con->dim < 3 || !(con->friction[0] > 0) || !contactNormal(m, d, con, p, vc, wc, &fn) ||
      !(fn > 0)) {
    return 0;
  }
  mjdiff_contactInvweight(s, g1, g2, &At, &Ar);
  *ve = law_frictionSpeed(p[GP_FRICTION_SPEED], mjdiff_timestep(m, s), At, con->friction[0], fn);
  vt[0] = vc[1];
  vt[1] = vc[2];
  return 1;
}

// the law's force of one contact before its share; world force F and torque T on body2 at
// con->pos; 0 if inactive
static int contactLaw(const mjModel* m, const mjData* d, const mjdiffModel* s,
                      const mjContact* con, mjdiffContactForce* cf, mjtNum F[3], mjtNum T[3]) {
  int g1 = compat_contactGeom1(con), g2 = compat_contactGeom2(con);
  mjtNum p[GP_COUNT], vc[3], wc[3], fn;
  mjdiff_pairParams(s, g1, g2, p);
  memset(cf, 0, sizeof(*cf));
  mju_zero3(F);
  mju_zero3(T);
  if (!contactNormal(m, d, con, p, vc, wc, &fn)) return 0;
  cf->force[0] = fn;

  // friction speeds under the load fn
  mjtNum At, Ar, h = mjdiff_timestep(m, s);
  mjdiff_contactInvweight(s, g1, g2, &At, &Ar);

  // sliding friction
  if (con->dim >= 3) {
    mjtNum ve = law_frictionSpeed(p[GP_FRICTION_SPEED], h, At, con->friction[0], fn);
    mjtNum u[2] = {vc[1] / ve, vc[2] / ve}, r[2];
    law_regular(r, u, 2);
    cf->force[1] = -fn * con->friction[0] * r[0];
    cf->force[2] = -fn * con->friction[1] * r[1];
  }

  // torsional friction
  if (con->dim >= 4) {
    mjtNum u = wc[0] / law_frictionSpeed(p[GP_SPIN_SPEED], h, Ar, con->friction[2], fn), r;
    law_regular(&r, &u, 1);
    cf->torque[0] = -fn * con->friction[2] * r;
  }

  // rolling friction
  if (con->dim >= 6) {
    mjtNum we = law_frictionSpeed(p[GP_SPIN_SPEED], h, Ar, con->friction[3], fn);
    mjtNum u[2] = {wc[1] / we, wc[2] / we}, r[2];
    law_regular(r, u, 2);
    cf->torque[1] = -fn * con->friction[3] * r[0];
    cf->torque[2] = -fn * con->friction[4] * r[1];
  }

  // to world: F = frame' force, T = frame' torque
  mju_mulMatTVec(F, con->frame, cf->force, 3, 3);
  mju_mulMatTVec(T, con->frame, cf->torque, 3, 3);
  return 1;
}

//---------------------------------- contact shares ------------------------------------------------
//
// MuJoCo's pair functions report a contact set, not a force distribution: box-box and mesh-mesh
// clip the incident face by the reference face's side planes, and where an incident corner
// crosses a side plane it turns into the two cuts of its edges, at the corner's own point and
// depth. A penalty force summed over the set then doubles there (LEAP Hand's finger boxes: the
// implicit step's Newton stalled on the jump). The share makes the pair's force continuous as
// points split, merge, appear and leave. For the contacts c, j of one geom pair (one run of
// d->contact), with activation depth x (x = w - (dist - o), law.h) and point p:
//   a_j  = S(x_j / 2w)                      activity: 0 where the law's force starts, 1 where
//                                           the ramp s(x) is the penetration (S: the quintic
//                                           smoothstep on [0, 1], clamped)
//   K_cj = 1 - S(|p_c - p_j| / r)           closeness: 1 at one point, 0 from r apart
//   b_c  = sum_{j != c} a_j K_cj,   share_c = a_c / (a_c + b_c)   (1 for an inactive c: no force)
// Contacts farther than r from every active contact of their pair keep share 1 (the law is
// unchanged). A point that splits into k coincident copies (same a) gives each 1/k: the pair's
// force is unchanged. A contact that appears (a = 0) or leaves changes no other share. Coincident
// contacts of different depths share in proportion to their activity. What remains: where three or
// more points lie within r of each other but not at one point, a split changes the weights of the
// others by part of K (the sum is no longer exactly conserved); r is 0.1 of the smaller geom's
// least size (mjdiff_clusterRadius: a box's half width, a capsule's radius; planes and height
// fields have none), set from the sizes when the smooth model is made, so a geom's size
// parameter does not move it.
// Gradient (S' = 30 t^2 (1 - t)^2; u = |p_c - p_j| / r, e = (p_c - p_j) / |p_c - p_j|):
//   da_j/ddist_j = -S'(x_j / 2w) / 2w,   da_j/dw = S'(x_j / 2w) (w - x_j) / 2w^2
//   dK_cj/dp_c = -S'(u) e / r = -dK_cj/dp_j
//   share_a = b / (a_c + b)^2,  share_b = -a_c / (a_c + b)^2
//   d share / d dist_c = share_a da_c/ddist_c,   d share / d dist_j = share_b K_cj da_j/ddist_j
//   d share / d p_c = share_b sum_j a_j dK_cj/dp_c,   d share / d p_j = share_b a_j dK_cj/dp_j
//   d share / d w = share_a da_c/dw + share_b sum_j K_cj da_j/dw
// The force's derivatives add F_law d share (adjoint/forces_d.c, params_d.c, sensor_d.c).

// the share radius of a geom of type t and size sz: 0.1 of its least size (0: planes, height
// fields, and anything without a positive size)
#define MJDIFF_CLUSTER_FRACTION 0.1
mjtNum mjdiff_clusterRadius(int type, const mjtNum sz[3]) {
  int n = 0;
  switch (type) {
    case mjGEOM_SPHERE:
      n = 1;
      break;
    case mjGEOM_CAPSULE:
    case mjGEOM_CYLINDER:
      n = 2;
      break;
    case mjGEOM_ELLIPSOID:
    case mjGEOM_BOX:
    case mjGEOM_MESH:
      n = 3;
      break;
    default:
      return 0;
  }
  mjtNum least = 0;
  for (int i = 0; i < n; i++) {
    if (sz[i] > 0 && (least == 0 || sz[i] < least)) least = sz[i];
  }
  return MJDIFF_CLUSTER_FRACTION * least;
}

// quintic smoothstep S(t) on [0, 1], clamped, and its slope
static mjtNum smoothstep(mjtNum t, mjtNum* dt) {
  if (t <= 0 || t >= 1) {
    *dt = 0;
    return t <= 0 ? 0 : 1;
  }
  *dt = 30 * t * t * (1 - t) * (1 - t);
  return t * t * t * (10 - 15 * t + 6 * t * t);
}

static int samePair(const mjContact* a, const mjContact* b) {
  return compat_contactGeom1(a) == compat_contactGeom1(b) &&
         compat_contactGeom2(a) == compat_contactGeom2(b);
}

mjtNum mjdiff_contactShare(const mjModel* m, const mjData* d, const mjdiffModel* s, int i,
                           mjdiffShare* grad) {
  if (grad) {
    memset(grad, 0, sizeof(*grad));
    grad->first = i;
    grad->count = 1;
  }
  if (i < 0 || i >= d->ncon) return 1;  // not one of d's contacts (a copy): no share
  const mjContact* con = d->contact + i;
  int g1 = compat_contactGeom1(con), g2 = compat_contactGeom2(con);
  // the pair's run, at most MJDIFF_SHARE_MAX contacts around i
  int first = i, end = i + 1;
  // (a run of up to MJDIFF_SHARE_MAX contacts: every contact of it sees the whole run, so the
  // shares of coincident copies stay equal)
  while (first > 0 && i - first < MJDIFF_SHARE_MAX - 1 && samePair(d->contact + first - 1, con)) {
    first--;
  }
  while (end < d->ncon && end - first < MJDIFF_SHARE_MAX && samePair(d->contact + end, con)) end++;
  mjtNum r1 = s->geom_cluster[g1], r2 = s->geom_cluster[g2];
  mjtNum r = r1 > 0 && r2 > 0 ? mju_min(r1, r2) : mju_max(r1, r2);
  if (end - first < 2 || !(r > 0)) return 1;

  mjtNum prm[GP_COUNT];
  mjdiff_pairParams(s, g1, g2, prm);
  mjtNum w = prm[GP_WIDTH];
  mjtNum xc = mjdiff_contactDepth(m, con, w);
  if (xc <= 0) return 1;  // no force to share

  // activities and closeness
  mjtNum a[MJDIFF_SHARE_MAX] = {0}, dadx[MJDIFF_SHARE_MAX];
  mjtNum K[MJDIFF_SHARE_MAX], dK[MJDIFF_SHARE_MAX];
  mjtNum b = 0;
  for (int j = first; j < end; j++) {
    int k = j - first;
    mjtNum x = mjdiff_contactDepth(m, d->contact + j, w);
    a[k] = smoothstep(x / (2 * w), dadx + k);
    dadx[k] /= 2 * w;
    K[k] = dK[k] = 0;
    if (j == i) continue;
    mjtNum delta[3];
    mju_sub3(delta, con->pos, d->contact[j].pos);
    mjtNum dS, u = mju_norm3(delta) / r;
    K[k] = 1 - smoothstep(u, &dS);
    dK[k] = -dS / r;  // dK/d|p_c - p_j|
    b += a[k] * K[k];
  }
  mjtNum ac = a[i - first], sum = ac + b;
  mjtNum share = ac / sum;
  if (!grad) return share;

  // gradient (header)
  grad->first = first;
  grad->count = end - first;
  mjtNum sa = b / (sum * sum), sb = -ac / (sum * sum);
  for (int j = first; j < end; j++) {
    int k = j - first;
    mjtNum x = mjdiff_contactDepth(m, d->contact + j, w);
    mjtNum dadw = dadx[k] * (w - x) / w;  // da/dw = S'(x / 2w) (w - x) / 2w^2
    if (j == i) {
      grad->ddist[k] = -sa * dadx[k];
      grad->dwidth += sa * dadw;
      continue;
    }
    grad->ddist[k] = -sb * K[k] * dadx[k];
    grad->dwidth += sb * K[k] * dadw;
    if (dK[k] == 0 || a[k] == 0) continue;
    mjtNum e[3];
    mju_sub3(e, con->pos, d->contact[j].pos);
    mju_normalize3(e);
    for (int c = 0; c < 3; c++) {
      grad->dpos[3 * (i - first) + c] += sb * a[k] * dK[k] * e[c];
      grad->dpos[3 * k + c] = -sb * a[k] * dK[k] * e[c];
    }
  }
  for (int k = 0; k < grad->count && !grad->varies; k++) {
    grad->varies = grad->ddist[k] != 0 || grad->dpos[3 * k] != 0 || grad->dpos[3 * k + 1] != 0 ||
                   grad->dpos[3 * k + 2] != 0;
  }
  grad->varies = grad->varies || grad->dwidth != 0;
  if (grad->varies) {  // (read only with a gradient)
    mjdiffContactForce cf;
    contactLaw(m, d, s, con, &cf, grad->F, grad->T);
  }
  return share;
}

// smooth force of one contact (its law times its share); world force F and torque T on body2 at
// con->pos; 0 if inactive
static int contactForce(const mjModel* m, const mjData* d, const mjdiffModel* s,
                        const mjContact* con, mjdiffContactForce* cf, mjtNum F[3], mjtNum T[3]) {
  if (!contactLaw(m, d, s, con, cf, F, T)) return 0;
  mjtNum share = mjdiff_contactShare(m, d, s, (int)(con - d->contact), NULL);
  if (share != 1) {
    mju_scl3(F, F, share);
    mju_scl3(T, T, share);
    mju_scl3(cf->force, cf->force, share);
    mju_scl3(cf->torque, cf->torque, share);
  }
  return 1;
}

static void contactWrenches(const mjModel* m, const mjData* d, const mjdiffModel* s,
                            mjtNum* wrench) {
  for (int i = 0; i < d->ncon; i++) {
    const mjContact* con = d->contact + i;
    mjdiffContactForce cf;
    mjtNum F[3], T[3], fr = reach_force(m, s, con, NULL);
    int on = contactForce(m, d, s, con, &cf, F, T);
    if (!on && fr == 0) continue;
    if (fr != 0) mju_addToScl3(F, con->frame, fr);  // long-range term (reach.h)
    addWrench(m, d, wrench, m->geom_bodyid[compat_contactGeom2(con)], con->pos, F, T, 1);
    addWrench(m, d, wrench, m->geom_bodyid[compat_contactGeom1(con)], con->pos, F, T, -1);
  }
}

mjdiffStatus mjdiff_contactForce(const mjModel* m, const mjData* d, const mjdiffModel* s, int i,
                                 mjdiffContactForce* force) {
  if (!m || !d || !s || !force || i < 0 || i >= d->ncon) {
    return MJDIFF_ERR_ARGUMENT;
  }
  mjdiffStatus st = mjdiff_checkPair(m, s, NULL, 0);
  if (st != MJDIFF_OK) return st;
  mjtNum F[3], T[3];
  contactForce(m, d, s, d->contact + i, force, F, T);
  return MJDIFF_OK;
}

//---------------------------------- touch sensors -------------------------------------------------

// MuJoCo 2.2.2's rule (engine_sensor.c): a contact with normal force fn > 0 counts for a touch
// sensor if the site's body b is one of the contact's bodies and the ray from con->pos along n
// (reversed if b is the contact's second body) meets the site's volume (always when con->pos is
// inside it)
mjtNum mjdiff_touchForce(const mjModel* m, const mjData* d, const mjdiffModel* s, int i,
                         const mjContact* con) {
  int site = m->sensor_objid[i], b = m->site_bodyid[site];
  int b1 = m->geom_bodyid[compat_contactGeom1(con)], b2 = m->geom_bodyid[compat_contactGeom2(con)];
  if (b != b1 && b != b2) return 0;
  mjdiffContactForce cf;
  mjtNum F[3], T[3];
  if (!contactForce(m, d, s, con, &cf, F, T) || cf.force[0] <= 0) return 0;
  mjtNum ray[3];
  mju_scl3(ray, con->frame, b == b2 ? -1 : 1);
  mjtNum hit = mju_rayGeom(d->site_xpos + 3 * site, d->site_xmat + 9 * site,
                           m->site_size + 3 * site, con->pos, ray, m->site_type[site]);
  return hit >= 0 ? cf.force[0] : 0;
}

void mjdiff_smoothTouch(const mjModel* m, const mjData* d, const mjdiffModel* s,
                        mjtNum* sensordata) {
  int contacts = !DISABLED(m, mjDSBL_CONSTRAINT | mjDSBL_CONTACT) && !compat_passiveOff(m);
  for (int i = 0; i < m->nsensor; i++) {
    if (m->sensor_type[i] != mjSENS_TOUCH) continue;
    mjtNum sum = 0;
    for (int j = 0; contacts && j < d->ncon; j++) {
      sum += mjdiff_touchForce(m, d, s, i, d->contact + j);
    }
    sensordata[m->sensor_adr[i]] = sum;
  }
}

//---------------------------------- collision -----------------------------------------------------

// contacts of dynamic pairs beyond max(M_g1, M_g2) removed from d->contact (order kept): where
// MuJoCo 3 detected them within M_g1 + M_g2, so that both hosts keep 2.2's set (the dropped ones
// are beyond the contact width: no force)
static void dropBeyondMargin(const mjModel* m, mjData* d, const mjtNum* M, int adhesion) {
  int n = 0;
  for (int i = 0; i < d->ncon; i++) {
    const mjContact* con = d->contact + i;
    int g1 = compat_contactGeom1(con), g2 = compat_contactGeom2(con);
    int keep = g1 < 0 || g2 < 0 || mjdiff_pairIndex(m, g1, g2) >= 0 ||
               con->dist <= mju_max(M[g1], M[g2]);
    // a contact MuJoCo's own list would hold for a body transmission's count (no force here)
    for (int a = 0; adhesion && a < m->nu && !keep; a++) {
      keep = m->actuator_trntype[a] == mjTRN_BODY &&
             mjdiff_adhesionCounts(m, con, m->actuator_trnid[2 * a]);
    }
    if (keep && n != i) d->contact[n] = *con;
    n += keep;
  }
  d->ncon = n;
}

// the detection margin k_g of each geom (ngeom), so that every pair is detected within its laws'
// reach, incl + w_pair, incl the contact's includemargin (2.2: the larger user margin u; 3.x: their
// sum) and w_pair <= max(w_1, w_2) the pair's width, under the max rule max(k_1, k_2) the view
// emulates on both hosts. With c = 1 (2.2) or 2 (3.x), two rules hold:
//   by margin  k_g = c u_g + W for a geom with a user margin, else w_g (W the widest width):
//              the pair's larger-margin geom carries c max(u) + W;
//   by width   k_g = c max(u_g, U_g) + w_g, U_g the largest user margin among geoms no wider
//              than g: the pair's wider geom carries c max(u_1, u_2) + max(w_1, w_2).
// Both are w_g without user margins. "By margin" detects every margined geom at the widest width:
// on Unitree's A1 (MuJoCo Menagerie), whose feet's solimp width is 31 mm and whose geoms all have
// margin 1 mm, it found the thighs against the trunk 21-23 mm apart (23 contacts per step against
// MuJoCo's 3, the smooth step 6x the native one); "by width" leaves the thighs at 3 mm. The rule
// with the smaller sum is taken (either is exact; "by width" can be the larger where a narrow geom
// has a large margin). wu: 2 ngeom scratch ((width, margin) pairs, sorted by width).
static int byWidth(const void* a, const void* b) {
  mjtNum x = ((const mjtNum*)a)[0], y = ((const mjtNum*)b)[0];
  return x < y ? -1 : x > y;
}

static void detectionMargins(const mjModel* m, const mjdiffModel* s, int override, mjtNum widest,
                             mjtNum* wu, mjtNum* k) {
  int n = m->ngeom, any = 0;
  mjtNum c = COMPAT_MARGIN_SUM ? 2 : 1, sumMargin = 0, sumWidth = 0;
  for (int g = 0; g < n; g++) {
    mjtNum user = override ? m->opt.o_margin : m->geom_margin[g];
    wu[2 * g] = s->geom_param[GP_COUNT * g + GP_WIDTH];
    wu[2 * g + 1] = mju_max(user, 0);
    k[g] = user > 0 ? c * user + widest : wu[2 * g];
    sumMargin += k[g];
    any = any || user > 0;
  }
  if (!any) return;
  qsort(wu, (size_t)n, 2 * sizeof(mjtNum), byWidth);
  for (int i = 1; i < n; i++) wu[2 * i + 1] = mju_max(wu[2 * i + 1], wu[2 * i - 1]);  // prefix max
  // U_g: the prefix maximum at the last entry no wider than w_g (binary search)
  for (int pass = 0; pass < 2; pass++) {
    for (int g = 0; g < n; g++) {
      mjtNum w = s->geom_param[GP_COUNT * g + GP_WIDTH];
      int lo = 0, hi = n - 1;
      while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (wu[2 * mid] <= w) {
          lo = mid;
        } else {
          hi = mid - 1;
        }
      }
      mjtNum kg = c * wu[2 * lo + 1] + w;
      if (pass) {
        k[g] = kg;
      } else {
        sumWidth += kg;
      }
    }
    if (!(sumWidth < sumMargin)) return;
  }
}

void mjdiff_collide(const mjModel* m, mjData* d, const mjdiffModel* s) {
  if (DISABLED(m, COMPAT_DSBL_DETECT) || compat_passiveOff(m)) {
    d->ncon = 0;
    return;
  }
  mjdiffStackMark mark = compat_stackMark(d);

  // activation margins: at least the contact width of each geom (pair: of the pair), and the
  // long-range term's width while it is on. A geom with an MJCF margin: the laws act from the
  // contact's includemargin on (mjdiff_contactOffset), so detect within that plus the largest
  // width of any geom (the pair's width is one of its geoms' or their mean); on 3.x, which sums
  // the two margins, twice the margin (max(2 m1, 2 m2) >= m1 + m2 under the max rule the view
  // emulates)
  mjtNum* geom_margin = compat_stackAllocNum(d, m->ngeom);
  mjtNum* pair_margin = compat_stackAllocNum(d, m->npair > 0 ? m->npair : 1);
  int override = (m->opt.enableflags & mjENBL_OVERRIDE) != 0;
  mjtNum widest = 0;
  for (int i = 0; i < m->npair; i++) {  // each pair's margin: its user margin plus its width
    mjtNum p[GP_COUNT];
    mjdiff_pairParams(s, m->pair_geom1[i], m->pair_geom2[i], p);
    widest = mju_max(widest, p[GP_WIDTH]);
    pair_margin[i] = mju_max(override ? m->opt.o_margin : m->pair_margin[i], 0) + p[GP_WIDTH];
    if (reach_margin(s) > 0) pair_margin[i] = mju_max(pair_margin[i], reach_margin(s));
  }
  for (int g = 0; g < m->ngeom; g++) {
    widest = mju_max(widest, s->geom_param[GP_COUNT * g + GP_WIDTH]);
  }
  mjtNum* scratch = compat_stackAllocNum(d, 2 * (m->ngeom > 0 ? m->ngeom : 1));
  detectionMargins(m, s, override, widest, scratch, geom_margin);
  for (int g = 0; g < m->ngeom; g++) {
    if (reach_margin(s) > 0) geom_margin[g] = mju_max(geom_margin[g], reach_margin(s));
  }

  // MuJoCo's own detection on a view with the activation margins (3.x sums a pair's two margins:
  // compat_pairMargins, dropBeyondMargin)
  // (with body transmissions (adhesion) 3.x keeps the sums, so that the contacts MuJoCo's own
  // margins would report, which count towards the moment, are detected; dropBeyondMargin keeps them)
  int adhesion = mjdiff_hasBodyTransmission(m);
  int drop = adhesion ? COMPAT_MARGIN_SUM : compat_pairMargins(geom_margin, m->ngeom);
  mjModel view = *m;
  view.geom_margin = geom_margin;
  view.pair_margin = pair_margin;
  // under the override flag MuJoCo detects every pair within opt.o_margin alone (2.2 and 3.x),
  // which the laws then act beyond (from o_margin - gap on): widen it as the geoms' above
  if (override) {
    view.opt.o_margin = mju_max(m->opt.o_margin, 0) + widest;
    if (reach_margin(s) > 0) view.opt.o_margin = mju_max(view.opt.o_margin, reach_margin(s));
  }
  compat_viewBodyMargins(&view, geom_margin, compat_stackAllocNum(d, m->nbody));
  mj_collision(&view, d);
  if (drop) dropBeyondMargin(m, d, geom_margin, adhesion);

  // box-box face contacts: the full depth (the engine reports half of it; boxbox.c)
  mjdiff_boxBoxDepth(m, d);

  // exact geometry for the pairs MuJoCo collides with MPR (convex.c)
  mjdiff_convexContacts(m, d);

  compat_stackFree(d, mark);

  // the moments MuJoCo builds from the contacts (adhesion), from these contacts
  if (adhesion) mjdiff_bodyTransmissions(m, d);
}

//---------------------------------- body transmissions (adhesion) --------------------------------

// MuJoCo's moment of a body transmission (mj_transmission, mjTRN_BODY: adhesion actuators), the
// average over the contacts of body b of the contact normal's Jacobian, negated:
//   moment_i = -(1/N) sum_c n_c' (J_p(b2_c, p_c) - J_p(b1_c, p_c))
// over the N contacts in MuJoCo's list that touch b (in the gap or not; the pyramid's rows
// average to the normal's). MuJoCo computes it in mj_transmission, before the smooth model's
// contacts exist; mjdiff_bodyTransmissions recomputes it from them, counting a contact where
// MuJoCo's own detection would have reported it (compat_nativeReportMargin: 2.2 within the
// margin, 3.x within margin plus gap; an MJCF <pair>'s own, else the geoms' combined as the host
// does; o_margin under the override flag) between bodies that are not both welded to the world
// (MuJoCo marks those excluded, with no dofs). qfrc_actuator = moment' force then pulls each
// contact's bodies together at p_c along n_c with force / N. N changes as contacts come and go
// (MuJoCo's rule): the force jumps there.

int mjdiff_hasBodyTransmission(const mjModel* m) {
  for (int i = 0; i < m->nu; i++) {
    if (m->actuator_trntype[i] == mjTRN_BODY) return 1;
  }
  return 0;
}

int mjdiff_adhesionCounts(const mjModel* m, const mjContact* con, int b) {
  int g1 = compat_contactGeom1(con), g2 = compat_contactGeom2(con);
  if (g1 < 0 || g2 < 0) return 0;
  if (m->geom_bodyid[g1] != b && m->geom_bodyid[g2] != b) return 0;
  // MuJoCo counts every contact it reports (excluded in the gap or not) whose bodies have dofs
  int b1 = m->geom_bodyid[g1], b2 = m->geom_bodyid[g2];
  if (m->body_weldid[b1] == 0 && m->body_weldid[b2] == 0) return 0;
  return con->dist < compat_nativeReportMargin(m, g1, g2, mjdiff_pairIndex(m, g1, g2));
}

void mjdiff_bodyTransmissions(const mjModel* m, mjData* d) {
  int nv = m->nv;
  if (nv == 0 || !mjdiff_hasBodyTransmission(m)) return;
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* row = compat_stackAllocNum(d, 7 * nv);
  mjtNum *j1 = row + nv, *j2 = j1 + 3 * nv;
  for (int i = 0; i < m->nu; i++) {
    if (m->actuator_trntype[i] != mjTRN_BODY) continue;
    int b = m->actuator_trnid[2 * i], n = 0;
    mju_zero(row, nv);
    for (int c = 0; c < d->ncon; c++) {
      const mjContact* con = d->contact + c;
      if (!mjdiff_adhesionCounts(m, con, b)) continue;
      n++;
      int b1 = m->geom_bodyid[compat_contactGeom1(con)];
      int b2 = m->geom_bodyid[compat_contactGeom2(con)];
      mj_jac(m, d, j1, NULL, con->pos, b1);
      mj_jac(m, d, j2, NULL, con->pos, b2);
      for (int k = 0; k < nv; k++) {
        row[k] += con->frame[0] * (j2[k] - j1[k]) + con->frame[1] * (j2[nv + k] - j1[nv + k]) +
                  con->frame[2] * (j2[2 * nv + k] - j1[2 * nv + k]);
      }
    }
    if (n) mju_scl(row, row, -1.0 / n, nv);
    // 3.x's storage holds nv numbers for each body transmission (m->nJmom), so the row fits
    compat_setActuatorMoment(m, d, i, row);
    d->actuator_velocity[i] = mju_dot(row, d->qvel, nv);
  }
  compat_stackFree(d, mark);
}

//---------------------------------- equality constraints ------------------------------------------

// connect and weld: penalty spring-dampers between anchor points (and orientations)
//   e = p1 - p2,  F1 = -k e - c de/dt on body1 at p1,  -F1 on body2 at p2
//   weld: q_e = q_b1 * relpose * conj(q_b2), r = axis-angle(q_e) (world frame),
//         T1 = -ts (k r + c (w_b1 - w_b2)) on body1, -T1 on body2
static void bodyEqualities(const mjModel* m, const mjData* d, const mjdiffModel* s,
                           mjtNum* wrench) {
  mjtNum zero[3] = {0, 0, 0};
  for (int i = 0; i < m->neq; i++) {
    int type = m->eq_type[i];
    if (!compat_eqActive(m, d, i) || (type != mjEQ_CONNECT && type != mjEQ_WELD)) continue;
    mjtNum k, c, kr, cr;
    mjdiff_eqParams(s, i, 0, &k, &c);
    mjdiff_eqParams(s, i, 1, &kr, &cr);
    compatEq eq;
    compat_eqGeometry(m, i, &eq);
    int b[2] = {eq.b[0], eq.b[1]};
    const mjtNum* anchor[2] = {eq.anchor[0], eq.anchor[1]};
    const mjtNum* relpose = eq.weld ? eq.relpose : NULL;
    mjtNum ts = eq.torquescale;

    // anchor points and their velocities
    mjtNum pos[2][3], lin[2][3], ang[2][3];
    for (int j = 0; j < 2; j++) {
      mju_rotVecMat(pos[j], anchor[j], d->xmat + 9 * b[j]);
      mju_addTo3(pos[j], d->xpos + 3 * b[j]);
      pointVelocity(m, d, b[j], pos[j], lin[j], ang[j]);
    }

    // translation
    mjtNum F[3];
    for (int j = 0; j < 3; j++) {
      F[j] = -k * (pos[0][j] - pos[1][j]) - c * (lin[0][j] - lin[1][j]);
    }
    addWrench(m, d, wrench, b[0], pos[0], F, zero, 1);
    addWrench(m, d, wrench, b[1], pos[1], F, zero, -1);

    // rotation
    if (type == mjEQ_WELD) {
      mjtNum q[4], qe[4], neg2[4], r[3], T[3];
      mju_mulQuat(q, d->xquat + 4 * b[0], relpose);
      mju_negQuat(neg2, d->xquat + 4 * b[1]);
      mju_mulQuat(qe, q, neg2);
      mju_quat2Vel(r, qe, 1);
      for (int j = 0; j < 3; j++) {
        T[j] = -ts * (kr * r[j] + cr * (ang[0][j] - ang[1][j]));
      }
      addWrench(m, d, wrench, b[0], pos[0], zero, T, 1);
      addWrench(m, d, wrench, b[1], pos[0], zero, T, -1);
    }
  }
}

// polynomial of a joint or tendon equality: y = sum c_i dx^i, dy/ddx in *dy
static mjtNum eqPoly(const mjtNum* coef, mjtNum dx, mjtNum* dy) {
  *dy = coef[1] + dx * (2 * coef[2] + dx * (3 * coef[3] + dx * 4 * coef[4]));
  return coef[0] + dx * (coef[1] + dx * (coef[2] + dx * (coef[3] + dx * coef[4])));
}

// joint and tendon equalities: r = x1 - x1_0 - poly(x2 - x2_0), f = -k r - c dr/dt
//   generalised: +f along x1, -f poly'(x2 - x2_0) along x2
static void scalarEqualities(const mjModel* m, const mjData* d, const mjdiffModel* s,
                             mjtNum* qfrc) {
  for (int i = 0; i < m->neq; i++) {
    int type = m->eq_type[i];
    if (!compat_eqActive(m, d, i) || (type != mjEQ_JOINT && type != mjEQ_TENDON)) continue;
    mjtNum k, c;
    mjdiff_eqParams(s, i, 0, &k, &c);
    int o1 = m->eq_obj1id[i], o2 = m->eq_obj2id[i];
    mjtNum x1, v1, x2 = 0, v2 = 0;
    if (type == mjEQ_JOINT) {
      x1 = d->qpos[m->jnt_qposadr[o1]] - m->qpos0[m->jnt_qposadr[o1]];
      v1 = d->qvel[m->jnt_dofadr[o1]];
      if (o2 >= 0) {
        x2 = d->qpos[m->jnt_qposadr[o2]] - m->qpos0[m->jnt_qposadr[o2]];
        v2 = d->qvel[m->jnt_dofadr[o2]];
      }
    } else {
      x1 = d->ten_length[o1] - m->tendon_length0[o1];
      v1 = d->ten_velocity[o1];
      if (o2 >= 0) {
        x2 = d->ten_length[o2] - m->tendon_length0[o2];
        v2 = d->ten_velocity[o2];
      }
    }
    mjtNum dpoly, poly = eqPoly(m->eq_data + mjNEQDATA * i, x2, &dpoly);
    if (o2 < 0) dpoly = 0;
    mjtNum r = x1 - (o2 >= 0 ? poly : m->eq_data[mjNEQDATA * i]);
    mjtNum f = -k * r - c * (v1 - dpoly * v2);
    if (type == mjEQ_JOINT) {
      qfrc[m->jnt_dofadr[o1]] += f;
      if (o2 >= 0) qfrc[m->jnt_dofadr[o2]] -= f * dpoly;
    } else {
      compat_addTendonForce(m, d, o1, f, qfrc);
      if (o2 >= 0) compat_addTendonForce(m, d, o2, -f * dpoly, qfrc);
    }
  }
}

//---------------------------------- limits and friction loss --------------------------------------

// limit force on a scalar coordinate x with velocity v in [lo, hi]: > 0 pushes x up
//   lower: f(k s(xl), -c s'(xl) v),  upper: -f(k s(xu), c s'(xu) v)
//   xl = w - (x - lo), xu = w - (hi - x)
static mjtNum limitForce(const mjtNum law[EP_COUNT], mjtNum x, mjtNum v, mjtNum lo, mjtNum hi) {
  mjtNum k = law[EP_STIFFNESS], w = law[EP_WIDTH], c = law[EP_DAMPING];
  mjtNum f = 0, ds, sx;
  mjtNum xl = w - (x - lo), xu = w - (hi - x);
  if (xl > 0) {
    sx = law_ramp(xl, w, &ds);
    f += law_damped(k * sx, -c * ds * v, NULL, NULL);
  }
  if (xu > 0) {
    sx = law_ramp(xu, w, &ds);
    f -= law_damped(k * sx, c * ds * v, NULL, NULL);
  }
  return f;
}

// friction loss: -floss reg(v / v_f)
static mjtNum lossForce(mjtNum floss, mjtNum v, mjtNum speed) {
  mjtNum u = v / speed, r;
  law_regular(&r, &u, 1);
  return -floss * r;
}

static void limitsAndLoss(const mjModel* m, const mjData* d, const mjdiffModel* s, mjtNum* qfrc) {
  mjtNum law[EP_COUNT];

  // joint limits
  if (!DISABLED(m, mjDSBL_LIMIT)) {
    for (int j = 0; j < m->njnt; j++) {
      if (!m->jnt_limited[j]) continue;
      int qa = m->jnt_qposadr[j], da = m->jnt_dofadr[j];
      const mjtNum* range = m->jnt_range + 2 * j;
      mjdiff_limitParams(s, 0, j, law);
      if (m->jnt_type[j] == mjJNT_HINGE || m->jnt_type[j] == mjJNT_SLIDE) {
        qfrc[da] += limitForce(law, d->qpos[qa], d->qvel[da], range[0], range[1]);
      } else if (m->jnt_type[j] == mjJNT_BALL) {
        // angle theta = |axis-angle(q)|, upper limit only: torque -f axis (local frame)
        mjtNum r[3];
        mju_quat2Vel(r, d->qpos + qa, 1);
        mjtNum theta = mju_norm3(r);
        if (theta <= 0 || law[EP_WIDTH] - (range[1] - theta) <= 0) continue;
        mjtNum axis[3] = {r[0] / theta, r[1] / theta, r[2] / theta};
        mjtNum f = -limitForce(law, theta, mju_dot3(axis, d->qvel + da), -mjMAXVAL, range[1]);
        for (int i = 0; i < 3; i++) qfrc[da + i] -= f * axis[i];
      }
    }

    // tendon limits
    for (int i = 0; i < m->ntendon; i++) {
      if (!m->tendon_limited[i]) continue;
      const mjtNum* range = m->tendon_range + 2 * i;
      mjdiff_limitParams(s, 1, i, law);
      mjtNum f = limitForce(law, d->ten_length[i], d->ten_velocity[i], range[0], range[1]);
      if (f != 0) compat_addTendonForce(m, d, i, f, qfrc);
    }
  }

  // friction loss
  if (!DISABLED(m, mjDSBL_FRICTIONLOSS)) {
    for (int j = 0; j < m->nv; j++) {
      if (m->dof_frictionloss[j] > 0) {
        qfrc[j] += lossForce(m->dof_frictionloss[j], d->qvel[j], mjdiff_lossSpeed(s, 0, j));
      }
    }
    for (int i = 0; i < m->ntendon; i++) {
      if (m->tendon_frictionloss[i] > 0) {
        mjtNum f = lossForce(m->tendon_frictionloss[i], d->ten_velocity[i],
                             mjdiff_lossSpeed(s, 1, i));
        compat_addTendonForce(m, d, i, f, qfrc);
      }
    }
  }
}

//---------------------------------- all forces ----------------------------------------------------

void mjdiff_addForces(const mjModel* m, mjData* d, const mjdiffModel* s, mjtNum* qfrc) {
  // smooth forces are delivered as passive forces: MuJoCo skips mjcb_passive (3.x: plugins) when passive
  // forces are disabled, and the direct step agrees with the adapter
  if (DISABLED(m, mjDSBL_CONSTRAINT) || compat_passiveOff(m)) return;
  int contacts = !DISABLED(m, mjDSBL_CONTACT) && d->ncon > 0;
  int bodyeq = 0;
  if (!DISABLED(m, mjDSBL_EQUALITY)) {
    for (int i = 0; i < m->neq && !bodyeq; i++) {
      bodyeq = m->eq_type[i] == mjEQ_CONNECT || m->eq_type[i] == mjEQ_WELD;
    }
  }

  // forces through body wrenches
  if (contacts || bodyeq) {
    mjdiffStackMark mark = compat_stackMark(d);
    mjtNum* wrench = compat_stackAllocNum(d, 6 * m->nbody);
    mju_zero(wrench, 6 * m->nbody);
    if (contacts) contactWrenches(m, d, s, wrench);
    if (bodyeq) bodyEqualities(m, d, s, wrench);
    wrenchToQfrc(m, d, wrench, qfrc);
    compat_stackFree(d, mark);
  }

  // forces on scalar coordinates
  if (!DISABLED(m, mjDSBL_EQUALITY)) scalarEqualities(m, d, s, qfrc);
  limitsAndLoss(m, d, s, qfrc);
}
