// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Least squares (<mjdiff/optim.h>), for mjdiff-sysid and every tool that fits: minimise
// F(z) = 1/2 |r(z)|^2, r in R^m, z in R^n. Nothing is printed (progress: the caller's callback).
//
// Bounds by reparameterisation; the optimisers work in y:
//   lo and hi    z = lo + (hi - lo) (1 + sin y) / 2      dz/dy = (hi - lo) cos(y) / 2
//   lo only      z = lo + exp(y)                         dz/dy = exp(y)
//   hi only      z = hi - exp(y)                         dz/dy = -exp(y)
//   none         z = y                                   dz/dy = 1
//   lo = hi      z = lo                                  dz/dy = 0
//   J_y = J_z diag(dz/dy)
// The start z is first clipped strictly inside its bounds: by 1e-6 (hi - lo) with both bounds, by
// 1e-6 max(1, |bound|) with one (at a bound, sin and exp would have no gradient or no inverse).
//
// Levenberg-Marquardt (Marquardt's scaling, Nielsen's damping update), per iteration:
//   J_y = J_z diag(dz/dy), g = J_y'r
//   A = J_y'J_y + C, C_jj = max(0, (J_z'r)_j d2z_j/dy_j^2) for variables with both bounds
//     (the sin map's own curvature: at an active bound J_y'J_y vanishes there, and without C
//     the step overshoots and lambda grows until every variable stalls; exp maps reach their
//     bound at y = -inf, where the Gauss-Newton step jumps, so they get no C)
//   D = diag(A) (zero entries 1, tiny ones floored)
//   (A + lambda D) h = -g                       Cholesky; not positive definite: lambda *= 10
//   |z(y + h) - z(y)| <= xtol (|z| + xtol)     stop: converged (xtol), the step is not taken
//   predicted decrease  L(0) - L(h) = 1/2 h'(lambda D h - g)
//   gain ratio          rho = (F(y) - F(y + h)) / (L(0) - L(h))
//   rho > 0: accept y += h; lambda *= max(1/3, 1 - (2 rho - 1)^3), nu = 2;
//            stop if F_old - F <= ftol F_old (ftol) or max |g| <= gtol (gtol)
//   else (also when r cannot be evaluated or is not finite): lambda *= nu, nu *= 2;
//            stop if L(0) - L(h) <= ftol F and |F(y + h) - F(y)| <= ftol F (ftol: the step is
//            lost in rounding, as in MINPACK)
// J_z is the residual's own Jacobian (MJDIFF_LSQ_LM: one call with J at the start and per
// accepted point) or one-sided differences (MJDIFF_LSQ_LM_FD: n calls without J at the start and per
// accepted point): variable j steps by fd_eps max(1, |y_j|) in y and the column is the secant
// dr / dz_j (see fdJacobian). xtol is measured in z, where a variable at a one-sided bound
// (y -> -inf) does not inflate |y|.
//
// Nelder-Mead on F(y) (failed points: F = +inf): initial simplex y, y + s_j e_j with
// s_j = 0.05 y_j (0.00025 where y_j = 0); reflection, expansion, contraction, shrink coefficients
// (1, 2, 1/2, 1/2), for n > 2 Gao & Han's (1, 1 + 2/n, 3/4 - 1/(2n), 1 - 1/n). It stops when the
// simplex's size in z, max_i |z_i - z_best| <= xtol (|z_best| + xtol) (xtol), or when the spread
// of F over the simplex F_worst - F_best <= ftol F_best (ftol); gtol does not apply.
//
// Standard errors at the solution, from the Gauss-Newton Hessian in z:
//   stderr_z = sqrt(diag((J_z'J_z)^-1) 2F / (m - n))
// (a variable with lo = hi is known: its error is 0, and it counts neither in J_z nor in n)
// J_z: MJDIFF_LSQ_LM the last Jacobian (at the solution); otherwise forward differences in z
// (step fd_eps max(1, |z_j|), backward where the forward step would leave the bounds; the
// residual is never evaluated outside them), n more evaluations (Nelder-Mead: n + 1). NaN if m <= n
// or J_z'J_z is singular (a Cholesky pivot below 1e-14 of its diagonal entry).
//
// Block structure (prob->normal, Levenberg-Marquardt only): z = (p, d_0, ..., d_{B-1}), every
// residual depending on p and at most d_b, d_{b+1}. With s = dz/dy the scaled Hessian blocks are
//   A_pp = s_p Hpp s_p, E_b = s_b Hdp_b s_p, T_bb = s_b Hdd_b s_b, T_b,b+1 = O_b = s_b Hdo_b s_{b+1}
// (plus C and lambda D on the diagonal). Ordering (d_0 .. d_{B-1}, p):
//   [T  E ] [h_d]   [-g_d]     T block tridiagonal = L L', L block bidiagonal:
//   [E' A ] [h_p] = [-g_p]     L_0 L_0' = T_00;  C_b = O_{b-1}' L_{b-1}^-T  (L_{b-1} C_b' = O_{b-1}),
//                              L_b L_b' = T_bb - C_b C_b'
//   W = L^-1 E:    W_b = L_b^-1 (E_b - C_b W_{b-1})
//   Schur on p:    S = A_pp - sum_b W_b'W_b                    (Cholesky)
//   v = L^-1 (-g_d): v_b = L_b^-1 (-g_b - C_b v_{b-1});  S h_p = -g_p - sum_b W_b'v_b
//   h_d = L^-T (v - W h_p):  u_{B-1} = L_{B-1}^-T y_{B-1},  u_b = L_b^-T (y_b - C_{b+1}' u_{b+1})
// which is exactly the dense solution in O(B (bs^3 + bs^2 np + bs np^2) + np^3) time and
// O(B (bs^2 + bs np)) memory. Standard errors: (J_z'J_z)^-1 restricted to p is S^-1 of the
// unscaled blocks (lambda = 0); the d entries are NaN (not computed).
//
// Conditioning (result.cond): the largest variance inflation factor A_ii (A^-1)_ii of the
// Gauss-Newton Hessian A = J_z'J_z over the reported variables (the inverse diagonal of A scaled
// to a unit diagonal; a lower bound of its condition number, and the factor by which correlation
// with the other variables inflates a variance). reliable = converged, cond <= cond_max and every
// reported standard error finite; a caller must not present the errors of an unreliable fit as
// confident.
//
// Counts: evaluations are calls without J, jacobians calls with J. An iteration is one trial
// step (LM) or one simplex update (Nelder-Mead). The cancel flag is read before each iteration;
// an interrupted run returns its best point so far, with standard errors. max_iter < 0 means
// the method's default: 100, Nelder-Mead 200 n (mjdiff_defaultLsqOptions sets -1); 0 takes no step
// (status "max iterations" unless the start point meets gtol). opt may be NULL (defaults).

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/linalg.h>
#include <mjdiff/optim.h>

#include "internal.h"

#define CLIP 1e-6         // relative distance of the start point from a bound
#define LAMBDA_INIT 1e-3  // initial damping (relative to diag(J'J))
#define LAMBDA_MIN 1e-20
#define LAMBDA_MAX 1e30   // beyond: no acceptable step ("failed")
#define DIAG_FLOOR 1e-30  // D_i >= DIAG_FLOOR max_j A_jj
#define PIVOT_TOL 1e-14   // Cholesky pivot relative to its diagonal entry

enum { KIND_FREE = 0, KIND_BOTH, KIND_LOWER, KIND_UPPER, KIND_FIXED };

// workspace of one solve
typedef struct {
  const mjdiffLsqProblem* prob;
  mjdiffLsqOptions opt;
  int n, m;
  int* kind;      // (n) KIND_*
  double* lo;     // (n)
  double* hi;     // (n)
  double* y;      // (n) current point
  double* z;      // (n) its image
  double* dzdy;   // (n)
  double* ynew;   // (n) trial point
  double* znew;   // (n)
  double* dznew;  // (n)
  double* zfd;    // (n) finite-difference points
  double* h;      // (n) step
  double* g;      // (n) J_y'r
  double* D;      // (n) Marquardt scaling
  double* gz;     // (n) J_z'r
  double* A;      // (n x n) J_y'J_y
  double* L;      // (n x n) Cholesky factor
  double* r;      // (m) residuals at y
  double* rnew;   // (m)
  double* rtmp;   // (m)
  double* Jz;     // (m x n)
  double* Jy;     // (m x n) (LM only)
  double* Jnew;   // (m x n) (LM only)
  double* S;      // ((n+1) x n) simplex (Nelder-Mead only)
  double* fs;     // (n+1) its costs
  int* ord;       // (n+1) its order
  double F;       // cost at y
  int iterations, evaluations, jacobians;
  // block structure (blocks = 1)
  int blocks, np, nb, bs;
  mjdiffLsqBlocks H, Hn;   // normal equations in z at y, at the trial point
  double* Lb;     // (nb x bs x bs) diagonal factors
  double* Cb;     // (nb x bs x bs) subdiagonal factors (block 0 unused)
  double* Wb;     // (nb x bs x np) L^-1 E
  double* Sp;     // (np x np) Schur complement, its factor
  double* Cdiag;  // (n) the sin map's curvature term C
  double* tmp;    // (bs x max(bs, np)) scratch
} Work;

//---------------------------------- reparameterisation -------------------------------------------

// z and dz/dy of variable j at y
static double mapOne(const Work* w, int j, double y, double* dzdy) {
  double lo = w->lo[j], hi = w->hi[j], z, e;
  switch (w->kind[j]) {
    case KIND_BOTH:
      z = lo + (hi - lo) * (1 + sin(y)) / 2;
      if (z < lo) z = lo;
      if (z > hi) z = hi;
      *dzdy = (hi - lo) * cos(y) / 2;
      return z;
    case KIND_LOWER:
      e = exp(y);
      *dzdy = e;
      return lo + e;
    case KIND_UPPER:
      e = exp(y);
      *dzdy = -e;
      return hi - e;
    case KIND_FIXED:
      *dzdy = 0;
      return lo;
    default:
      *dzdy = 1;
      return y;
  }
}

static void toZ(const Work* w, const double* y, double* z, double* dzdy) {
  for (int j = 0; j < w->n; j++) z[j] = mapOne(w, j, y[j], dzdy + j);
}

// y of z, z first clipped strictly inside its bounds
static void toY(const Work* w, const double* z, double* y) {
  for (int j = 0; j < w->n; j++) {
    double lo = w->lo[j], hi = w->hi[j], zc = z[j], margin, s;
    switch (w->kind[j]) {
      case KIND_BOTH:
        margin = CLIP * (hi - lo);
        if (zc < lo + margin) zc = lo + margin;
        if (zc > hi - margin) zc = hi - margin;
        s = 2 * (zc - lo) / (hi - lo) - 1;
        y[j] = asin(s < -1 ? -1 : s > 1 ? 1 : s);
        break;
      case KIND_LOWER:
        margin = CLIP * fmax(1, fabs(lo));
        if (zc < lo + margin) zc = lo + margin;
        y[j] = log(zc - lo);
        break;
      case KIND_UPPER:
        margin = CLIP * fmax(1, fabs(hi));
        if (zc > hi - margin) zc = hi - margin;
        y[j] = log(hi - zc);
        break;
      case KIND_FIXED:
        y[j] = 0;
        break;
      default:
        y[j] = zc;
    }
  }
}

//---------------------------------- evaluations --------------------------------------------------

// r (and J when not NULL) at z, F = 1/2 |r|^2; -1 if z is not finite (no call), the residual
// function fails, or r or J is not finite
static int evalR(Work* w, const double* z, double* r, double* J, double* F) {
  int n = w->n, m = w->m;
  for (int j = 0; j < n; j++) {
    if (!isfinite(z[j])) return -1;
  }
  if (J) {
    w->jacobians++;
  } else {
    w->evaluations++;
  }
  if (w->blocks) {
    if (w->prob->normal(w->prob->user, z, r, NULL) != 0) return -1;
  } else if (w->prob->residual(w->prob->user, z, r, J) != 0) {
    return -1;
  }
  double s = 0;
  for (int k = 0; k < m; k++) s += r[k] * r[k];
  if (!isfinite(s)) return -1;
  if (J) {
    for (long i = 0; i < (long)m * n; i++) {
      if (!isfinite(J[i])) return -1;
    }
  }
  *F = 0.5 * s;
  return 0;
}

// one-sided differences of r at (y, z), r = r(z): J_z (m x n); -1 if some column can be
// evaluated on neither side.
//   inY: variable j steps by fd_eps max(1, |y_j|) in y, and the column is the secant in z,
//        (r(z(y + h e_j)) - r) / (z_j(y_j + h) - z_j); z(y + h e_j) stays inside the bounds.
//        With both bounds the step goes where |cos y_j| grows (away from a bound, so that
//        |dz| >= (hi - lo) h^2 / 4); a column whose dz is 0 (exp underflow) is 0.
//   else: variable j steps by fd_eps max(1, |z_j|) in z, backward where the forward step
//        would leave the bounds; never outside them.
// A variable with lo = hi has a zero column and costs no evaluation.
static int fdJacobian(Work* w, int inY, const double* y, const double* z, const double* r,
                      double* J) {
  int n = w->n, m = w->m;
  double* zp = w->zfd;
  double* rp = w->rtmp;
  double F, dz;
  memcpy(zp, z, sizeof(double) * n);
  for (int j = 0; j < n; j++) {
    double x = inY ? y[j] : z[j], lo = w->lo[j], hi = w->hi[j];
    double step = w->opt.fd_eps * fmax(1, fabs(x));
    if (w->kind[j] == KIND_FIXED) {
      for (int k = 0; k < m; k++) J[(long)k * n + j] = 0;
      continue;
    }
    if (inY) {
      if (w->kind[j] == KIND_BOTH && sin(x) * cos(x) > 0) step = -step;
    } else if (x + step > hi) {
      // backward, or the larger room when the interval is narrower than the step
      step = x - step >= lo ? -step : (hi - x >= x - lo ? hi - x : lo - x);
    }
    int ok = 0;
    double hz = 0;
    for (int attempt = 0; attempt < 2 && !ok; attempt++) {
      double xp = x + (attempt ? -step : step);
      if (!inY && (xp < lo || xp > hi)) continue;  // never evaluate outside the bounds
      zp[j] = inY ? mapOne(w, j, xp, &dz) : xp;
      hz = zp[j] - z[j];  // the step actually taken, in z
      ok = evalR(w, zp, rp, NULL, &F) == 0;
    }
    zp[j] = z[j];
    if (!ok) return -1;
    for (int k = 0; k < m; k++) J[(long)k * n + j] = hz != 0 ? (rp[k] - r[k]) / hz : 0;
  }
  return 0;
}

//---------------------------------- linear algebra -----------------------------------------------

// A = J'J (n x n), g = J'r (n); g skipped if NULL
static void normalEquations(int m, int n, const double* J, const double* r, double* A, double* g) {
  memset(A, 0, sizeof(double) * n * n);
  if (g) memset(g, 0, sizeof(double) * n);
  for (int k = 0; k < m; k++) {
    const double* row = J + (long)k * n;
    for (int i = 0; i < n; i++) {
      double ri = row[i];
      if (ri == 0) continue;
      double* Ai = A + (long)i * n;
      for (int j = 0; j <= i; j++) Ai[j] += ri * row[j];
      if (g) g[i] += ri * r[k];
    }
  }
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < i; j++) A[(long)j * n + i] = A[(long)i * n + j];
  }
}

// in place lower Cholesky factor of L (n x n, <mjdiff/linalg.h>); -1 if a pivot is not above
// PIVOT_TOL times its diagonal entry (not positive definite, or numerically singular)
static int cholesky(int n, double* L) {
  return mjdiff_cholesky(L, n, PIVOT_TOL) ? -1 : 0;
}

// solve L L' x = b in place
static void cholSolve(int n, const double* L, double* x) {
  mjdiff_cholSolve(L, n, x, 1);
}

static double norm2(int n, const double* x) {
  double s = 0;
  for (int i = 0; i < n; i++) s += x[i] * x[i];
  return sqrt(s);
}

static double distance(int n, const double* x, const double* y) {
  double s = 0;
  for (int i = 0; i < n; i++) s += (x[i] - y[i]) * (x[i] - y[i]);
  return sqrt(s);
}

static double maxAbs(int n, const double* x) {
  double s = 0;
  for (int i = 0; i < n; i++) s = fmax(s, fabs(x[i]));
  return s;
}

static void swapPtr(double** a, double** b) {
  double* t = *a;
  *a = *b;
  *b = t;
}


//---------------------------------- block structure ----------------------------------------------

static long hddSize(const Work* w) {
  return (long)w->nb * w->bs * w->bs;
}

static void zeroBlocks(const Work* w, mjdiffLsqBlocks* H) {
  memset(H->Hpp, 0, sizeof(double) * (size_t)w->np * w->np);
  memset(H->Hdp, 0, sizeof(double) * (size_t)w->nb * w->bs * w->np);
  memset(H->Hdd, 0, sizeof(double) * (size_t)hddSize(w));
  memset(H->Hdo, 0, sizeof(double) * (size_t)hddSize(w));
  memset(H->g, 0, sizeof(double) * (size_t)w->n);
}

static int finiteArray(long n, const double* x) {
  for (long i = 0; i < n; i++) {
    if (!isfinite(x[i])) return 0;
  }
  return 1;
}

// r and the normal equations H at z, F = 1/2 |r|^2; -1 as evalR
static int evalH(Work* w, const double* z, double* r, mjdiffLsqBlocks* H, double* F) {
  for (int j = 0; j < w->n; j++) {
    if (!isfinite(z[j])) return -1;
  }
  w->jacobians++;
  zeroBlocks(w, H);
  if (w->prob->normal(w->prob->user, z, r, H) != 0) return -1;
  double s = 0;
  for (int k = 0; k < w->m; k++) s += r[k] * r[k];
  if (!isfinite(s)) return -1;
  if (!finiteArray((long)w->np * w->np, H->Hpp) ||
      !finiteArray((long)w->nb * w->bs * w->np, H->Hdp) || !finiteArray(hddSize(w), H->Hdd) ||
      !finiteArray(hddSize(w), H->Hdo) || !finiteArray(w->n, H->g)) {
    return -1;
  }
  *F = 0.5 * s;
  return 0;
}

// scale of variable j in the factored matrix, its diagonal addition, whether it is decoupled
// (rows and columns of the identity)
typedef struct {
  const double* s;    // (n) column scales (dz/dy), or NULL: 1
  const double* add;  // (n) added to the diagonal, or NULL
  int decoupleFixed;  // fixed variables decoupled (standard errors)
} FactorSpec;

static double scaleOf(const Work* w, const FactorSpec* f, int j) {
  if (f->decoupleFixed && w->kind[j] == KIND_FIXED) return 0;
  return f->s ? f->s[j] : 1;
}

static double addOf(const Work* w, const FactorSpec* f, int j) {
  double a = f->add ? f->add[j] : 0;
  if (f->decoupleFixed && w->kind[j] == KIND_FIXED) a = 1;
  return a;
}

// factor the scaled block matrix (T, E; E', A_pp) of H under f into Lb, Cb, Wb, Sp; -1 if it is
// not positive definite
static int factorBlocks(Work* w, const mjdiffLsqBlocks* H, const FactorSpec* f) {
  int np = w->np, bs = w->bs, nb = w->nb;
  long bb = (long)bs * bs, bp = (long)bs * np;
  for (int b = 0; b < nb; b++) {
    int o = np + b * bs;  // variable index of the block's first entry
    double* L = w->Lb + b * bb;
    double* C = w->Cb + b * bb;
    double* W = w->Wb + b * bp;
    const double* Hd = H->Hdd + b * bb;
    for (int i = 0; i < bs; i++) {
      double si = scaleOf(w, f, o + i);
      for (int j = 0; j < bs; j++) L[(long)i * bs + j] = si * Hd[(long)i * bs + j] * scaleOf(w, f, o + j);
      L[(long)i * bs + i] += addOf(w, f, o + i);
      for (int c = 0; c < np; c++) {
        W[(long)i * np + c] = si * H->Hdp[b * bp + (long)i * np + c] * scaleOf(w, f, c);
      }
    }
    if (b > 0) {
      // C_b' = L_{b-1}^-1 O_{b-1}, O_{b-1} (rows d_{b-1}, columns d_b)
      const double* Lp = w->Lb + (b - 1) * bb;
      const double* Ho = H->Hdo + (b - 1) * bb;
      double* Ct = w->tmp;  // C_b' (bs x bs)
      int op = o - bs;
      for (int i = 0; i < bs; i++) {
        double si = scaleOf(w, f, op + i);
        for (int j = 0; j < bs; j++) Ct[(long)i * bs + j] = si * Ho[(long)i * bs + j] * scaleOf(w, f, o + j);
      }
      mjdiff_lowerSolve(Lp, bs, Ct, bs);
      for (int i = 0; i < bs; i++) {
        for (int j = 0; j < bs; j++) C[(long)i * bs + j] = Ct[(long)j * bs + i];
      }
      // L_b L_b' = T_bb - C_b C_b';  W_b numerator E_b - C_b W_{b-1}
      const double* Wp = w->Wb + (b - 1) * bp;
      for (int i = 0; i < bs; i++) {
        for (int j = 0; j < bs; j++) {
          double x = 0;
          for (int k = 0; k < bs; k++) x += C[(long)i * bs + k] * C[(long)j * bs + k];
          L[(long)i * bs + j] -= x;
        }
        for (int k = 0; k < bs; k++) {
          double c = C[(long)i * bs + k];
          if (c == 0) continue;
          for (int q = 0; q < np; q++) W[(long)i * np + q] -= c * Wp[(long)k * np + q];
        }
      }
    }
    if (cholesky(bs, L)) return -1;
    mjdiff_lowerSolve(L, bs, W, np);
  }
  // S = A_pp - sum W_b'W_b
  for (int i = 0; i < np; i++) {
    for (int j = 0; j < np; j++) {
      w->Sp[(long)i * np + j] = scaleOf(w, f, i) * H->Hpp[(long)i * np + j] * scaleOf(w, f, j);
    }
    w->Sp[(long)i * np + i] += addOf(w, f, i);
  }
  for (int b = 0; b < nb; b++) {
    const double* W = w->Wb + b * bp;
    for (int k = 0; k < bs; k++) {
      const double* Wk = W + (long)k * np;
      for (int i = 0; i < np; i++) {
        if (Wk[i] == 0) continue;
        for (int j = 0; j < np; j++) w->Sp[(long)i * np + j] -= Wk[i] * Wk[j];
      }
    }
  }
  return np > 0 ? cholesky(np, w->Sp) : 0;
}

// solve with the factors: x = M^-1 rhs (n) in place
static void solveBlocks(Work* w, double* x) {
  int np = w->np, bs = w->bs, nb = w->nb;
  long bb = (long)bs * bs, bp = (long)bs * np;
  double* xp = x;
  // v = L^-1 x_d
  for (int b = 0; b < nb; b++) {
    double* v = x + np + (long)b * bs;
    if (b > 0) {
      const double* C = w->Cb + b * bb;
      const double* vp = v - bs;
      for (int i = 0; i < bs; i++) {
        double t = 0;
        for (int k = 0; k < bs; k++) t += C[(long)i * bs + k] * vp[k];
        v[i] -= t;
      }
    }
    mjdiff_lowerSolve(w->Lb + b * bb, bs, v, 1);
  }
  // S h_p = x_p - sum W_b'v_b
  for (int b = 0; b < nb; b++) {
    const double* W = w->Wb + b * bp;
    const double* v = x + np + (long)b * bs;
    for (int k = 0; k < bs; k++) {
      for (int i = 0; i < np; i++) xp[i] -= W[(long)k * np + i] * v[k];
    }
  }
  if (np > 0) cholSolve(np, w->Sp, xp);
  // y = v - W h_p, then u = L^-T y backwards
  for (int b = nb - 1; b >= 0; b--) {
    const double* W = w->Wb + b * bp;
    double* y = x + np + (long)b * bs;
    for (int k = 0; k < bs; k++) {
      double t = 0;
      for (int i = 0; i < np; i++) t += W[(long)k * np + i] * xp[i];
      y[k] -= t;
    }
    if (b < nb - 1) {
      const double* Cn = w->Cb + (b + 1) * bb;
      const double* un = y + bs;
      for (int k = 0; k < bs; k++) {
        double t = 0;
        for (int i = 0; i < bs; i++) t += Cn[(long)i * bs + k] * un[i];
        y[k] -= t;
      }
    }
    const double* L = w->Lb + b * bb;
    for (int i = bs - 1; i >= 0; i--) {
      double t = y[i];
      for (int k = i + 1; k < bs; k++) t -= L[(long)k * bs + i] * y[k];
      y[i] = t / L[(long)i * bs + i];
    }
  }
}

// g = s .* J_z'r, diag(A) with C, D: the block path's model at y
static void modelBlocks(Work* w) {
  int n = w->n, np = w->np, bs = w->bs;
  long bb = (long)bs * bs;
  for (int j = 0; j < n; j++) {
    w->gz[j] = w->H.g[j];
    w->g[j] = w->dzdy[j] * w->gz[j];
    double c = 0;
    if (w->kind[j] == KIND_BOTH) c = fmax(0, -w->gz[j] * (w->hi[j] - w->lo[j]) / 2 * sin(w->y[j]));
    w->Cdiag[j] = c;
    double hjj = j < np ? w->H.Hpp[(long)j * np + j]
                        : w->H.Hdd[((j - np) / bs) * bb + (long)((j - np) % bs) * (bs + 1)];
    w->D[j] = w->dzdy[j] * w->dzdy[j] * hjj + c;  // diag(A), floored below
  }
  double dmax = 0;
  for (int j = 0; j < n; j++) dmax = fmax(dmax, w->D[j]);
  for (int j = 0; j < n; j++) w->D[j] = w->D[j] == 0 ? 1 : fmax(w->D[j], DIAG_FLOOR * dmax);
}

// (A + lambda D) h = -g on the blocks; -1 if not positive definite
static int stepBlocks(Work* w, double lambda) {
  for (int j = 0; j < w->n; j++) w->L[j] = w->Cdiag[j] + lambda * w->D[j];  // L: (n) scratch here
  FactorSpec f = {w->dzdy, w->L, 0};
  if (factorBlocks(w, &w->H, &f)) return -1;
  for (int i = 0; i < w->n; i++) w->h[i] = -w->g[i];
  solveBlocks(w, w->h);
  return 0;
}

//---------------------------------- progress -----------------------------------------------------

static void progress(const Work* w, int iter, double F, double step, double lambda) {
  if (!w->opt.progress) return;
  mjdiffLsqProgress info = {iter, F, step, lambda, w->evaluations + w->jacobians};
  w->opt.progress(w->opt.progress_user, &info);
}

static int cancelled(const Work* w) {
  return w->opt.cancel && *w->opt.cancel;
}

//---------------------------------- Levenberg-Marquardt ------------------------------------------

// J_y = J_z diag(dz/dy), A = J_y'J_y + C, g = J_y'r, D = diag(A) (zero entries 1, tiny ones
// floored), with C the curvature of the sin map: C_jj = max(0, (J_z'r)_j d2z_j/dy_j^2)
static void model(Work* w) {
  int n = w->n, m = w->m;
  for (long k = 0; k < m; k++) {
    for (int j = 0; j < n; j++) w->Jy[k * n + j] = w->Jz[k * n + j] * w->dzdy[j];
  }
  normalEquations(m, n, w->Jy, w->r, w->A, w->g);
  memset(w->gz, 0, sizeof(double) * n);
  for (long k = 0; k < m; k++) {
    for (int j = 0; j < n; j++) w->gz[j] += w->Jz[k * n + j] * w->r[k];
  }
  for (int j = 0; j < n; j++) {
    if (w->kind[j] == KIND_BOTH) {
      double c = -w->gz[j] * (w->hi[j] - w->lo[j]) / 2 * sin(w->y[j]);
      if (c > 0) w->A[(long)j * n + j] += c;
    }
  }
  double dmax = 0;
  for (int j = 0; j < n; j++) dmax = fmax(dmax, w->A[(long)j * n + j]);
  for (int j = 0; j < n; j++) {
    double a = w->A[(long)j * n + j];
    w->D[j] = a == 0 ? 1 : fmax(a, DIAG_FLOOR * dmax);
  }
}

// from the evaluated start point (w->r, and w->Jz if exact, or w->H with blocks)
static const char* levenbergMarquardt(Work* w, int exact, int max_iter) {
  int n = w->n;
  const mjdiffLsqOptions* opt = &w->opt;
  double lambda = LAMBDA_INIT, nu = 2;

  if (!exact && fdJacobian(w, 1, w->y, w->z, w->r, w->Jz)) return "failed";
  if (w->blocks) {
    modelBlocks(w);
  } else {
    model(w);
  }
  progress(w, 0, w->F, NAN, lambda);
  if (maxAbs(n, w->g) <= opt->gtol) return "converged (gtol)";

  for (;;) {
    if (cancelled(w)) return "interrupted";
    if (w->iterations >= max_iter) return "max iterations";

    // (A + lambda D) h = -g, raising lambda until positive definite
    for (;;) {
      int bad;
      if (w->blocks) {
        bad = stepBlocks(w, lambda);
      } else {
        memcpy(w->L, w->A, sizeof(double) * n * n);
        for (int i = 0; i < n; i++) w->L[(long)i * n + i] += lambda * w->D[i];
        bad = cholesky(n, w->L);
        if (!bad) {
          for (int i = 0; i < n; i++) w->h[i] = -w->g[i];
          cholSolve(n, w->L, w->h);
        }
      }
      if (!bad) break;
      lambda = fmax(10 * lambda, 1e-10);
      if (lambda > LAMBDA_MAX) return "failed";
    }
    double hnorm = norm2(n, w->h);
    if (!isfinite(hnorm)) return "failed";

    // trial point, unless the step in z is below xtol
    for (int i = 0; i < n; i++) w->ynew[i] = w->y[i] + w->h[i];
    toZ(w, w->ynew, w->znew, w->dznew);
    if (distance(n, w->znew, w->z) <= opt->xtol * (norm2(n, w->z) + opt->xtol)) {
      return "converged (xtol)";
    }
    w->iterations++;
    double Fnew = INFINITY, rho = 0, lambda_used = lambda, pred = 0;
    for (int i = 0; i < n; i++) pred += w->h[i] * (lambda * w->D[i] * w->h[i] - w->g[i]);
    pred *= 0.5;
    int accepted = 0, evaluated = evalR(w, w->znew, w->rnew, NULL, &Fnew) == 0;
    if (evaluated && Fnew < w->F) {
      rho = pred > 0 ? (w->F - Fnew) / pred : 1;

      // J_z at the trial point (a failure there rejects the step)
      if (exact) {
        double Fj;
        accepted = (w->blocks ? evalH(w, w->znew, w->rtmp, &w->Hn, &Fj)
                              : evalR(w, w->znew, w->rtmp, w->Jnew, &Fj)) == 0;
        if (accepted) {
          swapPtr(&w->rnew, &w->rtmp);
          Fnew = Fj;
        }
      } else {
        accepted = fdJacobian(w, 1, w->ynew, w->znew, w->rnew, w->Jnew) == 0;
      }
    }

    if (accepted) {
      double Fold = w->F;
      swapPtr(&w->y, &w->ynew);
      swapPtr(&w->z, &w->znew);
      swapPtr(&w->dzdy, &w->dznew);
      swapPtr(&w->r, &w->rnew);
      if (w->blocks) {
        mjdiffLsqBlocks t = w->H;
        w->H = w->Hn;
        w->Hn = t;
      } else {
        swapPtr(&w->Jz, &w->Jnew);
      }
      w->F = Fnew;
      double t = 2 * rho - 1;
      lambda *= fmax(1.0 / 3, 1 - t * t * t);
      if (lambda < LAMBDA_MIN) lambda = LAMBDA_MIN;
      nu = 2;
      if (w->blocks) {
        modelBlocks(w);
      } else {
        model(w);
      }
      progress(w, w->iterations, w->F, hnorm, lambda_used);
      if (Fold - w->F <= opt->ftol * Fold) return "converged (ftol)";
      if (maxAbs(n, w->g) <= opt->gtol) return "converged (gtol)";
    } else {
      lambda *= nu;
      nu *= 2;
      progress(w, w->iterations, w->F, hnorm, lambda_used);
      // at the noise floor: predicted and actual change both below ftol
      if (evaluated && pred <= opt->ftol * w->F && fabs(w->F - Fnew) <= opt->ftol * w->F) {
        return "converged (ftol)";
      }
      if (lambda > LAMBDA_MAX) return "failed";
    }
  }
}

//---------------------------------- Nelder-Mead --------------------------------------------------

// F at y (+inf if it cannot be evaluated)
static double costAt(Work* w, const double* y) {
  double F;
  toZ(w, y, w->znew, w->dznew);
  return evalR(w, w->znew, w->rtmp, NULL, &F) == 0 ? F : INFINITY;
}

// from the evaluated start point; leaves the best vertex in w->y, w->F
static const char* nelderMead(Work* w, int max_iter) {
  int n = w->n, np = n + 1;
  double* S = w->S;
  double* f = w->fs;
  int* ord = w->ord;
  const mjdiffLsqOptions* opt = &w->opt;
  double alpha = 1, beta = 2, gamma = 0.5, delta = 0.5;
  if (n > 2) {
    beta = 1 + 2.0 / n;
    gamma = 0.75 - 1.0 / (2 * n);
    delta = 1 - 1.0 / n;
  }
  // scratch: centroid, reflected, expanded/contracted points
  double* c = w->h;
  double* xr = w->g;
  double* xe = w->D;

  if (max_iter == 0) {  // no iteration: the start point
    progress(w, 0, w->F, NAN, NAN);
    return "max iterations";
  }

  // initial simplex
  memcpy(S, w->y, sizeof(double) * n);
  f[0] = w->F;
  for (int i = 0; i < n; i++) {
    double* v = S + (long)(i + 1) * n;
    memcpy(v, w->y, sizeof(double) * n);
    v[i] += v[i] != 0 ? 0.05 * v[i] : 0.00025;
    f[i + 1] = costAt(w, v);
  }
  for (int i = 0; i < np; i++) ord[i] = i;

  const char* status;
  for (;;) {
    // order by cost (insertion sort, stable)
    for (int i = 1; i < np; i++) {
      int v = ord[i], k = i - 1;
      while (k >= 0 && f[ord[k]] > f[v]) {
        ord[k + 1] = ord[k];
        k--;
      }
      ord[k + 1] = v;
    }
    const double* best = S + (long)ord[0] * n;
    double* worst = S + (long)ord[n] * n;
    double size = 0;  // in z
    toZ(w, best, w->z, w->dzdy);
    for (int i = 1; i < np; i++) {
      toZ(w, S + (long)ord[i] * n, w->znew, w->dznew);
      size = fmax(size, distance(n, w->znew, w->z));
    }
    progress(w, w->iterations, f[ord[0]], size, NAN);

    if (size <= opt->xtol * (norm2(n, w->z) + opt->xtol)) {
      status = "converged (xtol)";
      break;
    }
    if (f[ord[n]] - f[ord[0]] <= opt->ftol * f[ord[0]]) {
      status = "converged (ftol)";
      break;
    }
    if (cancelled(w)) {
      status = "interrupted";
      break;
    }
    if (w->iterations >= max_iter) {
      status = "max iterations";
      break;
    }
    w->iterations++;

    // centroid of all but the worst
    for (int j = 0; j < n; j++) c[j] = 0;
    for (int i = 0; i < n; i++) {
      const double* v = S + (long)ord[i] * n;
      for (int j = 0; j < n; j++) c[j] += v[j];
    }
    for (int j = 0; j < n; j++) c[j] /= n;

    // reflect
    for (int j = 0; j < n; j++) xr[j] = c[j] + alpha * (c[j] - worst[j]);
    double fr = costAt(w, xr), fw = f[ord[n]];
    int shrink = 0;
    if (fr < f[ord[0]]) {
      // expand
      for (int j = 0; j < n; j++) xe[j] = c[j] + beta * (xr[j] - c[j]);
      double fe = costAt(w, xe);
      if (fe < fr) {
        memcpy(worst, xe, sizeof(double) * n);
        f[ord[n]] = fe;
      } else {
        memcpy(worst, xr, sizeof(double) * n);
        f[ord[n]] = fr;
      }
    } else if (fr < f[ord[n - 1]]) {
      memcpy(worst, xr, sizeof(double) * n);
      f[ord[n]] = fr;
    } else if (fr < fw) {
      // outside contraction
      for (int j = 0; j < n; j++) xe[j] = c[j] + gamma * (xr[j] - c[j]);
      double fc = costAt(w, xe);
      if (fc <= fr) {
        memcpy(worst, xe, sizeof(double) * n);
        f[ord[n]] = fc;
      } else {
        shrink = 1;
      }
    } else {
      // inside contraction
      for (int j = 0; j < n; j++) xe[j] = c[j] + gamma * (worst[j] - c[j]);
      double fc = costAt(w, xe);
      if (fc < fw) {
        memcpy(worst, xe, sizeof(double) * n);
        f[ord[n]] = fc;
      } else {
        shrink = 1;
      }
    }
    if (shrink) {
      for (int i = 1; i < np; i++) {
        double* v = S + (long)ord[i] * n;
        for (int j = 0; j < n; j++) v[j] = best[j] + delta * (v[j] - best[j]);
        f[ord[i]] = costAt(w, v);
      }
    }
  }

  memcpy(w->y, S + (long)ord[0] * n, sizeof(double) * n);
  w->F = f[ord[0]];
  toZ(w, w->y, w->z, w->dzdy);
  return status;
}

//---------------------------------- standard errors ----------------------------------------------

// (A^-1)_ii = |L^-1 e_i|^2 from the lower Cholesky factor L (n x n) of A; v: (n) scratch
static double inverseDiag(int n, const double* L, int i, double* v) {
  double q = 0;
  for (int k = 0; k < n; k++) {
    double s = k == i ? 1 : 0;
    if (k > i) {
      for (int l = i; l < k; l++) s -= L[(long)k * n + l] * v[l];
    }
    v[k] = k < i ? 0 : s / L[(long)k * n + k];
    q += v[k] * v[k];
  }
  return q;
}

// sqrt(diag((J_z'J_z)^-1) 2F / (m - n)) at w->z; NaN if m <= n, J_z'J_z is singular or J_z
// cannot be computed. *cond: the largest variance inflation factor A_ii (A^-1)_ii over the
// reported variables (inf if singular or not computed).
static void standardErrors(Work* w, int exact, int haveR, double* se, double* cond) {
  int n = w->n, m = w->m, nfree = 0;
  *cond = INFINITY;
  for (int j = 0; j < n; j++) {
    se[j] = w->kind[j] == KIND_FIXED ? 0 : NAN;
    nfree += w->kind[j] != KIND_FIXED;
  }
  if (m <= nfree) return;
  double s2 = 2 * w->F / (m - nfree), vif = 0;
  if (w->blocks) {
    // p only: (J'J)^-1 on p is the inverse of the Schur complement of the unscaled blocks
    FactorSpec f = {NULL, NULL, 1};
    if (factorBlocks(w, &w->H, &f)) return;
    for (int i = 0; i < w->np; i++) {
      if (w->kind[i] == KIND_FIXED) continue;
      double q = inverseDiag(w->np, w->Sp, i, w->h);
      se[i] = sqrt(q * s2);
      vif = fmax(vif, q * w->H.Hpp[(long)i * w->np + i]);
    }
    *cond = vif;
    return;
  }
  if (!exact) {
    double F;
    if (!haveR && evalR(w, w->z, w->r, NULL, &F)) return;
    if (fdJacobian(w, 0, w->y, w->z, w->r, w->Jz)) return;
  }
  // J_z'J_z, fixed variables decoupled (their rows and columns replaced by the identity's)
  double* A = w->L;
  normalEquations(m, n, w->Jz, NULL, A, NULL);
  for (int j = 0; j < n; j++) {
    if (w->kind[j] != KIND_FIXED) continue;
    for (int i = 0; i < n; i++) A[(long)i * n + j] = A[(long)j * n + i] = 0;
    A[(long)j * n + j] = 1;
  }
  double* diag = w->D;
  for (int j = 0; j < n; j++) diag[j] = A[(long)j * n + j];
  if (cholesky(n, A)) return;
  for (int i = 0; i < n; i++) {
    if (w->kind[i] == KIND_FIXED) continue;
    double q = inverseDiag(n, A, i, w->h);
    se[i] = sqrt(q * s2);
    vif = fmax(vif, q * diag[i]);
  }
  *cond = vif;
}

//---------------------------------- interface ----------------------------------------------------

void mjdiff_defaultLsqOptions(mjdiffLsqOptions* opt) {
  if (!opt) return;
  memset(opt, 0, sizeof(*opt));
  opt->method = MJDIFF_LSQ_LM;
  opt->solver = MJDIFF_LSQ_AUTO;
  opt->max_iter = -1;  // the method's default: 100, Nelder-Mead 200 n
  opt->ftol = 1e-10;
  opt->xtol = 1e-10;
  opt->gtol = 1e-12;
  opt->fd_eps = 1e-6;
  opt->cond_max = 1e10;
  opt->progress = NULL;
  opt->progress_user = NULL;
  opt->cancel = NULL;
}

static void freeBlocks(mjdiffLsqBlocks* H) {
  free(H->Hpp);
  free(H->Hdp);
  free(H->Hdd);
  free(H->Hdo);
  free(H->g);
}

static int allocBlocks(const Work* w, mjdiffLsqBlocks* H) {
  size_t np = (size_t)w->np, bs = (size_t)w->bs, nb = (size_t)w->nb, d = sizeof(double);
  H->Hpp = (double*)malloc(d * (np * np + 1));
  H->Hdp = (double*)malloc(d * (nb * bs * np + 1));
  H->Hdd = (double*)malloc(d * (nb * bs * bs));
  H->Hdo = (double*)malloc(d * (nb * bs * bs));
  H->g = (double*)malloc(d * (size_t)w->n);
  return H->Hpp && H->Hdp && H->Hdd && H->Hdo && H->g ? 0 : -1;
}

static void freeWork(Work* w) {
  free(w->kind);
  double** p[] = {&w->lo,   &w->hi,   &w->y,  &w->z,  &w->dzdy, &w->ynew, &w->znew, &w->dznew,
                  &w->zfd,  &w->h,    &w->g,  &w->D,  &w->gz,   &w->A,    &w->L,    &w->r,
                  &w->rnew, &w->rtmp, &w->Jz, &w->Jy, &w->Jnew, &w->S,    &w->fs,   &w->Lb,
                  &w->Cb,   &w->Wb,   &w->Sp, &w->Cdiag, &w->tmp};
  for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++) free(*p[i]);
  freeBlocks(&w->H);
  freeBlocks(&w->Hn);
  free(w->ord);
}

static int allocWork(Work* w, int lm, int nm) {
  size_t n = (size_t)w->n, m = (size_t)w->m, d = sizeof(double);
  w->kind = (int*)malloc(sizeof(int) * n);
  double** vn[] = {&w->lo,    &w->hi,  &w->y, &w->z, &w->dzdy, &w->ynew, &w->znew,
                   &w->dznew, &w->zfd, &w->h, &w->g, &w->D,    &w->gz,   &w->Cdiag};
  int ok = w->kind != NULL;
  for (size_t i = 0; i < sizeof(vn) / sizeof(vn[0]); i++) ok &= (*vn[i] = malloc(d * n)) != NULL;
  ok &= (w->r = malloc(d * m)) != NULL;
  ok &= (w->rnew = malloc(d * m)) != NULL;
  ok &= (w->rtmp = malloc(d * m)) != NULL;
  if (w->blocks) {
    size_t np = (size_t)w->np, bs = (size_t)w->bs, nb = (size_t)w->nb;
    size_t wide = bs > np ? bs : np;
    ok &= allocBlocks(w, &w->H) == 0;
    ok &= allocBlocks(w, &w->Hn) == 0;
    ok &= (w->Lb = malloc(d * nb * bs * bs)) != NULL;
    ok &= (w->Cb = malloc(d * nb * bs * bs)) != NULL;
    ok &= (w->Wb = malloc(d * (nb * bs * np + 1))) != NULL;
    ok &= (w->Sp = malloc(d * (np * np + 1))) != NULL;
    ok &= (w->tmp = malloc(d * bs * wide)) != NULL;
    ok &= (w->L = malloc(d * n)) != NULL;  // the diagonal additions
    return ok ? 0 : -1;
  }
  ok &= (w->A = malloc(d * n * n)) != NULL;
  ok &= (w->L = malloc(d * n * n)) != NULL;
  ok &= (w->Jz = malloc(d * m * n)) != NULL;
  if (lm) {
    ok &= (w->Jy = malloc(d * m * n)) != NULL;
    ok &= (w->Jnew = malloc(d * m * n)) != NULL;
  }
  if (nm) {
    ok &= (w->S = malloc(d * (n + 1) * n)) != NULL;
    ok &= (w->fs = malloc(d * (n + 1))) != NULL;
    ok &= (w->ord = (int*)malloc(sizeof(int) * (n + 1))) != NULL;
  }
  return ok ? 0 : -1;
}

// the block path applies: LM with exact Jacobians on a problem with blocks (unless dense asked)
static int useBlocks(const mjdiffLsqProblem* prob, const mjdiffLsqOptions* opt) {
  return prob->normal && opt->method == MJDIFF_LSQ_LM && opt->solver != MJDIFF_LSQ_DENSE;
}

// NULL if the problem and options are usable, else what is wrong (msg: a buffer for it)
static const char* invalid(const mjdiffLsqProblem* prob, const mjdiffLsqOptions* opt,
                           const double* z, char* msg, int msgsz) {
  if (prob->n < 1 || prob->m < 1) {
    snprintf(msg, (size_t)msgsz, "n = %d variables and m = %d residuals (both must be >= 1)",
             prob->n, prob->m);
    return msg;
  }
  if (opt->method != MJDIFF_LSQ_LM && opt->method != MJDIFF_LSQ_LM_FD &&
      opt->method != MJDIFF_LSQ_NELDER_MEAD) {
    snprintf(msg, (size_t)msgsz, "unknown method %d", opt->method);
    return msg;
  }
  if (opt->solver != MJDIFF_LSQ_AUTO && opt->solver != MJDIFF_LSQ_DENSE &&
      opt->solver != MJDIFF_LSQ_BLOCKS) {
    snprintf(msg, (size_t)msgsz, "unknown solver %d", opt->solver);
    return msg;
  }
  if (prob->normal && (prob->np < 0 || prob->nblock < 1 || prob->bs < 1 ||
                       (long)prob->np + (long)prob->nblock * prob->bs != prob->n)) {
    snprintf(msg, (size_t)msgsz, "block structure np %d + nblock %d x bs %d is not n = %d",
             prob->np, prob->nblock, prob->bs, prob->n);
    return msg;
  }
  if (opt->solver == MJDIFF_LSQ_BLOCKS && !useBlocks(prob, opt)) {
    return "the block solver needs the normal-equation callback and the exact-Jacobian method";
  }
  if (!useBlocks(prob, opt) && !prob->residual) return "no residual callback";
  if (!(opt->ftol >= 0) || !(opt->xtol >= 0) || !(opt->gtol >= 0)) {
    snprintf(msg, (size_t)msgsz, "tolerances ftol %g, xtol %g, gtol %g (must be >= 0)",
             opt->ftol, opt->xtol, opt->gtol);
    return msg;
  }
  if (!(opt->fd_eps > 0) || !isfinite(opt->fd_eps)) {
    snprintf(msg, (size_t)msgsz, "fd_eps %g (must be finite and > 0)", opt->fd_eps);
    return msg;
  }
  if (!(opt->cond_max > 0)) {
    snprintf(msg, (size_t)msgsz, "cond_max %g (must be > 0)", opt->cond_max);
    return msg;
  }
  for (int j = 0; j < prob->n; j++) {
    double lo = prob->lo ? prob->lo[j] : -INFINITY;
    double hi = prob->hi ? prob->hi[j] : INFINITY;
    if (!isfinite(z[j]) || isnan(lo) || isnan(hi) || lo > hi || lo == INFINITY ||
        hi == -INFINITY || (isfinite(lo) && isfinite(hi) && !isfinite(hi - lo))) {
      snprintf(msg, (size_t)msgsz, "variable %d: start %g, bounds [%g, %g] (a finite start, "
               "lo <= hi, no infinite bound on the wrong side)", j, z[j], lo, hi);
      return msg;
    }
  }
  return NULL;
}

mjdiffStatus mjdiff_lsqSolve(const mjdiffLsqProblem* prob, const mjdiffLsqOptions* opt_in,
                             double* z, mjdiffLsqResult* result, char* err, int errsz) {
  if (!result) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "least squares: result is NULL");
  memset(result, 0, sizeof(*result));
  result->F0 = result->F = result->cond = NAN;
  result->status = "failed";
  if (!prob || !z) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "least squares: %s is NULL",
                        prob ? "z" : "the problem");
  }
  Work w;
  memset(&w, 0, sizeof(w));
  if (opt_in) {
    w.opt = *opt_in;
  } else {
    mjdiff_defaultLsqOptions(&w.opt);
  }
  char msg[300];
  const char* why = invalid(prob, &w.opt, z, msg, sizeof(msg));
  if (why) return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "least squares: %s", why);
  w.prob = prob;
  w.n = prob->n;
  w.m = prob->m;
  w.blocks = useBlocks(prob, &w.opt);
  if (w.blocks) {
    w.np = prob->np;
    w.nb = prob->nblock;
    w.bs = prob->bs;
  }
  int n = w.n, method = w.opt.method;
  int exact = method == MJDIFF_LSQ_LM, nm = method == MJDIFF_LSQ_NELDER_MEAD;
  int max_iter = w.opt.max_iter >= 0 ? w.opt.max_iter : (nm ? 200 * n : 100);
  double* se = (double*)malloc(sizeof(double) * n);
  if (!se || allocWork(&w, !nm, nm)) {
    free(se);
    freeWork(&w);
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "least squares: out of memory (n = %d, "
                        "m = %d)", n, w.m);
  }

  // bounds and the start point
  for (int j = 0; j < n; j++) {
    double lo = prob->lo ? prob->lo[j] : -INFINITY;
    double hi = prob->hi ? prob->hi[j] : INFINITY;
    w.lo[j] = lo;
    w.hi[j] = hi;
    if (isfinite(lo) && isfinite(hi)) {
      w.kind[j] = lo == hi ? KIND_FIXED : KIND_BOTH;
    } else if (isfinite(lo)) {
      w.kind[j] = KIND_LOWER;
    } else if (isfinite(hi)) {
      w.kind[j] = KIND_UPPER;
    } else {
      w.kind[j] = KIND_FREE;
    }
  }
  toY(&w, z, w.y);
  toZ(&w, w.y, w.z, w.dzdy);
  int bad = w.blocks ? evalH(&w, w.z, w.r, &w.H, &w.F) : evalR(&w, w.z, w.r, exact ? w.Jz : NULL, &w.F);
  if (bad) {
    result->evaluations = w.evaluations;
    result->jacobians = w.jacobians;
    free(se);
    freeWork(&w);
    return mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE,
                        "least squares: the residuals cannot be evaluated at the start point");
  }
  result->F0 = w.F;

  // minimise, then standard errors at the solution
  const char* status;
  if (nm) {
    status = nelderMead(&w, max_iter);
  } else {
    status = levenbergMarquardt(&w, exact, max_iter);
  }
  double cond;
  standardErrors(&w, exact, !nm, se, &cond);

  memcpy(z, w.z, sizeof(double) * n);
  result->F = w.F;
  result->iterations = w.iterations;
  result->evaluations = w.evaluations;
  result->jacobians = w.jacobians;
  result->status = status;
  result->converged = !strncmp(status, "converged", 9);
  result->cond = cond;
  int finite = 1, nrep = w.blocks ? w.np : n;
  for (int j = 0; j < nrep; j++) finite &= isfinite(se[j]);
  result->reliable = result->converged && cond <= w.opt.cond_max && finite;
  result->stderr_z = se;
  freeWork(&w);
  return MJDIFF_OK;
}

void mjdiff_freeLsqResult(mjdiffLsqResult* result) {
  if (!result) return;
  free(result->stderr_z);
  result->stderr_z = NULL;
}
