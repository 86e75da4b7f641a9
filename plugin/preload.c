// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Library preloaded (LD_PRELOAD) into a host that links MuJoCo 2.2 but not mjdiff, such as Debian's
// mujoco-simulate. Its constructor turns on the adapter's auto-attach, so models whose MJCF asks for
// the smooth model get it and others run as before. It logs to stderr, or to the file named by
// MJDIFF_LOG: one line per model seen, and once a second while stepping a line of totals:
//   mjdiff: attached model (nv=..., ngeom=...)
//   mjdiff: smooth steps=N contacts=M

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "adapter.h"

static FILE* gOut = NULL;

static void logModel(const mjModel* m, mjdiffStatus status, const char* message) {
  if (status == MJDIFF_OK) {
    fprintf(gOut, "mjdiff: %s model (nv=%d, ngeom=%d)\n", message, m->nv, m->ngeom);
  } else {
    fprintf(gOut, "mjdiff: error: %s (%s); this model runs with MuJoCo's hard constraints\n",
            message, mjdiff_statusName(status));
  }
  fflush(gOut);
}

static void* reporter(void* arg) {
  (void)arg;
  long long last = -1;
  for (;;) {
    sleep(1);
    long long ncall, ncontact;
    mjdiff_adapterStats(&ncall, &ncontact);
    if (ncall != last) {
      fprintf(gOut, "mjdiff: smooth steps=%lld contacts=%lld\n", ncall, ncontact);
      fflush(gOut);
      last = ncall;
    }
  }
  return NULL;
}

__attribute__((constructor)) static void mjdiffPreload(void) {
  const char* path = getenv("MJDIFF_LOG");
  gOut = path && *path ? fopen(path, "a") : NULL;
  if (!gOut) gOut = stderr;
  mjdiff_adapterAutoAttach(1, logModel);
  fprintf(gOut, "mjdiff: preloaded %s, smooth model on for models with mjdiff_* custom numerics\n",
          mjdiff_versionString());
  fflush(gOut);
  pthread_t thread;
  if (!pthread_create(&thread, NULL, reporter, NULL)) pthread_detach(thread);
}
