// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Small helpers shared by the companion tools: strict number parsing, usage errors, JSON output,
// wall-clock time, SIGINT handling. Tools print; the library never does.

#ifndef MJDIFF_TOOLUTIL_H_
#define MJDIFF_TOOLUTIL_H_

#include <stdio.h>

#include <mjdiff/mjdiff.h>

// exit codes shared by every tool
#define TOOL_EXIT_OK 0
#define TOOL_EXIT_RUNTIME 1
#define TOOL_EXIT_USAGE 2
#define TOOL_EXIT_INTERRUPTED 130

// parse a whole string as a finite double / an int in [lo, hi]; 0 on failure
int tool_parseDouble(const char* s, double* out);
int tool_parseInt(const char* s, long lo, long hi, long* out);

// value of option argv[*i] ("--name VALUE"): advances *i; prints a usage error and exits 2 if missing
const char* tool_optionValue(const char* tool, int argc, char** argv, int* i);

// print "TOOL: usage error: MESSAGE (see --help)" to stderr and exit 2
void tool_usageError(const char* tool, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3), noreturn))
#endif
    ;

// monotonic wall clock in seconds
double tool_now(void);

// install a SIGINT handler; tool_interrupted() is then nonzero after Ctrl-C
void tool_catchInterrupt(void);
int tool_interrupted(void);

// load an MJCF or MJB model; NULL with a message naming the file on failure
mjModel* tool_loadModel(const char* path, char* err, int errsz);

// JSON string with escapes
void tool_jsonString(FILE* f, const char* s);

#endif  // MJDIFF_TOOLUTIL_H_
