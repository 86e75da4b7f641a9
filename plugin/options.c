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
  int derived;                 // 1: may be MJDIFF_DERIVED (derived per element, derive.c)
} paramInfo;

static const paramInfo kParams[] = {
  {"contact_stiffness", offsetof(mjdiffOptions, contact_stiffness), 1, GP_STIFFNESS, "N/m", 1},
  {"contact_damping", offsetof(mjdiffOptions, contact_damping), 0, GP_DAMPING, "N s/m", 1},
  {"contact_width", offsetof(mjdiffOptions, contact_width), 1, GP_WIDTH, "m", 1},
  {"friction_speed", offsetof(mjdiffOptions, friction_speed), 1, GP_FRICTION_SPEED, "m/s", 1},
  {"spin_speed", offsetof(mjdiffOptions, spin_speed), 1, GP_SPIN_SPEED, "rad/s", 0},
  {"limit_stiffness", offsetof(mjdiffOptions, limit_stiffness), 1, -1, "N/m or N m/rad", 1},
  {"limit_damping", offsetof(mjdiffOptions, limit_damping), 0, -1, "N s/m or N m s/rad", 1},
  {"limit_width", offsetof(mjdiffOptions, limit_width), 1, -1, "m or rad", 1},
  {"frictionloss_speed", offsetof(mjdiffOptions, frictionloss_speed), 1, -1, "m/s or rad/s", 1},
  {"eq_stiffness", offsetof(mjdiffOptions, eq_stiffness), 1, -1, "N/m or N m/rad", 1},
  {"eq_damping", offsetof(mjdiffOptions, eq_damping), 0, -1, "N s/m or N m s/rad", 1},
  {"integrator", offsetof(mjdiffOptions, integrator), 0, -1, "0 explicit, 1 implicit", 1},
  {"implicit_tol", offsetof(mjdiffOptions, implicit_tol), 1, -1, "m/s or rad/s", 0},
  {"implicit_maxiter", offsetof(mjdiffOptions, implicit_maxiter), 1, -1, "iterations", 0},
  {"implicit_continuation", offsetof(mjdiffOptions, implicit_continuation), 0, -1, "halvings", 0},
  {"implicit_split", offsetof(mjdiffOptions, implicit_split), 0, -1, "halvings", 0},
  {"substeps", offsetof(mjdiffOptions, substeps), 1, -1, "steps", 1},
  {"reach_strength", offsetof(mjdiffOptions, reach_strength), 0, -1, "N", 0},
  {"reach_width", offsetof(mjdiffOptions, reach_width), 1, -1, "m", 0},
  {"reach_static", offsetof(mjdiffOptions, reach_static), 0, -1, "1 every pair, 0 moving only", 0},
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
  if (p->derived && value == MJDIFF_DERIVED) return MJDIFF_OK;
  if (!isfinite(value)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s must be finite, got %g", p->name,
                        value);
  }
  if (p->offset == offsetof(mjdiffOptions, integrator) && value != MJDIFF_INT_EXPLICIT &&
      value != MJDIFF_INT_IMPLICIT) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "integrator must be 0 (explicit), 1 (implicit) or -1 (the default), got %g",
                        value);
  }
  if (p->offset == offsetof(mjdiffOptions, implicit_maxiter) &&
      (value != floor(value) || value < 1 || value > 1000)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "implicit_maxiter must be an integer in [1, 1000], got %g", value);
  }
  if (p->offset == offsetof(mjdiffOptions, implicit_continuation) &&
      (value != floor(value) || value < 0 || value > MJDIFF_MAX_CONTINUATION)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "implicit_continuation must be an integer in [0, %d], got %g",
                        MJDIFF_MAX_CONTINUATION, value);
  }
  if (p->offset == offsetof(mjdiffOptions, implicit_split) &&
      (value != floor(value) || value < 0 || value > MJDIFF_MAX_SPLIT)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "implicit_split must be an integer in [0, %d], got %g", MJDIFF_MAX_SPLIT,
                        value);
  }
  if (p->offset == offsetof(mjdiffOptions, substeps) &&
      (value != floor(value) || value < 1 || value > MJDIFF_MAX_SUBSTEPS)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "substeps must be an integer in [1, %d], or -1 (derived), got %g",
                        MJDIFF_MAX_SUBSTEPS, value);
  }
  if (p->offset == offsetof(mjdiffOptions, reach_static) && value != 0 && value != 1) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "reach_static must be 0 (moving pairs only) or 1 (every pair), got %g",
                        value);
  }
  const char* alt = p->derived ? ", or -1 to derive it from the MJCF" : "";
  if (p->strict && !(value > 0)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s must be > 0 (%s)%s, got %g", p->name,
                        p->unit, alt, value);
  }
  if (!p->strict && value < 0) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s must be >= 0 (%s)%s, got %g", p->name,
                        p->unit, alt, value);
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
  opt->contact_stiffness = MJDIFF_DERIVED;
  opt->contact_damping = MJDIFF_DERIVED;
  opt->contact_width = MJDIFF_DERIVED;
  opt->friction_speed = MJDIFF_DERIVED;
  opt->spin_speed = 0.5;
  opt->limit_stiffness = MJDIFF_DERIVED;
  opt->limit_damping = MJDIFF_DERIVED;
  opt->limit_width = MJDIFF_DERIVED;
  opt->frictionloss_speed = MJDIFF_DERIVED;
  opt->eq_stiffness = MJDIFF_DERIVED;
  opt->eq_damping = MJDIFF_DERIVED;
  opt->integrator = MJDIFF_DERIVED;
  opt->implicit_tol = 1e-10;
  opt->implicit_maxiter = 100;
  opt->implicit_continuation = 4;
  opt->implicit_split = 3;
  opt->substeps = MJDIFF_DERIVED;
  opt->reach_strength = 0;
  opt->reach_width = 0.1;
  opt->reach_static = 1;
}

int mjdiff_implicit(const mjdiffModel* s) {
  return s->opt.integrator == MJDIFF_INT_IMPLICIT;
}

int mjdiff_substepCount(const mjdiffModel* s) {
  return s && s->nsub > 1 ? s->nsub : 1;
}

mjtNum mjdiff_timestep(const mjModel* m, const mjdiffModel* s) {
  return m->opt.timestep / mjdiff_substepCount(s);
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

// the model-wide option behind each per-geom field
static mjtNum geomFieldOption(const mjdiffOptions* o, int field) {
  switch (field) {
    case GP_STIFFNESS: return o->contact_stiffness;
    case GP_DAMPING: return o->contact_damping;
    case GP_WIDTH: return o->contact_width;
    case GP_FRICTION_SPEED: return o->friction_speed;
    default: return o->spin_speed;
  }
}

int mjdiff_pairIndex(const mjModel* m, int g1, int g2) {
  if (!compat_collidesPairs(m)) return -1;
  for (int i = 0; i < m->npair; i++) {
    if ((m->pair_geom1[i] == g1 && m->pair_geom2[i] == g2) ||
        (m->pair_geom1[i] == g2 && m->pair_geom2[i] == g1)) {
      return i;
    }
  }
  return -1;
}

// the derived values of an MJCF <pair> of g1 and g2, or NULL
static const mjtNum* derivedPair(const mjdiffModel* s, int g1, int g2) {
  int i = mjdiff_pairIndex(s->m, g1, g2);
  return i < 0 ? NULL : s->pair_derived + GP_COUNT * i;
}

void mjdiff_pairParams(const mjdiffModel* s, int g1, int g2, mjtNum p[GP_COUNT]) {
  const mjtNum* p1 = s->geom_param + GP_COUNT * g1;
  const mjtNum* p2 = s->geom_param + GP_COUNT * g2;
  const unsigned char* e1 = s->geom_set + GP_COUNT * g1;
  const unsigned char* e2 = s->geom_set + GP_COUNT * g2;
  const mjtNum* pair = NULL;
  int looked = 0;
  for (int i = 0; i < GP_COUNT; i++) {
    if (e1[i] && e2[i]) {
      p[i] = 0.5 * (p1[i] + p2[i]);
    } else if (e2[i]) {
      p[i] = p2[i];
    } else if (e1[i] || geomFieldOption(&s->opt, i) != MJDIFF_DERIVED) {
      p[i] = p1[i];  // explicit on g1, or the model-wide value copied into every geom
    } else {
      // derived: the <pair>'s own law, else the two geoms' laws combined
      if (!looked) pair = derivedPair(s, g1, g2);
      looked = 1;
      const mjtNum* d1 = s->geom_derived + GP_COUNT * g1;
      const mjtNum* d2 = s->geom_derived + GP_COUNT * g2;
      if (pair) {
        p[i] = pair[i];
      } else if (i == GP_STIFFNESS || i == GP_DAMPING) {
        p[i] = 1 / (1 / d1[i] + 1 / d2[i]);  // series; an infinite (static) side drops out
      } else {
        p[i] = mju_max(d1[i], d2[i]);
      }
      if (!isfinite(p[i])) p[i] = 0;  // two immovable geoms: no force
    }
  }
}

// copy the model-wide value of parameter p (or each geom's derived value) into every geom that did
// not set it explicitly
static void spreadGeomParam(mjdiffModel* s, const paramInfo* p) {
  if (p->geom < 0) return;
  mjtNum v = optGet(&s->opt, p);
  for (int g = 0; g < s->ngeom; g++) {
    int i = GP_COUNT * g + p->geom;
    if (!s->geom_set[i]) {
      s->geom_param[i] = v == MJDIFF_DERIVED ? s->geom_derived[i] : v;
    }
  }
}

void mjdiff_limitParams(const mjdiffModel* s, int tendon, int j, mjtNum p[EP_COUNT]) {
  const mjtNum* d = (tendon ? s->ten_limit : s->jnt_limit) + EP_COUNT * j;
  const mjdiffOptions* o = &s->opt;
  p[EP_STIFFNESS] = o->limit_stiffness == MJDIFF_DERIVED ? d[EP_STIFFNESS] : o->limit_stiffness;
  p[EP_DAMPING] = o->limit_damping == MJDIFF_DERIVED ? d[EP_DAMPING] : o->limit_damping;
  p[EP_WIDTH] = o->limit_width == MJDIFF_DERIVED ? d[EP_WIDTH] : o->limit_width;
  if (!isfinite(p[EP_STIFFNESS])) p[EP_STIFFNESS] = 0;  // a dof without inertia: no limit force
  if (!isfinite(p[EP_DAMPING])) p[EP_DAMPING] = 0;
}

mjtNum mjdiff_lossSpeed(const mjdiffModel* s, int tendon, int j) {
  if (s->opt.frictionloss_speed != MJDIFF_DERIVED) return s->opt.frictionloss_speed;
  return tendon ? s->ten_lossspeed[j] : s->dof_lossspeed[j];
}

void mjdiff_eqParams(const mjdiffModel* s, int i, int rot, mjtNum* k, mjtNum* c) {
  const mjtNum* d = s->eq_law + 4 * i + 2 * (rot != 0);
  *k = s->opt.eq_stiffness == MJDIFF_DERIVED ? d[0] : s->opt.eq_stiffness;
  *c = s->opt.eq_damping == MJDIFF_DERIVED ? d[1] : s->opt.eq_damping;
  if (!isfinite(*k)) *k = 0;
  if (!isfinite(*c)) *c = 0;
}

// parse "field" or "field:geomname" (the MJCF's spelling), or <mjdiff/params.h>'s
// "mjdiff:field" and "geom:geomname:field"; geom = -1 for the model-wide field
static mjdiffStatus parseName(const mjModel* m, const char* name, const paramInfo** param,
                              int* geom, char* err, int errsz) {
  if (!strncmp(name, "mjdiff:", 7)) name += 7;
  const char* last = strrchr(name, ':');
  if (!strncmp(name, "geom:", 5) && last > name + 4) {
    *param = findParam(last + 1, strlen(last + 1));
    *geom = -1;
    if (!*param || (*param)->geom < 0) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_NAME,
                          "'%s': '%s' is not a per-geom smooth-model field (contact_stiffness, "
                          "contact_damping, contact_width, friction_speed, spin_speed)", name,
                          last + 1);
    }
    char gname[256];
    snprintf(gname, sizeof(gname), "%.*s", (int)(last - name - 5), name + 5);
    *geom = mj_name2id(m, mjOBJ_GEOM, gname);
    if (*geom < 0) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_NAME, "mjdiff parameter '%s': no geom named '%s'",
                          name, gname);
    }
    return MJDIFF_OK;
  }
  const char* colon = strchr(name, ':');
  size_t len = colon ? (size_t)(colon - name) : strlen(name);
  *param = findParam(name, len);
  *geom = -1;
  if (!*param) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_NAME,
                        "unknown mjdiff parameter '%.*s' (known: contact_stiffness, "
                        "contact_damping, contact_width, friction_speed, spin_speed, "
                        "limit_stiffness, limit_damping, limit_width, frictionloss_speed, "
                        "eq_stiffness, eq_damping, integrator, implicit_tol, implicit_maxiter, "
                        "implicit_continuation, implicit_split, substeps, "
                        "reach_strength, reach_width, reach_static)",
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
  if (p->offset == offsetof(mjdiffOptions, integrator) && value == MJDIFF_INT_IMPLICIT) {
    st = mjdiff_implicitSize(s->m, err, errsz);
    if (st != MJDIFF_OK) return st;
  }
  if (geom < 0 && (p->offset == offsetof(mjdiffOptions, integrator) ||
                   p->offset == offsetof(mjdiffOptions, substeps))) {
    // the derived values depend on the integrator and the substeps: derive them again
    *optField(&s->opt, p) = value;
    mjdiff_deriveParams(s->m, s);
    for (int i = 0; i < NPARAM; i++) spreadGeomParam(s, kParams + i);
  } else if (geom < 0) {
    *optField(&s->opt, p) = value;
    spreadGeomParam(s, p);
  } else if (value == MJDIFF_DERIVED) {
    s->geom_set[GP_COUNT * geom + p->geom] = 0;
    spreadGeomParam(s, p);
  } else {
    s->geom_param[GP_COUNT * geom + p->geom] = value;
    s->geom_set[GP_COUNT * geom + p->geom] = 1;
  }
  return MJDIFF_OK;
}

void mjdiff_setSingleStep(mjdiffModel* s, int single) {
  if (!s || s->single == single) return;
  s->single = single;
  mjdiff_deriveParams(s->m, s);
  for (int i = 0; i < NPARAM; i++) spreadGeomParam(s, kParams + i);
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

mjdiffStatus mjdiff_getPairParam(const mjdiffModel* s, const char* field, int g1, int g2,
                                 mjtNum* value, char* err, int errsz) {
  if (!s || !field || !value) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "smooth model, field or value is NULL");
  }
  const paramInfo* p = findParam(field, strlen(field));
  if (!p || p->geom < 0) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_NAME,
                        "'%s' is not a contact field (contact_stiffness, contact_damping, "
                        "contact_width, friction_speed, spin_speed)", field);
  }
  if (g1 < 0 || g2 < 0 || g1 >= s->ngeom || g2 >= s->ngeom) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "geom ids %d, %d out of range [0, %d)",
                        g1, g2, s->ngeom);
  }
  mjtNum prm[GP_COUNT];
  mjdiff_pairParams(s, g1, g2, prm);
  *value = prm[p->geom];
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
  int inst, found = compat_pluginInstances(m, COMPAT_PLUGIN_NAME, &inst) > 0;
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

// MuJoCo 3: the model's mjdiff.smooth plugin instance, its config keys named as the fields
// (model-wide values; per-geom values stay in the mjdiff_* numerics), applied after the numerics
static mjdiffStatus readPluginConfig(mjdiffModel* s, const mjModel* m, char* err, int errsz) {
  int inst, n = compat_pluginInstances(m, COMPAT_PLUGIN_NAME, &inst);
  if (n > 1) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "plugin " COMPAT_PLUGIN_NAME " is declared %d times in the model (at most "
                        "one instance: its forces would add up)", n);
  }
  for (int i = 0; n && i < NPARAM; i++) {
    const char* text = compat_pluginConfig(m, inst, kParams[i].name);
    if (!text) continue;
    char* end = NULL;
    double v = strtod(text, &end);
    while (end && (*end == ' ' || *end == '\t')) end++;
    if (end == text || !end || *end) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                          "plugin " COMPAT_PLUGIN_NAME " config key '%s': value '%s' is not a "
                          "number", kParams[i].name, text);
    }
    // as mjdiff_setParam sets it: the integrator and the substeps derive the values again, and the
    // implicit step's size limit applies
    mjdiffStatus st = mjdiff_setParam(s, kParams[i].name, (mjtNum)v, err, errsz);
    if (st != MJDIFF_OK) {
      // name the key and the text as written
      char why[256];
      snprintf(why, sizeof(why), "%s", err ? err : "");
      return mjdiff_error(err, errsz, st, "plugin " COMPAT_PLUGIN_NAME " config key '%s' = '%s': %s",
                          kParams[i].name, text, why);
    }
  }
  return MJDIFF_OK;
}

int mjdiff_optionCount(void) {
  return NPARAM;
}

const char* mjdiff_optionName(int i) {
  return i >= 0 && i < NPARAM ? kParams[i].name : NULL;
}

//---------------------------------- model checks --------------------------------------------------

// MuJoCo 3's implicitfast takes d(qfrc_passive + qfrc_actuator)/dv implicitly (mjd_smooth_vel
// without the bias forces, and for a standalone free body its bias force's too). The smooth step
// covers the part that is diagonal and constant between force clamps (mjdiff_dampB: dof damping,
// actuators with an affine bias on a hinge or slide) and the free bodies' blocks (plugin/step.c);
// what would make the rest depend on the state, or couple dofs, is refused by name
static const char* elementName(const mjModel* m, int type, int id, char* buf, int n) {
  const char* name = mj_id2name(m, type, id);
  snprintf(buf, (size_t)n, "%s %d%s%s%s", mju_type2Str(type), id, name && name[0] ? " '" : "",
           name && name[0] ? name : "", name && name[0] ? "'" : "");
  return buf;
}

mjdiffStatus mjdiff_implicitFastCovered(const mjModel* m, char* err, int errsz) {
  char what[200];
  const char* tail = ", which the smooth step does not take implicitly: use Euler or RK4";
  if (m->opt.density > 0 || m->opt.viscosity > 0) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                        "integrator implicitfast with fluid forces (density %g, viscosity %g): "
                        "their velocity derivative enters MuJoCo's implicit term%s",
                        m->opt.density, m->opt.viscosity, tail);
  }
  for (int t = 0; t < m->ntendon && !compat_damperOff(m); t++) {
    if (m->tendon_damping[t] != 0) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                          "integrator implicitfast with a damped tendon (%s): its damping "
                          "couples dofs in MuJoCo's implicit term%s",
                          elementName(m, mjOBJ_TENDON, t, what, sizeof(what)), tail);
    }
  }
  for (int i = 0; i < m->nu; i++) {
    int gain = m->actuator_gaintype[i], bias = m->actuator_biastype[i];
    int trn = m->actuator_trntype[i], j = m->actuator_trnid[2 * i];
    const char* why = NULL;
    if (gain == mjGAIN_AFFINE && m->actuator_gainprm[mjNGAIN * i + 2] != 0) {
      why = "a gain with a velocity term (gainprm[2]: it scales with the control)";
    } else if (gain != mjGAIN_FIXED && gain != mjGAIN_AFFINE) {
      why = "a gain that depends on the velocity (muscle or user)";
    } else if (bias != mjBIAS_NONE && bias != mjBIAS_AFFINE) {
      why = "a bias that depends on the velocity (muscle or user)";
    } else if (bias == mjBIAS_AFFINE && m->actuator_biasprm[mjNBIAS * i + 2] != 0 &&
               !((trn == mjTRN_JOINT || trn == mjTRN_JOINTINPARENT) &&
                 (m->jnt_type[j] == mjJNT_HINGE || m->jnt_type[j] == mjJNT_SLIDE)) &&
               !(trn == mjTRN_TENDON && mjdiff_tendonDiagonal(m, j))) {
      why = "a velocity term (biasprm[2]) through a transmission other than a hinge, a slide or "
            "a fixed tendon on separate branches";
    }
    if (why) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                          "integrator implicitfast with %s on %s%s", why,
                          elementName(m, mjOBJ_ACTUATOR, i, what, sizeof(what)), tail);
    }
  }
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_checkSupported(const mjModel* m, const mjdiffOptions* opt, char* err,
                                   int errsz) {
  if (!mjdiff_integratorOk(m)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                        "integrator %d (%s) is not supported by the smooth model: use Euler, "
                        "RK4%s", m->opt.integrator,
                        m->opt.integrator == mjINT_IMPLICIT ? "implicit" : "unknown",
                        COMPAT_INT_IMPLICITFAST >= 0 ? " or implicitfast" : "");
  }
  if (m->opt.integrator == COMPAT_INT_IMPLICITFAST) {
    mjdiffStatus st = mjdiff_implicitFastCovered(m, err, errsz);
    if (st != MJDIFF_OK) return st;
  }
  if (opt->integrator == MJDIFF_INT_IMPLICIT) {
    mjdiffStatus st = mjdiff_implicitSize(m, err, errsz);
    if (st != MJDIFF_OK) return st;
  }
  int id, type;
  const char* feature = compat_unsupported(m, &id, &type);
  if (feature && id >= 0) {
    const char* name = mj_id2name(m, type, id);
    const char* kind = mju_type2Str(type);
    char named[200] = "";
    if (name && name[0]) snprintf(named, sizeof(named), " '%s'", name);
    return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                        "the model uses %s (%s %d%s), which the smooth model does not cover",
                        feature, kind ? kind : "element", id, named);
  }
  if (feature) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                        "the model uses %s, which the smooth model does not cover", feature);
  }
  const char* plugin = NULL;
  int instance = compat_foreignPlugin(m, &plugin);
  if (instance >= 0) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                        "the model uses MuJoCo engine plugin '%s' (instance %d), whose forces, "
                        "contact geometry or sensors the smooth model and its derivatives do not "
                        "cover", plugin, instance);
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
    mjtNum width = opt->limit_width != MJDIFF_DERIVED ? opt->limit_width
                                                      : mjdiff_derivedWidth(m->jnt_solimp + mjNIMP * j);
    if (m->jnt_limited[j] && m->jnt_type[j] == mjJNT_BALL && m->jnt_range[2 * j + 1] <= 2 * width) {
      const char* name = mj_id2name(m, mjOBJ_JOINT, j);
      return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                          "ball joint %d ('%s'): limit range %g rad must exceed 2 * limit_width "
                          "(%g rad)", j, name ? name : "", m->jnt_range[2 * j + 1], width);
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
                        "nv=%d", s->ngeom, s->nv, (int)m->ngeom, (int)m->nv);
  }
  return MJDIFF_OK;
}

//---------------------------------- make and free -------------------------------------------------

// numbers in the derived arrays of a smooth model of m (at least 1)
static size_t derivedSize(const mjModel* m) {
  return (size_t)(GP_COUNT + 3) * (size_t)m->ngeom + (size_t)GP_COUNT * (size_t)m->npair +
         (size_t)EP_COUNT * (size_t)(m->njnt + m->ntendon) + (size_t)m->nv +
         (size_t)m->ntendon + 6 * (size_t)m->neq + 1;
}

// a zeroed smooth model for m with its arrays, or NULL (nothing left allocated)
static mjdiffModel* allocModel(const mjModel* m) {
  mjdiffModel* s = (mjdiffModel*)calloc(1, sizeof(mjdiffModel));
  size_t n = (size_t)GP_COUNT * (size_t)(m->ngeom > 0 ? m->ngeom : 1);
  if (s) {
    s->geom_param = (mjtNum*)calloc(n, sizeof(mjtNum));
    s->geom_set = (unsigned char*)calloc(n, 1);
    s->derived = (mjtNum*)calloc(derivedSize(m), sizeof(mjtNum));
  }
  if (!s || !s->geom_param || !s->geom_set || !s->derived) {
    mjdiff_freeModel(s);
    return NULL;
  }
  s->m = m;
  s->ngeom = m->ngeom;
  s->nv = m->nv;
  mjtNum* p = s->derived;
  s->geom_derived = p;
  p += GP_COUNT * m->ngeom;
  s->geom_invweight = p;
  p += m->ngeom;
  s->geom_invweightn = p;
  p += m->ngeom;
  s->geom_cluster = p;
  p += m->ngeom;
  s->pair_derived = p;
  p += GP_COUNT * m->npair;
  s->jnt_limit = p;
  p += EP_COUNT * m->njnt;
  s->ten_limit = p;
  p += EP_COUNT * m->ntendon;
  s->dof_lossspeed = p;
  p += m->nv;
  s->ten_lossspeed = p;
  p += m->ntendon;
  s->eq_law = p;
  p += 4 * m->neq;
  s->eq_invweight = p;
  return s;
}

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

  mjdiffModel* s = allocModel(m);
  if (!s) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory making the smooth model");
  }
  s->opt = o;
  // the contacts' share radii, from the sizes at make time only (copies keep them; re-deriving
  // the parameters does not move them: a geom's size parameter does not either)
  for (int g = 0; g < m->ngeom; g++) {
    s->geom_cluster[g] = mjdiff_clusterRadius(m->geom_type[g], m->geom_size + 3 * g);
  }
  mjdiff_deriveParams(m, s);
  for (int i = 0; i < NPARAM; i++) {
    spreadGeomParam(s, kParams + i);
  }

  st = readCustom(s, m, err, errsz);
  if (st == MJDIFF_OK) st = readPluginConfig(s, m, err, errsz);
  if (st == MJDIFF_OK && mjdiff_substepsStale(m, s)) {
    // the derived substeps count only derived contact stiffnesses, which the MJCF's values (read
    // just now) may have made explicit: derive again (explicit values stay as set)
    mjdiff_deriveParams(m, s);
    for (int i = 0; i < NPARAM; i++) spreadGeomParam(s, kParams + i);
  }
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
  mjdiffModel* s = allocModel(m);
  if (!s) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory copying the smooth model");
  }
  s->opt = src->opt;
  s->nsub = src->nsub;
  s->single = src->single;
  size_t n = (size_t)GP_COUNT * (size_t)m->ngeom;
  memcpy(s->geom_param, src->geom_param, n * sizeof(mjtNum));
  memcpy(s->geom_set, src->geom_set, n);
  memcpy(s->derived, src->derived, derivedSize(m) * sizeof(mjtNum));
  // the copy is not attached: a source stepped by MuJoCo's mj_step (one step, no substeps) gives
  // a copy with the substeps mjdiff_step takes, and the values derived for them
  if (s->single) mjdiff_setSingleStep(s, 0);
  *out = s;
  return MJDIFF_OK;
}

void mjdiff_freeModel(mjdiffModel* s) {
  if (!s) return;
  // still attached: detach, so that mj_step on its model no longer finds it (and has its own
  // constraints back) instead of reading freed memory
  if (s->attached) mjdiff_detach((mjModel*)s->attached);
  free(s->geom_param);
  free(s->geom_set);
  free(s->derived);
  free(s);
}
