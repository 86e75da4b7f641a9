// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Fuzz target: the command-line parsers of mjdiff-sysid, mjdiff-demo and mjdiff-mpc (run and
// bench). The first byte picks the parser, the rest is split at NUL bytes and newlines into at
// most 32 arguments. A parser returns (arguments accepted) or exits through the tools' helpers
// (--help: 0, usage error: 2), here a longjmp; anything else (a crash, another exit code, an
// exit code 2 without a "usage error" line is not checked: the message goes to stderr) fails.

#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

jmp_buf fuzz_jump;

_Noreturn void fuzz_exit(int code) {
  longjmp(fuzz_jump, 1000 + code);
}

#define MAX_ARGS 32

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  int which = data[0] % 4;
  char* buf = (char*)malloc(size);
  if (!buf) return 0;
  memcpy(buf, data + 1, size - 1);
  buf[size - 1] = 0;
  char* argv[MAX_ARGS + 2];
  int argc = 0;
  static const char* kName[4] = {"mjdiff-sysid", "mjdiff-demo", "mjdiff-mpc", "mjdiff-mpc"};
  argv[argc++] = (char*)kName[which];
  if (which == 3) argv[argc++] = (char*)"bench";
  char* p = buf;
  char* end = buf + size - 1;
  while (p < end && argc < MAX_ARGS) {
    argv[argc++] = p;
    while (p < end && *p && *p != '\n') p++;
    *p++ = 0;
  }
  argv[argc] = NULL;

  // exit codes through tool_usageError / --help: 0 or 2 only (volatile: kept across longjmp)
  volatile int code = setjmp(fuzz_jump);
  if (code == 0) {
    switch (which) {
      case 0:
        fuzz_parseSysid(argc, argv);
        break;
      case 1:
        fuzz_parseDemo(argc, argv);
        break;
      case 2:
        fuzz_parseMpcRun(argc, argv);
        break;
      default:
        fuzz_parseMpcBench(argc - 1, argv + 1);
        break;
    }
  } else if (code != 1000 && code != 1002) {
    fprintf(stderr, "fuzz_cli: exit code %d from a parser\n", code - 1000);
    abort();
  }
  if (which == 3) fuzz_freeMpcBench();
  free(buf);
  return 0;
}
