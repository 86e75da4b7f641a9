// examples/descent.c: gradient descent on the controls with a backtracking line search, to push
// the box further along -y (arm_box): L = y_box(T) + 1e-4/2 sum_t |u_t|^2, controls clipped to
// ctrlrange. Usage: descent [arm_box.xml]
#include <stdio.h>
#include <stdlib.h>
#include <mjdiff/mjdiff.h>

enum { T = 500, ITER = 15 };

// L(u): a forward rollout and the terms along it (no gradient)
static mjtNum lossOf(const mjModel* m, mjData* d, const mjdiffModel* s, mjdiffRollout* r,
                     const mjdiffTerms* loss, const mjtNum* u, mjtNum* states) {
  mjtNum L = 1e30;
  mj_resetDataKeyframe(m, d, 0);
  if (mjdiff_rolloutForward(m, d, s, r, u, NULL, NULL, states, NULL, NULL, 0) == MJDIFF_OK) {
    mj_resetDataKeyframe(m, d, 0);
    mjdiff_trajectoryLoss(m, d, s, loss, T, states, u, &L, NULL, NULL, NULL, NULL, 0);
  }
  return L;
}

int main(int argc, char** argv) {
  char err[1000] = "";
  mjModel* m = mj_loadXML(argc > 1 ? argv[1] : "models/arm_box.xml", NULL, err, sizeof(err));
  if (!m) return fprintf(stderr, "%s\n", err), 1;
  mjData* d = mj_makeData(m);
  mjdiffModel* s = NULL;
  mjdiffRollout* r = NULL;
  mjdiffTerms* loss = NULL;
  mjtNum pick_y[3] = {0, 1, 0};
  int last = -1;
  mjdiffTerm terms[2];
  mjdiff_defaultTerm(&terms[0]);
  terms[0].object = "body:box";  // y_box(T)
  terms[0].norm = MJDIFF_NORM_LINEAR;
  terms[0].scale = pick_y;
  terms[0].steps = &last;
  terms[0].nstep = 1;
  mjdiff_defaultTerm(&terms[1]);
  terms[1].type = MJDIFF_TERM_CONTROL;  // 1e-4/2 |u_t|^2 at every step
  terms[1].weight = 1e-4;
  if (mjdiff_makeModel(m, NULL, &s, err, sizeof(err)) ||
      mjdiff_makeRollout(m, s, NULL, T, NULL, &r, err, sizeof(err)) ||
      mjdiff_makeTerms(m, terms, 2, &loss, err, sizeof(err))) {
    return fprintf(stderr, "%s\n", err), 1;
  }
  int n = T * m->nu;
  mjtNum* u = calloc(n, sizeof(mjtNum));
  mjtNum* trial = calloc(n, sizeof(mjtNum));
  mjtNum* grad = calloc(n, sizeof(mjtNum));
  mjtNum* states = calloc((T + 1) * mjdiff_stateSize(m), sizeof(mjtNum));
  for (int t = 0; t < T; t++) u[t * m->nu] = -0.15;
  mjtNum L = lossOf(m, d, s, r, loss, u, states), L0 = L, step = 10;

  for (int it = 0; it < ITER; it++) {
    mjdiffRolloutGrad g;  // the gradient at u (forward rollout, then the adjoint sweep)
    mjdiff_defaultRolloutGrad(&g);
    g.terms = loss;
    g.grad_ctrl = grad;
    mj_resetDataKeyframe(m, d, 0);
    if (mjdiff_rolloutForward(m, d, s, r, u, NULL, NULL, NULL, NULL, err, sizeof(err)) ||
        mjdiff_rolloutGradient(m, d, s, r, &g, err, sizeof(err))) {
      return fprintf(stderr, "%s\n", err), 1;
    }
    mjtNum gg = mju_dot(grad, grad, n), Lt = L;
    for (int ls = 0; ls < 30; ls++, step *= 0.5) {  // backtracking: Armijo on the clipped step
      for (int k = 0; k < n; k++) {
        const mjtNum* range = m->actuator_ctrlrange + 2 * (k % m->nu);
        trial[k] = mju_clip(u[k] - step * grad[k], range[0], range[1]);
      }
      Lt = lossOf(m, d, s, r, loss, trial, states);
      if (Lt < L - 1e-4 * step * gg) break;
    }
    if (!(Lt < L)) break;  // no descent along the gradient: done
    mju_copy(u, trial, n);
    L = Lt;
    printf("iter %2d  loss %.5f  step %.3g  |grad| %.3g\n", it, L, step, mju_sqrt(gg));
    step *= 4;
  }
  printf("loss %.5f -> %.5f\n", L0, L);

  mjdiff_freeTerms(loss);
  mjdiff_freeRollout(r);
  mjdiff_freeModel(s);
  mj_deleteData(d);
  mj_deleteModel(m);
  free(u);
  free(trial);
  free(grad);
  free(states);
  return !(L < L0);
}
