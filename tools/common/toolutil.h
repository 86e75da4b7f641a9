// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Small helpers shared by the companion tools: strict number parsing, usage errors, JSON output,
// wall-clock time, SIGINT handling, MuJoCo warnings. Tools print; the library never does.

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

// 1 if arg asks for help: --help or -h (every tool accepts both)
int tool_isHelp(const char* arg);

// value of option argv[*i] ("--name VALUE"): advances *i; prints a usage error and exits 2 if missing
const char* tool_optionValue(const char* tool, int argc, char** argv, int* i);
// the value of an option naming a report to write (--out, --json FILE): a usage error if it names
// a model file (.xml, .mjb, .urdf), which the report would replace
const char* tool_outputOption(const char* tool, int argc, char** argv, int* i);

// value of integer option argv[*i] ("--name VALUE", *i advanced) in [lo, hi]; else a usage error
// "--name must be WHAT, got 'VALUE'" (exit 2)
long tool_intOption(const char* tool, int argc, char** argv, int* i, long lo, long hi,
                    const char* what);

// value of number option argv[*i] ("--name VALUE", *i advanced), finite, in [lo, hi] with the ends
// named in open (TOOL_OPEN_LO, TOOL_OPEN_HI) excluded (hi = INFINITY: no upper bound); else a
// usage error "--name must be WHAT, got 'VALUE'" (exit 2)
#define TOOL_OPEN_LO 1
#define TOOL_OPEN_HI 2
double tool_doubleOption(const char* tool, int argc, char** argv, int* i, double lo, double hi,
                         int open, const char* what);

// print "TOOL: usage error: MESSAGE (see --help)" to stderr and exit 2
void tool_usageError(const char* tool, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3), noreturn))
#endif
    ;

// print "TOOL: error: out of memory" to stderr and exit 1 (TOOL_EXIT_RUNTIME)
void tool_outOfMemory(const char* tool)
#if defined(__GNUC__)
    __attribute__((noreturn))
#endif
    ;

// monotonic wall clock in seconds
double tool_now(void);

// install a SIGINT handler; tool_interrupted() is then nonzero after Ctrl-C
void tool_catchInterrupt(void);
int tool_interrupted(void);

// the flag itself, for loops that poll it (nonzero after Ctrl-C)
volatile int* tool_interruptFlag(void);

// load an MJCF or MJB model; NULL with a message naming the file on failure. Its stack (2.2:
// nstack; 3.x: narena) is raised by mjdiff_stackNeed, so that its mjData have room for the
// derivatives.
mjModel* tool_loadModel(const char* path, char* err, int errsz);

// the whole file at path as a NUL-terminated malloc'd string (*size its length without the NUL),
// at most TOOL_MAX_FILE bytes; NULL with a message naming the file on failure
#define TOOL_MAX_FILE (1L << 30)
char* tool_readFile(const char* path, long* size, char* err, int errsz);

// compile MJCF text as if it were the file at path: the text goes through a MuJoCo VFS under that
// file's name, so includes and assets still resolve relative to path's directory (from disk);
// NULL with a message naming the file on failure
mjModel* tool_loadXMLText(const char* path, const char* text, long size, char* err, int errsz);

// JSON string with escapes
void tool_jsonString(FILE* f, const char* s);

// A CSV number: x with %.*g, nothing where x is not finite (the recordings' convention for a
// missing value: never "nan" or "inf" text); the caller writes the separators.
void tool_csvNumber(FILE* f, int digits, double x);

// JSON numbers never carry NaN or Inf (which JSON cannot represent): they are written as null and
// counted, with the key of the first one (the last key given to tool_jsonKey or tool_jsonField),
// so that a report can say why (tool_jsonNullNote).
// number with 6 significant digits ("%.6g"); null if not finite
void tool_jsonNumber(FILE* f, double x);

// number with `digits` significant digits; null if not finite
void tool_jsonNumberDigits(FILE* f, double x, int digits);

// "KEY": (remembered for the count of non-finite numbers)
void tool_jsonKey(FILE* f, const char* key);

// "KEY": X with tool_jsonNumber
void tool_jsonField(FILE* f, const char* key, double x);

// non-finite numbers written as null since the last tool_jsonResetNulls; *first (nullable) the
// key of the first ("" if none)
long tool_jsonNulls(const char** first);
void tool_jsonResetNulls(void);

// when numbers were written as null: ', "nonfinite": {"count": N, "first": KEY, "note": ...}'
// (call inside the report's object, before its closing brace); nothing otherwise
void tool_jsonNullNote(FILE* f);

// JSON objects {"NAME":X, ...} of n named numbers (tool_jsonNumber) or counts
void tool_jsonNumbers(FILE* f, const char* const* names, const double* x, int n);
void tool_jsonCounts(FILE* f, const char* const* names, const long* x, int n);

// the head of a tool's JSON object: {"tool":TOOL,"version":...,"model":[MODEL, ...]
void tool_jsonHead(FILE* f, const char* tool, char* const* model, int nmodel);

// open the file of --out FILE for writing: FILE.tmp, renamed to FILE by tool_closeOut, so that a
// report is never left half-written; NULL after "TOOL: error: cannot write FILE" on stderr
FILE* tool_openOut(const char* tool, const char* path);

// close it and rename it to path: 0 after the same message if the writes failed (FILE.tmp
// removed, FILE as it was), 0 without one for f NULL, else 1
int tool_closeOut(const char* tool, const char* path, FILE* f);

// MuJoCo's default warning handler prints to stdout (which holds a tool's results) and appends
// MUJOCO_LOG.TXT: install one that counts the warnings and shows the first five on stderr as
// "TOOL: MuJoCo warning: MESSAGE"; tool_warnings() is the count so far. MuJoCo's fatal errors
// likewise: "TOOL: error: MuJoCo: MESSAGE" on stderr, exit 1
void tool_catchWarnings(const char* tool);
long tool_warnings(void);

// --goal T:X0,X1:Y0,Y1:Z0,Z1 of mjdiff-learn and mjdiff-design (through tool_policyOption,
// policyargs.h): the task term and its goal box; a malformed value is a usage error naming it
// (exit 2).
void tool_parseGoal(const char* tool, const char* v, int* term, double lo[3], double hi[3]);

#endif  // MJDIFF_TOOLUTIL_H_
