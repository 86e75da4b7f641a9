// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Private definitions shared by the plugin's sources (and later the adjoint).

#ifndef MJDIFF_INTERNAL_H_
#define MJDIFF_INTERNAL_H_

#include <mjdiff/smooth.h>

// contact parameters that may be set per geom
typedef enum geomParam_ {
  GP_STIFFNESS = 0,
  GP_DAMPING,
  GP_WIDTH,
  GP_FRICTION_SPEED,
  GP_SPIN_SPEED,
  GP_COUNT
} geomParam;

struct mjdiffModel_ {
  const mjModel* m;            // the model this smooth model was made for
  int ngeom;                   // sizes at creation, checked against m on every call
  int nv;
  mjdiffOptions opt;           // model-wide parameters
  mjtNum* geom_param;          // per-geom contact parameters               (ngeom x GP_COUNT)
  unsigned char* geom_set;     // whether each was set explicitly           (ngeom x GP_COUNT)
  const mjModel* attached;     // model the adapter attached this to (its hard flags are set)
  int hardflags;               // the attached model's own hard-constraint flags before attaching
};

// the model as its user configured it: m itself, or, if the adapter attached s to m (and so set
// m's hard-constraint disable flags), view filled with m and the user's own hard-constraint flags
const mjModel* mjdiff_userModel(const mjModel* m, const mjdiffModel* s, mjModel* view);

// contact parameters of the pair (g1, g2): explicit beats model-wide; both explicit: the mean
void mjdiff_pairParams(const mjdiffModel* s, int g1, int g2, mjtNum p[GP_COUNT]);

// the smooth normal force fn (contactForce's force[0]) of contact con if touch sensor i counts it,
// else 0; the count follows MuJoCo 2.2.2: fn > 0, the site's body is one of the contact's two
// bodies, and the ray from con->pos along the normal (reversed if the site's body is the contact's
// second) meets the site's volume (always when con->pos is inside it)
mjtNum mjdiff_touchForce(const mjModel* m, const mjData* d, const mjdiffModel* s, int i,
                         const mjContact* con);

// touch readings of the smooth model: sensordata[sensor_adr[i]] = sum over d's contacts of
// mjdiff_touchForce for every touch sensor i (before noise and cutoff); 0 when m (as its user
// configured it) disables the smooth contact forces. Other sensors are not touched.
void mjdiff_smoothTouch(const mjModel* m, const mjData* d, const mjdiffModel* s,
                        mjtNum* sensordata);

// write a formatted message into err (NULL-safe); returns status
mjdiffStatus mjdiff_error(char* err, int errsz, mjdiffStatus status, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

// check sizes and pairing of (m, s); fills err
mjdiffStatus mjdiff_checkPair(const mjModel* m, const mjdiffModel* s, char* err, int errsz);

// check features the smooth model cannot handle (integrator, distance equality, ...); fills err
mjdiffStatus mjdiff_checkSupported(const mjModel* m, const mjdiffOptions* opt, char* err,
                                   int errsz);

#endif  // MJDIFF_INTERNAL_H_
