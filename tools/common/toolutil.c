// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.

#define _POSIX_C_SOURCE 200809L

#include "toolutil.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int tool_parseDouble(const char* s, double* out) {
  if (!s || !*s) return 0;
  char* end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !isfinite(v)) return 0;
  *out = v;
  return 1;
}

int tool_parseInt(const char* s, long lo, long hi, long* out) {
  if (!s || !*s) return 0;
  char* end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

void tool_usageError(const char* tool, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fprintf(stderr, "%s: usage error: ", tool);
  vfprintf(stderr, fmt, args);
  fprintf(stderr, " (see --help)\n");
  va_end(args);
  exit(TOOL_EXIT_USAGE);
}

const char* tool_optionValue(const char* tool, int argc, char** argv, int* i) {
  if (*i + 1 >= argc) tool_usageError(tool, "option %s needs a value", argv[*i]);
  return argv[++*i];
}

double tool_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile sig_atomic_t gInterrupted = 0;

static void onInterrupt(int sig) {
  (void)sig;
  gInterrupted = 1;
}

void tool_catchInterrupt(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = onInterrupt;
  sigaction(SIGINT, &sa, NULL);
}

int tool_interrupted(void) {
  return gInterrupted;
}

mjModel* tool_loadModel(const char* path, char* err, int errsz) {
  size_t n = strlen(path);
  char msg[800] = "";
  mjModel* m = NULL;
  if (n > 4 && !strcmp(path + n - 4, ".mjb")) {
    m = mj_loadModel(path, NULL);
    if (!m) snprintf(msg, sizeof(msg), "cannot load binary model");
  } else {
    m = mj_loadXML(path, NULL, msg, sizeof(msg));
  }
  if (!m) snprintf(err, (size_t)errsz, "%s: %s", path, msg);
  return m;
}

void tool_jsonString(FILE* f, const char* s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      fprintf(f, "\\%c", c);
    } else if (c < 0x20) {
      fprintf(f, "\\u%04x", c);
    } else {
      fputc(c, f);
    }
  }
  fputc('"', f);
}
