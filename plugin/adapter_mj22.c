// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The MuJoCo 2.2 adapter: MuJoCo 2.2 has no engine-plugin API, so an attached model is stepped by
// the plain mj_step through mjcb_passive. This file holds the library's only global state: a small
// registry of attached models keyed by model pointer, guarded by a mutex, so that several models and
// threads work at once. A MuJoCo 3 mjpPlugin adapter would replace this file, calling the same core
// (mjdiff_collide, mjdiff_addForces) from its compute callback.

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "internal.h"
#include "adapter.h"

#define MAXATTACHED 64

typedef struct entry_ {
  const mjModel* m;            // attached model (key)
  mjdiffModel* s;              // its smooth model; NULL: not smooth, or auto-attach failed
  int owned;                   // 1: made by auto-attach, freed by the adapter
  const void* buffer;          // m->buffer at attach time, to tell a reloaded model apart
} entry;

static pthread_mutex_t gLock = PTHREAD_MUTEX_INITIALIZER;
static entry gEntry[MAXATTACHED];
static int gNentry = 0;
static mjfGeneric gPrevPassive = NULL;
static int gInstalled = 0;
static int gAuto = 0;
static mjdiffAutoLog gLog = NULL;
static atomic_llong gNcall = 0;
static atomic_llong gNcontact = 0;

static int findEntry(const mjModel* m) {
  for (int i = 0; i < gNentry; i++) {
    if (gEntry[i].m == m) return i;
  }
  return -1;
}

static void removeEntry(int i) {
  for (int j = i + 1; j < gNentry; j++) gEntry[j - 1] = gEntry[j];
  gNentry--;
}

static void passiveCallback(const mjModel* m, mjData* d);

// install our callback, keeping any previous one to chain to (call with the lock held)
static void install(void) {
  if (!gInstalled) {
    gPrevPassive = mjcb_passive == passiveCallback ? NULL : mjcb_passive;
    mjcb_passive = passiveCallback;
    gInstalled = 1;
  }
}

// add an entry and disable the model's hard constraints (call with the lock held)
static int addEntry(mjModel* m, mjdiffModel* s, int owned) {
  if (gNentry >= MAXATTACHED) return 0;
  entry* e = gEntry + gNentry++;
  e->m = m;
  e->s = s;
  e->owned = owned;
  e->buffer = m->buffer;
  if (s) {
    s->attached = m;
    s->hardflags = m->opt.disableflags & COMPAT_DSBL_HARD;
    m->opt.disableflags |= COMPAT_DSBL_HARD;
  }
  install();
  return 1;
}

// make room for one more auto-attached entry: evict the oldest auto-attached one (its model was
// most likely freed by the host; if it is still stepping it is attached again on its next step)
static void evictOwned(void) {
  for (int i = 0; i < gNentry; i++) {
    if (gEntry[i].owned) {
      if (gEntry[i].s) gEntry[i].s->attached = NULL;  // freed here, not detached (lock held)
      mjdiff_freeModel(gEntry[i].s);
      removeEntry(i);
      return;
    }
  }
}

// first sight of a model in auto-attach mode (call with the lock held); returns its entry or -1.
// Models that do not ask for the smooth model are recorded too (with no smooth model), so that
// later steps find them without rescanning their numerics.
static int autoAttach(const mjModel* cm) {
  mjModel* m = (mjModel*)cm;  // the host owns a mutable model; MuJoCo 2.2 gives no compile hook
  int wants = mjdiff_wantsSmooth(m);
  char err[512] = "";
  mjdiffModel* s = NULL;
  mjdiffStatus st = wants ? mjdiff_makeModel(m, NULL, &s, err, sizeof(err)) : MJDIFF_OK;
  mjdiff_setSingleStep(s, 1);  // stepped by mj_step: no substeps
  if (gNentry >= MAXATTACHED) evictOwned();
  if (!addEntry(m, s, 1)) {
    mjdiff_freeModel(s);
    if (gLog) gLog(m, MJDIFF_ERR_MEMORY, "too many attached models");
    return -1;
  }
  if (gLog && wants) gLog(m, st, st == MJDIFF_OK ? "attached" : err);
  return gNentry - 1;
}

// the smooth forces of an attached model; the core sees the model's own hard-constraint flags
// from before attaching
static void addSmooth(const mjModel* m, mjData* d, const mjdiffModel* s) {
  mjModel view;
  const mjModel* mu = mjdiff_userModel(m, s, &view);
  mjdiff_collide(mu, d, s);
  mjdiff_addForces(mu, d, s, d->qfrc_passive);
  atomic_fetch_add(&gNcall, 1);
  atomic_fetch_add(&gNcontact, d->ncon);
}

static void passiveCallback(const mjModel* m, mjData* d) {
  pthread_mutex_lock(&gLock);
  int i = findEntry(m);

  // a freed model's address reused by a newly loaded one
  if (i >= 0 && gEntry[i].owned && gEntry[i].buffer != m->buffer) {
    if (gEntry[i].s) gEntry[i].s->attached = NULL;  // freed here, not detached (lock held)
    mjdiff_freeModel(gEntry[i].s);
    removeEntry(i);
    i = -1;
  }
  if (i < 0 && gAuto) i = autoAttach(m);
  const mjdiffModel* s = i >= 0 ? gEntry[i].s : NULL;
  int owned = i >= 0 && gEntry[i].owned;
  mjfGeneric prev = gPrevPassive;

  // auto-attached smooth models may be evicted by another thread: compute under the lock;
  // explicitly attached ones live until the caller detaches them: compute outside it
  if (s && owned) addSmooth(m, d, s);
  pthread_mutex_unlock(&gLock);
  if (s && !owned) addSmooth(m, d, s);
  if (prev) prev(m, d);
}

mjdiffStatus mjdiff_attach(mjModel* m, mjdiffModel* s, char* err, int errsz) {
  mjdiffStatus st = mjdiff_checkPair(m, s, err, errsz);
  if (st != MJDIFF_OK) return st;
  if (s->m != m) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "smooth model was made for a different mjModel");
  }
  pthread_mutex_lock(&gLock);
  if (findEntry(m) >= 0) {
    st = mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "model is already attached");
  } else if (s->attached) {
    st = mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "smooth model is already attached");
  } else if (!addEntry(m, s, 0)) {
    st = mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "too many attached models (at most %d)",
                      MAXATTACHED);
  } else {
    mjdiff_setSingleStep(s, 1);  // stepped by mj_step: no substeps (until detached)
  }
  pthread_mutex_unlock(&gLock);
  return st;
}

mjdiffModel* mjdiff_detach(mjModel* m) {
  mjdiffModel* s = NULL;
  pthread_mutex_lock(&gLock);
  int i = findEntry(m);
  if (i >= 0) {
    s = gEntry[i].s;
    if (s) {
      m->opt.disableflags = (m->opt.disableflags & ~COMPAT_DSBL_HARD) | s->hardflags;
      s->attached = NULL;
      if (!gEntry[i].owned) mjdiff_setSingleStep(s, 0);
    }
    if (gEntry[i].owned) {
      mjdiff_freeModel(s);
      s = NULL;
    }
    removeEntry(i);
  }
  if (gNentry == 0 && !gAuto && gInstalled && mjcb_passive == passiveCallback) {
    mjcb_passive = gPrevPassive;
    gPrevPassive = NULL;
    gInstalled = 0;
  }
  pthread_mutex_unlock(&gLock);
  return s;
}

const mjdiffModel* mjdiff_attached(const mjModel* m) {
  pthread_mutex_lock(&gLock);
  int i = findEntry(m);
  const mjdiffModel* s = i >= 0 ? gEntry[i].s : NULL;
  pthread_mutex_unlock(&gLock);
  return s;
}

void mjdiff_adapterStats(long long* ncall, long long* ncontact) {
  if (ncall) *ncall = atomic_load(&gNcall);
  if (ncontact) *ncontact = atomic_load(&gNcontact);
}

void mjdiff_adapterAutoAttach(int on, mjdiffAutoLog log) {
  pthread_mutex_lock(&gLock);
  gAuto = on;
  gLog = log;
  if (on) install();
  pthread_mutex_unlock(&gLock);
}
