// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
// the tools' shared option helpers for fuzz_cli (exit a longjmp: usage errors return here)
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "cli.h"
#define exit fuzz_exit
#include "../tools/common/toolutil.c"
