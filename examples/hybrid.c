// examples/hybrid.c: a hybrid model, the smooth physics plus a neural residual force
// (<mjdiff/residual.h>), and the gradient of the box's final y position (arm_box: the arm pushes
// the box) in the network's weights, through the contacts; the derivative along a random
// direction is checked against a central difference. Usage: hybrid [arm_box.xml]
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <mjdiff/mjdiff.h>

enum { T = 300 };

// the box's y after T steps from keyframe "ready" with the residual force (no gradient)
static double finalY(const mjModel* m, mjData* d, const mjdiffModel* s, mjdiffResidual* res,
                     const mjtNum* ctrl) {
  mj_resetDataKeyframe(m, d, 0);
  for (int t = 0; t < T; t++) {
    mju_copy(d->ctrl, ctrl + t * m->nu, m->nu);
    mjdiff_residualForce(res, m, d, d->qfrc_applied, NULL, 0);
    mjdiff_step(m, d, s, NULL, 0);
  }
  mjdiff_forward(m, d, s, NULL, 0);
  return d->xpos[3 * mj_name2id(m, mjOBJ_BODY, "box") + 1];
}

int main(int argc, char** argv) {
  char err[1000] = "";
  mjModel* m = mj_loadXML(argc > 1 ? argv[1] : "models/arm_box.xml", NULL, err, sizeof(err));
  if (!m) return fprintf(stderr, "%s\n", err), 1;
  mjData* d = mj_makeData(m);
  mjdiffModel* s = NULL;
  mjdiffResidual* res = NULL;
  mjdiffRollout* r = NULL;
  mjdiffTerms* loss = NULL;
  mjdiffMLPDef def;
  mjdiff_defaultMLPDef(&def);  // two hidden layers of 64 tanh units
  mjtNum pick_y[3] = {0, 1, 0};
  int last = -1;
  mjdiffTerm term;
  mjdiff_defaultTerm(&term);
  term.object = "body:box";
  term.norm = MJDIFF_NORM_LINEAR;  // L = y_box(T)
  term.scale = pick_y;
  term.steps = &last;
  term.nstep = 1;
  if (mjdiff_makeModel(m, NULL, &s, err, sizeof(err)) ||
      mjdiff_makeResidual(m, &def, 1, &res, err, sizeof(err)) ||
      mjdiff_makeRollout(m, s, NULL, T, NULL, &r, err, sizeof(err)) ||
      mjdiff_makeTerms(m, &term, 1, &loss, err, sizeof(err))) {
    return fprintf(stderr, "%s\n", err), 1;
  }
  // a new residual outputs zero (the physics itself); give it some weights to differentiate
  mjdiffMLP* net = mjdiff_residualNet(res);
  mjdiff_initMLP(net, MJDIFF_INIT_XAVIER_UNIFORM, 2, 0.05, NULL, 0);
  mjtNum* theta = mjdiff_mlpParams(net);
  int nth = mjdiff_mlpParamCount(net);
  if (mjdiff_rolloutSetForce(r, mjdiff_residualForceModel(res), theta, err, sizeof(err))) {
    return fprintf(stderr, "%s\n", err), 1;
  }
  mjtNum* ctrl = calloc(T * m->nu, sizeof(mjtNum));
  mjtNum* grad = calloc(nth, sizeof(mjtNum));
  mjtNum* dir = calloc(nth, sizeof(mjtNum));
  for (int t = 0; t < T; t++) ctrl[t * m->nu] = -0.15;  // joint 1's motor sweeps the fingertip

  mjtNum y = 0;
  mjdiffRolloutGrad g;
  mjdiff_defaultRolloutGrad(&g);
  g.terms = loss;
  g.loss = &y;
  g.grad_force = grad;  // dL/dtheta, in the network's weight layout
  mj_resetDataKeyframe(m, d, 0);
  if (mjdiff_rolloutForward(m, d, s, r, ctrl, NULL, NULL, NULL, NULL, err, sizeof(err)) ||
      mjdiff_rolloutGradient(m, d, s, r, &g, err, sizeof(err)) ||
      mjdiff_residualStatus(res, err, sizeof(err))) {
    return fprintf(stderr, "%s\n", err), 1;
  }
  printf("box y at T: %.5f m, %d network weights, |dy/dtheta| = %.4g\n", y, nth,
         sqrt(mju_dot(grad, grad, nth)));

  // check: central difference along a random direction of the weights
  mjdiffRng rng;
  mjdiff_rngSeed(&rng, 7);
  for (int i = 0; i < nth; i++) dir[i] = mjdiff_rngUniform(&rng) - 0.5;
  mjtNum h = 1e-6, analytic = mju_dot(grad, dir, nth);
  mju_addToScl(theta, dir, h, nth);
  double yp = finalY(m, d, s, res, ctrl);
  mju_addToScl(theta, dir, -2 * h, nth);
  double ym = finalY(m, d, s, res, ctrl);
  mju_addToScl(theta, dir, h, nth);
  double fd = (yp - ym) / (2 * h);
  printf("directional derivative: analytic %.8g, central difference %.8g\n", analytic, fd);
  int ok = fabs(analytic - fd) <= 1e-4 * fabs(fd) + 1e-9;
  free(ctrl);
  free(grad);
  free(dir);
  mjdiff_freeTerms(loss);
  mjdiff_freeRollout(r);
  mjdiff_freeResidual(res);
  mjdiff_freeModel(s);
  mj_deleteData(d);
  mj_deleteModel(m);
  return ok ? 0 : 1;
}
