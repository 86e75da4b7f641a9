// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Model parameters selected by MuJoCo names: parsing "kind:object:field[k]" with glob patterns,
// expanded names, and reading and writing the values (checked before anything changes). The
// derivatives are in params_d.c.

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "params_internal.h"

//---------------------------------- smooth-model fields -------------------------------------------

static const char* kSmoothNames[SF_COUNT] = {
  "contact_stiffness", "contact_damping", "contact_width", "friction_speed", "spin_speed",
  "limit_stiffness", "limit_damping", "limit_width", "frictionloss_speed", "eq_stiffness",
  "eq_damping",
};

const char* mjdiff_smoothFieldName(int field) {
  return field >= 0 && field < SF_COUNT ? kSmoothNames[field] : NULL;
}

int mjdiff_smoothFieldGeom(int field) {
  switch (field) {
    case SF_CONTACT_STIFFNESS: return GP_STIFFNESS;
    case SF_CONTACT_DAMPING: return GP_DAMPING;
    case SF_CONTACT_WIDTH: return GP_WIDTH;
    case SF_FRICTION_SPEED: return GP_FRICTION_SPEED;
    case SF_SPIN_SPEED: return GP_SPIN_SPEED;
    default: return -1;
  }
}

int mjdiff_geomParamField(int gp) {
  for (int f = 0; f < SF_COUNT; f++) {
    if (mjdiff_smoothFieldGeom(f) == gp) return f;
  }
  return -1;
}

// the model-wide field f of opt
static mjtNum* optionField(mjdiffOptions* o, int f) {
  switch (f) {
    case SF_CONTACT_STIFFNESS: return &o->contact_stiffness;
    case SF_CONTACT_DAMPING: return &o->contact_damping;
    case SF_CONTACT_WIDTH: return &o->contact_width;
    case SF_FRICTION_SPEED: return &o->friction_speed;
    case SF_SPIN_SPEED: return &o->spin_speed;
    case SF_LIMIT_STIFFNESS: return &o->limit_stiffness;
    case SF_LIMIT_DAMPING: return &o->limit_damping;
    case SF_LIMIT_WIDTH: return &o->limit_width;
    case SF_FRICTIONLOSS_SPEED: return &o->frictionloss_speed;
    case SF_EQ_STIFFNESS: return &o->eq_stiffness;
    default: return &o->eq_damping;
  }
}

//---------------------------------- the field table -----------------------------------------------

#define NCOMP_DOF (-1)  // one component per dof of the joint
#define NCOMP_SIZE (-2)  // the sizes a geom type reads (sphere 1, capsule and cylinder 2, else 3)

typedef struct fieldInfo_ {
  const char* kind;
  const char* field;
  int pk;                      // paramKind, or -1: known but unsupported
  int ncomp;                   // components, or NCOMP_DOF
  int comp0;                   // component of a one-component field (GP_*, SF_*)
  const char* why;             // unsupported: the reason
} fieldInfo;

static const fieldInfo kFields[] = {
  {"body", "mass", PK_BODY_MASS, 1, 0, NULL},
  {"body", "inertia", PK_BODY_INERTIA, 3, 0, NULL},
  {"body", "ipos", PK_BODY_IPOS, 3, 0, NULL},
  {"body", "pos", PK_BODY_POS, 3, 0, NULL},
  {"body", "scale", PK_BODY_SCALE, 1, 0, NULL},
  {"body", "quat", -1, 4, 0, "body orientations move the kinematics and contact geometry"},
  {"body", "iquat", -1, 4, 0, "inertial-frame orientations are not parameters yet"},
  {"joint", "damping", PK_DOF_DAMPING, NCOMP_DOF, 0, NULL},
  {"joint", "armature", PK_DOF_ARMATURE, NCOMP_DOF, 0, NULL},
  {"joint", "frictionloss", PK_DOF_FRICTIONLOSS, NCOMP_DOF, 0, NULL},
  {"joint", "stiffness", PK_JNT_STIFFNESS, 1, 0, NULL},
  {"joint", "springref", PK_JNT_SPRINGREF, 1, 0, NULL},
  {"joint", "range", -1, 2, 0, "joint ranges are not parameters yet"},
  {"joint", "pos", PK_JNT_POS, 3, 0, NULL},
  {"joint", "axis", -1, 3, 0, "joint axes move the kinematics"},
  {"tendon", "stiffness", PK_TEN_STIFFNESS, 1, 0, NULL},
  {"tendon", "damping", PK_TEN_DAMPING, 1, 0, NULL},
  {"tendon", "frictionloss", PK_TEN_FRICTIONLOSS, 1, 0, NULL},
  {"geom", "friction", PK_GEOM_FRICTION, 3, 0, NULL},
  {"geom", "contact_stiffness", PK_GEOM_SMOOTH, 1, GP_STIFFNESS, NULL},
  {"geom", "contact_damping", PK_GEOM_SMOOTH, 1, GP_DAMPING, NULL},
  {"geom", "contact_width", PK_GEOM_SMOOTH, 1, GP_WIDTH, NULL},
  {"geom", "friction_speed", PK_GEOM_SMOOTH, 1, GP_FRICTION_SPEED, NULL},
  {"geom", "spin_speed", PK_GEOM_SMOOTH, 1, GP_SPIN_SPEED, NULL},
  {"geom", "size", PK_GEOM_SIZE, NCOMP_SIZE, 0, NULL},
  {"geom", "pos", PK_GEOM_POS, 3, 0, NULL},
  {"geom", "quat", -1, 4, 0, "geom orientations move the contact geometry"},
  {"site", "pos", PK_SITE_POS, 3, 0, NULL},
  {"actuator", "gear", PK_ACT_GEAR, 1, 0, NULL},
  {"actuator", "gainprm", PK_ACT_GAINPRM, 3, 0, NULL},
  {"actuator", "biasprm", PK_ACT_BIASPRM, 3, 0, NULL},
  {"actuator", "dynprm", PK_ACT_DYNPRM, 1, 0, NULL},
  {"option", "gravity", PK_GRAVITY, 3, 0, NULL},
  {"option", "timestep", -1, 1, 0, "the timestep is not a model parameter of the dynamics"},
  {"option", "density", PK_DENSITY, 1, 0, NULL},
  {"option", "viscosity", PK_VISCOSITY, 1, 0, NULL},
  {"option", "wind", PK_WIND, 3, 0, NULL},
  {"mjdiff", "contact_stiffness", PK_SMOOTH, 1, SF_CONTACT_STIFFNESS, NULL},
  {"mjdiff", "contact_damping", PK_SMOOTH, 1, SF_CONTACT_DAMPING, NULL},
  {"mjdiff", "contact_width", PK_SMOOTH, 1, SF_CONTACT_WIDTH, NULL},
  {"mjdiff", "friction_speed", PK_SMOOTH, 1, SF_FRICTION_SPEED, NULL},
  {"mjdiff", "spin_speed", PK_SMOOTH, 1, SF_SPIN_SPEED, NULL},
  {"mjdiff", "limit_stiffness", PK_SMOOTH, 1, SF_LIMIT_STIFFNESS, NULL},
  {"mjdiff", "limit_damping", PK_SMOOTH, 1, SF_LIMIT_DAMPING, NULL},
  {"mjdiff", "limit_width", PK_SMOOTH, 1, SF_LIMIT_WIDTH, NULL},
  {"mjdiff", "frictionloss_speed", PK_SMOOTH, 1, SF_FRICTIONLOSS_SPEED, NULL},
  {"mjdiff", "eq_stiffness", PK_SMOOTH, 1, SF_EQ_STIFFNESS, NULL},
  {"mjdiff", "eq_damping", PK_SMOOTH, 1, SF_EQ_DAMPING, NULL},
};
#define NFIELD ((int)(sizeof(kFields) / sizeof(kFields[0])))

static const char* kKinds[] = {"body", "joint", "tendon", "geom", "actuator", "option", "mjdiff",
                               "site"};
static const int kKindObj[] = {mjOBJ_BODY, mjOBJ_JOINT, mjOBJ_TENDON, mjOBJ_GEOM,
                               mjOBJ_ACTUATOR, -1, -1, mjOBJ_SITE};
#define NKIND ((int)(sizeof(kKinds) / sizeof(kKinds[0])))

//---------------------------------- building a selection ------------------------------------------

typedef struct builder_ {
  mjdiffParams* p;
  int cap;                     // entries allocated
  size_t ncap, nlen;           // names allocated and used
} builder;

static int builderAdd(builder* b, int kind, int id, int comp, const char* name) {
  mjdiffParams* p = b->p;
  for (int i = 0; i < p->n; i++) {
    const paramEntry* e = p->entry + i;
    if (e->kind == kind && e->id == id && e->comp == comp) return 0;  // selected already
  }
  if (p->n == b->cap) {
    int cap = b->cap ? 2 * b->cap : 16;
    paramEntry* entry = (paramEntry*)realloc(p->entry, sizeof(paramEntry) * (size_t)cap);
    if (!entry) return -1;
    p->entry = entry;
    int* adr = (int*)realloc(p->nameadr, sizeof(int) * (size_t)cap);
    if (!adr) return -1;
    p->nameadr = adr;
    b->cap = cap;
  }
  size_t len = strlen(name) + 1;
  if (b->nlen + len > b->ncap) {
    size_t ncap = b->ncap ? 2 * b->ncap : 512;
    while (ncap < b->nlen + len) ncap *= 2;
    char* names = (char*)realloc(p->names, ncap);
    if (!names) return -1;
    p->names = names;
    b->ncap = ncap;
  }
  memcpy(p->names + b->nlen, name, len);
  p->entry[p->n] = (paramEntry){kind, id, comp};
  p->nameadr[p->n] = (int)b->nlen;
  b->nlen += len;
  p->n++;
  return 0;
}

// glob match with '*' (any run, possibly empty)
static int globMatch(const char* pat, const char* s) {
  const char* star = NULL;
  const char* resume = NULL;
  while (*s) {
    if (*pat == '*') {
      star = pat++;
      resume = s;
    } else if (*pat == *s) {
      pat++;
      s++;
    } else if (star) {
      pat = star + 1;
      s = ++resume;
    } else {
      return 0;
    }
  }
  while (*pat == '*') pat++;
  return *pat == 0;
}

// number of dofs of joint j
static int jointDofs(const mjModel* m, int j) {
  switch (m->jnt_type[j]) {
    case mjJNT_FREE: return 6;
    case mjJNT_BALL: return 3;
    default: return 1;
  }
}

static int components(const mjModel* m, const fieldInfo* f, int id) {
  if (f->ncomp == NCOMP_SIZE) {
    int t = m->geom_type[id];
    return t == mjGEOM_SPHERE ? 1 : t == mjGEOM_CAPSULE || t == mjGEOM_CYLINDER ? 2 : 3;
  }
  return f->ncomp == NCOMP_DOF ? jointDofs(m, id) : f->ncomp;
}

// NULL if field f applies to object id, else the reason it does not
static const char* notApplicable(const mjModel* m, const fieldInfo* f, int id) {
  switch (f->pk) {
    case PK_BODY_MASS:
    case PK_BODY_INERTIA:
      return id == 0 ? "the world body has no inertial parameters" : NULL;
    case PK_BODY_IPOS:
      if (id == 0) return "the world body has no inertial parameters";
#if MJDIFF_MUJOCO_3
      // 3.x stores M in CSR with the rows of "simple" dofs reduced to their diagonal, a structure
      // fixed at compile time: the coupling a centre-of-mass offset adds has no room there
      for (int j = m->body_dofadr[id]; j < m->body_dofadr[id] + m->body_dofnum[id]; j++) {
        if (m->dof_simplenum[j]) {
          return "MuJoCo 3 compiled the body as simple (diagonal mass matrix, whose sparse "
                 "structure has no room for the coupling a centre-of-mass offset adds): give it an "
                 "<inertial> with a non-zero pos to fit ipos";
        }
      }
#endif
      return NULL;
    case PK_JNT_SPRINGREF:
      return m->jnt_type[id] == mjJNT_HINGE || m->jnt_type[id] == mjJNT_SLIDE
                 ? NULL
                 : "springref of a ball or free joint (a quaternion) is not a parameter";
    case PK_ACT_GEAR: {
      int trn = m->actuator_trntype[id], tid = m->actuator_trnid[2 * id];
      int ok = trn == mjTRN_TENDON ||
               ((trn == mjTRN_JOINT || trn == mjTRN_JOINTINPARENT) &&
                (m->jnt_type[tid] == mjJNT_HINGE || m->jnt_type[tid] == mjJNT_SLIDE));
      if (!ok) return "gear has a derivative for hinge/slide joint and tendon transmissions only";
      if ((m->actuator_gaintype[id] != mjGAIN_FIXED && m->actuator_gaintype[id] != mjGAIN_AFFINE) ||
          (m->actuator_biastype[id] != mjBIAS_NONE && m->actuator_biastype[id] != mjBIAS_AFFINE)) {
        return "gear of a muscle or user actuator has no derivative";
      }
      return NULL;
    }
    case PK_ACT_GAINPRM:
      return m->actuator_gaintype[id] == mjGAIN_FIXED || m->actuator_gaintype[id] == mjGAIN_AFFINE
                 ? NULL
                 : "gainprm of a muscle or user gain has no derivative";
    case PK_ACT_BIASPRM:
      return m->actuator_biastype[id] == mjBIAS_NONE || m->actuator_biastype[id] == mjBIAS_AFFINE
                 ? NULL
                 : "biasprm of a muscle or user bias has no derivative";
    case PK_ACT_DYNPRM:
      return m->actuator_dyntype[id] == mjDYN_FILTER
                 ? NULL
                 : "dynprm is a parameter of filter actuators only";
    default:
      if (PK_IS_DESIGN(f->pk) && f->pk != PK_SITE_POS) {
        // the geometry moves the contacts an adhesion actuator pulls along (forces_d.c,
        // bodyActuatorDeriv); the parameter columns do not carry that motion
        if (mjdiff_hasBodyTransmission(m)) {
          return "geometry parameters of a model with a body transmission (adhesion actuator) "
                 "have no derivative: the contacts it pulls along move with them";
        }
      }
      return PK_IS_DESIGN(f->pk) ? mjdiff_designNotApplicable(m, f->pk, id) : NULL;
  }
}

// the canonical name of component c of field f of object obj (NULL for model-wide kinds)
static void paramName(char* buf, size_t size, const fieldInfo* f, const char* obj, int ncomp,
                      int c) {
  char idx[16] = "";
  if (ncomp > 1) snprintf(idx, sizeof(idx), "[%d]", c);
  if (obj) {
    snprintf(buf, size, "%s:%s:%s%s", f->kind, obj, f->field, idx);
  } else {
    snprintf(buf, size, "%s:%s%s", f->kind, f->field, idx);
  }
}

// add the components of f of object id (index < 0: all); returns 0, -1 out of memory, 1 index
// out of range
static int addObject(builder* b, const mjModel* m, const fieldInfo* f, int id, const char* obj,
                     int index) {
  int ncomp = components(m, f, id);
  if (index >= ncomp) return 1;
  char name[1024];
  for (int c = 0; c < ncomp; c++) {
    if (index >= 0 && c != index) continue;
    int kind = f->pk, pid = id, comp = c;
    if (f->ncomp == NCOMP_DOF) {
      pid = m->jnt_dofadr[id] + c;
      comp = 0;
    } else if (f->ncomp == 1) {
      comp = f->comp0;
    }
    paramName(name, sizeof(name), f, obj, ncomp, c);
    if (builderAdd(b, kind, pid, comp, name)) return -1;
  }
  return 0;
}

// parse a trailing "[k]" of field (length *len); index -1 if none; 0 on success
static int parseIndex(const char* field, size_t* len, int* index) {
  *index = -1;
  if (*len < 3 || field[*len - 1] != ']') return 0;
  const char* open = NULL;
  for (size_t i = 0; i < *len; i++) {
    if (field[i] == '[') open = field + i;
  }
  if (!open) return -1;
  long k = 0;
  const char* c = open + 1;
  if (c == field + *len - 1) return -1;
  for (; c < field + *len - 1; c++) {
    if (*c < '0' || *c > '9' || k > 1000000) return -1;
    k = 10 * k + (*c - '0');
  }
  *index = (int)k;
  *len = (size_t)(open - field);
  return 0;
}

// add the parameters of one name
static mjdiffStatus addName(builder* b, const mjModel* m, const mjdiffModel* s, const char* name,
                            char* err, int errsz) {
  const char* c1 = strchr(name, ':');
  if (!c1) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_NAME,
                        "parameter '%s': expected kind:object:field or kind:field", name);
  }
  size_t klen = (size_t)(c1 - name);
  int kind = -1;
  for (int k = 0; k < NKIND; k++) {
    if (strlen(kKinds[k]) == klen && !strncmp(kKinds[k], name, klen)) kind = k;
  }
  if (kind < 0) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_NAME,
                        "parameter '%s': unknown kind '%.*s' (known: body, joint, tendon, geom, "
                        "actuator, option, mjdiff, site)", name, (int)klen, name);
  }
  int objtype = kKindObj[kind];

  // object and field: "kind:field" for model-wide kinds, else "kind:object:field" (the object may
  // itself hold ':')
  const char* obj = NULL;
  size_t olen = 0;
  const char* field = c1 + 1;
  if (objtype >= 0) {
    const char* last = strrchr(name, ':');
    if (last == c1) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_NAME,
                          "parameter '%s': expected %s:object:field", name, kKinds[kind]);
    }
    obj = c1 + 1;
    olen = (size_t)(last - obj);
    field = last + 1;
    if (olen == 0) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_NAME, "parameter '%s': empty object name", name);
    }
  }
  size_t flen = strlen(field);
  int index;
  if (parseIndex(field, &flen, &index)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_NAME, "parameter '%s': bad component index",
                        name);
  }
  const fieldInfo* f = NULL;
  for (int i = 0; i < NFIELD; i++) {
    if (!strcmp(kFields[i].kind, kKinds[kind]) && strlen(kFields[i].field) == flen &&
        !strncmp(kFields[i].field, field, flen)) {
      f = kFields + i;
    }
  }
  if (!f) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_NAME, "parameter '%s': unknown %s field '%.*s'",
                        name, kKinds[kind], (int)flen, field);
  }
  if (f->pk < 0) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED, "parameter '%s': %s", name, f->why);
  }
  if ((f->pk == PK_SMOOTH || f->pk == PK_GEOM_SMOOTH) && !s) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "parameter '%s' is a smooth-model field: the smooth model is NULL", name);
  }

  // model-wide
  if (objtype < 0) {
    if (f->pk == PK_SMOOTH && *optionField((mjdiffOptions*)&s->opt, f->comp0) == MJDIFF_DERIVED) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                          "parameter '%s': the model derives %s per element from its solref, "
                          "solimp and effective masses (no model-wide value to fit); set "
                          "mjdiff_%s in the MJCF to fit one value, or fit it per geom",
                          name, f->field, f->field);
    }
    int r = addObject(b, m, f, -1, NULL, index);
    if (r == 1) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_NAME,
                          "parameter '%s': index %d out of range (%d components)", name, index,
                          f->ncomp);
    }
    return r ? mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory") : MJDIFF_OK;
  }

  // objects by name or pattern; unnamed objects never match
  char pat[1024];
  if (olen >= sizeof(pat)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_NAME, "parameter '%s': object name too long", name);
  }
  memcpy(pat, obj, olen);
  pat[olen] = 0;
  int pattern = strchr(pat, '*') != NULL;
  int nobj = objtype == mjOBJ_BODY ? m->nbody : objtype == mjOBJ_JOINT ? m->njnt :
             objtype == mjOBJ_TENDON ? m->ntendon : objtype == mjOBJ_GEOM ? m->ngeom :
             objtype == mjOBJ_SITE ? m->nsite : m->nu;
  int matched = 0, added = 0;
  const char* firstWhy = NULL;
  for (int id = 0; id < nobj; id++) {
    const char* oname = mj_id2name(m, objtype, id);
    if (!oname || !oname[0] || !globMatch(pat, oname)) continue;
    matched++;
    const char* why = notApplicable(m, f, id);
    if (!why && f->pk == PK_GEOM_SMOOTH && !isfinite(s->geom_param[GP_COUNT * id + f->comp0])) {
      why = "the geom cannot move, so its derived contact value is infinite (set it explicitly "
            "with an mjdiff_<field>:<geom> numeric to fit it)";
    }
    if (why) {
      if (!pattern) {
        return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED, "parameter '%s': %s", name, why);
      }
      if (!firstWhy) firstWhy = why;
      continue;
    }
    int r = addObject(b, m, f, id, oname, index);
    if (r < 0) return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory");
    if (r == 1) {
      if (!pattern) {
        return mjdiff_error(err, errsz, MJDIFF_ERR_NAME,
                            "parameter '%s': index %d out of range (%d components)", name, index,
                            components(m, f, id));
      }
      continue;
    }
    added++;
  }
  if (!matched) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_NAME, "parameter '%s': %s '%s'", name,
                        pattern ? "no named object matches" : "no object named", pat);
  }
  if (!added) {
    if (firstWhy) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                          "parameter '%s': no matching object has the field (%s)", name, firstWhy);
    }
    return mjdiff_error(err, errsz, MJDIFF_ERR_NAME,
                        "parameter '%s': index %d out of range for every matching object", name,
                        index);
  }
  return MJDIFF_OK;
}

// FNV-1a hash of the model's names: parameters are bound to elements by name
static unsigned long long namesHash(const mjModel* m) {
  unsigned long long h = 1469598103934665603ULL;
  for (int i = 0; i < m->nnames; i++) {
    h = (h ^ (unsigned char)m->names[i]) * 1099511628211ULL;
  }
  return h;
}

mjdiffStatus mjdiff_makeParams(const mjModel* m, const mjdiffModel* s, const char* const* names,
                               int n, mjdiffParams** out, char* err, int errsz) {
  if (!out) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "out is NULL");
  *out = NULL;
  if (!m) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "model is NULL");
  if (n < 0 || (n > 0 && !names)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "names is NULL or n = %d < 0", n);
  }
  if (s) {
    mjdiffStatus st = mjdiff_checkPair(m, s, err, errsz);
    if (st != MJDIFF_OK) return st;
  }
  mjdiffParams* p = (mjdiffParams*)calloc(1, sizeof(mjdiffParams));
  if (!p) return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory");
  builder b = {p, 0, 0, 0};
  for (int i = 0; i < n; i++) {
    if (!names[i]) {
      mjdiff_freeParams(p);
      return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "names[%d] is NULL", i);
    }
    mjdiffStatus st = addName(&b, m, s, names[i], err, errsz);
    if (st != MJDIFF_OK) {
      mjdiff_freeParams(p);
      return st;
    }
  }
  p->nq = m->nq;
  p->nv = m->nv;
  p->nbody = m->nbody;
  p->njnt = m->njnt;
  p->ngeom = m->ngeom;
  p->nu = m->nu;
  p->na = m->na;
  p->ntendon = m->ntendon;
  p->names_hash = namesHash(m);
  int bad = mjdiff_designPrepare(m, p);
  if (bad > 0) {
    mjdiffStatus st = mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                                   "parameter '%s': every position or length the scale moves is "
                                   "also an explicit parameter, which overrides it",
                                   mjdiff_paramName(p, bad - 1));
    mjdiff_freeParams(p);
    return st;
  }
  if (bad) {
    mjdiff_freeParams(p);
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory");
  }
  *out = p;
  return MJDIFF_OK;
}

void mjdiff_freeParams(mjdiffParams* p) {
  if (!p) return;
  mjdiff_designFree(p);
  free(p->entry);
  free(p->names);
  free(p->nameadr);
  free(p);
}

int mjdiff_paramCount(const mjdiffParams* p) {
  return p ? p->n : 0;
}

const char* mjdiff_paramName(const mjdiffParams* p, int i) {
  if (!p || i < 0 || i >= p->n) return NULL;
  return p->names + p->nameadr[i];
}

int mjdiff_paramClass(const mjdiffParams* p, int i) {
  if (!p || i < 0 || i >= p->n) return -1;
  int kind = p->entry[i].kind;
  if (kind == PK_SMOOTH) return MJDIFF_PARAM_SMOOTH;
  if (kind == PK_GEOM_SMOOTH) return MJDIFF_PARAM_SMOOTH_GEOM;
  if (PK_IS_DESIGN(kind)) return MJDIFF_PARAM_GEOMETRY;
  return MJDIFF_PARAM_PHYSICAL;
}

//---------------------------------- values --------------------------------------------------------

static int sameSizes(const mjModel* m, const mjdiffParams* p) {
  return m->nq == p->nq && m->nv == p->nv && m->nbody == p->nbody && m->njnt == p->njnt &&
         m->ngeom == p->ngeom && m->nu == p->nu && m->na == p->na && m->ntendon == p->ntendon;
}

mjdiffStatus mjdiff_checkParams(const mjModel* m, const mjdiffParams* p, char* err, int errsz) {
  if (!p) return MJDIFF_OK;
  if (!m) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "model is NULL");
  if (!sameSizes(m, p) || p->names_hash != namesHash(m)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "parameters were made for another model (nq=%d nbody=%d ngeom=%d, other "
                        "names; this one has nq=%d nbody=%d ngeom=%d)",
                        p->nq, p->nbody, p->ngeom, (int)m->nq, (int)m->nbody, (int)m->ngeom);
  }
  return MJDIFF_OK;
}

// address of an mjModel parameter (NULL for smooth-model values)
static mjtNum* modelValue(const mjModel* m, const paramEntry* e) {
  int id = e->id, c = e->comp;
  switch (e->kind) {
    case PK_BODY_MASS: return m->body_mass + id;
    case PK_BODY_INERTIA: return m->body_inertia + 3 * id + c;
    case PK_BODY_IPOS: return m->body_ipos + 3 * id + c;
    case PK_DOF_DAMPING: return m->dof_damping + id;
    case PK_DOF_ARMATURE: return m->dof_armature + id;
    case PK_DOF_FRICTIONLOSS: return m->dof_frictionloss + id;
    case PK_JNT_STIFFNESS: return m->jnt_stiffness + id;
    case PK_JNT_SPRINGREF: return m->qpos_spring + m->jnt_qposadr[id];
    case PK_TEN_STIFFNESS: return m->tendon_stiffness + id;
    case PK_TEN_DAMPING: return m->tendon_damping + id;
    case PK_TEN_FRICTIONLOSS: return m->tendon_frictionloss + id;
    case PK_GEOM_FRICTION: return m->geom_friction + 3 * id + c;
    case PK_ACT_GEAR: return m->actuator_gear + 6 * id;
    case PK_ACT_GAINPRM: return m->actuator_gainprm + mjNGAIN * id + c;
    case PK_ACT_BIASPRM: return m->actuator_biasprm + mjNBIAS * id + c;
    case PK_ACT_DYNPRM: return m->actuator_dynprm + mjNDYN * id;
    case PK_GRAVITY: return (mjtNum*)m->opt.gravity + c;
    case PK_DENSITY: return (mjtNum*)&m->opt.density;
    case PK_VISCOSITY: return (mjtNum*)&m->opt.viscosity;
    case PK_WIND: return (mjtNum*)m->opt.wind + c;
    default: return NULL;
  }
}

void mjdiff_getParamValues(const mjModel* m, const mjdiffModel* s, const mjdiffParams* p,
                           mjtNum* values) {
  if (!m || !p || !values) return;
  int ok = sameSizes(m, p) && (!s || mjdiff_checkPair(m, s, NULL, 0) == MJDIFF_OK);
  for (int i = 0; i < p->n; i++) {
    const paramEntry* e = p->entry + i;
    values[i] = NAN;
    if (!ok) continue;
    if (e->kind == PK_SMOOTH) {
      if (s) values[i] = *optionField((mjdiffOptions*)&s->opt, e->comp);
    } else if (e->kind == PK_GEOM_SMOOTH) {
      if (s) values[i] = s->geom_param[GP_COUNT * e->id + e->comp];
    } else if (PK_IS_DESIGN(e->kind)) {
      values[i] = mjdiff_designValue(m, p, e);
    } else {
      values[i] = *modelValue(m, e);
    }
  }
}

// lower bound of an mjModel parameter: 1 strictly positive, 0 non-negative, -1 any finite value
// (smooth-model fields are checked by mjdiff_validateOptions)
static int lowerBound(int kind) {
  switch (kind) {
    case PK_BODY_MASS:
    case PK_BODY_INERTIA:
    case PK_ACT_DYNPRM:
      return 1;
    case PK_DOF_DAMPING:
    case PK_DOF_ARMATURE:
    case PK_DOF_FRICTIONLOSS:
    case PK_JNT_STIFFNESS:
    case PK_TEN_STIFFNESS:
    case PK_TEN_DAMPING:
    case PK_TEN_FRICTIONLOSS:
    case PK_GEOM_FRICTION:
    case PK_DENSITY:
    case PK_VISCOSITY:
      return 0;
    default:
      return -1;
  }
}

// body b no longer uses MuJoCo's same-frame and simple-body shortcuts; 1 if it did
static int notSimple(mjModel* m, int b) {
  int was = m->body_sameframe[b] || m->body_simple[b];
  m->body_sameframe[b] = 0;
  m->body_simple[b] = 0;
  return was;
}

// the geoms and sites of body b compiled onto its inertial frame (sameframe 2: placed at xipos)
// keep their place in the body frame when the center of mass moves
static void detachFromCom(mjModel* m, int b) {
  for (int g = m->body_geomadr[b]; g >= 0 && g < m->body_geomadr[b] + m->body_geomnum[b]; g++) {
    if (m->geom_sameframe[g] == 2) m->geom_sameframe[g] = 0;
  }
  for (int i = 0; i < m->nsite; i++) {
    if (m->site_bodyid[i] == b && m->site_sameframe[i] == 2) m->site_sameframe[i] = 0;
  }
}

int mjdiff_paramOutside(const mjModel* m, const mjdiffModel* s, const mjdiffParams* p, int i,
                        mjtNum v) {
  const paramEntry* e = p->entry + i;
  if (!isfinite(v)) return 1;
  if (e->kind == PK_SMOOTH || e->kind == PK_GEOM_SMOOTH) {
    if (!s || v == MJDIFF_DERIVED) return 1;
    mjdiffOptions one = s->opt;
    int f = e->kind == PK_SMOOTH ? e->comp : mjdiff_geomParamField(e->comp);
    *optionField(&one, f) = v;
    return mjdiff_validateOptions(&one, NULL, 0) != MJDIFF_OK;
  }
  if (PK_IS_DESIGN(e->kind)) return mjdiff_designCheck(m, e, v) != NULL;
  int lb = lowerBound(e->kind);
  return (lb == 1 && !(v > 0)) || (lb == 0 && v < 0);
}

mjdiffStatus mjdiff_setParamValues(mjModel* m, mjdiffModel* s, const mjdiffParams* p,
                                   const mjtNum* values, char* err, int errsz) {
  if (!m || !p || (p->n && !values)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "model, parameters or values are NULL");
  }
  if (!sameSizes(m, p)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "the parameters were selected for a model of other sizes");
  }
  if (s) {
    mjdiffStatus st = mjdiff_checkPair(m, s, err, errsz);
    if (st != MJDIFF_OK) return st;
  }

  // check everything first: model values one by one, model-wide smooth fields together (with the
  // model checks they take part in), per-geom smooth values one by one
  mjdiffOptions opt;
  if (s) opt = s->opt;
  int anyWide = 0;
  for (int i = 0; i < p->n; i++) {
    const paramEntry* e = p->entry + i;
    const char* name = mjdiff_paramName(p, i);
    mjtNum v = values[i];
    if (!isfinite(v)) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s must be finite, got %g", name, v);
    }
    if (e->kind == PK_SMOOTH || e->kind == PK_GEOM_SMOOTH) {
      if (!s) {
        return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                            "%s is a smooth-model field: the smooth model is NULL", name);
      }
      if (v == MJDIFF_DERIVED) {
        return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                            "%s: %g (MJDIFF_DERIVED) is not a parameter value", name, v);
      }
      mjdiffOptions one = s->opt;
      int f = e->kind == PK_SMOOTH ? e->comp : mjdiff_geomParamField(e->comp);
      *optionField(&one, f) = v;
      char why[300];
      if (mjdiff_validateOptions(&one, why, sizeof(why)) != MJDIFF_OK) {
        return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: %s", name, why);
      }
      if (e->kind == PK_SMOOTH) {
        *optionField(&opt, f) = v;
        anyWide = 1;
      }
      continue;
    }
    if (PK_IS_DESIGN(e->kind)) {
      const char* why = mjdiff_designCheck(m, e, v);
      if (why) return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s = %g: %s", name, v, why);
      continue;
    }
    int lb = lowerBound(e->kind);
    if (lb == 1 && !(v > 0)) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s must be > 0, got %g", name, v);
    }
    if (lb == 0 && v < 0) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s must be >= 0, got %g", name, v);
    }
  }
  if (anyWide) {
    char why[300];
    if (mjdiff_checkSupported(m, &opt, why, sizeof(why)) != MJDIFF_OK) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "smooth-model parameters: %s", why);
    }
  }

  // the geometry's scratch, before anything is written
  mjtNum* scratch = NULL;
  if (p->design) {
    scratch = (mjtNum*)malloc(sizeof(mjtNum) * (size_t)(mjdiff_designApplyScratch(p) + 1));
    if (!scratch) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "geometry parameters: out of memory");
    }
  }

  // apply: model-wide smooth fields first (they spread to the geoms without explicit values)
  int mass = 0, inertial = 0;
  for (int i = 0; i < p->n; i++) {
    const paramEntry* e = p->entry + i;
    if (e->kind == PK_SMOOTH) {
      mjdiff_setParam(s, mjdiff_smoothFieldName(e->comp), values[i], NULL, 0);
    }
  }
  for (int i = 0; i < p->n; i++) {
    const paramEntry* e = p->entry + i;
    if (e->kind == PK_SMOOTH || PK_IS_DESIGN(e->kind)) continue;
    if (e->kind == PK_GEOM_SMOOTH) {
      s->geom_param[GP_COUNT * e->id + e->comp] = values[i];
      s->geom_set[GP_COUNT * e->id + e->comp] = 1;
      continue;
    }
    *modelValue(m, e) = values[i];
    mass |= e->kind == PK_BODY_MASS;
    if (e->kind == PK_BODY_MASS || e->kind == PK_BODY_INERTIA || e->kind == PK_BODY_IPOS) {
      inertial |= notSimple(m, e->id);
      if (e->kind == PK_BODY_IPOS) detachFromCom(m, e->id);
    }
    if (e->kind == PK_DOF_ARMATURE) inertial |= notSimple(m, m->dof_bodyid[e->id]);
  }

  if (p->design) mjdiff_designApply(m, p, values, scratch, 0);  // geometry: after the inertials
  free(scratch);

  // MuJoCo's shortcuts for bodies whose frame is their inertial frame (xipos = xpos) and
  // "simple" bodies (diagonal mass matrix copied from dof_M0, computed at compile time) hold for
  // the compiled values only: the bodies set here take the general path
  if (inertial) {
    int count = 0;
    for (int j = m->nv - 1; j >= 0; j--) {
      count = m->body_simple[m->dof_bodyid[j]] ? count + 1 : 0;
      m->dof_simplenum[j] = count;
    }
  }

  // subtree masses (mj_setConst's body_subtreemass) follow the body masses
  if (mass) {
    mju_zero(m->body_subtreemass, m->nbody);
    for (int b = m->nbody - 1; b >= 0; b--) {
      m->body_subtreemass[b] += m->body_mass[b];
      if (b) m->body_subtreemass[m->body_parentid[b]] += m->body_subtreemass[b];
    }
  }
  return MJDIFF_OK;
}
