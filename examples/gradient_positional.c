// examples/gradient_positional.c: examples/gradient.c written against the positional calls only,
// as a program had to before the loss terms and mjdiffRolloutGrad: a dense (T+1) x (2nv+na)
// dLdx with one nonzero row, filled from the body Jacobian at x_T by hand. Same output.
// Usage: gradient_positional [arm_box.xml]
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
  const char* names[] = {"body:box:mass", "geom:table:friction"};  // 1 + 3 parameters
  if (mjdiff_makeModel(m, NULL, &s, err, sizeof(err)) ||
      mjdiff_makeParams(m, s, names, 2, &p, err, sizeof(err)) ||
      mjdiff_makeRollout(m, s, p, T, NULL, &r, err, sizeof(err))) {
    return fprintf(stderr, "%s\n", err), 1;
  }
  int np = mjdiff_paramCount(p), nv = m->nv, ndx = 2 * m->nv + m->na;
  int box = mj_name2id(m, mjOBJ_BODY, "box");
  mjtNum* ctrl = calloc(T * m->nu, sizeof(mjtNum));
  mjtNum* grad_ctrl = calloc(T * m->nu, sizeof(mjtNum));
  mjtNum* grad_param = calloc(np, sizeof(mjtNum));
  mjtNum* dLdx = calloc((T + 1) * ndx, sizeof(mjtNum));
  mjtNum* jac = calloc(3 * nv, sizeof(mjtNum));
  for (int t = 0; t < T; t++) ctrl[t * m->nu] = -0.15;  // joint 1's motor sweeps the fingertip

  mj_resetDataKeyframe(m, d, 0);
  if (mjdiff_rolloutForward(m, d, s, r, ctrl, NULL, NULL, NULL, NULL, err, sizeof(err))) {
    return fprintf(stderr, "%s\n", err), 1;
  }
  // L = y_box(T): row T of dLdx is the y row of the body's Jacobian at x_T (tangent dq rows)
  mjdiff_forward(m, d, s, NULL, 0);
  mjtNum y = d->xpos[3 * box + 1];
  mj_jac(m, d, jac, NULL, d->xpos + 3 * box, box);
  mju_copy(dLdx + T * ndx, jac + nv, nv);
  if (mjdiff_rolloutBackward(m, d, s, r, dLdx, NULL, NULL, NULL, grad_ctrl, NULL, grad_param,
                             err, sizeof(err))) {
    return fprintf(stderr, "%s\n", err), 1;
  }
  printf("box y at T: %.5f m\n", y);
  for (int i = 0; i < np; i++) printf("dy/d %s = %.6g\n", mjdiff_paramName(p, i), grad_param[i]);
  printf("dy/d ctrl[T/2] (motor1..7):");
  for (int i = 0; i < m->nu; i++) printf(" %.3g", grad_ctrl[(T / 2) * m->nu + i]);
  printf("\n");

  // check: central difference in the box mass (parameter 0)
  mjtNum v[4], h = 1e-5;
  mjdiff_getParamValues(m, s, p, v);
  v[0] += h;
  mjdiff_setParamValues(m, s, p, v, NULL, 0);
  double yp = finalY(m, d, s, ctrl);
  v[0] -= 2 * h;
  mjdiff_setParamValues(m, s, p, v, NULL, 0);
  double ym = finalY(m, d, s, ctrl);
  double fd = (yp - ym) / (2 * h);
  printf("mass: analytic %.8g, central difference %.8g\n", grad_param[0], fd);
  int bad = fabs(grad_param[0] - fd) > 1e-4 * fabs(fd) + 1e-9 || grad_param[0] == 0;

  mjdiff_freeRollout(r);
  mjdiff_freeParams(p);
  mjdiff_freeModel(s);
  mj_deleteData(d);
  mj_deleteModel(m);
  free(ctrl);
  free(grad_ctrl);
  free(grad_param);
  free(dLdx);
  free(jac);
  return bad;
}
