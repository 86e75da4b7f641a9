// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Jacobians of the smooth step, from the continuous-time derivatives of forces_d.c and rne_d.c.
//
// Continuous time at a state X = (q, v, a) with controls u (acc: MuJoCo's qacc):
//   H acc = f(q, v, a, u) - c(q, v),   H = M(q) (RK4 stages) or M(q) + h B (Euler, implicit damping)
//   H d acc = (DfDq - DIDDq) dq + (DfDv - DIDDv) dv + DfDa da + DfDu du
//   with ID(q, v, acc) = M(q) acc + c(q, v) differentiated at the acc that solves H acc = f - c
//   (for Euler the h B part is constant: d(H acc) = dM acc + H d acc).
//   adot = g(a, u):  d adot = DadotDa da + DadotDu du
//
// Position update q' = q (+) delta, per joint (hinge, slide: q + delta; ball, free rotation:
// q exp(delta); free translation: world-frame add):
//   dq' = Phi(delta) dq + Psi(delta) d delta,  Phi = R(delta)' (= exp(-[delta]x)), Psi = J_r(delta)
//   (identity for scalar joints and free translations), J_r the right Jacobian of SO(3).
//
// Euler (mj_Euler):  v' = v + h acc,  q' = q (+) h v',  a' = clip(a + h adot)
//   Dv'/DX = [0 I 0] + h Dacc/DX,  Dq'/DX = Phi(h v') [I 0 0] + h Psi(h v') Dv'/DX
//   Da'/DX = [0 0 I] + h Dadot/DX  (rows of clipped activations: zero)
// RK4 (MuJoCo's tableau A, B): X_i = X_0 (+) h sum_j A_ij K_j, K_j = (v_j, acc_j, adot_j) at X_j
//   DX_i/DX_0 = [Phi(dq_i) [I 0 0] + h Psi(dq_i) sum_j A_ij Dv_j ; [0 I 0] + h sum_j A_ij DK_j]
//   DK_j = (Dv_j, Dacc(X_j) DX_j/DX_0, Dadot(X_j) DX_j/DX_0); final X' likewise with B.
// Transposes: VJP = A' l, B' l (products with the full matrices here); JVP = A dx + B du.
//
// Implicit smooth step (plugin/implicit.c; opt.integrator = MJDIFF_INT_IMPLICIT): at the converged
// v', with acc = (v' - v)/h, q' = q (+) h v', f_o the forces but the smooth ones (at X) and f_s the
// smooth ones (at X' = (q', v')):
//   H(q) acc + c(q, v) = f_o(q, v, a, u) + f_s(q', v')      (H = M + h B as Euler)
// Differentiating (the implicit function theorem; no second derivatives), with
// Dq', Dv' = d f_s/dq, d f_s/dv at X' and dq' = Phi dq + h Psi dv', dv' = dv + h dacc
// (Phi, Psi at h v'):
//   N dacc = (Df_o/Dq - DID/Dq + Dq' Phi) dq + (Df_o/Dv - DID/Dv + h Dq' Psi + Dv') dv
//            + Df_o/Da da + Df_o/Du du + (DrDp_o(X) + DrDp_s(X')) dp
//   N = H - h Dv' - h^2 Dq' Psi        (dense, non-symmetric: LU)
// (ID at acc; parameters split by the forces they act through), then v', q', a' as for Euler.
// VJP: nu = N^-T (h mu) in place of H^-1 (h mu); JVP: dacc = N^-1 X t. Sensors read the forward
// pass at X (explicit acc, H = M) as before. The converged step is checked against finite
// differences; Newton's own tolerance (implicit_tol) bounds how far the two can differ.
//
// Substeps (mjdiff_substepCount n > 1, explicit step): x' = F_{n-1}(.. F_0(x_0, u, p) ..), each
// F_k the step above at h/n from x_k, with u, p (and qfrc_applied) held. By the chain rule, with
// [A_k B_k P_k] the substep's Jacobian at x_k:
//   A = A_{n-1} .. A_0,   [B P] = sum_k A_{n-1} .. A_{k+1} [B_k P_k]
//   forward:  T_1 = [A_0 B_0 P_0],  T_{k+1} = A_k T_k + [0 B_k P_k]          (the Jacobian, JVP)
//   adjoint:  l_n = l,  l_k = A_k' l_{k+1},  adj_[u p] = sum_k [B_k P_k]' l_{k+1},  adj_x = l_0
//   applied force f held over the step: adj_f = sum_k (adjoint of f in F_k at l_{k+1})
// The x_k are walked again from x_0 (bit for bit mjdiff_step's). Under Euler one forward pass at
// each x_k serves both its integration and its derivatives (a forward sweep; the VJP keeps each
// substep's [A_k B_k P_k]-defining parts: qvel, act, act_dot, acc, X, Dadot and the factor of H,
// and pairs them backwards), n + 1 forward passes in all. Sensors read x_0 only.

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/adjoint.h>
#include <mjdiff/linalg.h>
#include <mjdiff/params.h>

#include "compat.h"
#include "derivative.h"
#include "internal.h"
#include "params_internal.h"

struct mjdiffStepDeriv_ {
  const mjModel* m;            // model and smooth model this workspace was made for
  const mjdiffModel* s;
  const mjdiffParams* p;       // selected model parameters, or NULL
  int nv, na, nu, np, ndx;
  int nin;                     // inputs beyond the state: controls then parameters (nu + np)
  mjtNum* DfDq;                // force derivatives at one state (nv x nv, nv x nv, nv x na, nv x nu)
  mjtNum* DfDv;
  mjtNum* DfDa;
  mjtNum* DfDu;
  mjtNum* DadotDa;             // (na x na), (na x nu)
  mjtNum* DadotDu;
  mjtNum* DrDp;                // (nv x np), (na x np) parameter derivatives at one state
  mjtNum* DadotDp;
  mjtNum* DidDq;               // (nv x nv) x 2
  mjtNum* DidDv;
  mjtNum* RhsT;                // right-hand sides, one per row ((ndx + nu) x nv)
  mjtNum* X;                   // (nv x (ndx + nu)): unsolved right-hand sides, H Dacc = X
  mjtNum* Dacc;                // (nv x (ndx + nu)): qacc derivative in [X, u] at one state
  mjtNum* Dadot;               // (na x (ndx + nu))
  mjtNum* H;                   // (compat_massSize) factor of M + h B
  mjtNum* stage;               // RK4: per stage DX_i (ndx x (ndx + nu)) and DK_i ((ndx) x (ndx+nu))
  mjtNum* AB;                  // (ndx x (ndx + nu)) the step Jacobian [A B]
  mjtNum* state;               // saved qpos, qvel, act, time (nq + nv + na + 1)
  mjtNum* acc;                 // (nv) the acceleration of the Euler step
  mjtNum* tmp;                 // (ndx + nu) scratch
  mjtNum* tmp2;                // (ndx + nu) scratch
  int badContact;              // first contact without a geometry Jacobian in this call, or -1
  int badSensor;               // first sensor without a derivative in this call, or -1
  int badTendon, tendonCause;  // first tendon without a derivative (tendon_d.c), or -1; its code
  size_t bytes;                // memory held
  mjtNum* DsDx;                // (nsensordata x (ndx + nu)), (nsensordata x nv) sensor derivatives
  mjtNum* DsDacc;
  // implicit step: smooth-force derivatives at X' (nv x nv each), their parameter columns
  // (nv x np), the LU of N (nv x nv) and its pivots (nv), v' (nv)
  mjtNum* DsQ;
  mjtNum* DsV;
  mjtNum* DrDpS;
  mjtNum* N;
  mjtNum* piv;
  mjtNum* vnext;
  mjtNum* vhint;               // (nv) Newton's first iterate for the next call, if hint
  int hint;
  mjtNum* qfrcAdj;             // (nv) adjoint of qfrc_applied of the last VJP (step or sensors)
  int qfrcOk;                  // 1 if qfrcAdj holds it (Euler and implicit VJPs; not RK4)
  int badEnd[2];               // geoms of a contact at X' without a geometry Jacobian, or -1
  mjdiffDesignScratch* design; // geometry parameters' scratch (design_d.c), or NULL
  mjdiffSensorParamScratch* sensp;  // the readings' direct parameter columns (sensor_p.c), or NULL
  mjtNum* Qs;                  // (nsensordata x np) with sensp: those columns
  int badSensorParam;          // 1 if they could not be evaluated in this call
  // substeps (mjdiff_substepCount > 1): the products chained over the substeps
  int nsub;                    // most substeps this workspace holds (the model's at make time)
  mjtNum* subState;            // (nslot x (nq + nv + na + 1)) the substeps' start states (RK4's
                               // walk), or x_0, x_k and x_{k+1} (substepsSweep), or x_0 and a
                               // split implicit step's states (nslot = stateSlots)
  mjtNum* chain;               // (ndx x (ndx + nu + np)) x 2: the chained [A B P] and scratch,
                               // then (ndx x ndx): a substep's A, contiguous for the product
  mjtNum* subIn;               // (ndx + nu + np) x 3: the running input, output, sum
  mjtNum* qfrcSum;             // (nv) the applied force's adjoint summed over the substeps
  mjtNum* rec;                 // (nsub - 1) x recordSize: substeps 1.. n-1's records (Euler VJP)
  mjtNum* pieceH;              // (2^MJDIFF_MAX_SPLIT) a split implicit step's timesteps
  int chained;                 // 1 if w->chain is held (substeps, or implicit at make time)
  int newtonFailed;            // 1 if the last implicit derivative's Newton solve failed
  int newtonRoot;              // 1 if it converged (w->vnext its root)
};

static size_t recordSize(const mjModel* m, int ncol);

// slots of saved states: the substeps' walk (nsub) or sweep (3), or x_0 and a split implicit
// step's states (1 + 2^MJDIFF_MAX_SPLIT + 1)
static int stateSlots(int nsub) {
  int split = 2 + (1 << MJDIFF_MAX_SPLIT);
  return nsub + 2 > split ? nsub + 2 : split;
}

// how the step's acceleration derivative is solved: H = M (MuJoCo's factor), M + h B (w->H),
// or the implicit step's N (w->N, LU)
enum { SOLVE_M = 0, SOLVE_MHB = 1, SOLVE_N = 2 };

//---------------------------------- SO(3) helpers ------------------------------------------------

// R = exp([r]x) and J = J_r(r) (right Jacobian)
static void so3(const mjtNum r[3], mjtNum R[9], mjtNum J[9]) {
  mjtNum th = mju_norm3(r), K[9] = {0, -r[2], r[1], r[2], 0, -r[0], -r[1], r[0], 0}, K2[9];
  mju_mulMatMat(K2, K, K, 3, 3, 3);
  mjtNum a, b, c;  // sin/th, (1-cos)/th^2, (th - sin)/th^3
  if (th < 1e-4) {
    mjtNum t2 = th * th;
    a = 1 - t2 / 6;
    b = 0.5 - t2 / 24;
    c = 1.0 / 6 - t2 / 120;
  } else {
    a = sin(th) / th;
    b = (1 - cos(th)) / (th * th);
    c = (th - sin(th)) / (th * th * th);
  }
  for (int i = 0; i < 9; i++) {
    mjtNum I = (i % 4 == 0);
    if (R) R[i] = I + a * K[i] + b * K2[i];
    if (J) J[i] = I - b * K[i] + c * K2[i];
  }
}

// out (nv x ncol) = Phi(delta) X + Psi(delta) Y, joint by joint (X or Y may be NULL: zero)
static void integrateJacobian(const mjModel* m, const mjtNum* delta, const mjtNum* X,
                              const mjtNum* Y, int ncol, mjtNum* out) {
  for (int j = 0; j < m->njnt; j++) {
    int da = m->jnt_dofadr[j], type = m->jnt_type[j], nlin = 0;
    if (type == mjJNT_HINGE || type == mjJNT_SLIDE) nlin = 1;
    if (type == mjJNT_FREE) nlin = 3;
    for (int i = da; i < da + nlin; i++) {
      for (int c = 0; c < ncol; c++) {
        out[ncol * i + c] = (X ? X[ncol * i + c] : 0) + (Y ? Y[ncol * i + c] : 0);
      }
    }
    if (type != mjJNT_BALL && type != mjJNT_FREE) continue;
    int ra = da + nlin;
    mjtNum R[9], J[9];
    so3(delta + ra, R, J);
    for (int i = 0; i < 3; i++) {
      for (int c = 0; c < ncol; c++) {
        mjtNum v = 0;
        for (int k = 0; k < 3; k++) {
          if (X) v += R[3 * k + i] * X[ncol * (ra + k) + c];  // R'
          if (Y) v += J[3 * i + k] * Y[ncol * (ra + k) + c];
        }
        out[ncol * (ra + i) + c] = v;
      }
    }
  }
}

void mjdiff_integrateJacobian(const mjModel* m, const mjtNum* delta, const mjtNum* X,
                              const mjtNum* Y, int ncol, mjtNum* out) {
  integrateJacobian(m, delta, X, Y, ncol, out);
}

void mjdiff_mulIntegrateRight(const mjModel* m, const mjtNum* delta, const mjtNum* A, int nrow,
                              int psi, mjtNum* out) {
  int nv = m->nv;
  if (out != A) mju_copy(out, A, nrow * nv);
  for (int j = 0; j < m->njnt; j++) {
    int type = m->jnt_type[j];
    if (type != mjJNT_BALL && type != mjJNT_FREE) continue;
    int ra = m->jnt_dofadr[j] + (type == mjJNT_FREE ? 3 : 0);
    mjtNum R[9], J[9];
    so3(delta + ra, R, J);
    for (int r = 0; r < nrow; r++) {
      // row r's block: Psi's is J, so (a' J)_k = sum_i a_i J_ik; Phi's is R', so (a' R')_k =
      // (R a)_k
      const mjtNum* a = A + (size_t)nv * r + ra;
      mjtNum v[3];
      if (psi) {
        for (int k = 0; k < 3; k++) v[k] = a[0] * J[k] + a[1] * J[3 + k] + a[2] * J[6 + k];
      } else {
        for (int k = 0; k < 3; k++) v[k] = R[3 * k] * a[0] + R[3 * k + 1] * a[1] + R[3 * k + 2] * a[2];
      }
      mju_copy3(out + (size_t)nv * r + ra, v);
    }
  }
}

// the transpose for one vector: outX = Phi(delta)' lam, outY = Psi(delta)' lam (nv each)
static void integrateJacobianT(const mjModel* m, const mjtNum* delta, const mjtNum* lam,
                               mjtNum* outX, mjtNum* outY) {
  for (int j = 0; j < m->njnt; j++) {
    int da = m->jnt_dofadr[j], type = m->jnt_type[j], nlin = 0;
    if (type == mjJNT_HINGE || type == mjJNT_SLIDE) nlin = 1;
    if (type == mjJNT_FREE) nlin = 3;
    for (int i = da; i < da + nlin; i++) outX[i] = outY[i] = lam[i];
    if (type != mjJNT_BALL && type != mjJNT_FREE) continue;
    int ra = da + nlin;
    mjtNum R[9], J[9];
    so3(delta + ra, R, J);
    mju_mulMatVec(outX + ra, R, lam + ra, 3, 3);
    mju_mulMatTVec(outY + ra, J, lam + ra, 3, 3);
  }
}

//---------------------------------- sparse LDL of M + h B ---------------------------------------

// H = L' D L in the host's layout of M (compat.h), in place
static void factorLDL(const mjModel* m, mjtNum* H) {
  compat_massFactor(m, H);
}

// x = H^-1 x for n vectors (rows of x, nv each)
static void solveLDL(const mjModel* m, const mjtNum* H, mjtNum* x, int n) {
  compat_massSolve(m, H, x, n);
}

static int hasDamping(const mjModel* m) {
  return mjdiff_hasDampB(m);
}

// w->Dadot (na x (ndx + nin)) from DadotDa, DadotDu, DadotDp: the activations' rows in [x u p]
static void dadotRows(mjdiffStepDeriv* w) {
  int nv = w->nv, na = w->na, nu = w->nu, np = w->np, ndx = w->ndx, ncol = ndx + w->nin;
  for (int r = 0; r < na; r++) {
    mjtNum* row = w->Dadot + ncol * r;
    mju_zero(row, ncol);
    for (int c = 0; c < na; c++) row[2 * nv + c] = w->DadotDa[na * r + c];
    for (int c = 0; c < nu; c++) row[ndx + c] = w->DadotDu[nu * r + c];
    for (int c = 0; c < np; c++) row[ndx + nu + c] = w->DadotDp[(size_t)np * r + c];
  }
}

// record a failed force derivative (mjdiff_forceDerivative's code) of the state in d
static void noteBad(mjdiffStepDeriv* w, const mjModel* m, mjData* d, int bad) {
  if (bad && -1 - bad >= d->ncon && w->badTendon < 0) {  // a tendon: its cause at this state
    w->badTendon = -1 - bad - d->ncon;
    w->tendonCause = mjdiff_tendonDerivative(m, d, w->badTendon, NULL, NULL, NULL);
  } else if (bad && -1 - bad < d->ncon && w->badContact < 0) {
    w->badContact = -1 - bad;
  }
}

//---------------------------------- continuous-time derivatives ----------------------------------

// MuJoCo 3's implicitfast block of each standalone free body (plugin/step.c): its rows of the step
// solve A_b dacc_b = X_b - h d(G_b acc_b)/dx, A_b = H_bb + h G_b, where the solve of all rows takes
// H (block-diagonal: the body's tree shares no entry with the others), so X_b is replaced by
// H_bb A_b^-1 (X_b - h d(G_b acc_b)/dx): H^-1 gives A_b^-1 (...) on those rows, for the Jacobian,
// the VJP and the JVP alike. With a = acc_b's rotational part and om the body's angular velocity:
// d(G a)/d om = G(a) (the v columns of the rotational dofs), and the linear rows' -R [u_a]x in
// the body's rotation (the q columns of the rotational tangent). The applied force's adjoint
// (qfrcAdj) is H^-1, not A^-1, on those rows: not offered (w->qfrcOk 0, as under RK4).

// X_b -= h d(G_b a)/dx for body b's block at d's state, a = acc_b's rotational part (above), and
// in the columns of the body's own mass, inertia and com (plugin/step.c, freeBiasParam) and of
// the geometry parameters its inertials follow
static void blockChange(const mjModel* m, mjData* d, mjdiffStepDeriv* w, int b,
                        const mjtNum* acc) {
  int nv = w->nv, ncol = w->ndx + w->nin, adr = m->jnt_dofadr[m->body_jntadr[b]];
  int pcol = w->ndx + w->nu;
  mjtNum h = mjdiff_timestep(m, w->s), Gv[18], Dq[9];
  const mjtNum *om = d->qvel + adr + 3, *a = acc + adr + 3;
  mjdiff_freeBiasG(m, d, b, a, Gv);
  mjdiff_freeBiasLinQ(m, d, b, om, a, Dq);
  for (int r = 0; r < 6; r++) {
    mjtNum* row = w->X + (size_t)ncol * (adr + r);
    for (int k = 0; k < 3; k++) {
      if (r < 3) row[adr + 3 + k] -= h * Dq[3 * r + k];
      row[nv + adr + 3 + k] -= h * Gv[3 * r + k];
    }
  }
  int np = w->p ? w->p->n : 0;
  for (int i = 0; i < np; i++) {
    const paramEntry* e = w->p->entry + i;
    int kind = e->kind == PK_BODY_MASS ? 0 : e->kind == PK_BODY_INERTIA ? 1 :
               e->kind == PK_BODY_IPOS ? 2 : -1;
    if (kind < 0 || e->id != b) continue;
    mjtNum dGa[6];
    mjdiff_freeBiasParamChange(m, d, b, kind, e->comp, om, a, dGa);
    for (int r = 0; r < 6; r++) w->X[(size_t)ncol * (adr + r) + pcol + i] -= h * dGa[r];
  }

  // geometry parameters, where the body's inertials follow its geoms: through the compile map
  // J = d(mass, ipos, T)/dp (design_d.c), dGa/dp = sum_q dGa/dq J_q
  if (!np || !w->p->design) return;
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* Jq = compat_stackAllocNum(d, 10 * (size_t)np);
  // (-1: the inertials do not follow the geoms, J zero; -2, over 64 geoms: refused,
  // freeBlockParams)
  if (mjdiff_designInertialJacobian(m, w->p, b, Jq) == 0) {
    mjtNum dq[10][6];
    mjdiff_freeBiasParamChange(m, d, b, 0, 0, om, a, dq[0]);
    for (int k = 0; k < 3; k++) mjdiff_freeBiasParamChange(m, d, b, 2, k, om, a, dq[1 + k]);
    for (int k = 0; k < 6; k++) mjdiff_freeBiasParamChange(m, d, b, 3, k, om, a, dq[4 + k]);
    for (int i = 0; i < np; i++) {
      if (!PK_IS_DESIGN(w->p->entry[i].kind)) continue;
      for (int r = 0; r < 6; r++) {
        mjtNum sum = 0;
        for (int q = 0; q < 10; q++) sum += dq[q][r] * Jq[(size_t)np * q + i];
        w->X[(size_t)ncol * (adr + r) + pcol + i] -= h * sum;
      }
    }
  }
  compat_stackFree(d, mark);
}

// the blocks' rows of X (above); B: mjdiff_dampB at d's state
static void freeBlockRows(const mjModel* m, mjData* d, mjdiffStepDeriv* w, const mjtNum* B,
                          const mjtNum* acc) {
  int ncol = w->ndx + w->nin;
  mjtNum h = mjdiff_timestep(m, w->s);
  for (int b = 1; b < m->nbody; b++) {
    if (!mjdiff_freeBlockBody(m, b)) continue;
    int adr = m->jnt_dofadr[m->body_jntadr[b]], piv[6];
    mjtNum Hbb[36], A[36], y[6];
    mjdiff_freeBlock(m, d, b, h, B, Hbb, A);
    if (mjdiff_luFactor(6, A, piv)) continue;  // (the forward step left such a block as solved)
    blockChange(m, d, w, b, acc);
    for (int c = 0; c < ncol; c++) {
      for (int r = 0; r < 6; r++) y[r] = w->X[(size_t)ncol * (adr + r) + c];
      mjdiff_luSolve(6, A, piv, y);
      for (int r = 0; r < 6; r++) {
        w->X[(size_t)ncol * (adr + r) + c] = mju_dot(Hbb + 6 * r, y, 6);
      }
    }
  }
}

// the same blocks under the implicit smooth step, whose N (dense) takes them directly: with
// G_b at the start state X (d), N_b += h [0 G_b] and X_b -= h d(G_b acc_b)/dx, acc = (v' - v) / h
// (plugin/implicit.c solves A (v' - v) = h (F_e + f_s) with A = H + h G)
static void freeBlockImplicit(const mjModel* m, mjData* d, mjdiffStepDeriv* w,
                              const mjtNum* acc) {
  int nv = w->nv;
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* Gr = compat_stackAllocNum(d, 3 * nv);
  int* badr = (int*)compat_stackAllocNum(d, nv);
  if (mjdiff_freeBlockRows(m, d, Gr, badr)) {  // (the Newton matrix's, plugin/implicit.c)
    mjdiff_freeBlockAddDense(nv, Gr, badr, mjdiff_timestep(m, w->s), w->N);
    for (int b = 1; b < m->nbody; b++) {
      if (mjdiff_freeBlockBody(m, b)) blockChange(m, d, w, b, acc);
    }
  }
  compat_stackFree(d, mark);
}

// at the state in d after the smooth forward pass: the acceleration the step uses (acc), the
// unsolved right-hand sides X = [DfDq - DIDDq, DfDv - DIDDv, DfDa, DfDu] (w->X, nv x (ndx+nu)) with
// H Dacc = X, and Dadot (na x (ndx+nu)), in the layout [dq dv da du]. euler: H = M + h B (factor in
// w->H), else H = M (MuJoCo's factor in d). Returns 1 if H = M + h B.
static int continuousDeriv(const mjModel* m, mjData* d, mjdiffStepDeriv* w, int euler,
                           mjtNum* acc) {
  int nv = w->nv, na = w->na, nu = w->nu, np = w->np, ndx = w->ndx, ncol = ndx + w->nin;
  mjModel view;
  const mjModel* mu = mjdiff_userModel(m, w->s, &view);
  int implicit = euler && hasDamping(m);

  // acceleration the step uses (B, H's term, on d's stack until freeBlockRows)
  int free = euler && mjdiff_hasFreeBlock(m);
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* B = compat_stackAllocNum(d, nv);
  if (implicit || free) mjdiff_dampB(m, d, B);
  if (implicit) {
    compat_massCopy(m, d, w->H);
    for (int i = 0; i < nv; i++) *compat_massDiag(m, w->H, i) += mjdiff_timestep(m, w->s) * B[i];
    factorLDL(m, w->H);
    mju_copy(acc, d->qfrc_smooth, nv);
    solveLDL(m, w->H, acc, 1);
  } else {
    mju_copy(acc, d->qacc, nv);
  }
  if (free) {  // implicitfast: a standalone free body's rows by its own block (plugin/step.c)
    mjdiff_freeBlockSolve(m, d, mjdiff_timestep(m, w->s), B, d->qfrc_smooth, acc);
  }

  noteBad(w, m, d, mjdiff_forceDerivative(mu, d, w->s, w->DfDq, w->DfDv, w->DfDa, w->DfDu,
                                          w->DadotDa, w->DadotDu));
  mjdiff_rneDerivative(m, d, acc, w->DidDq, w->DidDv);

  for (int r = 0; r < nv; r++) {
    mjtNum* row = w->X + (size_t)ncol * r;
    for (int c = 0; c < nv; c++) {
      row[c] = w->DfDq[nv * r + c] - w->DidDq[nv * r + c];
      row[nv + c] = w->DfDv[nv * r + c] - w->DidDv[nv * r + c];
    }
    for (int c = 0; c < na; c++) row[2 * nv + c] = w->DfDa[na * r + c];
    for (int c = 0; c < nu; c++) row[ndx + c] = w->DfDu[nu * r + c];
  }

  // parameters: H dacc = DrDp dp (Euler's implicit damping included; at all-zero damping MuJoCo's
  // Euler switches to the implicit form as soon as one grows: the derivative from above)
  if (np) {
    int bad = mjdiff_paramDerivativeWith(w->design, mu, d, w->s, w->p, MJDIFF_FORCES_ALL, acc,
                                         euler ? mjdiff_timestep(m, w->s) : 0, w->DrDp, w->DadotDp);
    if (bad && w->badContact < 0) w->badContact = -1 - bad;
    for (int r = 0; r < nv; r++) {
      mju_copy(w->X + (size_t)ncol * r + ndx + nu, w->DrDp + (size_t)np * r, np);
    }
  }

  if (free) freeBlockRows(m, d, w, B, acc);
  compat_stackFree(d, mark);

  // activations
  dadotRows(w);
  return implicit;
}

// x = H^-1 x (transpose 0) or H^-T x (transpose 1) for n vectors (rows of x); mode SOLVE_*
static void solveH(const mjModel* m, mjData* d, const mjdiffStepDeriv* w, int implicit, mjtNum* x,
                   int n, int transpose) {
  if (implicit == SOLVE_N) {
    const int* piv = (const int*)w->piv;
    for (int r = 0; r < n; r++) {
      mjtNum* y = x + (size_t)w->nv * r;
      if (transpose) {
        mjdiff_luSolveT(w->nv, w->N, piv, y);
      } else {
        mjdiff_luSolve(w->nv, w->N, piv, y);
      }
    }
  } else if (implicit == SOLVE_MHB) {
    solveLDL(m, w->H, x, n);  // symmetric
  } else {
    mj_solveM(m, d, x, x, n);
  }
}

// w->Dacc = H^-1 X (all columns): with H = M + h B (our factor) on X's rows in place, all
// columns at once; else column by column
static void solveAll(const mjModel* m, mjData* d, mjdiffStepDeriv* w, int implicit) {
  int nv = w->nv, ncol = w->ndx + w->nin;
  if (implicit == SOLVE_MHB) {
    mju_copy(w->Dacc, w->X, nv * ncol);
    compat_massSolveRows(m, w->H, w->Dacc, ncol);
    return;
  }
  for (int r = 0; r < nv; r++) {
    for (int c = 0; c < ncol; c++) w->RhsT[(size_t)nv * c + r] = w->X[(size_t)ncol * r + c];
  }
  solveH(m, d, w, implicit, w->RhsT, ncol, 0);
  for (int r = 0; r < nv; r++) {
    for (int c = 0; c < ncol; c++) w->Dacc[(size_t)ncol * r + c] = w->RhsT[(size_t)nv * c + r];
  }
}

//---------------------------------- the implicit step ---------------------------------------------

// at the state X in d after the smooth forward pass (saved in w->state): solve the implicit
// step, differentiate the smooth forces at X', return to X, and fill acc = (v' - v)/h, w->X,
// w->Dadot and the LU of N (header)
static mjdiffStatus implicitDeriv(const mjModel* m, mjData* d, mjdiffStepDeriv* w, char* err,
                                  int errsz) {
  int nq = m->nq, nv = w->nv, na = w->na, nu = w->nu, np = w->np, ndx = w->ndx;
  int ncol = ndx + w->nin;
  mjtNum h = mjdiff_timestep(m, w->s), *acc = w->acc;
  mjModel view;
  const mjModel* mu = mjdiff_userModel(m, w->s, &view);
  mjtNum hdamp = hasDamping(m) ? h : 0;

  // the converged step and the smooth forces' derivatives at X' (d holds X''s kinematics)
  int iters;
  mjtNum corr;
  mjdiffStatus st = mjdiff_implicitSolve(m, d, w->s, w->hint ? w->vhint : NULL, &iters, &corr,
                                         err, errsz);
  w->hint = 0;
  w->newtonFailed = st == MJDIFF_ERR_NONFINITE;  // (as step.c splits on it)
  w->newtonRoot = st == MJDIFF_OK;
  if (st != MJDIFF_OK) return st;
  mju_copy(w->vnext, d->qvel, nv);
  for (int i = 0; i < nv; i++) acc[i] = (d->qvel[i] - w->state[nq + i]) / h;
  int bad = mjdiff_forceDerivativeParts(mu, d, w->s, MJDIFF_FORCES_SMOOTH, w->DsQ, w->DsV, NULL,
                                        NULL, NULL, NULL);
  if (bad && -1 - bad < d->ncon) {
    w->badEnd[0] = d->contact[-1 - bad].geom1;
    w->badEnd[1] = d->contact[-1 - bad].geom2;
  } else if (bad) {
    noteBad(w, m, d, bad);
  }
  if (np) {
    bad = mjdiff_paramDerivativeWith(w->design, mu, d, w->s, w->p, MJDIFF_FORCES_SMOOTH, acc,
                                     hdamp, w->DrDpS, NULL);
    if (bad && -1 - bad < d->ncon && w->badEnd[0] < 0) {
      w->badEnd[0] = d->contact[-1 - bad].geom1;
      w->badEnd[1] = d->contact[-1 - bad].geom2;
    }
  }

  // back to X: the other forces, the inverse dynamics at acc, the other parameters
  mjdiff_loadState(m, d, w->state);
  st = mjdiff_forward(m, d, w->s, err, errsz);
  if (st != MJDIFF_OK) return st;
  noteBad(w, m, d, mjdiff_forceDerivativeParts(mu, d, w->s, MJDIFF_FORCES_OTHER, w->DfDq, w->DfDv,
                                               w->DfDa, w->DfDu, w->DadotDa, w->DadotDu));
  mjdiff_rneDerivative(m, d, acc, w->DidDq, w->DidDv);
  if (np) {
    mjdiff_paramDerivativeWith(w->design, mu, d, w->s, w->p, MJDIFF_FORCES_OTHER, acc, hdamp,
                               w->DrDp, w->DadotDp);
  }

  // Dq' Phi and Dq' Psi at h v' (in RhsT's and N's places below)
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* delta = compat_stackAllocNum(d, nv);
  for (int i = 0; i < nv; i++) delta[i] = h * w->vnext[i];
  mjtNum* DqPhi = w->RhsT;  // (ncol x nv >= nv x nv)
  mjtNum* DqPsi = w->N;
  mjdiff_mulIntegrateRight(m, delta, w->DsQ, nv, 0, DqPhi);
  mjdiff_mulIntegrateRight(m, delta, w->DsQ, nv, 1, DqPsi);
  compat_stackFree(d, mark);

  // X = [Df_o/Dq - DID/Dq + Dq' Phi, Df_o/Dv - DID/Dv + h Dq' Psi + Dv', Df_o/Da, Df_o/Du, DrDp]
  for (int r = 0; r < nv; r++) {
    mjtNum* row = w->X + (size_t)ncol * r;
    for (int c = 0; c < nv; c++) {
      int rc = nv * r + c;
      row[c] = w->DfDq[rc] - w->DidDq[rc] + DqPhi[rc];
      row[nv + c] = w->DfDv[rc] - w->DidDv[rc] + h * DqPsi[rc] + w->DsV[rc];
    }
    for (int c = 0; c < na; c++) row[2 * nv + c] = w->DfDa[na * r + c];
    for (int c = 0; c < nu; c++) row[ndx + c] = w->DfDu[nu * r + c];
    for (int c = 0; c < np; c++) {
      row[ndx + nu + c] = w->DrDp[(size_t)np * r + c] + w->DrDpS[(size_t)np * r + c];
    }
  }
  dadotRows(w);

  // N = M + h B - h Dv' - h^2 Dq' Psi
  compat_fullM(m, d, w->RhsT);
  for (int i = 0; i < nv * nv; i++) w->N[i] = w->RhsT[i] - h * w->DsV[i] - h * h * DqPsi[i];
  if (hdamp > 0) {
    mark = compat_stackMark(d);
    mjtNum* B = compat_stackAllocNum(d, nv);
    mjdiff_dampB(m, d, B);
    for (int i = 0; i < nv; i++) w->N[nv * i + i] += hdamp * B[i];
    compat_stackFree(d, mark);
  }
  freeBlockImplicit(m, d, w, acc);
  if (mjdiff_luFactor(nv, w->N, (int*)w->piv)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE,
                        "the implicit step's Newton matrix is singular at time %g", d->time);
  }
  return MJDIFF_OK;
}

// the Euler or implicit step's continuous derivatives at the state in d; *mode: how to solve
static mjdiffStatus eulerDeriv(const mjModel* m, mjData* d, mjdiffStepDeriv* w, int* mode,
                               char* err, int errsz) {
  if (mjdiff_implicit(w->s)) {
    *mode = SOLVE_N;
    return implicitDeriv(m, d, w, err, errsz);
  }
  *mode = continuousDeriv(m, d, w, 1, w->acc) ? SOLVE_MHB : SOLVE_M;
  return MJDIFF_OK;
}

//---------------------------------- workspace ----------------------------------------------------

static const char* geomTypeName(int type) {
  static const char* names[] = {"plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder",
                                "box", "mesh"};
  return type >= 0 && type < (int)(sizeof(names) / sizeof(names[0])) ? names[type] : "geom";
}

// 1 if MuJoCo's collision filters let geoms g1 and g2 touch (mj_collideGeoms's built-in filter
// and the exclude list)
static int mayCollide(const mjModel* m, int g1, int g2) {
  if (!(m->geom_contype[g1] & m->geom_conaffinity[g2]) &&
      !(m->geom_contype[g2] & m->geom_conaffinity[g1])) {
    return 0;
  }
  int b1 = m->geom_bodyid[g1], b2 = m->geom_bodyid[g2];
  int w1 = m->body_weldid[b1], w2 = m->body_weldid[b2];
  if (w1 == w2) return 0;
  int filterparent = !(m->opt.disableflags & mjDSBL_FILTERPARENT) && w1 && w2;
  if (filterparent && (w1 == m->body_weldid[m->body_parentid[w2]] ||
                       w2 == m->body_weldid[m->body_parentid[w1]])) {
    return 0;
  }
  int lo = b1 < b2 ? b1 : b2, hi = b1 < b2 ? b2 : b1;
  int signature = ((lo + 1) << 16) + hi + 1;
  for (int i = 0; i < m->nexclude; i++) {
    if (m->exclude_signature[i] == signature) return 0;
  }
  return 1;
}

static mjdiffStatus checkModel(const mjModel* m, const mjdiffModel* s, char* err, int errsz) {
  mjdiffStatus st = mjdiff_checkIntegrator(m, s, err, errsz);
  if (st != MJDIFF_OK) return st;
  for (int i = 0; i < m->nu; i++) {
    const char* name = mj_id2name(m, mjOBJ_ACTUATOR, i);
    name = name ? name : "";
    int dyn = m->actuator_dyntype[i], gain = m->actuator_gaintype[i],
        bias = m->actuator_biastype[i], trn = m->actuator_trntype[i];
    if (dyn != mjDYN_NONE && dyn != mjDYN_INTEGRATOR && dyn != mjDYN_FILTER &&
        dyn != mjDYN_MUSCLE) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                          "actuator %d ('%s'): dynamics type %d has no derivative (none, "
                          "integrator, filter and muscle do)", i, name, dyn);
    }
    if ((gain != mjGAIN_FIXED && gain != mjGAIN_AFFINE && gain != mjGAIN_MUSCLE) ||
        (bias != mjBIAS_NONE && bias != mjBIAS_AFFINE && bias != mjBIAS_MUSCLE)) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                          "actuator %d ('%s'): a user gain/bias has no derivative", i, name);
    }
    int id = m->actuator_trnid[2 * i];
    int ok = 0;
    if (trn == mjTRN_JOINT || trn == mjTRN_JOINTINPARENT) {
      // hinge, slide; ball and free joints with the gear in the joint's frame (a constant
      // moment; forces_d.c, ballLengthGradient). jointinparent turns the gear with the joint
      ok = m->jnt_type[id] == mjJNT_HINGE || m->jnt_type[id] == mjJNT_SLIDE ||
           trn == mjTRN_JOINT;
      if (!ok) {
        return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                            "actuator %d ('%s'): a jointinparent transmission on a ball or free "
                            "joint has no derivative (its moment turns with the joint; "
                            "use joint=)", i, name);
      }
    } else if (trn == mjTRN_TENDON) {
      ok = 1;  // fixed and spatial tendons (tendon_d.c)
    } else if (trn == mjTRN_SLIDERCRANK) {
      ok = 1;  // its moment's derivative (forces_d.c)
    } else if (trn == mjTRN_SITE) {
      // a wrench at the site (forces_d.c); a reference site (MuJoCo 3) is not differentiated
      if (m->actuator_trnid[2 * i + 1] >= 0) {
        return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                            "actuator %d ('%s'): a site transmission with a reference site has "
                            "no derivative yet", i, name);
      }
      ok = 1;
    } else if (trn == mjTRN_BODY) {
      // adhesion: contact wrenches along the counted contacts' normals (forces_d.c); the moment
      // moves with q, and a force that depends on the actuator's velocity (moment . qvel) would
      // need that motion's velocity terms too
      const mjtNum* gp = m->actuator_gainprm + mjNGAIN * i;
      const mjtNum* bp = m->actuator_biasprm + mjNBIAS * i;
      if (gain == mjGAIN_MUSCLE || bias == mjBIAS_MUSCLE ||
          (gain == mjGAIN_AFFINE && gp[2] != 0) || (bias == mjBIAS_AFFINE && bp[2] != 0)) {
        return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                            "actuator %d ('%s'): a body transmission (adhesion) whose force "
                            "depends on its velocity or is a muscle's has no derivative", i, name);
      }
      ok = 1;
    }
    if (!ok) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                          "actuator %d ('%s'): only joint, tendon, site, slider-crank and "
                          "body transmissions have derivatives",
                          i, name);
    }
  }
  // contact pairs that can occur (MuJoCo's own filters: contype/conaffinity, weld, parent,
  // exclude); none if contacts are off
  int contacts = !(m->opt.disableflags & (mjDSBL_CONTACT | mjDSBL_CONSTRAINT)) && !compat_passiveOff(m);
  for (int g1 = 0; g1 < m->ngeom && contacts; g1++) {
    for (int g2 = g1 + 1; g2 < m->ngeom; g2++) {
      int t1 = m->geom_type[g1], t2 = m->geom_type[g2];
      if (!mayCollide(m, g1, g2)) continue;
      int lo = t1 < t2 ? t1 : t2, hi = t1 < t2 ? t2 : t1;
      if (!mjdiff_contactPairSupported(lo, hi)) {
        const char* n1 = mj_id2name(m, mjOBJ_GEOM, g1);
        const char* n2 = mj_id2name(m, mjOBJ_GEOM, g2);
        return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                            "geoms %d ('%s', %s) and %d ('%s', %s) can touch, and contacts "
                            "between a %s and a %s have no geometry derivative yet", g1,
                            n1 ? n1 : "", geomTypeName(t1), g2, n2 ? n2 : "", geomTypeName(t2),
                            geomTypeName(lo), geomTypeName(hi));
      }
    }
  }
  for (int i = 0; i < m->npair; i++) {
    const mjtNum* f = m->pair_friction + 5 * i;
    if (f[0] != f[1] || f[3] != f[4]) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                          "contact pair %d has anisotropic friction, which has no derivative yet",
                          i);
    }
    int t1 = m->geom_type[m->pair_geom1[i]], t2 = m->geom_type[m->pair_geom2[i]];
    if (!mjdiff_contactPairSupported(t1 < t2 ? t1 : t2, t1 < t2 ? t2 : t1)) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                          "contact pair %d: geom types %d and %d have no geometry derivative yet",
                          i, t1, t2);
    }
  }
  return MJDIFF_OK;
}

// parameters that would move a standalone free body's implicitfast block in a way blockChange's
// columns do not follow, refused by name at make time and at every call: the inertials of a
// massless body below it (which would end its being standalone), and geometry parameters of a
// body of more than 64 geoms (mjdiff_designInertialJacobian's limit)
static mjdiffStatus freeBlockParams(const mjModel* m, const mjdiffParams* p, char* err,
                                    int errsz) {
  for (int i = 0; p && i < p->n; i++) {
    const paramEntry* e = p->entry + i;
    int inertial = e->kind == PK_BODY_MASS || e->kind == PK_BODY_INERTIA ||
                   e->kind == PK_BODY_IPOS;
    int b = inertial || e->kind == PK_BODY_SCALE ? e->id :
            e->kind == PK_GEOM_POS || e->kind == PK_GEOM_SIZE ? m->geom_bodyid[e->id] : -1;
    if (b <= 0) continue;
    const char* why = NULL;
    if (mjdiff_freeBlockBody(m, b)) {
      if (!inertial && m->body_geomnum[b] > 64) why = "has more than 64 geoms";
    } else {
      int a = m->body_parentid[b];
      while (a > 0 && !mjdiff_freeBlockBody(m, a)) a = m->body_parentid[a];
      if (a > 0) {
        b = a;
        why = "holds the parameter's massless body, whose mass would end its being standalone";
      }
    }
    if (why) {
      const char* name = mj_id2name(m, mjOBJ_BODY, b);
      return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                          "parameter '%s': body %d '%s' is a standalone free body under "
                          "implicitfast and %s: no derivative of its implicit block there",
                          mjdiff_paramName(p, i), b, name ? name : "", why);
    }
  }
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_makeStepDeriv(const mjModel* m, const mjdiffModel* s, const mjdiffParams* p,
                                  mjdiffStepDeriv** out, char* err, int errsz) {
  if (!out) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "out is NULL");
  *out = NULL;
  mjdiffStatus st = mjdiff_checkPair(m, s, err, errsz);
  if (st != MJDIFF_OK) return st;
  st = checkModel(m, s, err, errsz);
  if (st != MJDIFF_OK) return st;
  st = mjdiff_checkParams(m, p, err, errsz);
  if (st != MJDIFF_OK) return st;
  st = freeBlockParams(m, p, err, errsz);
  if (st != MJDIFF_OK) return st;

  int nv = m->nv, na = m->na, nu = m->nu, np = p ? mjdiff_paramCount(p) : 0;
  int ndx = 2 * nv + na, ncol = ndx + nu + np, nsub = mjdiff_substepCount(s);
  int chained = nsub > 1 || mjdiff_implicit(s);
  size_t n = 0;
  size_t sizes[] = {
    (size_t)nv * nv, (size_t)nv * nv, (size_t)nv * na, (size_t)nv * nu, (size_t)na * na,
    (size_t)na * nu, (size_t)nv * np, (size_t)na * np, (size_t)nv * nv, (size_t)nv * nv, (size_t)ncol * nv, (size_t)nv * ncol,
    (size_t)nv * ncol, (size_t)na * ncol, (size_t)compat_massSize(m), (size_t)8 * ndx * ncol, (size_t)ndx * ncol,
    (size_t)(m->nq + nv + na + 1), (size_t)nv, (size_t)ncol, (size_t)ncol,
    (size_t)m->nsensordata * (ndx + nu), (size_t)m->nsensordata * nv,
    (size_t)nv * nv, (size_t)nv * nv, (size_t)nv * np,
    (size_t)nv * nv, (size_t)nv, (size_t)nv, (size_t)nv, (size_t)nv,
    (size_t)stateSlots(nsub) * (m->nq + nv + na + 1),
    (chained ? 2 * (size_t)ndx * ncol + (size_t)ndx * ndx : 0),
    (size_t)(3 * ncol), (size_t)nv,
    (nsub > 1 ? (size_t)(nsub - 1) * recordSize(m, ncol) : 0), (size_t)1 << MJDIFF_MAX_SPLIT,
  };
  int nsizes = (int)(sizeof(sizes) / sizeof(sizes[0]));
  for (int i = 0; i < nsizes; i++) n += sizes[i] + 1;
  mjdiffStepDeriv* w = (mjdiffStepDeriv*)calloc(1, sizeof(mjdiffStepDeriv));
  mjtNum* buf = w ? (mjtNum*)calloc(n, sizeof(mjtNum)) : NULL;
  if (!buf) {
    free(w);
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory for the step derivative");
  }
  mjtNum** ptrs[] = {&w->DfDq, &w->DfDv, &w->DfDa, &w->DfDu, &w->DadotDa, &w->DadotDu,
                     &w->DrDp, &w->DadotDp, &w->DidDq, &w->DidDv, &w->RhsT, &w->X, &w->Dacc, &w->Dadot, &w->H,
                     &w->stage, &w->AB, &w->state, &w->acc, &w->tmp, &w->tmp2,
                     &w->DsDx, &w->DsDacc, &w->DsQ, &w->DsV, &w->DrDpS,
                     &w->N, &w->piv, &w->vnext, &w->vhint, &w->qfrcAdj,
                     &w->subState, &w->chain, &w->subIn, &w->qfrcSum, &w->rec, &w->pieceH};
  mjtNum* next = buf;
  for (int i = 0; i < nsizes; i++) {
    *ptrs[i] = next;
    next += sizes[i] + 1;
  }
  w->m = m;
  w->s = s;
  w->p = p;
  w->nv = nv;
  w->na = na;
  w->nu = nu;
  w->np = np;
  w->nin = nu + np;
  w->ndx = ndx;
  w->nsub = nsub;
  w->chained = chained;
  w->bytes = sizeof(mjdiffStepDeriv) + n * sizeof(mjtNum);
  int fail = 0;
  if ((p && p->design && !(w->design = mjdiff_makeDesignScratch(m, p))) ||
      (!(w->sensp = mjdiff_makeSensorParamScratch(m, p, &fail)) && fail) ||
      (w->sensp && !(w->Qs = (mjtNum*)calloc((size_t)m->nsensordata * np, sizeof(mjtNum))))) {
    mjdiff_freeStepDeriv(w);
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory for the step derivative");
  }
  *out = w;
  return MJDIFF_OK;
}

size_t mjdiff_stepDerivMemory(const mjdiffStepDeriv* w) {
  return w ? w->bytes : 0;
}

void mjdiff_freeStepDeriv(mjdiffStepDeriv* w) {
  if (!w) return;
  mjdiff_freeDesignScratch(w->design);
  mjdiff_freeSensorParamScratch(w->sensp);
  free(w->Qs);
  free(w->DfDq);  // the first pointer owns the buffer
  free(w);
}

//---------------------------------- the step Jacobian --------------------------------------------

void mjdiff_stepDerivHint(mjdiffStepDeriv* w, const mjtNum* qvel_next) {
  if (!w) return;
  w->hint = qvel_next != NULL;
  if (qvel_next) mju_copy(w->vhint, qvel_next, w->nv);
}

int mjdiff_stepForceAdjoint(const mjdiffStepDeriv* w, mjtNum* adj_qfrc) {
  if (!w || !w->qfrcOk) return 0;
  mju_copy(adj_qfrc, w->qfrcAdj, w->nv);
  return 1;
}

// 1 if activation i is clipped after a' = a + h adot
static int clipped(const mjModel* m, const mjtNum* act, mjtNum h, const mjtNum* adot, int i) {
  int iu = i + m->nu - m->na;
  if (!m->actuator_actlimited[iu]) return 0;
  mjtNum a = act[i] + h * adot[i];
  const mjtNum* range = m->actuator_actrange + 2 * iu;
  return a < range[0] || a > range[1];
}

// rows of clipped activations after a' = a + h adot: zero
static void clipActivationRows(const mjModel* m, const mjData* d, mjtNum h, const mjtNum* adot,
                               mjtNum* rows, int ncol) {
  for (int i = 0; i < m->na; i++) {
    if (clipped(m, d->act, h, adot, i)) mju_zero(rows + ncol * i, ncol);
  }
}

// AB = [A B] for Euler or the implicit step at the state in d, after eulerDeriv (mode)
static void eulerJacobian(const mjModel* m, mjData* d, mjdiffStepDeriv* w, int mode) {
  int nv = w->nv, na = w->na, ndx = w->ndx, ncol = ndx + w->nin;
  mjtNum h = mjdiff_timestep(m, w->s);
  mjtNum* acc = w->acc;
  solveAll(m, d, w, mode);

  // Dv' = [0 I 0 0] + h Dacc
  mjtNum* Dq = w->AB;
  mjtNum* Dv = w->AB + (size_t)ncol * nv;
  mjtNum* Da = w->AB + (size_t)ncol * 2 * nv;
  for (int r = 0; r < nv; r++) {
    for (int c = 0; c < ncol; c++) Dv[ncol * r + c] = h * w->Dacc[ncol * r + c];
    Dv[ncol * r + nv + r] += 1;
  }

  // Dq' = Phi(h v') [I 0 0 0] + h Psi(h v') Dv'
  mjtNum* delta = w->RhsT;  // nv scratch
  mjtNum* I = w->stage;     // nv x ncol
  mjtNum* Y = w->stage + (size_t)nv * ncol;
  mju_zero(I, (size_t)nv * ncol);
  for (int r = 0; r < nv; r++) {
    delta[r] = h * (d->qvel[r] + h * acc[r]);
    I[ncol * r + r] = 1;
  }
  mju_scl(Y, Dv, h, (size_t)nv * ncol);
  integrateJacobian(m, delta, I, Y, ncol, Dq);

  // Da' = [0 0 I 0] + h Dadot
  for (int r = 0; r < na; r++) {
    for (int c = 0; c < ncol; c++) Da[ncol * r + c] = h * w->Dadot[ncol * r + c];
    Da[ncol * r + 2 * nv + r] += 1;
  }
  clipActivationRows(m, d, h, d->act_dot, Da, ncol);
}

// what the Euler VJP reads at one (sub)step: d's state and w's derivatives after eulerDeriv, or a
// substep's record kept by the forward sweep of substepsSweep
typedef struct stepAt_ {
  const mjtNum *qvel, *act, *actdot, *acc;  // (nv, na, na, nv)
  const mjtNum *X, *Dadot;                  // (nv x ncol), (na x ncol): w->X, w->Dadot
  const mjtNum* H;                          // mode SOLVE_MHB: factor of M (+ h B)
  int mode;                                 // SOLVE_*
} stepAt;

static stepAt stepAtData(const mjData* d, const mjdiffStepDeriv* w, int mode) {
  stepAt at = {d->qvel, d->act, d->act_dot, w->acc, w->X, w->Dadot, w->H, mode};
  return at;
}

// Euler VJP without forming [A B]: out (ndx + nu) = [A B]' lam, lam = (lq, lv, la)
//   adj_q = Phi' lq,  mu = lv + h Psi' lq  (adjoint of v'),  adj_v = mu,
//   nu = H^-1 (h mu),  adj_[x u] += nu' X,  adj_a += la,  adj_[x u] += h la' Dadot (unclipped)
// nu is also the adjoint of a generalised force applied at X (qfrc_applied enters f linearly:
// H dacc = dqfrc, and for the implicit step N dacc = dqfrc, since it is one of the forces f_o at
// X): kept in w->qfrcAdj. d: for mode SOLVE_M (MuJoCo's factor) only.
static void eulerVJP(const mjModel* m, mjData* d, mjdiffStepDeriv* w, const stepAt* at,
                     const mjtNum* lam, mjtNum* out) {
  int nv = w->nv, na = w->na, ndx = w->ndx, ncol = ndx + w->nin;
  mjtNum h = mjdiff_timestep(m, w->s);
  mjtNum* delta = w->RhsT;       // nv
  mjtNum* psi = w->RhsT + nv;    // nv
  mjtNum* nu = w->RhsT + 2 * nv;  // nv
  for (int i = 0; i < nv; i++) delta[i] = h * (at->qvel[i] + h * at->acc[i]);
  mju_zero(out, ncol);
  integrateJacobianT(m, delta, lam, out, psi);
  for (int i = 0; i < nv; i++) {
    mjtNum mu = lam[nv + i] + h * psi[i];
    out[nv + i] = mu;
    nu[i] = h * mu;
  }
  if (at->mode == SOLVE_MHB) {
    solveLDL(m, at->H, nu, 1);  // symmetric
  } else {
    solveH(m, d, w, at->mode, nu, 1, 1);
  }
  mju_copy(w->qfrcAdj, nu, nv);
  w->qfrcOk = at->mode == SOLVE_N || !mjdiff_hasFreeBlock(m);  // (freeBlockRows; N holds them)
  for (int r = 0; r < nv; r++) mju_addToScl(out, at->X + (size_t)ncol * r, nu[r], ncol);
  for (int i = 0; i < na; i++) {
    if (clipped(m, at->act, h, at->actdot, i)) continue;
    out[2 * nv + i] += lam[2 * nv + i];
    mju_addToScl(out, at->Dadot + (size_t)ncol * i, h * lam[2 * nv + i], ncol);
  }
}

// Euler JVP without forming [A B]: out (ndx) = [A B] t, t = (dq, dv, da, du)
//   dacc = H^-1 X t,  dv' = dv + h dacc,  dq' = Phi dq + Psi h dv',  da' = da + h Dadot t
static void eulerJVP(const mjModel* m, mjData* d, mjdiffStepDeriv* w, int implicit,
                     const mjtNum* t, mjtNum* out) {
  int nv = w->nv, na = w->na, ndx = w->ndx, ncol = ndx + w->nin;
  mjtNum h = mjdiff_timestep(m, w->s);
  mjtNum* acc = w->acc;
  mjtNum* delta = w->RhsT;
  mjtNum* dacc = w->RhsT + nv;
  mjtNum* ddelta = w->RhsT + 2 * nv;
  mju_mulMatVec(dacc, w->X, t, nv, ncol);
  solveH(m, d, w, implicit, dacc, 1, 0);
  for (int i = 0; i < nv; i++) {
    delta[i] = h * (d->qvel[i] + h * acc[i]);
    out[nv + i] = t[nv + i] + h * dacc[i];
    ddelta[i] = h * out[nv + i];
  }
  integrateJacobian(m, delta, t, ddelta, 1, out);
  for (int i = 0; i < na; i++) {
    out[2 * nv + i] = clipped(m, d->act, h, d->act_dot, i) ? 0 :
                      t[2 * nv + i] + h * mju_dot(w->Dadot + (size_t)ncol * i, t, ncol);
  }
}

// AB for RK4: the stages of step.c, each with its own continuous derivative
static mjdiffStatus rk4Jacobian(const mjModel* m, mjData* d, mjdiffStepDeriv* w, char* err,
                                int errsz) {
  static const mjtNum A[9] = {0.5, 0, 0, 0, 0.5, 0, 0, 0, 1};
  static const mjtNum B[4] = {1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6};
  int nq = m->nq, nv = w->nv, na = w->na, ndx = w->ndx, ncol = ndx + w->nin;
  mjtNum h = mjdiff_timestep(m, w->s);
  size_t blk = (size_t)ndx * ncol;
  mjtNum* DX[4];  // DX_i / D[X_0 u] in X_i's tangent space
  mjtNum* DK[4];  // DK_i: (v_i, acc_i, adot_i) rows
  for (int i = 0; i < 4; i++) {
    DX[i] = w->stage + 2 * i * blk;
    DK[i] = w->stage + (2 * i + 1) * blk;
  }

  // stage values: K_i and the states X_i
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* X0 = compat_stackAllocNum(d, nq + nv + na + 1);
  mjtNum* K = compat_stackAllocNum(d, 4 * ndx);
  mjtNum* dX = compat_stackAllocNum(d, ndx);
  mjtNum* acc = compat_stackAllocNum(d, nv);
  mjtNum* I = compat_stackAllocNum(d, (size_t)nv * ncol);
  mjtNum* Y = compat_stackAllocNum(d, (size_t)nv * ncol);
  mjdiff_saveState(m, d, X0);

  mju_zero(DX[0], blk);
  for (int r = 0; r < ndx; r++) DX[0][ncol * r + r] = 1;
  mju_zero(I, (size_t)nv * ncol);
  for (int r = 0; r < nv; r++) I[ncol * r + r] = 1;

  mjdiffStatus st = MJDIFF_OK;
  for (int i = 0; i < 4 && st == MJDIFF_OK; i++) {
    if (i > 0) {
      // X_i = X_0 (+) h sum_j A_ij K_j
      mju_zero(dX, ndx);
      for (int j = 0; j < i; j++) mju_addToScl(dX, K + ndx * j, A[3 * (i - 1) + j], ndx);
      mjdiff_loadState(m, d, X0);
      mj_integratePos(m, d->qpos, dX, h);
      mju_addToScl(d->qvel, dX + nv, h, nv);
      mju_addToScl(d->act, dX + 2 * nv, h, na);
      st = mjdiff_forward(m, d, w->s, err, errsz);
      if (st != MJDIFF_OK) break;

      // DX_i = [Phi(h dq) I + h Psi(h dq) sum A Dv_j; [0 I 0 0] + h sum A D(acc, adot)_j]
      mju_zero(Y, (size_t)nv * ncol);
      mjtNum* D = DX[i];
      mju_zero(D + (size_t)ncol * nv, (size_t)ncol * (nv + na));
      for (int r = nv; r < ndx; r++) D[ncol * r + r] = 1;
      for (int j = 0; j < i; j++) {
        mjtNum a = A[3 * (i - 1) + j];
        if (a == 0) continue;
        mju_addToScl(Y, DK[j], h * a, (size_t)nv * ncol);
        mju_addToScl(D + (size_t)ncol * nv, DK[j] + (size_t)ncol * nv, h * a,
                     (size_t)ncol * (nv + na));
      }
      for (int r = 0; r < nv; r++) dX[r] *= h;
      integrateJacobian(m, dX, I, Y, ncol, D);
    }

    // K_i = (v_i, acc_i, adot_i) and DK_i = (Dv_i, Dacc DX_i, Dadot DX_i)
    solveAll(m, d, w, continuousDeriv(m, d, w, 0, acc));
    mju_copy(K + ndx * i, d->qvel, nv);
    mju_copy(K + ndx * i + nv, acc, nv);
    mju_copy(K + ndx * i + 2 * nv, d->act_dot, na);
    mju_copy(DK[i], DX[i] + (size_t)ncol * nv, (size_t)ncol * nv);  // Dv_i
    // D(acc, adot)_i = Dcont [DX_i; 0 I_u]  (columns of u pass through)
    for (int r = 0; r < nv + na; r++) {
      const mjtNum* row = r < nv ? w->Dacc + (size_t)ncol * r : w->Dadot + (size_t)ncol * (r - nv);
      mjtNum* out = DK[i] + (size_t)ncol * (nv + r);
      for (int c = 0; c < ncol; c++) {
        mjtNum v = c >= ndx ? row[c] : 0;
        for (int k = 0; k < ndx; k++) v += row[k] * DX[i][(size_t)ncol * k + c];
        out[c] = v;
      }
    }
  }

  if (st == MJDIFF_OK) {
    // X' = X_0 (+) h sum_j B_j K_j
    mju_zero(dX, ndx);
    mju_zero(Y, (size_t)nv * ncol);
    mjtNum* D = w->AB;
    mju_zero(D + (size_t)ncol * nv, (size_t)ncol * (nv + na));
    for (int r = nv; r < ndx; r++) D[ncol * r + r] = 1;
    for (int j = 0; j < 4; j++) {
      mju_addToScl(dX, K + ndx * j, B[j], ndx);
      mju_addToScl(Y, DK[j], h * B[j], (size_t)nv * ncol);
      mju_addToScl(D + (size_t)ncol * nv, DK[j] + (size_t)ncol * nv, h * B[j],
                   (size_t)ncol * (nv + na));
    }
    mjtNum* delta = acc;
    for (int r = 0; r < nv; r++) delta[r] = h * dX[r];
    integrateJacobian(m, delta, I, Y, ncol, D);
    mjdiff_loadState(m, d, X0);
    clipActivationRows(m, d, h, dX + 2 * nv, D + (size_t)ncol * 2 * nv, ncol);
  }

  // leave d's derived quantities from the forward pass at the state it came with
  mjdiff_loadState(m, d, X0);
  compat_stackFree(d, mark);
  if (st == MJDIFF_OK) st = mjdiff_forward(m, d, w->s, err, errsz);
  return st;
}

// what the derivative evaluates at the state in d
typedef enum product_ {
  PRODUCT_JACOBIAN,
  PRODUCT_VJP,
  PRODUCT_JVP,
  PRODUCT_SENSOR_VJP,
  PRODUCT_SENSOR_JACOBIAN
} product;

// sensor Jacobian: out (nsensordata x (ndx + nin)) = [DsDx 0] + DsDacc Dacc (H = M); rows of
// sensors without a derivative are NaN
static void sensorJacobian(const mjModel* m, mjData* d, mjdiffStepDeriv* w, mjtNum* out) {
  int nv = w->nv, ns = m->nsensordata, ndx = w->ndx, ncol = ndx + w->nin, nxu = ndx + w->nu;
  mjtNum* acc = w->acc;
  mjdiff_sensorDerivative(m, d, w->s, w->DsDx, w->DsDacc);
  // Dacc only if an acceleration-stage reading depends on qacc (the filters' common case is none)
  int useAcc = 0;
  for (int i = 0; i < ns * nv && !useAcc; i++) useAcc = w->DsDacc[i] != 0;
  if (useAcc) solveAll(m, d, w, continuousDeriv(m, d, w, 0, acc));
  for (int i = 0; i < ns; i++) {
    mjtNum* row = out + (size_t)ncol * i;
    mju_zero(row, ncol);
    mju_copy(row, w->DsDx + (size_t)nxu * i, nxu);
    for (int k = 0; k < nv && useAcc; k++) {
      mjtNum a = w->DsDacc[(size_t)nv * i + k];
      if (a != 0) mju_addToScl(row, w->Dacc + (size_t)ncol * k, a, ncol);
    }
  }
  // the columns with a direct dependence: differenced whole (sensor_p.c)
  if (w->sensp) {
    int np = w->np;
    if (mjdiff_sensorParamColumns(w->sensp, m, d, w->s, w->p, w->Qs)) {
      w->badSensorParam = 1;
      return;
    }
    for (int i = 0; i < ns; i++) {
      mjtNum* row = out + (size_t)ncol * i;
      for (int k = 0; k < np; k++) {
        if (mjdiff_sensorParamDirect(w->sensp, k)) row[nxu + k] = w->Qs[(size_t)np * i + k];
      }
    }
  }
  for (int i = 0; i < m->nsensor; i++) {
    if (mjdiff_sensorSupported(m, i)) continue;
    for (int k = 0; k < m->sensor_dim[i]; k++) {
      mjtNum* row = out + (size_t)ncol * (m->sensor_adr[i] + k);
      for (int c = 0; c < ncol; c++) row[c] = NAN;
    }
  }
}

// sensor VJP: out (ndx + nin) += [C D Q]' adj_s, C = DsDx + DsDacc Dacc at the forward's qacc
//   (the acceleration MuJoCo's sensors read: H = M, not Euler's M + h B)
//   out_[x u] += DsDx' adj_s;  nu = M^-1 (DsDacc' adj_s);  out += nu' X
static void sensorVJP(const mjModel* m, mjData* d, mjdiffStepDeriv* w, const mjtNum* adj_s,
                      mjtNum* out) {
  int nv = w->nv, ns = m->nsensordata, ndx = w->ndx, ncol = ndx + w->nin, nxu = ndx + w->nu;
  mjtNum* acc = w->acc;
  int implicit = continuousDeriv(m, d, w, 0, acc);
  // sensors without a derivative are an error only if the adjoint weights them
  for (int i = 0; i < m->nsensor && w->badSensor < 0; i++) {
    if (mjdiff_sensorSupported(m, i)) continue;
    for (int k = 0; k < m->sensor_dim[i]; k++) {
      if (adj_s[m->sensor_adr[i] + k] != 0) w->badSensor = i;
    }
  }
  if (w->badSensor >= 0) return;
  mjdiff_sensorDerivative(m, d, w->s, w->DsDx, w->DsDacc);
  for (int i = 0; i < ns; i++) {
    if (adj_s[i] == 0) continue;
    mju_addToScl(out, w->DsDx + (size_t)nxu * i, adj_s[i], nxu);
  }
  mjtNum* nu = w->RhsT;
  mju_mulMatTVec(nu, w->DsDacc, adj_s, ns, nv);
  solveH(m, d, w, implicit, nu, 1, 1);
  mju_copy(w->qfrcAdj, nu, nv);  // the readings' adjoint of qfrc_applied (through acc)
  w->qfrcOk = 1;
  for (int r = 0; r < nv; r++) mju_addToScl(out, w->X + (size_t)ncol * r, nu[r], ncol);

  // the columns with a direct dependence: adj_s' Q_k with Q_k differenced whole (sensor_p.c)
  if (w->sensp) {
    int np = w->np;
    if (mjdiff_sensorParamColumns(w->sensp, m, d, w->s, w->p, w->Qs)) {
      w->badSensorParam = 1;
      return;
    }
    for (int k = 0; k < np; k++) {
      if (!mjdiff_sensorParamDirect(w->sensp, k)) continue;
      mjtNum g = 0;
      for (int i = 0; i < ns; i++) g += adj_s[i] * w->Qs[(size_t)np * i + k];
      out[nxu + k] = g;
    }
  }
}

// a substep's record for substepsSweep (an Euler stepAt kept apart from d and w): qvel, act,
// act_dot, acc (nv, na, na, nv), X (nv x ncol), Dadot (na x ncol) and the factor of M (+ h B)
// (compat_massSize)
static size_t recordSize(const mjModel* m, int ncol) {
  int nv = m->nv, na = m->na;
  return (size_t)2 * (nv + na) + (size_t)(nv + na) * ncol + (size_t)compat_massSize(m);
}

// part i of record k, in the order above
static mjtNum* recordPart(const mjdiffStepDeriv* w, int k, int i) {
  int nv = w->nv, na = w->na, ncol = w->ndx + w->nin;
  size_t off[7] = {0, (size_t)nv, (size_t)nv + na, (size_t)nv + 2 * na, (size_t)2 * (nv + na)};
  off[5] = off[4] + (size_t)nv * ncol;
  off[6] = off[5] + (size_t)na * ncol;
  return w->rec + recordSize(w->m, ncol) * (size_t)k + off[i];
}

static stepAt recordAt(const mjdiffStepDeriv* w, int k) {
  stepAt at = {recordPart(w, k, 0), recordPart(w, k, 1), recordPart(w, k, 2),
               recordPart(w, k, 3), recordPart(w, k, 4), recordPart(w, k, 5),
               recordPart(w, k, 6), SOLVE_MHB};
  return at;
}

// keep the Euler VJP's inputs at the state in d (after eulerDeriv for a VJP, mode) as record k;
// MuJoCo's own factor of M (mode SOLVE_M) is factored again in the record
static void keepRecord(const mjModel* m, const mjData* d, const mjdiffStepDeriv* w, int mode,
                       int k) {
  int nv = w->nv, na = w->na, ncol = w->ndx + w->nin;
  mju_copy(recordPart(w, k, 0), d->qvel, nv);
  mju_copy(recordPart(w, k, 1), d->act, na);
  mju_copy(recordPart(w, k, 2), d->act_dot, na);
  mju_copy(recordPart(w, k, 3), w->acc, nv);
  mju_copy(recordPart(w, k, 4), w->X, (size_t)nv * ncol);
  mju_copy(recordPart(w, k, 5), w->Dadot, (size_t)na * ncol);
  mjtNum* H = recordPart(w, k, 6);
  if (mode == SOLVE_MHB) {
    mju_copy(H, w->H, compat_massSize(m));
  } else {
    compat_massCopy(m, d, H);
    factorLDL(m, H);
  }
}

// clear what a product's derivatives record as unavailable (reportBad reads it)
static void resetBad(mjdiffStepDeriv* w) {
  w->qfrcOk = 0;
  mju_zero(w->qfrcAdj, w->nv);  // readings without an acceleration stage: zero
  w->badContact = -1;
  w->badSensor = -1;
  w->badSensorParam = 0;
  w->badTendon = -1;
  w->badEnd[0] = w->badEnd[1] = -1;
  w->newtonFailed = 0;
  w->newtonRoot = 0;
}

// st, or the error naming the first element the derivatives at the state in d could not handle
static mjdiffStatus reportBad(const mjModel* m, const mjData* d, const mjdiffStepDeriv* w,
                              mjdiffStatus st, char* err, int errsz) {
  if (st == MJDIFF_OK && w->badSensorParam) {
    st = mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE,
                      "the readings' parameter columns: the forward pass failed on the model "
                      "with a parameter moved by its difference step");
  }
  if (st == MJDIFF_OK && w->badSensor >= 0) {
    const char* name = mj_id2name(m, mjOBJ_SENSOR, w->badSensor);
    st = mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED, "sensor %d ('%s', type %d) has no "
                      "derivative", w->badSensor, name ? name : "",
                      m->sensor_type[w->badSensor]);
  }
  if (st == MJDIFF_OK && w->badTendon >= 0) {
    int t = w->badTendon;
    const char* name = mj_id2name(m, mjOBJ_TENDON, t);
    st = mjdiff_error(
        err, errsz, MJDIFF_ERR_UNSUPPORTED, "tendon %d ('%s'): %s", t, name ? name : "",
        w->tendonCause == -1
            ? "an inside wrap (side site inside the wrapping geom) without a touching point"
            : "d's stack is too small for the tendon's derivative (raise nstack)");
  }
  if (st == MJDIFF_OK && w->badEnd[0] >= 0) {
    const char* n1 = mj_id2name(m, mjOBJ_GEOM, w->badEnd[0]);
    const char* n2 = mj_id2name(m, mjOBJ_GEOM, w->badEnd[1]);
    st = mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                      "a contact between geoms %d ('%s') and %d ('%s') at the end of the implicit "
                      "step: MuJoCo's contact could not be reproduced for its geometry derivative",
                      w->badEnd[0], n1 ? n1 : "", w->badEnd[1], n2 ? n2 : "");
  }
  if (st == MJDIFF_OK && w->badContact >= 0) {
    const mjContact* con = d->contact + w->badContact;
    const char* n1 = mj_id2name(m, mjOBJ_GEOM, con->geom1);
    const char* n2 = mj_id2name(m, mjOBJ_GEOM, con->geom2);
    st = mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                      "contact %d between geoms %d ('%s') and %d ('%s'): MuJoCo's contact could "
                      "not be reproduced for its geometry derivative", w->badContact, con->geom1,
                      n1 ? n1 : "", con->geom2, n2 ? n2 : "");
  }
  return st;
}

static mjdiffStatus evaluateOne(const mjModel* m, mjData* d, const mjdiffModel* s,
                                mjdiffStepDeriv* w, product what, const mjtNum* in, mjtNum* out,
                                char* err, int errsz);

// T = A_k T + [0 B_k P_k] from w->AB = [A_k B_k P_k] (A_k copied out to be contiguous: one
// product, allocating nothing), or T = w->AB for the first substep
static void chainJacobian(mjdiffStepDeriv* w, int first, mjtNum** T, mjtNum** T2) {
  int ndx = w->ndx, ncol = ndx + w->nin;
  if (first) {
    mju_copy(*T, w->AB, (size_t)ndx * ncol);
    return;
  }
  mjtNum* Ak = w->chain + 2 * (size_t)ndx * ncol;
  for (int r = 0; r < ndx; r++) {
    const mjtNum* a = w->AB + (size_t)ncol * r;
    mju_copy(Ak + (size_t)ndx * r, a, ndx);
    mjtNum* row = *T2 + (size_t)ncol * r;
    mju_zero(row, ndx);
    mju_copy(row + ndx, a + ndx, ncol - ndx);
  }
  mjdiff_gemmPlain(0, 0, ndx, ncol, ndx, 1, Ak, *T, 1, *T2);
  mjtNum* swap = *T;
  *T = *T2;
  *T2 = swap;
}

// T = A_k T + [0 B_k P_k] for an Euler (sub)step after eulerDeriv (mode), from its structure
// rather than its full [A B] (eulerJacobian): with T's rows (Tq, Tv, Ta) and Dacc = H^-1 X split
// into its state and input columns (Dacc_x, Dacc_u), likewise Dadot,
//   Tv' = Tv + h Dacc_x T + [0 h Dacc_u]
//   Tq' = Phi(delta) Tq + Psi(delta) h Tv'          (delta = h v' = h (v + h acc))
//   Ta' = Ta + h Dadot_x T + [0 h Dadot_u],  a clipped activation's row 0 (clipActivationRows)
// one product with the nv + na rows of Dacc_x and Dadot_x, against eulerJacobian's A_k with all
// 2 nv + na rows (the q rows are Phi and Psi, joint by joint)
static void eulerChain(const mjModel* m, mjData* d, mjdiffStepDeriv* w, int mode, mjtNum** T,
                       mjtNum** T2) {
  int nv = w->nv, na = w->na, ndx = w->ndx, ncol = ndx + w->nin, nr = nv + na;
  mjtNum h = mjdiff_timestep(m, w->s);
  solveAll(m, d, w, mode);

  // [Tv'; Ta'] in T2's v and a rows: [Tv; Ta] + [0 h (Dacc; Dadot)_u] + h (Dacc; Dadot)_x T
  mjtNum* K = w->chain + 2 * (size_t)ndx * ncol;  // (nr x ndx) h (Dacc_x; Dadot_x)
  mjtNum* out = *T2 + (size_t)ncol * nv;
  for (int r = 0; r < nr; r++) {
    const mjtNum* src = r < nv ? w->Dacc + (size_t)ncol * r : w->Dadot + (size_t)ncol * (r - nv);
    mju_scl(K + (size_t)ndx * r, src, h, ndx);
    mjtNum* row = out + (size_t)ncol * r;
    mju_copy(row, *T + (size_t)ncol * (nv + r), ndx);
    for (int c = ndx; c < ncol; c++) row[c] = (*T)[(size_t)ncol * (nv + r) + c] + h * src[c];
  }
  mjdiff_gemmPlain(0, 0, nr, ncol, ndx, 1, K, *T, 1, out);
  for (int i = 0; i < na; i++) {
    if (clipped(m, d->act, h, d->act_dot, i)) mju_zero(out + (size_t)ncol * (nv + i), ncol);
  }

  // Tq' = Phi Tq + Psi h Tv'
  mjtNum* delta = w->RhsT;  // nv scratch
  mjtNum* Y = w->stage;     // nv x ncol
  for (int r = 0; r < nv; r++) delta[r] = h * (d->qvel[r] + h * w->acc[r]);
  mju_scl(Y, out, h, (size_t)nv * ncol);
  integrateJacobian(m, delta, *T, Y, ncol, *T2);
  mjtNum* swap = *T;
  *T = *T2;
  *T2 = swap;
}

// the VJP chained backwards over steps (header): lam_n = adj_next (w->subIn's running input),
// then after each step's VJP (into the output, w->subIn + ncol) chainVJPAdd takes its state part
// as the next lam and sums its control and parameter parts and the applied force's adjoint;
// chainVJPEnd writes out = (lam_0, the sums) and the summed force adjoint (valid if ok)
static void chainVJPStart(mjdiffStepDeriv* w, const mjtNum* in) {
  int ncol = w->ndx + w->nin;
  mju_copy(w->subIn, in, w->ndx);
  mju_zero(w->subIn + 2 * ncol, ncol);
  mju_zero(w->qfrcSum, w->nv);
}

static void chainVJPAdd(mjdiffStepDeriv* w) {
  int ndx = w->ndx, ncol = ndx + w->nin;
  mjtNum *run = w->subIn, *res = w->subIn + ncol, *sum = w->subIn + 2 * ncol;
  mju_copy(run, res, ndx);
  mju_addTo(sum + ndx, res + ndx, ncol - ndx);
  mju_addTo(w->qfrcSum, w->qfrcAdj, w->nv);
}

static void chainVJPEnd(mjdiffStepDeriv* w, int ok, mjtNum* out) {
  int ndx = w->ndx, ncol = ndx + w->nin;
  mju_copy(out, w->subIn, ndx);
  mju_copy(out + ndx, w->subIn + 2 * ncol + ndx, ncol - ndx);
  mju_copy(w->qfrcAdj, w->qfrcSum, w->nv);
  w->qfrcOk = ok;
}

// the products of an explicit Euler step of n substeps in one forward sweep: at each x_k one
// forward pass serves both the substep's integration to x_{k+1} (mjdiff_substepForwarded, bit
// for bit mjdiff_step's; mj_Euler changes no derived quantity the derivatives read) and its
// derivatives (header):
//   Jacobian  T_1 = [A_0 B_0], T_{k+1} = A_k T_k + [0 B_k]     (in the sweep)
//   JVP       t_0 = dx; t_{k+1} = A_k t_k + B_k [du dp]         (in the sweep)
//   VJP       substeps 1 .. n-1 kept as records (keepRecord), then backwards
//             lam_n = adj_next; lam_k = A_k' lam_{k+1}, adj_[u p] += B_k' lam_{k+1}
//             with substep 0 last, at x_0 (evaluateOne)
// so that d's derived quantities end at x_0 as after a single step's products (the Jacobian and
// the JVP: one more forward pass there): n + 1 forward passes in all, against the 2n of a walk to
// the start states and a sweep over them
static mjdiffStatus substepsSweep(const mjModel* m, mjData* d, const mjdiffModel* s,
                                  mjdiffStepDeriv* w, product what, const mjtNum* in, mjtNum* out,
                                  char* err, int errsz) {
  int n = mjdiff_substepCount(s), ndx = w->ndx, ncol = ndx + w->nin, nv = w->nv;
  int sz = m->nq + nv + w->na + 1;
  mjtNum *X0 = w->subState, *here = w->subState + sz, *next = w->subState + 2 * (size_t)sz;
  mjtNum *run = w->subIn, *res = w->subIn + ncol;
  mjtNum *T = w->chain, *T2 = w->chain + (size_t)ndx * ncol;
  int vjp = what == PRODUCT_VJP;
  mjdiff_saveState(m, d, X0);
  if (what == PRODUCT_JVP) mju_copy(run, in, ncol);

  // the sweep (the VJP differentiates substep 0 last: only its integration here)
  mjdiffStatus st = vjp ? mjdiff_substep(m, d, s, err, errsz) : MJDIFF_OK;
  for (int k = vjp; k < n && st == MJDIFF_OK; k++) {
    resetBad(w);
    st = mjdiff_forward(m, d, s, err, errsz);
    if (st != MJDIFF_OK) {
      mjdiff_describeCulprit(m, d, s, err, errsz);  // as the step's own failure names it
      break;
    }
    mjdiff_saveState(m, d, here);  // (after the forward pass: its quaternions)
    if (k < n - 1) {
      st = mjdiff_substepForwarded(m, d, s, err, errsz);
      if (st != MJDIFF_OK) break;
      mjdiff_saveState(m, d, next);
      mjdiff_loadState(m, d, here);
    }
    int mode;
    st = eulerDeriv(m, d, w, &mode, err, errsz);
    st = reportBad(m, d, w, st, err, errsz);
    if (st != MJDIFF_OK) break;
    if (vjp) {
      keepRecord(m, d, w, mode, k - 1);
    } else if (what == PRODUCT_JVP) {
      eulerJVP(m, d, w, mode, run, res);
      mju_copy(run, res, ndx);
    } else if (k == 0) {
      eulerJacobian(m, d, w, mode);
      chainJacobian(w, 1, &T, &T2);
    } else {
      eulerChain(m, d, w, mode, &T, &T2);
    }
    if (k < n - 1) mjdiff_loadState(m, d, next);
  }
  mjdiff_loadState(m, d, X0);
  if (st != MJDIFF_OK) return st;

  if (!vjp) {
    if (what == PRODUCT_JVP) {
      mju_copy(out, run, ndx);
    } else {
      mju_copy(w->AB, T, (size_t)ndx * ncol);
    }
    // the derived quantities of the forward pass at x_0
    st = mjdiff_forward(m, d, s, err, errsz);
    mjdiff_loadState(m, d, X0);
    return st;
  }

  chainVJPStart(w, in);
  for (int k = n - 1; k >= 1; k--) {
    stepAt at = recordAt(w, k - 1);
    eulerVJP(m, NULL, w, &at, run, res);
    chainVJPAdd(w);
  }
  st = evaluateOne(m, d, s, w, PRODUCT_VJP, run, res, err, errsz);
  if (st == MJDIFF_OK) {
    chainVJPAdd(w);
    chainVJPEnd(w, !mjdiff_hasFreeBlock(m), out);  // (freeBlockRows: no applied-force adjoint)
  }
  mjdiff_loadState(m, d, X0);
  return st;
}

// d at state k of X (sz numbers each), and the model step k is taken on: m, or with hs the view
// with timestep hs[k], Newton started at step k's end velocity (state k + 1's)
static const mjModel* chainModel(const mjModel* m, mjData* d, mjdiffStepDeriv* w,
                                 const mjtNum* X, int sz, const mjtNum* hs, int k,
                                 mjModel* view) {
  mjdiff_loadState(m, d, X + (size_t)sz * k);
  if (!hs) return m;
  view->opt.timestep = hs[k];
  mjdiff_stepDerivHint(w, X + (size_t)sz * (k + 1) + m->nq);
  return view;
}

// the products chained over n steps whose start states are X (sz numbers each), step k taken on
// m with the timestep hs[k] (hs NULL: m's own; with hs, step k's Newton starts at its end velocity,
// the next state's, as the step found it):
//   Jacobian  T_1 = [A_0 B_0], T_{k+1} = A_k T_k + [0 B_k]
//   VJP       lam_n = adj_next; lam_k = A_k' lam_{k+1}, adj_[u p] += B_k' lam_{k+1}; adj_x = lam_0
//             (and the applied force's adjoint, held over the step, summed over k)
//   JVP       t_0 = dx; t_{k+1} = A_k t_k + B_k [du dp]
// d's state is left at one of X's
static mjdiffStatus chainSteps(const mjModel* m, mjData* d, const mjdiffModel* s,
                               mjdiffStepDeriv* w, product what, const mjtNum* in, mjtNum* out,
                               const mjtNum* X, int n, const mjtNum* hs, char* err, int errsz) {
  int ndx = w->ndx, ncol = ndx + w->nin, nv = w->nv, sz = m->nq + nv + w->na + 1;
  mjModel user, view = *mjdiff_userModel(m, s, &user);  // (a view of an attached model: its user's)
  mjdiffStatus st = MJDIFF_OK;
  mjtNum *run = w->subIn, *res = w->subIn + ncol;
  if (what == PRODUCT_JACOBIAN) {
    mjtNum *T = w->chain, *T2 = w->chain + (size_t)ndx * ncol;
    for (int k = 0; k < n && st == MJDIFF_OK; k++) {
      const mjModel* mk = chainModel(m, d, w, X, sz, hs, k, &view);
      st = evaluateOne(mk, d, s, w, what, NULL, NULL, err, errsz);
      if (st == MJDIFF_OK) chainJacobian(w, k == 0, &T, &T2);
    }
    if (st == MJDIFF_OK) mju_copy(w->AB, T, (size_t)ndx * ncol);
  } else if (what == PRODUCT_VJP) {
    int ok = 1;
    chainVJPStart(w, in);
    for (int k = n - 1; k >= 0 && st == MJDIFF_OK; k--) {
      const mjModel* mk = chainModel(m, d, w, X, sz, hs, k, &view);
      st = evaluateOne(mk, d, s, w, what, run, res, err, errsz);
      if (st != MJDIFF_OK) break;
      ok = ok && w->qfrcOk;
      chainVJPAdd(w);
    }
    if (st == MJDIFF_OK) chainVJPEnd(w, ok, out);
  } else {
    mju_copy(run, in, ncol);
    for (int k = 0; k < n && st == MJDIFF_OK; k++) {
      const mjModel* mk = chainModel(m, d, w, X, sz, hs, k, &view);
      st = evaluateOne(mk, d, s, w, what, run, res, err, errsz);
      mju_copy(run, res, ndx);
    }
    if (st == MJDIFF_OK) mju_copy(out, run, ndx);
  }
  return st;
}

// the products of a step of n substeps x_{k+1} = F_k(x_k, u, p), k = 0 .. n-1 (header): the
// substeps' start states are walked again (mjdiff_substep, bit for bit mjdiff_step's), then
//   Jacobian  T_1 = [A_0 B_0], T_{k+1} = A_k T_k + [0 B_k]
//   VJP       lam_n = adj_next; lam_k = A_k' lam_{k+1}, adj_[u p] += B_k' lam_{k+1}; adj_x = lam_0
//             (and the applied force's adjoint, held over the step, summed over k)
//   JVP       t_0 = dx; t_{k+1} = A_k t_k + B_k [du dp]
// d's state is restored bit for bit, and its derived quantities are those of the forward pass at
// x_0, as after a single step's. Euler: in one forward sweep (substepsSweep); RK4, whose stages
// leave d's derived quantities at the last stage: walked first, then a sweep over the start states
static mjdiffStatus evaluateSubsteps(const mjModel* m, mjData* d, const mjdiffModel* s,
                                     mjdiffStepDeriv* w, product what, const mjtNum* in,
                                     mjtNum* out, char* err, int errsz) {
  if (mjdiff_eulerLike(m) && !mjdiff_implicit(s)) {
    return substepsSweep(m, d, s, w, what, in, out, err, errsz);
  }
  int n = mjdiff_substepCount(s), nv = w->nv;
  int sz = m->nq + nv + w->na + 1;
  mjtNum* X = w->subState;
  mjdiffStatus st = MJDIFF_OK;
  mjdiff_saveState(m, d, X);
  for (int k = 1; k < n && st == MJDIFF_OK; k++) {
    st = mjdiff_substep(m, d, s, err, errsz);
    mjdiff_saveState(m, d, X + (size_t)sz * k);
  }
  mjdiff_loadState(m, d, X);
  if (st != MJDIFF_OK) return st;

  st = chainSteps(m, d, s, w, what, in, out, X, n, NULL, err, errsz);
  mjdiff_loadState(m, d, X);
  if (what != PRODUCT_VJP && st == MJDIFF_OK) {
    // the derived quantities of the forward pass at x_0 (the backward walk of the VJP ends there)
    st = mjdiff_forward(m, d, s, err, errsz);
    mjdiff_loadState(m, d, X);
  }
  return st;
}

// the implicit step's products. Where its Newton solve converges at the model's timestep the step
// took that one step (with a hint, the root must be the hint's: the step's own v', within 1e3
// times Newton's tolerance), and its products are evaluateOne's. Otherwise mjdiff_step split it
// (step.c, implicitStep): the split is replayed from the state without hint, exactly as the step
// took it (mjdiff_implicitPieces), and the products are chained over its steps (chainSteps), each
// step's Newton started at its own end velocity; d's derived quantities end at x_0's forward pass
static mjdiffStatus evaluateImplicit(const mjModel* m, mjData* d, const mjdiffModel* s,
                                     mjdiffStepDeriv* w, product what, const mjtNum* in,
                                     mjtNum* out, char* err, int errsz) {
  int hinted = w->hint, nv = w->nv, sz = m->nq + nv + w->na + 1;
  mjdiffStatus st = evaluateOne(m, d, s, w, what, in, out, err, errsz);
  if (w->newtonRoot && hinted) {
    // the hint's root is the step's (also where a later stage failed: that is the step's error)
    mjtNum diff = 0, scale = 1;
    for (int i = 0; i < nv; i++) {
      diff = mju_max(diff, fabs(w->vnext[i] - w->vhint[i]));
      scale = mju_max(scale, 1 + fabs(w->vhint[i]));
    }
    if (diff <= 1e3 * s->opt.implicit_tol * scale) return st;
  } else if (st == MJDIFF_OK || !w->newtonFailed) {
    return st;  // (no hint: Newton's solve from v' = v is the step's own)
  }
  if (what == PRODUCT_JACOBIAN && !w->chained) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "the implicit step may have split at time "
                        "%g, and a Jacobian chained over its steps needs a workspace made with "
                        "the implicit step chosen: make it again", d->time);
  }

  // the split, replayed: X's first state x_0, then the steps' start states and the end state
  mjtNum* X = w->subState;
  mjdiffPieces rec = {0, 1 << MJDIFF_MAX_SPLIT, X + sz, w->pieceH};
  mjdiff_saveState(m, d, X);
  st = mjdiff_implicitPieces(m, d, s, &rec, err, errsz);
  mjdiff_loadState(m, d, X);
  if (st != MJDIFF_OK) return st;
  st = chainSteps(m, d, s, w, what, in, out, X + sz, rec.n, rec.h, err, errsz);
  w->hint = 0;  // (a step that failed before its Newton solve leaves none behind)
  mjdiff_loadState(m, d, X);
  if (st == MJDIFF_OK) {
    st = mjdiff_forward(m, d, s, err, errsz);
    mjdiff_loadState(m, d, X);
  }
  return st;
}

// at the state in d: w->AB (Jacobian), or out = [A B]' in (VJP), or out = [A B] in (JVP); d's
// state is restored bit for bit
static mjdiffStatus evaluate(const mjModel* m, mjData* d, const mjdiffModel* s,
                             mjdiffStepDeriv* w, product what, const mjtNum* in, mjtNum* out,
                             char* err, int errsz) {
  if (!d || !w) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "data or workspace is NULL");
  w->qfrcOk = 0;  // (mjdiff_stepForceAdjoint: 0 after a call that failed, wherever it failed)
  mjdiffStatus st = mjdiff_checkPair(m, s, err, errsz);
  if (st != MJDIFF_OK) return st;
  if (w->m != m || w->s != s) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "step-derivative workspace was made for another model");
  }
  st = mjdiff_checkIntegrator(m, s, err, errsz);
  if (st == MJDIFF_OK) st = freeBlockParams(m, w->p, err, errsz);  // (parameters move bodies)
  if (st != MJDIFF_OK) return st;
  // input vectors must be finite (a NaN would give NaN products with status OK)
  int nin = what == PRODUCT_VJP ? w->ndx : what == PRODUCT_JVP ? w->ndx + w->nin
            : what == PRODUCT_SENSOR_VJP ? m->nsensordata : 0;
  for (int i = 0; in && i < nin; i++) {
    if (!isfinite(in[i])) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE, "%s[%d] is not finite (%g)",
                          what == PRODUCT_VJP ? "adj_next" : what == PRODUCT_JVP ? "dx, du or dp"
                          : "adj_sensor", i, in[i]);
    }
  }

  int nsub = mjdiff_substepCount(s);
  if (nsub > 1 && (what == PRODUCT_JACOBIAN || what == PRODUCT_VJP || what == PRODUCT_JVP)) {
    if (nsub > w->nsub) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                          "step-derivative workspace was made for %d substeps, the smooth model "
                          "now takes %d: make it again", w->nsub, nsub);
    }
    st = evaluateSubsteps(m, d, s, w, what, in, out, err, errsz);
  } else if (mjdiff_implicit(s) &&
             (what == PRODUCT_JACOBIAN || what == PRODUCT_VJP || what == PRODUCT_JVP)) {
    st = evaluateImplicit(m, d, s, w, what, in, out, err, errsz);
  } else {
    st = evaluateOne(m, d, s, w, what, in, out, err, errsz);
  }
  if (st != MJDIFF_OK) w->qfrcOk = 0;
  return st;
}

// evaluate's product for one (sub)step at the state in d
static mjdiffStatus evaluateOne(const mjModel* m, mjData* d, const mjdiffModel* s,
                                mjdiffStepDeriv* w, product what, const mjtNum* in, mjtNum* out,
                                char* err, int errsz) {
  // the forward pass re-normalises quaternions (changing their last bits): restore the state after
  mjdiffStatus st = MJDIFF_OK;
  mjdiff_saveState(m, d, w->state);
  resetBad(w);
  int euler = mjdiff_eulerLike(m) || mjdiff_implicit(s);
  st = mjdiff_forward(m, d, s, err, errsz);
  if (st == MJDIFF_OK) {
    int ndx = w->ndx, ncol = ndx + w->nin;
    if (what == PRODUCT_SENSOR_VJP) {
      sensorVJP(m, d, w, in, out);
    } else if (what == PRODUCT_SENSOR_JACOBIAN) {
      sensorJacobian(m, d, w, out);
    } else if (euler && what != PRODUCT_JACOBIAN) {
      int mode;
      st = eulerDeriv(m, d, w, &mode, err, errsz);
      if (st == MJDIFF_OK && what == PRODUCT_VJP) {
        stepAt at = stepAtData(d, w, mode);
        eulerVJP(m, d, w, &at, in, out);
      }
      if (st == MJDIFF_OK && what == PRODUCT_JVP) eulerJVP(m, d, w, mode, in, out);
    } else {
      // RK4 products go through the full Jacobian
      if (!euler) {
        st = rk4Jacobian(m, d, w, err, errsz);
      } else {
        int mode;
        st = eulerDeriv(m, d, w, &mode, err, errsz);
        if (st == MJDIFF_OK) eulerJacobian(m, d, w, mode);
      }
      if (st == MJDIFF_OK && what == PRODUCT_VJP) mju_mulMatTVec(out, w->AB, in, ndx, ncol);
      if (st == MJDIFF_OK && what == PRODUCT_JVP) mju_mulMatVec(out, w->AB, in, ndx, ncol);
    }
  }
  st = reportBad(m, d, w, st, err, errsz);
  mjdiff_loadState(m, d, w->state);
  return st;
}

mjdiffStatus mjdiff_stepJacobian(const mjModel* m, mjData* d, const mjdiffModel* s,
                                 mjdiffStepDeriv* w, mjtNum* A, mjtNum* B, mjtNum* P, char* err,
                                 int errsz) {
  mjdiffStatus st = evaluate(m, d, s, w, PRODUCT_JACOBIAN, NULL, NULL, err, errsz);
  if (st != MJDIFF_OK) return st;
  int ndx = w->ndx, nu = w->nu, np = w->np, ncol = ndx + w->nin;
  for (int r = 0; r < ndx; r++) {
    const mjtNum* row = w->AB + (size_t)ncol * r;
    if (A) mju_copy(A + (size_t)ndx * r, row, ndx);
    if (B && nu) mju_copy(B + (size_t)nu * r, row + ndx, nu);
    if (P && np) mju_copy(P + (size_t)np * r, row + ndx + nu, np);
  }
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_stepVJP(const mjModel* m, mjData* d, const mjdiffModel* s, mjdiffStepDeriv* w,
                            const mjtNum* adj_next, mjtNum* adj_x, mjtNum* adj_ctrl,
                            mjtNum* adj_param, char* err, int errsz) {
  if (!adj_next) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "adj_next is NULL");
  if (!w) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "workspace is NULL");
  mjdiffStatus st = evaluate(m, d, s, w, PRODUCT_VJP, adj_next, w->tmp2, err, errsz);
  if (st != MJDIFF_OK) return st;
  if (adj_x) mju_copy(adj_x, w->tmp2, w->ndx);
  if (adj_ctrl && w->nu) mju_copy(adj_ctrl, w->tmp2 + w->ndx, w->nu);
  if (adj_param && w->np) mju_copy(adj_param, w->tmp2 + w->ndx + w->nu, w->np);
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_stepJVP(const mjModel* m, mjData* d, const mjdiffModel* s, mjdiffStepDeriv* w,
                            const mjtNum* dx, const mjtNum* du, const mjtNum* dp, mjtNum* dx_next,
                            char* err, int errsz) {
  if (!dx_next) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "dx_next is NULL");
  if (!w) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "workspace is NULL");
  mju_zero(w->tmp, w->ndx + w->nin);
  if (dx) mju_copy(w->tmp, dx, w->ndx);
  if (du && w->nu) mju_copy(w->tmp + w->ndx, du, w->nu);
  if (dp && w->np) mju_copy(w->tmp + w->ndx + w->nu, dp, w->np);
  return evaluate(m, d, s, w, PRODUCT_JVP, w->tmp, dx_next, err, errsz);
}

mjdiffStatus mjdiff_sensorVJP(const mjModel* m, mjData* d, const mjdiffModel* s,
                              mjdiffStepDeriv* w, const mjtNum* adj_sensor, mjtNum* adj_x,
                              mjtNum* adj_ctrl, mjtNum* adj_param, char* err, int errsz) {
  if (!adj_sensor) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "adj_sensor is NULL");
  if (!w) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "workspace is NULL");
  int ncol = w->ndx + w->nin;
  mju_zero(w->tmp2, ncol);
  mjdiffStatus st = evaluate(m, d, s, w, PRODUCT_SENSOR_VJP, adj_sensor, w->tmp2, err, errsz);
  if (st != MJDIFF_OK) return st;
  if (adj_x) mju_addTo(adj_x, w->tmp2, w->ndx);
  if (adj_ctrl && w->nu) mju_addTo(adj_ctrl, w->tmp2 + w->ndx, w->nu);
  if (adj_param && w->np) mju_addTo(adj_param, w->tmp2 + w->ndx + w->nu, w->np);
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_sensorJacobian(const mjModel* m, mjData* d, const mjdiffModel* s,
                                   mjdiffStepDeriv* w, mjtNum* C, mjtNum* D, mjtNum* Q, char* err,
                                   int errsz) {
  if (!w) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "workspace is NULL");
  int ns = m->nsensordata, ndx = w->ndx, nu = w->nu, np = w->np, ncol = ndx + w->nin;
  if (compat_stackSpace(d) < ns * ncol + 1000) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY,
                        "mjData stack too small for the sensor Jacobian (%d x %d)", ns, ncol);
  }
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* out = compat_stackAllocNum(d, ns * ncol > 0 ? ns * ncol : 1);
  mjdiffStatus st = evaluate(m, d, s, w, PRODUCT_SENSOR_JACOBIAN, NULL, out, err, errsz);
  if (st == MJDIFF_OK) {
    for (int i = 0; i < ns; i++) {
      const mjtNum* row = out + (size_t)ncol * i;
      if (C) mju_copy(C + (size_t)ndx * i, row, ndx);
      if (D && nu) mju_copy(D + (size_t)nu * i, row + ndx, nu);
      if (Q && np) mju_copy(Q + (size_t)np * i, row + ndx + nu, np);
    }
  }
  compat_stackFree(d, mark);
  return st;
}
