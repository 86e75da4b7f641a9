// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
// mjdiff-demo's parser for fuzz_cli (its main renamed, exit a longjmp)
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "cli.h"
#define exit fuzz_exit
#define main demo_main
int demo_main(int argc, char** argv);
#include "../tools/demo/demo.c"

void fuzz_parseDemo(int argc, char** argv) {
  args a;
  parseArgs(argc, argv, &a);
}
