// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The plant (plant.h): a copy of the model with hidden parameter changes, stepped by mj_step.
//   parameters  at bind time every change's selection (mjdiff_makeParams on the nominal model,
//               no smooth model: native fields only) and its nominal values b are kept; the
//               changes are sorted by (time, line). Reset: every selection back to b (all were
//               read from the nominal model, so any order restores it), next = 0. Before a step
//               at plant time t: while change[next].time <= t (+ half a step): v = current
//               values, v := VALUE | FACTOR v | v + DELTA, mjdiff_setParamValues, next++.
//   delay       ring buffer of L = D + 1 controls: at plant step k the commanded u_k goes to
//               slot k mod L and the applied control is slot (k - D) mod L, which holds u_{k-D}
//               once k >= D and the initial control before (the buffer starts filled with it).
//   readings    a scratch mjData of the plant model at the state: mj_forward, then
//               y_i = sensordata_i + bias_i + sigma_i n_i, n_i ~ N(0, 1) by Box-Muller on the
//               library's generator (<mjdiff/random.h>).

#define _POSIX_C_SOURCE 200809L

#include "plant.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/params.h>
#include <mjdiff/random.h>

#include "toolutil.h"

enum { OP_SET = 0, OP_SCALE, OP_ADD };

typedef struct change_ {
  int op;
  double value;
  double time;
  int line;
  mjdiffParams* params;
  double* base;                // nominal values (np)
  double* work;                // scratch (np)
} change;

struct toolPlant_ {
  char path[256];
  mjModel* m;                  // the plant's model
  mjData* d;                   // the plant's data
  mjData* ds;                  // scratch: readings
  change* ch;
  int nch, next;
  double delay;                // s, as given
  int delay_line;              // line of the delay statement (0: none)
  int D, L;                    // delay steps, buffer length
  double* buf;                 // L x nu
  long k;                      // plant steps since the reset
  double time0;
  double* sigma;               // per sensordata component
  double* bias;
  int noisy;
  unsigned long long seed;
  mjdiffRng rng;
  int has_gauss;
  double gauss;
};

static void fail(char* err, int errsz, const char* fmt, ...) {
  if (!err || errsz <= 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, (size_t)errsz, fmt, ap);
  va_end(ap);
}

void tool_freePlant(toolPlant* p) {
  if (!p) return;
  for (int i = 0; i < p->nch; i++) {
    mjdiff_freeParams(p->ch[i].params);
    free(p->ch[i].base);
    free(p->ch[i].work);
  }
  free(p->ch);
  if (p->d) mj_deleteData(p->d);
  if (p->ds) mj_deleteData(p->ds);
  if (p->m) mj_deleteModel(p->m);
  free(p->buf);
  free(p->sigma);
  free(p->bias);
  free(p);
}

static toolPlant* newPlant(const mjModel* m, const char* path, char* err, int errsz) {
  toolPlant* p = calloc(1, sizeof(toolPlant));
  if (!p) {
    fail(err, errsz, "out of memory");
    return NULL;
  }
  snprintf(p->path, sizeof(p->path), "%s", path ? path : "(plant)");
  p->m = mj_copyModel(NULL, m);
  p->d = p->m ? mj_makeData(p->m) : NULL;
  p->ds = p->m ? mj_makeData(p->m) : NULL;
  int ns = m->nsensordata > 0 ? m->nsensordata : 1;
  p->sigma = calloc((size_t)ns, sizeof(double));
  p->bias = calloc((size_t)ns, sizeof(double));
  p->seed = 1;
  if (!p->m || !p->d || !p->ds || !p->sigma || !p->bias) {
    fail(err, errsz, "out of memory");
    tool_freePlant(p);
    return NULL;
  }
  return p;
}

// split a line into at most max words (in place); the count
static int words(char* line, char** w, int max) {
  int n = 0;
  char* s = line;
  while (*s) {
    while (*s && isspace((unsigned char)*s)) s++;
    if (!*s) break;
    if (n == max) return max + 1;
    w[n++] = s;
    while (*s && !isspace((unsigned char)*s)) s++;
    if (*s) *s++ = 0;
  }
  return n;
}

static int number(const char* s, double* x) {
  return tool_parseDouble(s, x) && isfinite(*x);
}

// sensor by name; -1 if absent
static int sensorId(const mjModel* m, const char* name) {
  return mj_name2id(m, mjOBJ_SENSOR, name);
}

// bind one change of NAME to the model; 0 with a message
static int addChange(toolPlant* p, const mjModel* m, const char* name, int op, double value,
                     double time, int line, char* err, int errsz) {
  char why[512] = "";
  mjdiffParams* prm = NULL;
  const char* names[1] = {name};
  if (mjdiff_makeParams(m, NULL, names, 1, &prm, why, sizeof(why)) != MJDIFF_OK) {
    fail(err, errsz, "%s:%d: parameter '%s': %s (the plant runs MuJoCo's native step: "
         "smooth-model fields are not parameters of it)", p->path, line, name, why);
    return 0;
  }
  change* ch = realloc(p->ch, sizeof(change) * (size_t)(p->nch + 1));
  if (!ch) {
    mjdiff_freeParams(prm);
    fail(err, errsz, "out of memory");
    return 0;
  }
  p->ch = ch;
  change* c = p->ch + p->nch++;
  memset(c, 0, sizeof(*c));
  c->op = op;
  c->value = value;
  c->time = time;
  c->line = line;
  c->params = prm;
  int np = mjdiff_paramCount(prm);
  c->base = calloc((size_t)np, sizeof(double));
  c->work = calloc((size_t)np, sizeof(double));
  if (!c->base || !c->work) {
    fail(err, errsz, "out of memory");
    return 0;
  }
  mjdiff_getParamValues(m, NULL, prm, c->base);
  // check the changed values now (set on the plant's copy, then restored at the reset)
  for (int i = 0; i < np; i++) {
    double v = c->base[i];
    c->work[i] = op == OP_SET ? value : op == OP_SCALE ? value * v : v + value;
  }
  if (mjdiff_setParamValues(p->m, NULL, prm, c->work, why, sizeof(why)) != MJDIFF_OK) {
    fail(err, errsz, "%s:%d: %s", p->path, line, why);
    return 0;
  }
  mjdiff_setParamValues(p->m, NULL, prm, c->base, NULL, 0);
  return 1;
}

static int byTime(const void* a, const void* b) {
  const change* x = a;
  const change* y = b;
  if (x->time != y->time) return x->time < y->time ? -1 : 1;
  return x->line - y->line;
}

// one statement; 0 with a message
static int statement(toolPlant* p, const mjModel* m, char** w, int n, int line, char* err,
                     int errsz) {
  const char* kw = w[0];
  const char* path = p->path;
  if (!strcmp(kw, "set") || !strcmp(kw, "scale") || !strcmp(kw, "add") ||
      !strcmp(kw, "payload")) {
    double value, time = 0;
    if (n != 3 && !(n == 5 && !strcmp(w[3], "at"))) {
      fail(err, errsz, "%s:%d: expected '%s %s VALUE [at T]'", path, line, kw,
           strcmp(kw, "payload") ? "NAME" : "BODY");
      return 0;
    }
    if (!number(w[2], &value)) {
      fail(err, errsz, "%s:%d: '%s' is not a number", path, line, w[2]);
      return 0;
    }
    if (n == 5 && (!number(w[4], &time) || time < 0)) {
      fail(err, errsz, "%s:%d: time '%s' must be a number >= 0 (s)", path, line, w[4]);
      return 0;
    }
    if (!strcmp(kw, "payload")) {
      if (mj_name2id(m, mjOBJ_BODY, w[1]) < 1) {
        fail(err, errsz, "%s:%d: unknown body '%s' (payload BODY MASS)", path, line, w[1]);
        return 0;
      }
      if (!(value > 0)) {
        fail(err, errsz, "%s:%d: payload mass must be > 0 kg, got %s", path, line, w[2]);
        return 0;
      }
      char name[300];
      snprintf(name, sizeof(name), "body:%s:mass", w[1]);
      return addChange(p, m, name, OP_ADD, value, time, line, err, errsz);
    }
    int op = !strcmp(kw, "set") ? OP_SET : !strcmp(kw, "scale") ? OP_SCALE : OP_ADD;
    return addChange(p, m, w[1], op, value, time, line, err, errsz);
  }
  if (!strcmp(kw, "noise") || !strcmp(kw, "bias")) {
    int isnoise = !strcmp(kw, "noise");
    if (n < 3 || (isnoise && n != 3)) {
      fail(err, errsz, "%s:%d: expected '%s'", path, line,
           isnoise ? "noise SENSOR|* SIGMA" : "bias SENSOR|* B [B ...]");
      return 0;
    }
    int all = !strcmp(w[1], "*");
    int id = all ? -1 : sensorId(m, w[1]);
    if (!all && id < 0) {
      fail(err, errsz, "%s:%d: unknown sensor '%s'", path, line, w[1]);
      return 0;
    }
    int nv = n - 2;
    double v[32];
    if (nv > 32) {
      fail(err, errsz, "%s:%d: too many values", path, line);
      return 0;
    }
    for (int i = 0; i < nv; i++) {
      if (!number(w[2 + i], v + i)) {
        fail(err, errsz, "%s:%d: '%s' is not a number", path, line, w[2 + i]);
        return 0;
      }
      if (isnoise && v[i] < 0) {
        fail(err, errsz, "%s:%d: noise std must be >= 0, got %s", path, line, w[2 + i]);
        return 0;
      }
    }
    for (int j = all ? 0 : id; j < (all ? m->nsensor : id + 1); j++) {
      int adr = m->sensor_adr[j], dim = m->sensor_dim[j];
      if (nv != 1 && nv != dim) {
        fail(err, errsz, "%s:%d: sensor '%s' has %d components: give 1 or %d values", path, line,
             mj_id2name(m, mjOBJ_SENSOR, j), dim, dim);
        return 0;
      }
      for (int i = 0; i < dim; i++) (isnoise ? p->sigma : p->bias)[adr + i] = v[nv == 1 ? 0 : i];
    }
    return 1;
  }
  if (!strcmp(kw, "delay")) {
    double s;
    if (n != 2 || !number(w[1], &s) || s < 0) {
      fail(err, errsz, "%s:%d: expected 'delay SECONDS' with SECONDS >= 0", path, line);
      return 0;
    }
    p->delay = s;
    p->delay_line = line;
    return 1;
  }
  if (!strcmp(kw, "seed")) {
    long seed;
    if (n != 2 || !tool_parseInt(w[1], 0, 2147483647L, &seed)) {
      fail(err, errsz, "%s:%d: expected 'seed N' with N in [0, 2^31 - 1]", path, line);
      return 0;
    }
    p->seed = (unsigned long long)seed;
    return 1;
  }
  fail(err, errsz, "%s:%d: unknown statement '%s' (set, scale, add, payload, noise, bias, delay, "
       "seed)", path, line, kw);
  return 0;
}

// the delay line and the sort, after the statements
static int finish(toolPlant* p, char* err, int errsz) {
  p->D = (int)lround(p->delay / p->m->opt.timestep);
  if (p->delay > 0 && p->delay / p->m->opt.timestep > 1e7) {
    fail(err, errsz, "%s:%d: delay %g s is more than 1e7 plant steps", p->path, p->delay_line,
         p->delay);
    return 0;
  }
  p->L = p->D + 1;
  p->buf = calloc((size_t)p->L * (size_t)(p->m->nu > 0 ? p->m->nu : 1), sizeof(double));
  if (!p->buf) {
    fail(err, errsz, "out of memory");
    return 0;
  }
  for (int i = 0; i < p->m->nsensordata; i++) {
    if (p->sigma[i] > 0 || p->bias[i] != 0) p->noisy = 1;
  }
  if (p->nch > 1) qsort(p->ch, (size_t)p->nch, sizeof(change), byTime);
  mj_resetData(p->m, p->d);
  tool_plantReset(p, p->d);
  return 1;
}

toolPlant* tool_parsePlant(const mjModel* m, const char* text, const char* path, char* err,
                           int errsz) {
  toolPlant* p = newPlant(m, path, err, errsz);
  if (!p) return NULL;
  const char* s = text;
  int line = 0;
  while (s && *s) {
    line++;
    const char* e = strchr(s, '\n');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    char buf[1024];
    if (len >= sizeof(buf)) {
      fail(err, errsz, "%s:%d: line longer than %d characters", p->path, line,
           (int)sizeof(buf) - 1);
      tool_freePlant(p);
      return NULL;
    }
    memcpy(buf, s, len);
    buf[len] = 0;
    char* hash = strchr(buf, '#');
    if (hash) *hash = 0;
    char* w[40];
    int n = words(buf, w, 38);
    if (n > 38) {
      fail(err, errsz, "%s:%d: too many words", p->path, line);
      tool_freePlant(p);
      return NULL;
    }
    if (n > 0 && !statement(p, m, w, n, line, err, errsz)) {
      tool_freePlant(p);
      return NULL;
    }
    s = e ? e + 1 : NULL;
  }
  if (!finish(p, err, errsz)) {
    tool_freePlant(p);
    return NULL;
  }
  return p;
}

toolPlant* tool_readPlant(const mjModel* m, const char* path, char* err, int errsz) {
  long size = 0;
  char* text = tool_readFile(path, &size, err, errsz);
  if (!text) return NULL;
  toolPlant* p = tool_parsePlant(m, text, path, err, errsz);
  free(text);
  return p;
}

toolPlant* tool_nominalPlant(const mjModel* m, char* err, int errsz) {
  return tool_parsePlant(m, "", "(nominal plant)", err, errsz);
}

int tool_plantCheck(const toolPlant* p, double seconds, char* err, int errsz) {
  if (p->delay > 0 && p->delay >= seconds) {
    fail(err, errsz, "%s:%d: delay %g s is not shorter than the run (%g s)", p->path,
         p->delay_line, p->delay, seconds);
    return 0;
  }
  for (int i = 0; i < p->nch; i++) {
    if (p->ch[i].time >= seconds) {
      fail(err, errsz, "%s:%d: the change at %g s is not inside the run (%g s)", p->path,
           p->ch[i].line, p->ch[i].time, seconds);
      return 0;
    }
  }
  return 1;
}

const mjModel* tool_plantModel(const toolPlant* p) { return p->m; }
mjData* tool_plantData(toolPlant* p) { return p->d; }
int tool_plantChanges(const toolPlant* p) { return p->nch; }
int tool_plantDelaySteps(const toolPlant* p) { return p->D; }
int tool_plantNoisy(const toolPlant* p) { return p->noisy; }

// the changes due at plant time t
static void applyDue(toolPlant* p, double t) {
  double half = 0.5 * p->m->opt.timestep;
  while (p->next < p->nch && p->ch[p->next].time <= t + half) {
    change* c = p->ch + p->next++;
    int np = mjdiff_paramCount(c->params);
    mjdiff_getParamValues(p->m, NULL, c->params, c->work);
    for (int i = 0; i < np; i++) {
      double v = c->work[i];
      c->work[i] = c->op == OP_SET ? c->value : c->op == OP_SCALE ? c->value * v : v + c->value;
    }
    // checked at bind time on the nominal values; a composition that breaks a bound (a scale
    // after a set to 0, ...) is kept at the previous values
    mjdiff_setParamValues(p->m, NULL, c->params, c->work, NULL, 0);
  }
}

void tool_plantReset(toolPlant* p, const mjData* d0) {
  const mjModel* m = p->m;
  for (int i = p->nch - 1; i >= 0; i--) {
    mjdiff_setParamValues(p->m, NULL, p->ch[i].params, p->ch[i].base, NULL, 0);
  }
  p->next = 0;
  mjData* d = p->d;
  if (d0 != d) {
    d->time = d0->time;
    mju_copy(d->qpos, d0->qpos, m->nq);
    mju_copy(d->qvel, d0->qvel, m->nv);
    mju_copy(d->act, d0->act, m->na);
    mju_copy(d->ctrl, d0->ctrl, m->nu);
    mju_copy(d->mocap_pos, d0->mocap_pos, 3 * m->nmocap);
    mju_copy(d->mocap_quat, d0->mocap_quat, 4 * m->nmocap);
    mju_copy(d->qfrc_applied, d0->qfrc_applied, m->nv);
    mju_copy(d->xfrc_applied, d0->xfrc_applied, 6 * m->nbody);
    mju_zero(d->qacc_warmstart, m->nv);
  }
  for (int j = 0; j < p->L; j++) mju_copy(p->buf + (size_t)j * m->nu, d->ctrl, m->nu);
  p->k = 0;
  p->time0 = d->time;
  mjdiff_rngSeed(&p->rng, p->seed);
  p->has_gauss = 0;
  applyDue(p, 0);
  mj_forward(p->m, d);
}

int tool_plantStep(toolPlant* p, const double* ctrl, char* err, int errsz) {
  const mjModel* m = p->m;
  mjData* d = p->d;
  applyDue(p, d->time - p->time0);
  int L = p->L, nu = m->nu;
  mju_copy(p->buf + (size_t)(p->k % L) * nu, ctrl, nu);
  long slot = ((p->k - p->D) % L + L) % L;
  mju_copy(d->ctrl, p->buf + (size_t)slot * nu, nu);
  int bad = d->warning[mjWARN_BADQACC].number;
  double t = d->time;
  mj_step(p->m, d);
  p->k++;
  if (d->warning[mjWARN_BADQACC].number != bad) {
    fail(err, errsz, "native plant at t = %.4f s: bad accelerations", t);
    return 0;
  }
  return 1;
}

// standard normal (Box-Muller, two per pair of uniforms)
static double gauss(toolPlant* p) {
  if (p->has_gauss) {
    p->has_gauss = 0;
    return p->gauss;
  }
  double u1 = mjdiff_rngUniformOpen(&p->rng), u2 = mjdiff_rngUniform(&p->rng);
  double r = sqrt(-2 * log(u1));
  p->gauss = r * sin(6.283185307179586 * u2);
  p->has_gauss = 1;
  return r * cos(6.283185307179586 * u2);
}

void tool_plantSense(toolPlant* p, double* y) {
  const mjModel* m = p->m;
  mjData* d = p->d;
  mjData* s = p->ds;
  s->time = d->time;
  mju_copy(s->qpos, d->qpos, m->nq);
  mju_copy(s->qvel, d->qvel, m->nv);
  mju_copy(s->act, d->act, m->na);
  mju_copy(s->ctrl, d->ctrl, m->nu);
  mju_copy(s->mocap_pos, d->mocap_pos, 3 * m->nmocap);
  mju_copy(s->mocap_quat, d->mocap_quat, 4 * m->nmocap);
  mju_copy(s->qacc_warmstart, d->qacc_warmstart, m->nv);
  mj_forward(p->m, s);
  for (int i = 0; i < m->nsensordata; i++) {
    y[i] = s->sensordata[i] + p->bias[i] + (p->sigma[i] > 0 ? p->sigma[i] * gauss(p) : 0);
  }
}

double tool_plantParam(const toolPlant* p, const char* name) {
  mjdiffParams* prm = NULL;
  const char* names[1] = {name};
  if (mjdiff_makeParams(p->m, NULL, names, 1, &prm, NULL, 0) != MJDIFF_OK) return NAN;
  double v = NAN;
  if (mjdiff_paramCount(prm) == 1) mjdiff_getParamValues(p->m, NULL, prm, &v);
  mjdiff_freeParams(prm);
  return v;
}
