// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The layout of a parameter selection (<mjdiff/params.h>), shared by params.c (names, values)
// and params_d.c (derivatives).

#ifndef MJDIFF_PARAMS_INTERNAL_H_
#define MJDIFF_PARAMS_INTERNAL_H_

#include <mjdiff/params.h>

#include "internal.h"

// kinds of scalar parameters; id is the object, comp the component
typedef enum paramKind_ {
  PK_BODY_MASS = 0,            // id: body
  PK_BODY_INERTIA,             // id: body, comp: principal axis 0..2
  PK_BODY_IPOS,                // id: body, comp: body-frame axis 0..2
  PK_DOF_DAMPING,              // id: dof
  PK_DOF_ARMATURE,             // id: dof
  PK_DOF_FRICTIONLOSS,         // id: dof
  PK_JNT_STIFFNESS,            // id: joint
  PK_JNT_SPRINGREF,            // id: joint (hinge, slide)
  PK_TEN_STIFFNESS,            // id: tendon
  PK_TEN_DAMPING,              // id: tendon
  PK_TEN_FRICTIONLOSS,         // id: tendon
  PK_GEOM_FRICTION,            // id: geom, comp: 0 sliding, 1 torsional, 2 rolling
  PK_GEOM_SMOOTH,              // id: geom, comp: geomParam (GP_*)
  PK_ACT_GEAR,                 // id: actuator
  PK_ACT_GAINPRM,              // id: actuator, comp: 0..2
  PK_ACT_BIASPRM,              // id: actuator, comp: 0..2
  PK_ACT_DYNPRM,               // id: actuator (filter), dynprm[0]
  PK_GRAVITY,                  // comp: 0..2
  PK_SMOOTH,                   // comp: smoothField (model-wide)
  PK_DENSITY,                  // opt.density
  PK_VISCOSITY,                // opt.viscosity
  PK_WIND,                     // comp: 0..2
  // geometry (design_d.c): kinematic values, inertials follow where the compiler inferred them
  PK_BODY_POS,                 // id: body, comp: parent-frame axis 0..2
  PK_GEOM_POS,                 // id: geom, comp: body-frame axis 0..2
  PK_GEOM_SIZE,                // id: geom, comp: size index 0..2
  PK_SITE_POS,                 // id: site, comp: body-frame axis 0..2
  PK_JNT_POS,                  // id: joint, comp: body-frame axis 0..2 (the anchor)
  PK_BODY_SCALE                // id: body (scalar; positions in the body frame scale with it)
} paramKind;

// 1 for the geometry kinds of design_d.c
#define PK_IS_DESIGN(k) ((k) >= PK_BODY_POS && (k) <= PK_BODY_SCALE)

// model-wide fields of the smooth model (mjdiffOptions), in the order of its declaration
typedef enum smoothField_ {
  SF_CONTACT_STIFFNESS = 0,
  SF_CONTACT_DAMPING,
  SF_CONTACT_WIDTH,
  SF_FRICTION_SPEED,
  SF_SPIN_SPEED,
  SF_LIMIT_STIFFNESS,
  SF_LIMIT_DAMPING,
  SF_LIMIT_WIDTH,
  SF_FRICTIONLOSS_SPEED,
  SF_EQ_STIFFNESS,
  SF_EQ_DAMPING,
  SF_COUNT
} smoothField;

typedef struct paramEntry_ {
  int kind;                    // paramKind
  int id;                      // object id (-1 for model-wide values)
  int comp;                    // component
} paramEntry;

struct mjdiffParams_ {
  int n;                       // number of scalar parameters
  paramEntry* entry;           // (n)
  char* names;                 // expanded names, each 0-terminated
  int* nameadr;                // (n) offsets into names
  int nq, nv, nbody, njnt, ngeom, nu, na, ntendon;  // sizes of the model it was made for
  unsigned long long names_hash;  // and a hash of its names
  struct designInfo_* design;  // geometry parameters' reference values (design_d.c), or NULL
};

//---------------------------------- geometry parameters (design_d.c) ------------------------------

// NULL if geometry kind pk applies to object id of m, else the reason it does not
const char* mjdiff_designNotApplicable(const mjModel* m, int pk, int id);

// after a selection is built: its reference values (the compiled model's); 0, -1 out of memory,
// or i + 1 when entry i, a scale, has no quantity left to read it back from (all set explicitly)
int mjdiff_designPrepare(const mjModel* m, mjdiffParams* p);
void mjdiff_designFree(mjdiffParams* p);

// value of geometry entry e (NULL design: NaN)
mjtNum mjdiff_designValue(const mjModel* m, const mjdiffParams* p, const paramEntry* e);

// NULL if value v is valid for geometry entry e, else the reason
const char* mjdiff_designCheck(const mjModel* m, const paramEntry* e, mjtNum v);

// set the geometry entries of p to values (checked already), then the compile-time consequences:
// inferred masses, centres of mass and inertias, bounding radii, shortcuts off. scratch holds
// mjdiff_designApplyScratch(p) numbers (the caller allocates it, so that nothing fails halfway).
// exact 0: the principal axes as MuJoCo's compiler finds them (mju_eig3); 1: finished to rounding
// (for differences: design_d.c's refineEig)
int mjdiff_designApplyScratch(const mjdiffParams* p);
void mjdiff_designApply(mjModel* m, const mjdiffParams* p, const mjtNum* values,
                        mjtNum* scratch, int exact);

// the inputs of d a forward pass on a model copy needs besides the state: controls, applied
// forces, mocap poses, and on 3.x the equalities' active flags (design_d.c)
void mjdiff_copyInputs(const mjModel* m, const mjData* d, mjData* dc);

// 1 if mjdiff_setParamValues would refuse the value v for entry i of p (its bounds and checks)
int mjdiff_paramOutside(const mjModel* m, const mjdiffModel* s, const mjdiffParams* p, int i,
                        mjtNum v);

// 1 if p's geom size and position columns are differenced too (mjdiff_designSetDifferenced)
int mjdiff_designDifferenced(const mjdiffParams* p);

// the reference values a scale multiplies (3 numbers: body_pos0, geom_pos0, geom_size0, jnt_pos0
// of object id for PK_BODY_POS, PK_GEOM_POS, PK_GEOM_SIZE, PK_JNT_POS), or NULL
const mjtNum* mjdiff_designRef(const mjdiffParams* p, int kind, int id);

// 1 if p selects component comp of kind's object id (an explicit value overrides a scale there)
int mjdiff_designSelected(const mjdiffParams* p, int kind, int id, int comp);

// scratch for the geometry columns (a model and data copy); NULL if p has no geometry entries
typedef struct mjdiffDesignScratch_ mjdiffDesignScratch;
mjdiffDesignScratch* mjdiff_makeDesignScratch(const mjModel* m, const mjdiffParams* p);
void mjdiff_freeDesignScratch(mjdiffDesignScratch* w);

// DrDp's geometry columns (nv x np, row-major, other columns untouched) by differences at the
// state in d (the forward pass run), acceleration acc, for the forces of parts, but for entries
// with skip[i] nonzero (skip nullable); w NULL: a temporary scratch. m: the model as the user
// configured it. Returns 0, -1 out of memory or a failed forward pass.
int mjdiff_designColumns(mjdiffDesignScratch* w, const mjModel* m, mjData* d,
                         const mjdiffModel* s, const mjdiffParams* p, int parts,
                         const mjtNum* acc, const mjtNum* skip, mjtNum* DrDp);

// the readings' parameter columns with a direct dependence at the fixed state (sensor_p.c): scratch
// (NULL, with *fail 0, if no entry of p has one or m has no sensors; NULL with *fail 1: out of
// memory), whether column i is one of them, and those columns of Q (nsensordata x np, row-major,
// the others untouched) at the state and inputs of d. Returns 0, -1 for a failed forward pass.
typedef struct mjdiffSensorParamScratch_ mjdiffSensorParamScratch;
mjdiffSensorParamScratch* mjdiff_makeSensorParamScratch(const mjModel* m,
                                                        const mjdiffParams* p, int* fail);
void mjdiff_freeSensorParamScratch(mjdiffSensorParamScratch* w);
int mjdiff_sensorParamDirect(const mjdiffSensorParamScratch* w, int i);
int mjdiff_sensorParamColumns(mjdiffSensorParamScratch* w, const mjModel* m, const mjData* d,
                              const mjdiffModel* s, const mjdiffParams* p, mjtNum* Q);

// mjdiff_paramDerivativeParts with the geometry columns' scratch w (NULL: a temporary one)
int mjdiff_paramDerivativeWith(mjdiffDesignScratch* w, const mjModel* m, mjData* d,
                               const mjdiffModel* s, const mjdiffParams* p, int parts,
                               const mjtNum* acc, mjtNum hdamp, mjtNum* DrDp, mjtNum* DadotDp);

// MJDIFF_OK if p (nullable) was made for m (same sizes and names), else an error naming both
mjdiffStatus mjdiff_checkParams(const mjModel* m, const mjdiffParams* p, char* err, int errsz);

// name of a model-wide smooth field (as in mjdiff_setParam) and its per-geom index or -1
const char* mjdiff_smoothFieldName(int field);
int mjdiff_smoothFieldGeom(int field);

// the smooth field of a per-geom parameter index (GP_*), or -1
int mjdiff_geomParamField(int gp);

// col (nv) += the derivative of the fluid forces (fluid_d.c) in parameter e: density, viscosity,
// wind, and the mass, inertia and com of inertia-box bodies; nothing for other kinds. At the state
// in d after the forward pass.
void mjdiff_fluidParamColumn(const mjModel* m, const mjData* d, const paramEntry* e,
                             mjtNum* col);

#endif  // MJDIFF_PARAMS_INTERNAL_H_
