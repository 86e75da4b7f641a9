// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Tasks (<mjdiff/task.h>): the cost file parser, and the cost's residuals with their derivatives.
//
//   l(x, u) = sum_i w_i n_i(r_i)        n = 1/2 |r|^2 (quadratic)  or  s - p, s = sqrt(|r|^2 + p^2)
//   dn/dr   = c r                       c = 1  or  1 / s
//   d2n/dr2 = c I - e r r'              e = 0  or  1 / s^3   (both positive semidefinite)
//   dl/dx   = sum_i w_i R_i' (c_i r_i), R = dr/dx in the tangent layout dx = (dq, dv, da)
//   lxx     = sum_i w_i R_i' (c_i I - e_i r_i r_i') R_i     Gauss-Newton: the residuals' own second
//             derivatives are dropped; the norm's curvature is kept exactly (smoothabs included)
// terminal: the state terms with w_i times the terminal weight; control terms left out.
//
// Residuals and their Jacobians (J_p, J_r: MuJoCo's point and rotation Jacobians (mj_jac), whose
// columns are in velocity space, i.e. the tangent dq of mj_integratePos):
//   position  r = p_a - p_b                 dr/dq = J_p(a) - J_p(b)
//   upright   r = 1 - z . e_z, z = R e_z     dz = w x z, w = J_r dq  =>  dr/dq = -(z x e_z)' J_r
//   joint     r = q_j - q*                  dr/dq = e_j
//   jointvel  r = v_j - v*                  dr/dv = e_j
//   velocity  r = J_p(q) v - v*             dr/dv = J_p,  dr/dq below (rows of nan targets: 0)
//   control   r = u                         dr/du = I
//
// d/dq of a point velocity. With S_j = cdof_j (spatial motion (w; v at c), c the tree's subtree
// com), v_p = lin_p(sum_j S_j v_j), lin_p(w; v) = v + w x (p - c). A tangent step dq_i moves the
// frame of every dof it carries, dS_j = S_i x S_j (the motion cross product), and
// moves the point, dp = J_p[:, i] dq_i. With U_i = sum_{j carried by i} S_j v_j:
//   dv_p/dq_i = lin_p(S_i x U_i) + w x J_p[:, i],   w = J_r v (the body's angular velocity)
// Dof i carries the chain dofs after it and, when it is a rotational dof of a ball or free joint,
// all rotational dofs of its own joint (their axes are the body frame's: cdof = xmat columns, and
// mj_integratePos turns the frame itself: q <- q exp(dq)).

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mujoco/mujoco.h>
#include <mjdiff/task.h>

#include "compat.h"
#include "guard.h"

//---------------------------------- task ---------------------------------------------------------

typedef enum termType_ {
  TERM_POSITION = 0,
  TERM_UPRIGHT,
  TERM_JOINT,
  TERM_JOINTVEL,
  TERM_VELOCITY,
  TERM_CONTROL
} termType;

typedef enum normType_ { NORM_QUADRATIC = 0, NORM_SMOOTHABS } normType;

// a point of the model: a body frame's origin (xpos), a site, or a fixed point in the world
typedef struct object_ {
  int type;                    // mjOBJ_BODY, mjOBJ_SITE, or mjOBJ_UNKNOWN for a fixed point
  int id;                      // body or site id
  mjtNum point[3];             // the fixed point (m)
} object;

typedef struct term_ {
  termType type;
  object obj;                  // position, upright, velocity
  object target;               // position
  int qadr, dadr;              // joint, jointvel: the joint's qpos and dof address
  mjtNum value[3];             // joint / jointvel target (value[0]), velocity target (nan: free)
  mjtNum weight;               // w >= 0
  normType norm;
  mjtNum p;                    // smoothabs parameter (> 0)
} term;

struct mjdiffTask_ {
  double horizon;              // planning horizon (s)
  double timestep;             // planning timestep (s); 0: the model's
  double duration;             // simulated time of a closed-loop run (s); 0: the tool's default
  double terminal;             // weight of the state terms at the horizon's end
  int success_term;            // index of the success term, -1: none
  double success_threshold;
  int nterm;
  term* terms;
};

//---------------------------------- parsing ------------------------------------------------------

#define MAX_TOKEN 64
#define MAX_LINE 4094     // bytes of a line without its end
#define MAX_LINES 100000  // lines of a task file

typedef struct parser_ {
  const mjModel* m;
  const char* path;
  int line;
  char* err;
  int errsz;
} parser;

// write "PATH:LINE: message" to the error buffer; returns 0
static int fail(parser* ps, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int fail(parser* ps, const char* fmt, ...) {
  if (ps->err && ps->errsz > 0) {
    int n = snprintf(ps->err, (size_t)ps->errsz, "%s:%d: ", ps->path, ps->line);
    if (n >= 0 && n < ps->errsz) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(ps->err + n, (size_t)(ps->errsz - n), fmt, ap);
      va_end(ap);
    }
  }
  return 0;
}

// split a line into tokens (blanks separate, '#' starts a comment, "..." is one token); -1 on error
static int tokenize(parser* ps, char* line, char** tok, int* quoted) {
  int n = 0;
  char* s = line;
  for (;;) {
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n' || *s == '\v' || *s == '\f') s++;
    if (*s == 0 || *s == '#') return n;
    if (n == MAX_TOKEN) {
      fail(ps, "too many tokens (at most %d)", MAX_TOKEN);
      return -1;
    }
    if (*s == '"') {
      char* end = strchr(s + 1, '"');
      if (!end) {
        fail(ps, "unterminated quote in '%s'", s);
        return -1;
      }
      *end = 0;
      tok[n] = s + 1;
      quoted[n++] = 1;
      s = end + 1;
    } else {
      tok[n] = s;
      quoted[n++] = 0;
      while (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\n' && *s != '\v' &&
             *s != '\f' && *s != '#' && *s != '"') {
        s++;
      }
      if (*s == '#' || *s == '"') {
        // a comment or quote right after a token: end the token here and look again
        char c = *s;
        *s = 0;
        if (c == '#') return n;
        *s = c;
        fail(ps, "unexpected quote after '%.*s'", (int)(s - tok[n - 1]), tok[n - 1]);
        return -1;
      }
      if (*s) *s++ = 0;
    }
  }
}

// parse a whole string as a number: finite, or also nan if allownan; 0 on failure
static int parseNumber(const char* s, int allownan, mjtNum* out) {
  char* end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end != 0) return 0;
  if (isnan(v)) {
    if (!allownan) return 0;
  } else if (!isfinite(v) || errno == ERANGE) {
    if (!(errno == ERANGE && fabs(v) < 1)) return 0;  // underflow to (near) zero is fine
  }
  *out = v;
  return 1;
}

// the number in token k named what, >= lo; advances k
static int numberField(parser* ps, char** tok, int ntok, int* k, const char* what, int allownan,
                       mjtNum lo, int strict, mjtNum* out) {
  if (*k >= ntok) return fail(ps, "missing %s", what);
  if (!parseNumber(tok[*k], allownan, out)) {
    return fail(ps, "bad number '%s' for %s", tok[*k], what);
  }
  if (!isnan(*out) && (strict ? !(*out > lo) : !(*out >= lo))) {
    return fail(ps, "%s must be %s %g, got '%s'", what, strict ? ">" : ">=", lo, tok[*k]);
  }
  (*k)++;
  return 1;
}

// an object in token k: body:NAME, site:NAME or (if allowpoint) a point "x y z" or x y z
static int objectField(parser* ps, char** tok, const int* quoted, int ntok, int* k,
                       const char* what, int allowpoint, object* obj) {
  const char* kinds =
      allowpoint ? "body:NAME, site:NAME or a point \"x y z\"" : "body:NAME or site:NAME";
  if (*k >= ntok) return fail(ps, "missing %s (%s)", what, kinds);
  const char* s = tok[*k];
  obj->type = mjOBJ_UNKNOWN;
  obj->id = -1;
  obj->point[0] = obj->point[1] = obj->point[2] = 0;

  // a quoted point
  if (quoted[*k]) {
    if (!allowpoint) return fail(ps, "expected %s for %s, got '\"%s\"'", kinds, what, s);
    char buf[MAX_LINE];
    snprintf(buf, sizeof(buf), "%s", s);
    char* c = buf;
    for (int i = 0; i < 3; i++) {
      while (*c == ' ' || *c == '\t') c++;
      char* start = c;
      while (*c && *c != ' ' && *c != '\t') c++;
      char save = *c;
      *c = 0;
      if (!*start || !parseNumber(start, 0, obj->point + i)) {
        return fail(ps, "bad point '\"%s\"' for %s (expected three numbers)", s, what);
      }
      *c = save;
    }
    while (*c == ' ' || *c == '\t') c++;
    if (*c) return fail(ps, "bad point '\"%s\"' for %s (expected three numbers)", s, what);
    (*k)++;
    return 1;
  }

  // a body or a site
  int type = mjOBJ_UNKNOWN;
  const char* name = NULL;
  if (!strncmp(s, "body:", 5)) {
    type = mjOBJ_BODY;
    name = s + 5;
  } else if (!strncmp(s, "site:", 5)) {
    type = mjOBJ_SITE;
    name = s + 5;
  }
  if (type != mjOBJ_UNKNOWN) {
    int id = mj_name2id(ps->m, type, name);
    if (id < 0) {
      return fail(ps, "unknown %s '%s' in '%s'", type == mjOBJ_BODY ? "body" : "site", name, s);
    }
    obj->type = type;
    obj->id = id;
    (*k)++;
    return 1;
  }

  // three numbers
  mjtNum v;
  if (!allowpoint || !parseNumber(s, 0, &v)) {
    return fail(ps, "expected %s for %s, got '%s'", kinds, what, s);
  }
  for (int i = 0; i < 3; i++) {
    if (*k >= ntok) return fail(ps, "missing coordinate %d of the point for %s", i + 1, what);
    if (!parseNumber(tok[*k], 0, obj->point + i)) {
      return fail(ps, "bad number '%s' in the point for %s", tok[*k], what);
    }
    (*k)++;
  }
  return 1;
}

// a hinge or slide joint named in token k
static int jointField(parser* ps, char** tok, int ntok, int* k, term* t) {
  if (*k >= ntok) return fail(ps, "missing joint NAME");
  int id = mj_name2id(ps->m, mjOBJ_JOINT, tok[*k]);
  if (id < 0) return fail(ps, "unknown joint '%s'", tok[*k]);
  int type = ps->m->jnt_type[id];
  if (type != mjJNT_HINGE && type != mjJNT_SLIDE) {
    return fail(ps, "joint '%s' is a %s joint; joint terms need a hinge or slide", tok[*k],
                type == mjJNT_FREE ? "free" : "ball");
  }
  t->qadr = ps->m->jnt_qposadr[id];
  t->dadr = ps->m->jnt_dofadr[id];
  (*k)++;
  return 1;
}

// WEIGHT [NORM P] and nothing after
static int weightNorm(parser* ps, char** tok, int ntok, int* k, term* t) {
  if (!numberField(ps, tok, ntok, k, "WEIGHT", 0, 0, 0, &t->weight)) return 0;
  t->norm = NORM_QUADRATIC;
  t->p = 0;
  if (*k < ntok) {
    const char* s = tok[*k];
    if (!strcmp(s, "quadratic")) {
      (*k)++;
      if (*k < ntok && !numberField(ps, tok, ntok, k, "P", 0, 0, 0, &t->p)) return 0;
    } else if (!strcmp(s, "smoothabs")) {
      t->norm = NORM_SMOOTHABS;
      (*k)++;
      if (!numberField(ps, tok, ntok, k, "P (smoothabs)", 0, 0, 1, &t->p)) return 0;
    } else {
      return fail(ps, "unknown norm '%s' (quadratic or smoothabs)", s);
    }
  }
  if (*k < ntok) return fail(ps, "unexpected token '%s'", tok[*k]);
  return 1;
}

// one term line (tok[0] is the term's name)
static int parseTerm(parser* ps, char** tok, const int* quoted, int ntok, term* t) {
  int k = 1;
  memset(t, 0, sizeof(*t));
  t->obj.type = t->target.type = mjOBJ_UNKNOWN;
  t->obj.id = t->target.id = -1;
  const char* name = tok[0];
  if (!strcmp(name, "position")) {
    t->type = TERM_POSITION;
    if (!objectField(ps, tok, quoted, ntok, &k, "OBJ", 1, &t->obj)) return 0;
    if (!objectField(ps, tok, quoted, ntok, &k, "TARGET", 1, &t->target)) return 0;
  } else if (!strcmp(name, "upright")) {
    t->type = TERM_UPRIGHT;
    if (!objectField(ps, tok, quoted, ntok, &k, "OBJ", 0, &t->obj)) return 0;
  } else if (!strcmp(name, "joint") || !strcmp(name, "jointvel")) {
    t->type = name[5] ? TERM_JOINTVEL : TERM_JOINT;
    if (!jointField(ps, tok, ntok, &k, t)) return 0;
    if (!numberField(ps, tok, ntok, &k, "TARGET", 0, -INFINITY, 0, t->value)) return 0;
  } else if (!strcmp(name, "velocity")) {
    t->type = TERM_VELOCITY;
    if (!objectField(ps, tok, quoted, ntok, &k, "OBJ", 0, &t->obj)) return 0;
    const char* comp[3] = {"VX", "VY", "VZ"};
    for (int i = 0; i < 3; i++) {
      if (!numberField(ps, tok, ntok, &k, comp[i], 1, -INFINITY, 0, t->value + i)) return 0;
    }
    if (isnan(t->value[0]) && isnan(t->value[1]) && isnan(t->value[2])) {
      return fail(ps, "velocity target is nan in every component");
    }
  } else if (!strcmp(name, "control")) {
    t->type = TERM_CONTROL;
  } else {
    return fail(ps, "unknown term '%s' (position, upright, joint, jointvel, velocity, control, "
                "horizon, timestep, duration, terminal or success)", name);
  }
  return weightNorm(ps, tok, ntok, &k, t);
}

// a horizon, timestep, duration, terminal or success line; 0 on error
static int parseSetting(parser* ps, char** tok, int ntok, mjdiffTask* task, int* success_line) {
  int k = 1;
  mjtNum v;
  const char* name = tok[0];
  if (!strcmp(name, "horizon")) {
    if (!numberField(ps, tok, ntok, &k, "SECONDS", 0, 0, 1, &v)) return 0;
    task->horizon = v;
  } else if (!strcmp(name, "timestep")) {
    if (!numberField(ps, tok, ntok, &k, "SECONDS", 0, 0, 1, &v)) return 0;
    task->timestep = v;
  } else if (!strcmp(name, "duration")) {
    if (!numberField(ps, tok, ntok, &k, "SECONDS", 0, 0, 1, &v)) return 0;
    task->duration = v;
  } else if (!strcmp(name, "terminal")) {
    if (!numberField(ps, tok, ntok, &k, "WEIGHT", 0, 0, 0, &v)) return 0;
    task->terminal = v;
  } else {
    mjtNum index;
    if (*success_line) return fail(ps, "second success line (the first is line %d)", *success_line);
    if (k >= ntok) return fail(ps, "missing TERM");
    if (!parseNumber(tok[k], 0, &index) || index != floor(index) || index < 0 || index > 1e6) {
      return fail(ps, "bad term index '%s' for TERM (a 0-based integer)", tok[k]);
    }
    k++;
    if (!numberField(ps, tok, ntok, &k, "THRESHOLD", 0, 0, 1, &v)) return 0;
    task->success_term = (int)index;
    task->success_threshold = v;
    *success_line = ps->line;
  }
  if (k < ntok) return fail(ps, "unexpected token '%s'", tok[k]);
  return 1;
}

mjdiffTask* mjdiff_readTask(const mjModel* m, const char* path, char* err, int errsz) {
  if (err && errsz > 0) err[0] = 0;
  if (!m || !path) {
    if (err && errsz > 0)
      snprintf(err, (size_t)errsz, "mjdiff_readTask: model and path are required");
    return NULL;
  }
  FILE* f = fopen(path, "rb");
  if (!f) {
    if (err && errsz > 0) {
      snprintf(err, (size_t)errsz, "%s: cannot open: %s", path, strerror(errno));
    }
    return NULL;
  }
  mjdiffTask* task = mjdiff_readTaskFile(m, f, path, err, errsz);
  fclose(f);
  return task;
}

mjdiffTask* mjdiff_readTaskFile(const mjModel* m, FILE* f, const char* path, char* err, int errsz) {
  if (err && errsz > 0) err[0] = 0;
  parser ps = {m, path ? path : "(null)", 0, err, errsz};
  if (!m || !f) {
    if (err && errsz > 0)
      snprintf(err, (size_t)errsz, "mjdiff_readTask: model and file are required");
    return NULL;
  }

  mjdiffTask* task = (mjdiffTask*)calloc(1, sizeof(mjdiffTask));
  if (!task) {
    if (err && errsz > 0) snprintf(err, (size_t)errsz, "%s: out of memory", ps.path);
    return NULL;
  }
  task->horizon = 0.5;
  task->terminal = 1;
  task->success_term = -1;
  static const char* kSetting[] = {"horizon", "timestep", "duration", "terminal", "success"};
  enum { NSETTING = sizeof(kSetting) / sizeof(kSetting[0]), SUCCESS = NSETTING - 1 };
  int cap = 0, ok = 1, success_line = 0, seen[NSETTING] = {0};
  char* line = NULL;
  char* tok[MAX_TOKEN];
  int quoted[MAX_TOKEN];
  toolReader in;
  tool_readerInit(&in, f, ps.path, MAX_LINE, MAX_LINES);

  int got;
  while (ok && (got = tool_readLine(&in, &line, NULL, err, errsz)) != 0) {
    if (got < 0) {
      ok = 0;
      break;
    }
    ps.line++;
    int ntok = tokenize(&ps, line, tok, quoted);
    if (ntok < 0) {
      ok = 0;
      break;
    }
    if (ntok == 0) continue;
    if (quoted[0]) {
      ok = fail(&ps, "unknown term '\"%s\"'", tok[0]);
      break;
    }

    // settings
    int setting = -1;
    for (int i = 0; i < NSETTING; i++) {
      if (!strcmp(tok[0], kSetting[i])) setting = i;
    }
    if (setting >= 0) {
      // success has its own check (it names its first line)
      if (setting != SUCCESS && seen[setting]) {
        ok = fail(&ps, "second %s line (the first is line %d)", tok[0], seen[setting]);
        break;
      }
      ok = parseSetting(&ps, tok, ntok, task, &success_line);
      if (setting != SUCCESS) seen[setting] = ps.line;
      continue;
    }

    // a term
    if (task->nterm == cap) {
      int newcap = cap ? 2 * cap : 8;
      term* terms = (term*)realloc(task->terms, (size_t)newcap * sizeof(term));
      if (!terms) {
        ok = fail(&ps, "out of memory");
        break;
      }
      task->terms = terms;
      cap = newcap;
    }
    ok = parseTerm(&ps, tok, quoted, ntok, task->terms + task->nterm);
    if (ok) task->nterm++;
  }
  tool_readerFree(&in);

  if (ok && task->nterm == 0) {
    if (err && errsz > 0) snprintf(err, (size_t)errsz, "%s: no cost terms", ps.path);
    ok = 0;
  }
  if (ok && task->timestep > task->horizon) {
    ps.line = seen[1];
    ok = fail(&ps, "timestep %g s is longer than the horizon %g s%s (a plan needs one step)",
              task->timestep, task->horizon, seen[0] ? "" : " (the default)");
  }
  if (ok && task->success_term >= task->nterm) {
    ps.line = success_line;
    ok = fail(&ps, "success term index %d out of range (the task has %d terms, 0-based)",
              task->success_term, task->nterm);
  }
  if (!ok) {
    mjdiff_freeTask(task);
    return NULL;
  }
  return task;
}

void mjdiff_freeTask(mjdiffTask* task) {
  if (!task) return;
  free(task->terms);
  free(task);
}

mjdiffTask* mjdiff_copyTask(const mjdiffTask* task) {
  if (!task) return NULL;
  mjdiffTask* c = (mjdiffTask*)malloc(sizeof(mjdiffTask));
  if (!c) return NULL;
  *c = *task;
  c->terms = (term*)malloc(sizeof(term) * (size_t)(task->nterm > 0 ? task->nterm : 1));
  if (!c->terms) {
    free(c);
    return NULL;
  }
  if (task->nterm > 0) memcpy(c->terms, task->terms, sizeof(term) * (size_t)task->nterm);
  return c;
}

int mjdiff_taskTermCount(const mjdiffTask* task) {
  return task ? task->nterm : 0;
}

// the position term whose target is a fixed point, or NULL
static term* pointTerm(const mjdiffTask* task, int i) {
  if (!task || i < 0 || i >= task->nterm) return NULL;
  term* t = task->terms + i;
  return t->type == TERM_POSITION && t->target.type == mjOBJ_UNKNOWN ? t : NULL;
}

int mjdiff_taskGetPoint(const mjdiffTask* task, int i, double p[3]) {
  term* t = pointTerm(task, i);
  if (!t) return -1;
  mju_copy3(p, t->target.point);
  return 0;
}

int mjdiff_taskSetPoint(mjdiffTask* task, int i, const double p[3]) {
  term* t = pointTerm(task, i);
  if (!t) return -1;
  mju_copy3(t->target.point, p);
  return 0;
}

int mjdiff_taskGetObject(const mjdiffTask* task, int i, int* type, int* id) {
  if (!task || i < 0 || i >= task->nterm || task->terms[i].type != TERM_POSITION) return -1;
  *type = task->terms[i].obj.type;
  *id = task->terms[i].obj.id;
  return 0;
}

double mjdiff_taskHorizon(const mjdiffTask* task) {
  return task ? task->horizon : 0;
}

double mjdiff_taskTimestep(const mjdiffTask* task) {
  return task ? task->timestep : 0;
}

double mjdiff_taskDuration(const mjdiffTask* task) {
  return task ? task->duration : 0;
}

//---------------------------------- residuals -----------------------------------------------------

// scratch per call, on d's stack: R (3 x ndx), four 3 x nv Jacobians
static int scratchSize(const mjModel* m) {
  return 3 * (2 * m->nv + m->na) + 12 * m->nv + 1;
}

// position of obj (m) and the body it is fixed to (-1: a fixed point)
static int objectPoint(const mjModel* m, const mjData* d, const object* obj, mjtNum p[3]) {
  switch (obj->type) {
    case mjOBJ_BODY:
      mju_copy3(p, d->xpos + 3 * obj->id);
      return obj->id;
    case mjOBJ_SITE:
      mju_copy3(p, d->site_xpos + 3 * obj->id);
      return m->site_bodyid[obj->id];
    default:
      mju_copy3(p, obj->point);
      return -1;
  }
}

// motion cross product (w1; v1) x (w2; v2) = (w1 x w2; w1 x v2 + v1 x w2)
static void crossMotion(mjtNum res[6], const mjtNum a[6], const mjtNum b[6]) {
  mjtNum t[3];
  mju_cross(res, a, b);
  mju_cross(res + 3, a, b + 3);
  mju_cross(t, a + 3, b);
  mju_addTo3(res + 3, t);
}

// dv_p/dq (3 x nv, row-major) of the velocity of point p fixed to body b (derivation at the top);
// jacp, jacr: its point and rotation Jacobians (3 x nv)
static void pointVelocityDq(const mjModel* m, const mjData* d, int b, const mjtNum p[3],
                            const mjtNum* jacp, const mjtNum* jacr, mjtNum* D) {
  int nv = m->nv;
  mju_zero(D, 3 * nv);

  // w = J_r v, point offset from the tree's com
  mjtNum w[3], off[3];
  mju_mulMatVec(w, jacr, d->qvel, 3, nv);
  mju_sub3(off, p, d->subtree_com + 3 * m->body_rootid[b]);

  // last dof of the chain
  while (b > 0 && !m->body_dofnum[b]) b = m->body_parentid[b];
  if (b <= 0) return;
  int i = m->body_dofadr[b] + m->body_dofnum[b] - 1;

  // backward over the chain, S = sum of S_j v_j over the chain dofs after i
  mjtNum S[6] = {0, 0, 0, 0, 0, 0};
  while (i >= 0) {
    const mjtNum* Si = d->cdof + 6 * i;

    // U_i: the dofs after i, and the rotational dofs before i of its own ball or free joint
    mjtNum U[6];
    mju_copy(U, S, 6);
    int jnt = m->dof_jntid[i], type = m->jnt_type[jnt];
    int r0 = m->jnt_dofadr[jnt] + (type == mjJNT_FREE ? 3 : 0);
    if ((type == mjJNT_BALL || type == mjJNT_FREE) && i >= r0) {
      for (int j = r0; j < i; j++) mju_addToScl(U, d->cdof + 6 * j, d->qvel[j], 6);
    }

    // column i: lin_p(S_i x U_i) + w x J_p[:, i]
    mjtNum X[6], t1[3], t2[3], col[3];
    crossMotion(X, Si, U);
    mju_cross(t1, X, off);
    mjtNum ji[3] = {jacp[i], jacp[nv + i], jacp[2 * nv + i]};
    mju_cross(t2, w, ji);
    for (int k = 0; k < 3; k++) {
      col[k] = X[3 + k] + t1[k] + t2[k];
      D[k * nv + i] = col[k];
    }

    // S += S_i v_i
    mju_addToScl(S, Si, d->qvel[i], 6);
    i = m->dof_parentid[i];
  }
}

// residual r (returns its size, <= 3) of state term t and, if R is not NULL, its Jacobian
// dr/dx (3 x ndx, row-major, rows beyond the size untouched); scratch: 12 nv
static int stateResidual(const term* t, const mjModel* m, const mjData* d, mjtNum* r, mjtNum* R,
                         mjtNum* scratch) {
  int nv = m->nv, ndx = 2 * nv + m->na;
  mjtNum* jacp = scratch;
  mjtNum* jacr = scratch + 3 * nv;
  mjtNum* jac2 = scratch + 6 * nv;
  mjtNum* D = scratch + 9 * nv;
  mjtNum p[3], p2[3];
  int dim = t->type == TERM_POSITION || t->type == TERM_VELOCITY ? 3 : 1;
  if (R) mju_zero(R, dim * ndx);

  switch (t->type) {
    case TERM_POSITION: {
      int b = objectPoint(m, d, &t->obj, p);
      int b2 = objectPoint(m, d, &t->target, p2);
      mju_sub3(r, p, p2);
      if (R) {
        // dr/dq = J_p(a) - J_p(b)
        if (b >= 0) {
          mj_jac(m, d, jacp, NULL, p, b);
          for (int k = 0; k < 3; k++) mju_addTo(R + k * ndx, jacp + k * nv, nv);
        }
        if (b2 >= 0) {
          mj_jac(m, d, jac2, NULL, p2, b2);
          for (int k = 0; k < 3; k++) mju_subFrom(R + k * ndx, jac2 + k * nv, nv);
        }
      }
      return 3;
    }

    case TERM_UPRIGHT: {
      const mjtNum* mat = t->obj.type == mjOBJ_BODY ? d->xmat + 9 * t->obj.id
                                                     : d->site_xmat + 9 * t->obj.id;
      mjtNum z[3] = {mat[2], mat[5], mat[8]};
      r[0] = 1 - z[2];
      if (R) {
        // dr/dq = -(z x e_z)' J_r = -(z_y J_r,x - z_x J_r,y)
        int b = objectPoint(m, d, &t->obj, p);
        mj_jac(m, d, NULL, jacr, p, b);
        for (int i = 0; i < nv; i++) R[i] = -(z[1] * jacr[i] - z[0] * jacr[nv + i]);
      }
      return 1;
    }

    case TERM_JOINT:
      r[0] = d->qpos[t->qadr] - t->value[0];
      if (R) R[t->dadr] = 1;
      return 1;

    case TERM_JOINTVEL:
      r[0] = d->qvel[t->dadr] - t->value[0];
      if (R) R[nv + t->dadr] = 1;
      return 1;

    case TERM_VELOCITY: {
      int b = objectPoint(m, d, &t->obj, p);
      mj_jac(m, d, jacp, jacr, p, b);
      mjtNum v[3];
      mju_mulMatVec(v, jacp, d->qvel, 3, nv);
      if (R) pointVelocityDq(m, d, b, p, jacp, jacr, D);
      for (int k = 0; k < 3; k++) {
        if (isnan(t->value[k])) {
          r[k] = 0;
          continue;
        }
        r[k] = v[k] - t->value[k];
        if (R) {
          // dr/dq = d(J_p v)/dq, dr/dv = J_p
          mju_copy(R + k * ndx, D + k * nv, nv);
          mju_copy(R + k * ndx + nv, jacp + k * nv, nv);
        }
      }
      return 3;
    }

    default:
      return 0;
  }
}

// value of the term's norm at r (size n); *c, *e: dn/dr = c r, d2n/dr2 = c I - e r r'
static mjtNum normValue(const term* t, const mjtNum* r, int n, mjtNum* c, mjtNum* e) {
  mjtNum rr = mju_dot(r, r, n);
  if (t->norm == NORM_SMOOTHABS) {
    mjtNum s = mju_sqrt(rr + t->p * t->p);
    *c = 1 / s;
    *e = 1 / (s * s * s);
    return s - t->p;
  }
  *c = 1;
  *e = 0;
  return 0.5 * rr;
}

//---------------------------------- cost ----------------------------------------------------------

double mjdiff_taskCost(const mjdiffTask* task, const mjModel* m, mjData* d, int terminal,
                       double* dldx, double* dldu) {
  int nv = m->nv, nu = m->nu, ndx = 2 * nv + m->na;
  if (dldx) mju_zero(dldx, ndx);
  if (dldu) mju_zero(dldu, nu);
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* R = compat_stackAllocNum(d, scratchSize(m));
  mjtNum* scratch = R + 3 * ndx;

  mjtNum cost = 0, r[3], c, e;
  for (int i = 0; i < task->nterm; i++) {
    const term* t = task->terms + i;

    // control: r = u, dl/du = w c u
    if (t->type == TERM_CONTROL) {
      if (terminal) continue;
      cost += t->weight * normValue(t, d->ctrl, nu, &c, &e);
      if (dldu) mju_addToScl(dldu, d->ctrl, t->weight * c, nu);
      continue;
    }

    // state terms: dl/dx = w c R' r
    mjtNum w = terminal ? t->weight * task->terminal : t->weight;
    int dim = stateResidual(t, m, d, r, dldx ? R : NULL, scratch);
    cost += w * normValue(t, r, dim, &c, &e);
    if (dldx) {
      for (int k = 0; k < dim; k++) {
        if (r[k] != 0) mju_addToScl(dldx, R + k * ndx, w * c * r[k], ndx);
      }
    }
  }

  compat_stackFree(d, mark);
  return cost;
}

void mjdiff_taskCostHessian(const mjdiffTask* task, const mjModel* m, mjData* d, int terminal,
                            double* lxx, double* luu) {
  int nv = m->nv, nu = m->nu, ndx = 2 * nv + m->na;
  if (lxx) mju_zero(lxx, ndx * ndx);
  if (luu) mju_zero(luu, nu * nu);
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* R = compat_stackAllocNum(d, scratchSize(m) + 3 * ndx);
  mjtNum* T = R + 3 * ndx;
  mjtNum* scratch = T + 3 * ndx;

  mjtNum r[3], c, e, N[9];
  for (int i = 0; i < task->nterm; i++) {
    const term* t = task->terms + i;

    // control: luu += w (c I - e u u')
    if (t->type == TERM_CONTROL) {
      if (terminal || !luu) continue;
      normValue(t, d->ctrl, nu, &c, &e);
      for (int a = 0; a < nu; a++) {
        luu[a * nu + a] += t->weight * c;
        if (e != 0) {
          for (int b = 0; b < nu; b++) {
            luu[a * nu + b] -= t->weight * e * d->ctrl[a] * d->ctrl[b];
          }
        }
      }
      continue;
    }
    if (!lxx) continue;

    // state terms: lxx += R' N R,  N = w (c I - e r r')
    mjtNum w = terminal ? t->weight * task->terminal : t->weight;
    int dim = stateResidual(t, m, d, r, R, scratch);
    normValue(t, r, dim, &c, &e);
    for (int a = 0; a < dim; a++) {
      for (int b = 0; b < dim; b++) N[a * dim + b] = w * ((a == b ? c : 0) - e * r[a] * r[b]);
    }
    mju_mulMatMat(T, N, R, dim, dim, ndx);
    for (int k = 0; k < dim; k++) {
      for (int a = 0; a < ndx; a++) {
        mjtNum Rka = R[k * ndx + a];
        if (Rka != 0) mju_addToScl(lxx + a * ndx, T + k * ndx, Rka, ndx);
      }
    }
  }

  compat_stackFree(d, mark);
}

int mjdiff_taskSuccess(const mjdiffTask* task, const mjModel* m, mjData* d) {
  if (!task || task->success_term < 0) return 0;
  const term* t = task->terms + task->success_term;
  mjtNum norm;
  if (t->type == TERM_CONTROL) {
    norm = mju_norm(d->ctrl, m->nu);
  } else {
    mjdiffStackMark mark = compat_stackMark(d);
    mjtNum* scratch = compat_stackAllocNum(d, scratchSize(m));
    mjtNum r[3];
    int dim = stateResidual(t, m, d, r, NULL, scratch);
    norm = mju_norm(r, dim);
    compat_stackFree(d, mark);
  }
  return norm < task->success_threshold;
}
