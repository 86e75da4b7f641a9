// examples/gradient.c: the gradient of the box's final y position (arm_box: the arm pushes the
// box along -y) in every control, the box mass and the table friction; the mass derivative is
// checked against a central difference. Usage: gradient [arm_box.xml]
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <mjdiff/mjdiff.h>

enum { T = 500 };

// the box's y after T steps from keyframe "ready" (no gradient): a plain smooth rollout
static double finalY(const mjModel* m, mjData* d, const mjdiffModel* s, const mjtNum* ctrl) {
  mj_resetDataKeyframe(m, d, 0);
  for (int t = 0; t < T; t++) {
    mju_copy(d->ctrl, ctrl + t * m->nu, m->nu);
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
  mjdiffParams* p = NULL;
  mjdiffRollout* r = NULL;
  mjdiffTerms* loss = NULL;
  const char* names[] = {"body:box:mass", "geom:table:friction"};  // 1 + 3 parameters
  mjtNum pick_y[3] = {0, 1, 0};
  int last = -1;  // the final state x_T
  mjdiffTerm term;
  mjdiff_defaultTerm(&term);
  term.object = "body:box";
  term.norm = MJDIFF_NORM_LINEAR;  // the coordinate itself: L = y_box(T)
  term.scale = pick_y;
  term.steps = &last;
  term.nstep = 1;
  if (mjdiff_makeModel(m, NULL, &s, err, sizeof(err)) ||
      mjdiff_makeParams(m, s, names, 2, &p, err, sizeof(err)) ||
      mjdiff_makeRollout(m, s, p, T, NULL, &r, err, sizeof(err)) ||
      mjdiff_makeTerms(m, &term, 1, &loss, err, sizeof(err))) {
    return fprintf(stderr, "%s\n", err), 1;
  }
  int np = mjdiff_paramCount(p);
  mjtNum* ctrl = calloc(T * m->nu, sizeof(mjtNum));
  mjtNum* grad_ctrl = calloc(T * m->nu, sizeof(mjtNum));
  mjtNum* grad_param = calloc(np, sizeof(mjtNum));
  for (int t = 0; t < T; t++) ctrl[t * m->nu] = -0.15;  // joint 1's motor sweeps the fingertip

  mjtNum y = 0;
  mjdiffRolloutGrad g;
  mjdiff_defaultRolloutGrad(&g);
  g.terms = loss;
  g.loss = &y;
  g.grad_ctrl = grad_ctrl;
  g.grad_param = grad_param;
  mj_resetDataKeyframe(m, d, 0);
  if (mjdiff_rolloutForward(m, d, s, r, ctrl, NULL, NULL, NULL, NULL, err, sizeof(err)) ||
      mjdiff_rolloutGradient(m, d, s, r, &g, err, sizeof(err))) {
    return fprintf(stderr, "%s\n", err), 1;
  }
  printf("box y at T: %.5f m\n", y);
  for (int i = 0; i < np; i++) printf("dy/d %s = %.6g\n", mjdiff_paramName(p, i), grad_param[i]);
  printf("dy/d ctrl[T/2] (motor1..7):");
  for (int i = 0; i < m->nu; i++) printf(" %.3g", grad_ctrl[(T / 2) * m->nu + i]);
  printf("\n");

  // check: central difference in the box mass
  int k = mjdiff_paramIndex(p, "body:box:mass");
  mjtNum v[4], h = 1e-5;
  mjdiff_getParamValues(m, s, p, v);
  v[k] += h;
  mjdiff_setParamValues(m, s, p, v, NULL, 0);
  double yp = finalY(m, d, s, ctrl);
  v[k] -= 2 * h;
  mjdiff_setParamValues(m, s, p, v, NULL, 0);
  double ym = finalY(m, d, s, ctrl);
  double fd = (yp - ym) / (2 * h);
  printf("mass: analytic %.8g, central difference %.8g\n", grad_param[k], fd);
  int bad = fabs(grad_param[k] - fd) > 1e-4 * fabs(fd) + 1e-9 || grad_param[k] == 0;

  mjdiff_freeTerms(loss);
  mjdiff_freeRollout(r);
  mjdiff_freeParams(p);
  mjdiff_freeModel(s);
  mj_deleteData(d);
  mj_deleteModel(m);
  free(ctrl);
  free(grad_ctrl);
  free(grad_param);
  return bad;
}
