// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Parameters of the smooth model: defaults, validation, names, and reading them from the MJCF
// <custom> numerics (MuJoCo 2.2 has no plugin configuration element).

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "internal.h"

#define PREFIX "mjdiff_"

// one named parameter: where it lives, its lower bound, and whether geoms may override it
typedef struct paramInfo_ {
  const char* name;
  size_t offset;               // offset in mjdiffOptions
  int strict;                  // 1: value must be > 0; 0: value must be >= 0
  int geom;                    // per-geom index (geomParam) or -1
  const char* unit;
} paramInfo;

static const paramInfo kParams[] = {
  {"contact_stiffness", offsetof(mjdiffOptions, contact_stiffness), 1, GP_STIFFNESS, "N/m"},
  {"contact_damping", offsetof(mjdiffOptions, contact_damping), 0, GP_DAMPING, "N s/m"},
  {"contact_width", offsetof(mjdiffOptions, contact_width), 1, GP_WIDTH, "m"},
  {"friction_speed", offsetof(mjdiffOptions, friction_speed), 1, GP_FRICTION_SPEED, "m/s"},
  {"spin_speed", offsetof(mjdiffOptions, spin_speed), 1, GP_SPIN_SPEED, "rad/s"},
  {"limit_stiffness", offsetof(mjdiffOptions, limit_stiffness), 1, -1, "N/m or N m/rad"},
  {"limit_damping", offsetof(mjdiffOptions, limit_damping), 0, -1, "N s/m or N m s/rad"},
  {"limit_width", offsetof(mjdiffOptions, limit_width), 1, -1, "m or rad"},
  {"frictionloss_speed", offsetof(mjdiffOptions, frictionloss_speed), 1, -1, "m/s or rad/s"},
  {"eq_stiffness", offsetof(mjdiffOptions, eq_stiffness), 1, -1, "N/m or N m/rad"},
  {"eq_damping", offsetof(mjdiffOptions, eq_damping), 0, -1, "N s/m or N m s/rad"},
};
#define NPARAM ((int)(sizeof(kParams) / sizeof(kParams[0])))

static mjtNum* optField(mjdiffOptions* opt, const paramInfo* p) {
  return (mjtNum*)((char*)opt + p->offset);
}

static mjtNum optGet(const mjdiffOptions* opt, const paramInfo* p) {
  return *(const mjtNum*)((const char*)opt + p->offset);
}

static const paramInfo* findParam(const char* name, size_t len) {
  for (int i = 0; i < NPARAM; i++) {
    if (strlen(kParams[i].name) == len && !strncmp(kParams[i].name, name, len)) {
      return kParams + i;
    }
  }
  return NULL;
}

static mjdiffStatus checkValue(const paramInfo* p, mjtNum value, char* err, int errsz) {
  if (!isfinite(value)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s must be finite, got %g", p->name,
                        value);
  }
  if (p->strict && !(value > 0)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s must be > 0 (%s), got %g", p->name,
                        p->unit, value);
  }
  if (!p->strict && value < 0) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s must be >= 0 (%s), got %g", p->name,
                        p->unit, value);
  }
  return MJDIFF_OK;
}

//---------------------------------- status and errors ---------------------------------------------

const char* mjdiff_statusName(mjdiffStatus status) {
  switch (status) {
    case MJDIFF_OK: return "MJDIFF_OK";
    case MJDIFF_ERR_ARGUMENT: return "MJDIFF_ERR_ARGUMENT";
    case MJDIFF_ERR_VALUE: return "MJDIFF_ERR_VALUE";
    case MJDIFF_ERR_NAME: return "MJDIFF_ERR_NAME";
    case MJDIFF_ERR_UNSUPPORTED: return "MJDIFF_ERR_UNSUPPORTED";
    case MJDIFF_ERR_NONFINITE: return "MJDIFF_ERR_NONFINITE";
    case MJDIFF_ERR_MEMORY: return "MJDIFF_ERR_MEMORY";
  }
  return "MJDIFF_ERR_UNKNOWN";
}

const char* mjdiff_versionString(void) {
  return MJDIFF_VERSION_STRING;
}

mjdiffStatus mjdiff_error(char* err, int errsz, mjdiffStatus status, const char* fmt, ...) {
  if (err && errsz > 0) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(err, (size_t)errsz, fmt, args);
    va_end(args);
  }
  return status;
}

//---------------------------------- options -------------------------------------------------------

void mjdiff_defaultOptions(mjdiffOptions* opt) {
  opt->contact_stiffness = 1e4;
  opt->contact_damping = 50;
  opt->contact_width = 2e-3;
  opt->friction_speed = 0.05;
  opt->spin_speed = 0.5;
  opt->limit_stiffness = 1e3;
  opt->limit_damping = 1;
  opt->limit_width = 0.01;
  opt->frictionloss_speed = 0.1;
  opt->eq_stiffness = 1e4;
  opt->eq_damping = 100;
}

mjdiffStatus mjdiff_validateOptions(const mjdiffOptions* opt, char* err, int errsz) {
  if (!opt) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "options are NULL");
  }
  for (int i = 0; i < NPARAM; i++) {
    mjdiffStatus st = checkValue(kParams + i, optGet(opt, kParams + i), err, errsz);
    if (st != MJDIFF_OK) {
      return st;
    }
  }
  return MJDIFF_OK;
}

//---------------------------------- per-geom parameters -------------------------------------------

void mjdiff_pairParams(const mjdiffModel* s, int g1, int g2, mjtNum p[GP_COUNT]) {
  const mjtNum* p1 = s->geom_param + GP_COUNT * g1;
  const mjtNum* p2 = s->geom_param + GP_COUNT * g2;
  const unsigned char* e1 = s->geom_set + GP_COUNT * g1;
  const unsigned char* e2 = s->geom_set + GP_COUNT * g2;
  for (int i = 0; i < GP_COUNT; i++) {
    if (e1[i] && e2[i]) {
      p[i] = 0.5 * (p1[i] + p2[i]);
    } else if (e2[i]) {
      p[i] = p2[i];
    } else {
      p[i] = p1[i];  // explicit on g1, or the model-wide value copied into every geom
    }
  }
}

// copy the model-wide value of parameter p into every geom that did not set it explicitly
static void spreadGeomParam(mjdiffModel* s, const paramInfo* p) {
  if (p->geom < 0) return;
  for (int g = 0; g < s->ngeom; g++) {
    if (!s->geom_set[GP_COUNT * g + p->geom]) {
      s->geom_param[GP_COUNT * g + p->geom] = optGet(&s->opt, p);
    }
  }
}

// parse "field" or "field:geomname"; geom = -1 for the model-wide field
static mjdiffStatus parseName(const mjModel* m, const char* name, const paramInfo** param,
                              int* geom, char* err, int errsz) {
  const char* colon = strchr(name, ':');
  size_t len = colon ? (size_t)(colon - name) : strlen(name);
  *param = findParam(name, len);
  *geom = -1;
  if (!*param) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_NAME,
                        "unknown mjdiff parameter '%.*s' (known: contact_stiffness, "
                        "contact_damping, contact_width, friction_speed, spin_speed, "
                        "limit_stiffness, limit_damping, limit_width, frictionloss_speed, "
                        "eq_stiffness, eq_damping)",
                        (int)len, name);
  }
  if (colon) {
    if ((*param)->geom < 0) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_NAME,
                          "mjdiff parameter '%s' cannot be set per geom (only contact_*, "
                          "friction_speed and spin_speed can)", name);
    }
    *geom = mj_name2id(m, mjOBJ_GEOM, colon + 1);
    if (*geom < 0) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_NAME, "mjdiff parameter '%s': no geom named '%s'",
                          name, colon + 1);
    }
  }
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_setParam(mjdiffModel* s, const char* name, mjtNum value, char* err,
                             int errsz) {
  if (!s || !name) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "smooth model or name is NULL");
  }
  const paramInfo* p;
  int geom;
  mjdiffStatus st = parseName(s->m, name, &p, &geom, err, errsz);
  if (st != MJDIFF_OK) return st;
  st = checkValue(p, value, err, errsz);
  if (st != MJDIFF_OK) return st;
  if (geom < 0) {
    *optField(&s->opt, p) = value;
    spreadGeomParam(s, p);
  } else {
    s->geom_param[GP_COUNT * geom + p->geom] = value;
    s->geom_set[GP_COUNT * geom + p->geom] = 1;
  }
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_getParam(const mjdiffModel* s, const char* name, mjtNum* value, char* err,
                             int errsz) {
  if (!s || !name || !value) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "smooth model, name or value is NULL");
  }
  const paramInfo* p;
  int geom;
  mjdiffStatus st = parseName(s->m, name, &p, &geom, err, errsz);
  if (st != MJDIFF_OK) return st;
  *value = geom < 0 ? optGet(&s->opt, p) : s->geom_param[GP_COUNT * geom + p->geom];
  return MJDIFF_OK;
}

const mjModel* mjdiff_userModel(const mjModel* m, const mjdiffModel* s, mjModel* view) {
  if (s->attached != m) return m;
  *view = *m;
  view->opt.disableflags = (m->opt.disableflags & ~COMPAT_DSBL_HARD) |
                           (s->hardflags & COMPAT_DSBL_HARD);
  return view;
}

const mjdiffOptions* mjdiff_getOptions(const mjdiffModel* s) {
  return s ? &s->opt : NULL;
}

//---------------------------------- reading the MJCF ----------------------------------------------

static const char* numericName(const mjModel* m, int i) {
  return m->names + m->name_numericadr[i];
}

int mjdiff_wantsSmooth(const mjModel* m) {
  if (!m) return 0;
  int found = 0;
  for (int i = 0; i < m->nnumeric; i++) {
    const char* name = numericName(m, i);
    if (strncmp(name, PREFIX, strlen(PREFIX))) continue;
    if (!strcmp(name, PREFIX "enable") && m->numeric_size[i] >= 1 &&
        m->numeric_data[m->numeric_adr[i]] == 0) {
      return 0;
    }
    found = 1;
  }
  return found;
}

// apply the model's mjdiff_* numerics: model-wide ones first, then per-geom ones
static mjdiffStatus readCustom(mjdiffModel* s, const mjModel* m, char* err, int errsz) {
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < m->nnumeric; i++) {
      const char* name = numericName(m, i);
      if (strncmp(name, PREFIX, strlen(PREFIX))) continue;
      const char* field = name + strlen(PREFIX);
      if (!strcmp(field, "enable")) {
        if (m->numeric_size[i] != 1) {
          return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                              "custom numeric '%s' must hold exactly one value, has %d", name,
                              m->numeric_size[i]);
        }
        mjtNum v = m->numeric_data[m->numeric_adr[i]];
        if (v != 0 && v != 1) {
          return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                              "custom numeric '%s' must be 0 or 1, got %g", name, v);
        }
        continue;
      }
      int pergeom = strchr(field, ':') != NULL;
      if (pergeom != pass) continue;
      if (m->numeric_size[i] != 1) {
        return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                            "custom numeric '%s' must hold exactly one value, has %d", name,
                            m->numeric_size[i]);
      }
      mjdiffStatus st = mjdiff_setParam(s, field, m->numeric_data[m->numeric_adr[i]], err, errsz);
      if (st != MJDIFF_OK) return st;
    }
  }
  return MJDIFF_OK;
}

//---------------------------------- model checks --------------------------------------------------

mjdiffStatus mjdiff_checkSupported(const mjModel* m, const mjdiffOptions* opt, char* err,
                                   int errsz) {
  if (m->opt.integrator != mjINT_EULER && m->opt.integrator != mjINT_RK4) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                        "integrator %d (%s) is not supported by the smooth model: use Euler or "
                        "RK4", m->opt.integrator,
                        m->opt.integrator == mjINT_IMPLICIT ? "implicit" : "unknown");
  }
  for (int i = 0; i < m->neq; i++) {
    if (m->eq_type[i] != mjEQ_CONNECT && m->eq_type[i] != mjEQ_WELD &&
        m->eq_type[i] != mjEQ_JOINT && m->eq_type[i] != mjEQ_TENDON) {
      const char* name = mj_id2name(m, mjOBJ_EQUALITY, i);
      return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                          "equality constraint %d ('%s') has type %d, which the smooth model "
                          "cannot smooth (connect, weld, joint and tendon can)",
                          i, name ? name : "", m->eq_type[i]);
    }
  }
  for (int j = 0; j < m->njnt; j++) {
    if (m->jnt_limited[j] && m->jnt_type[j] == mjJNT_BALL &&
        m->jnt_range[2 * j + 1] <= 2 * opt->limit_width) {
      const char* name = mj_id2name(m, mjOBJ_JOINT, j);
      return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                          "ball joint %d ('%s'): limit range %g rad must exceed 2 * limit_width "
                          "(%g rad)", j, name ? name : "", m->jnt_range[2 * j + 1],
                          opt->limit_width);
    }
  }
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_checkPair(const mjModel* m, const mjdiffModel* s, char* err, int errsz) {
  if (!m || !s) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "model or smooth model is NULL");
  }
  if (m->ngeom != s->ngeom || m->nv != s->nv) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "smooth model was made for a model with ngeom=%d nv=%d, got ngeom=%d "
                        "nv=%d", s->ngeom, s->nv, m->ngeom, m->nv);
  }
  return MJDIFF_OK;
}

//---------------------------------- make and free -------------------------------------------------

mjdiffStatus mjdiff_makeModel(const mjModel* m, const mjdiffOptions* opt, mjdiffModel** out,
                              char* err, int errsz) {
  if (!out) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "out is NULL");
  }
  *out = NULL;
  if (!m) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "model is NULL");
  }
  mjdiffOptions o;
  if (opt) {
    o = *opt;
  } else {
    mjdiff_defaultOptions(&o);
  }
  mjdiffStatus st = mjdiff_validateOptions(&o, err, errsz);
  if (st != MJDIFF_OK) return st;

  mjdiffModel* s = (mjdiffModel*)calloc(1, sizeof(mjdiffModel));
  size_t n = (size_t)GP_COUNT * (size_t)(m->ngeom > 0 ? m->ngeom : 1);
  if (s) {
    s->geom_param = (mjtNum*)calloc(n, sizeof(mjtNum));
    s->geom_set = (unsigned char*)calloc(n, 1);
  }
  if (!s || !s->geom_param || !s->geom_set) {
    mjdiff_freeModel(s);
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory making the smooth model");
  }
  s->m = m;
  s->ngeom = m->ngeom;
  s->nv = m->nv;
  s->opt = o;
  for (int i = 0; i < NPARAM; i++) {
    spreadGeomParam(s, kParams + i);
  }

  st = readCustom(s, m, err, errsz);
  if (st == MJDIFF_OK) {
    st = mjdiff_checkSupported(m, &s->opt, err, errsz);
  }
  if (st != MJDIFF_OK) {
    mjdiff_freeModel(s);
    return st;
  }
  *out = s;
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_copyModel(const mjdiffModel* src, const mjModel* m, mjdiffModel** out,
                              char* err, int errsz) {
  if (!out) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "out is NULL");
  *out = NULL;
  mjdiffStatus st = mjdiff_checkPair(m, src, err, errsz);
  if (st != MJDIFF_OK) return st;
  mjdiffModel* s = (mjdiffModel*)calloc(1, sizeof(mjdiffModel));
  size_t n = (size_t)GP_COUNT * (size_t)(m->ngeom > 0 ? m->ngeom : 1);
  if (s) {
    s->geom_param = (mjtNum*)malloc(n * sizeof(mjtNum));
    s->geom_set = (unsigned char*)malloc(n);
  }
  if (!s || !s->geom_param || !s->geom_set) {
    mjdiff_freeModel(s);
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory copying the smooth model");
  }
  s->m = m;
  s->ngeom = src->ngeom;
  s->nv = src->nv;
  s->opt = src->opt;
  memcpy(s->geom_param, src->geom_param, n * sizeof(mjtNum));
  memcpy(s->geom_set, src->geom_set, n);
  *out = s;
  return MJDIFF_OK;
}

void mjdiff_freeModel(mjdiffModel* s) {
  if (!s) return;
  free(s->geom_param);
  free(s->geom_set);
  free(s);
}
