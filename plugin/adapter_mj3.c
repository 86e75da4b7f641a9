// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The MuJoCo 3 adapter: libmjdiff_plugin.so registers the engine plugin "mjdiff.smooth" (passive
// capability) when it is loaded (simulate's mujoco_plugin folder, mj_loadPluginLibrary, or linked
// into a program). A model asks for the smooth model with
//
//   <extension><plugin plugin="mjdiff.smooth"><instance name="smooth">
//     <config key="contact_stiffness" value="2e4"/>     <!-- any mjdiff_* field, model-wide -->
//   </instance></plugin></extension>
//
// and keeps per-geom values in <custom><numeric name="mjdiff_contact_stiffness:GEOM" .../>, as on
// MuJoCo 2.2 (MuJoCo 3's compiler accepts only the config keys a plugin registers, and geom names
// are not known when it registers). The plugin needs no <plugin instance> reference from a body.
//
// How the hard constraints are kept from acting while collision detection runs. No plugin
// capability replaces constraint forces, and the model is const to a plugin. MuJoCo builds its
// constraint rows in mj_fwdPosition, before the passive stage; the compute callback (passive
// stage, inside mj_fwdVelocity) runs mjdiff_collide, whose mj_collision resets the contact and
// constraint arena (d->nefc = 0), detects the contacts again with the smooth activation margins
// and exact convex geometry, and then adds the smooth forces to qfrc_passive. The constraint
// solver that follows (mj_fwdConstraint) finds no rows: qacc = qacc_smooth. The user's disable
// flags are never touched (simulate's toggles act on the smooth forces as on the hard ones), d's
// contacts are the smooth model's (the viewer draws them), and the cost is one wasted pass of
// constraint construction plus a second collision pass per forward.
//
// mjdiff_step and mjdiff_forward on such a model run the pipeline on a view whose hard-constraint
// flags are all set (step.c) and add the smooth forces themselves; compute sees those flags and does
// nothing, so the forces are never added twice. (A model whose own flags disable all four hard
// constraints has no smooth force either.) Since MuJoCo 3.3.6 disabling both the spring and the
// damper flags turns plugin passive forces off: the smooth model goes with them and MuJoCo's hard
// constraints act (compat_passiveOff; mjdiff_step also drops the smooth forces then).
//
// Configuration errors: init fails (returns -1) after mju_warning names the key and the value;
// MuJoCo's compiler reports "plugin->init failed" followed by that warning as the load error.
// Each mjData gets its own mjdiffModel (made by mjdiff_makeModel, which reads the instance's
// config), freed with the mjData.

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <mujoco/mjplugin.h>

#include "compat.h"
#include "internal.h"

#if !MJDIFF_MUJOCO_3
#error "adapter_mj3.c is built against MuJoCo 3 only"
#endif

#define MAXATTR 32

static const char* gAttributes[MAXATTR];

static int nstate(const mjModel* m, int instance) {
  (void)m;
  (void)instance;
  return 0;
}

static int init(const mjModel* m, mjData* d, int instance) {
  int version = mj_version();
  if (version < COMPAT_VERSION_MIN || version > COMPAT_VERSION_MAX) {
    mju_warning(COMPAT_PLUGIN_NAME ": MuJoCo %d is not a version this build was made for "
                "(%d to %d)", version, COMPAT_VERSION_MIN, COMPAT_VERSION_MAX);
    return -1;
  }
  char err[512];
  mjdiffModel* s = NULL;
  if (mjdiff_makeModel(m, NULL, &s, err, sizeof(err)) != MJDIFF_OK) {
    mju_warning("%s%s", strncmp(err, "plugin ", 7) ? COMPAT_PLUGIN_NAME ": " : "", err);
    return -1;
  }
  mjdiff_setSingleStep(s, 1);  // stepped by mj_step: no substeps
  d->plugin_data[instance] = (uintptr_t)s;
  return 0;
}

static void destroy(mjData* d, int instance) {
  mjdiff_freeModel((mjdiffModel*)d->plugin_data[instance]);
  d->plugin_data[instance] = 0;
}

static void copy(mjData* dest, const mjModel* m, const mjData* src, int instance) {
  mjdiffModel* s = NULL;
  const mjdiffModel* from = (const mjdiffModel*)src->plugin_data[instance];
  if (from && mjdiff_copyModel(from, m, &s, NULL, 0) != MJDIFF_OK) s = NULL;
  dest->plugin_data[instance] = (uintptr_t)s;
}

static void reset(const mjModel* m, mjtNum* plugin_state, void* plugin_data, int instance) {
  (void)m;
  (void)plugin_state;
  (void)plugin_data;
  (void)instance;
}

static void compute(const mjModel* m, mjData* d, int instance, int capability_bit) {
  if (!(capability_bit & mjPLUGIN_PASSIVE)) return;
  // mjdiff's own pipeline (step.c's view), or every hard constraint off: nothing to replace
  if ((m->opt.disableflags & COMPAT_DSBL_HARD) == COMPAT_DSBL_HARD) return;
  const mjdiffModel* s = (const mjdiffModel*)d->plugin_data[instance];
  if (!s || s->ngeom != m->ngeom || s->nv != m->nv) return;

  // contacts again with the activation margins; this also drops the constraint rows MuJoCo built
  mjdiff_collide(m, d, s);
  d->nefc = 0;
  mjdiff_addForces(m, d, s, d->qfrc_passive);
}

mjPLUGIN_LIB_INIT(mjdiff_smooth) {
  int version = mj_version();
  if (version < COMPAT_VERSION_MIN || version > COMPAT_VERSION_MAX) {
    mju_warning(COMPAT_PLUGIN_NAME " not registered: libmjdiff_plugin was built for MuJoCo %d to "
                "%d, this process runs MuJoCo %d", COMPAT_VERSION_MIN, COMPAT_VERSION_MAX, version);
    return;
  }
  int n = mjdiff_optionCount();
  if (n > MAXATTR) n = MAXATTR;
  for (int i = 0; i < n; i++) gAttributes[i] = mjdiff_optionName(i);

  mjpPlugin p;
  mjp_defaultPlugin(&p);
  p.name = COMPAT_PLUGIN_NAME;
  p.capabilityflags = mjPLUGIN_PASSIVE;
  p.nattribute = n;
  p.attributes = gAttributes;
  p.nstate = nstate;
  p.init = init;
  p.destroy = destroy;
  p.copy = copy;
  p.reset = reset;
  p.compute = compute;
  mjp_registerPlugin(&p);
}
