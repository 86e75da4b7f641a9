// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
// mjdiff-sysid's parser for fuzz_cli (its main renamed, exit a longjmp)
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "cli.h"
#define exit fuzz_exit
#define main sysid_main
int sysid_main(int argc, char** argv);
#include "../tools/sysid/sysid.c"

void fuzz_parseSysid(int argc, char** argv) {
  args a;
  parseArgs(argc, argv, &a);
}
