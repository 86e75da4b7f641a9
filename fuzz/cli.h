// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// fuzz_cli: the tools' parsers compiled with exit() as a longjmp back to the fuzz target.

#ifndef MJDIFF_FUZZ_CLI_H_
#define MJDIFF_FUZZ_CLI_H_

#include <setjmp.h>

extern jmp_buf fuzz_jump;
_Noreturn void fuzz_exit(int code);

// parse argv as the tool would (exits longjmp to fuzz_jump)
void fuzz_parseSysid(int argc, char** argv);
void fuzz_parseDemo(int argc, char** argv);
void fuzz_parseMpcRun(int argc, char** argv);
void fuzz_parseMpcBench(int argc, char** argv);
void fuzz_freeMpcBench(void);  // what the last fuzz_parseMpcBench allocated

#endif  // MJDIFF_FUZZ_CLI_H_
