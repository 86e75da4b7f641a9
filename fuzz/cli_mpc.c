// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
// mjdiff-mpc's parsers (run and bench) for fuzz_cli (its main renamed, exit a longjmp, the viewer
// a stub: no GLFW here)
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "cli.h"
#define exit fuzz_exit
#define main mpc_main
int mpc_main(int argc, char** argv);
#include "../tools/mpc/mpc.c"

int mpc_view(mpcLoop* loop, const mpcViewOptions* opt, char* err, int errsz) {
  (void)loop;
  (void)opt;
  snprintf(err, (size_t)errsz, "no viewer in fuzz_cli");
  return TOOL_EXIT_RUNTIME;
}

void fuzz_parseMpcRun(int argc, char** argv) {
  runArgs a;
  parseRun(argc, argv, &a);
}

// kept across the longjmp of a usage error, freed by fuzz_freeMpcBench
static benchArgs gBench;

void fuzz_parseMpcBench(int argc, char** argv) {
  memset(&gBench, 0, sizeof(gBench));
  parseBench(argc, argv, &gBench);
}

void fuzz_freeMpcBench(void) {
  // as mpc_main's bench: the default model paths are its own strings
  if (gBench.defaults) {
    for (int i = 0; i < gBench.nmodel; i++) free(gBench.model[i]);
  }
  free(gBench.model);
  memset(&gBench, 0, sizeof(gBench));
}
