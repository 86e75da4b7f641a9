// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.

#define _POSIX_C_SOURCE 200809L

#include "toolutil.h"

#include "compat.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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

void tool_outOfMemory(const char* tool) {
  fprintf(stderr, "%s: error: out of memory\n", tool);
  exit(TOOL_EXIT_RUNTIME);
}

int tool_isHelp(const char* arg) {
  return arg && (!strcmp(arg, "--help") || !strcmp(arg, "-h"));
}

const char* tool_optionValue(const char* tool, int argc, char** argv, int* i) {
  if (*i + 1 >= argc) tool_usageError(tool, "option %s needs a value", argv[*i]);
  return argv[++*i];
}

// a report's path must not name a model: "--json model.xml" (bench-fidelity's FILE argument
// taken for a flag) replaced the model with the report
const char* tool_outputOption(const char* tool, int argc, char** argv, int* i) {
  const char* name = argv[*i];
  const char* v = tool_optionValue(tool, argc, argv, i);
  size_t n = strlen(v);
  const char* ext[] = {".xml", ".mjb", ".urdf"};
  for (int k = 0; k < 3; k++) {
    size_t e = strlen(ext[k]);
    if (n >= e && !strcasecmp(v + n - e, ext[k])) {
      tool_usageError(tool, "%s %s: a report would replace that model file; give another path",
                      name, v);
    }
  }
  return v;
}

long tool_intOption(const char* tool, int argc, char** argv, int* i, long lo, long hi,
                    const char* what) {
  const char* name = argv[*i];
  const char* v = tool_optionValue(tool, argc, argv, i);
  long out;
  if (!tool_parseInt(v, lo, hi, &out)) {
    tool_usageError(tool, "%s must be %s, got '%s'", name, what, v);
  }
  return out;
}

double tool_doubleOption(const char* tool, int argc, char** argv, int* i, double lo, double hi,
                         int open, const char* what) {
  const char* name = argv[*i];
  const char* v = tool_optionValue(tool, argc, argv, i);
  double out;
  if (!tool_parseDouble(v, &out) || (open & TOOL_OPEN_LO ? out <= lo : out < lo) ||
      (open & TOOL_OPEN_HI ? out >= hi : out > hi)) {
    tool_usageError(tool, "%s must be %s, got '%s'", name, what, v);
  }
  return out;
}

double tool_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile int gInterrupted = 0;  // int: lock-free and async-signal-safe on our targets

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

volatile int* tool_interruptFlag(void) {
  return &gInterrupted;
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
  // every mjData made from m has room for the smooth model and its derivatives: MuJoCo 2.2's
  // stack (nstack numbers), 3.x's arena (narena bytes, shared with contacts and constraints)
#if MJDIFF_MUJOCO_2_2
  if (m) m->nstack += (int)mjdiff_stackNeed(m);
#else
  if (m) m->narena += mjdiff_stackNeed(m) * sizeof(mjtNum);
#endif
  return m;
}

char* tool_readFile(const char* path, long* size, char* err, int errsz) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    snprintf(err, (size_t)errsz, "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  char* buf = NULL;
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
  if (n > TOOL_MAX_FILE) {
    snprintf(err, (size_t)errsz, "%s: larger than %ld bytes", path, (long)TOOL_MAX_FILE);
    fclose(f);
    return NULL;
  }
  if (n >= 0 && fseek(f, 0, SEEK_SET) == 0) buf = malloc((size_t)n + 1);
  if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    snprintf(err, (size_t)errsz, "%s: cannot read", path);
    free(buf);
    fclose(f);
    return NULL;
  }
  fclose(f);
  buf[n] = 0;
  if (size) *size = n;
  return buf;
}

mjModel* tool_loadXMLText(const char* path, const char* text, long size, char* err, int errsz) {
  if (size <= 0 || size > 0x7fffffffL) {
    snprintf(err, (size_t)errsz, "%s: empty or too large model text", path);
    return NULL;
  }
  mjVFS* vfs = malloc(sizeof(mjVFS));  // ~2 MB of file names: not on the stack
  if (!vfs) {
    snprintf(err, (size_t)errsz, "%s: out of memory", path);
    return NULL;
  }
  mj_defaultVFS(vfs);
  mjModel* m = NULL;
  char msg[800] = "";
  if (compat_vfsAddBuffer(vfs, path, text, (int)size) != 0) {
    snprintf(msg, sizeof(msg), "cannot add the model text to a VFS");
  } else {
    m = mj_loadXML(path, vfs, msg, sizeof(msg));
  }
  mj_deleteVFS(vfs);
  free(vfs);
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

static long gJsonNulls = 0;
static char gJsonKey[128] = "";
static char gJsonFirstNull[128] = "";

void tool_jsonNumberDigits(FILE* f, double x, int digits) {
  if (isfinite(x)) {
    fprintf(f, "%.*g", digits, x);
  } else {
    if (gJsonNulls++ == 0) snprintf(gJsonFirstNull, sizeof(gJsonFirstNull), "%s", gJsonKey);
    fprintf(f, "null");
  }
}

void tool_csvNumber(FILE* f, int digits, double x) {
  if (isfinite(x)) fprintf(f, "%.*g", digits, x);
}

void tool_jsonNumber(FILE* f, double x) {
  tool_jsonNumberDigits(f, x, 6);
}

void tool_jsonKey(FILE* f, const char* key) {
  snprintf(gJsonKey, sizeof(gJsonKey), "%s", key ? key : "");
  tool_jsonString(f, gJsonKey);
  fputs(": ", f);
}

void tool_jsonField(FILE* f, const char* key, double x) {
  tool_jsonKey(f, key);
  tool_jsonNumber(f, x);
}

long tool_jsonNulls(const char** first) {
  if (first) *first = gJsonFirstNull;
  return gJsonNulls;
}

void tool_jsonResetNulls(void) {
  gJsonNulls = 0;
  gJsonFirstNull[0] = 0;
}

void tool_jsonNullNote(FILE* f) {
  if (!gJsonNulls) return;
  fprintf(f, ", \"nonfinite\": {\"count\": %ld, \"first\": ", gJsonNulls);
  tool_jsonString(f, gJsonFirstNull);
  fprintf(f, ", \"note\": \"NaN or infinite values, written as null\"}");
}

void tool_jsonNumbers(FILE* f, const char* const* names, const double* x, int n) {
  fputc('{', f);
  for (int i = 0; i < n; i++) {
    fprintf(f, "%s", i ? "," : "");
    snprintf(gJsonKey, sizeof(gJsonKey), "%s", names[i]);
    tool_jsonString(f, names[i]);
    fputc(':', f);
    tool_jsonNumber(f, x[i]);
  }
  fputc('}', f);
}

void tool_jsonCounts(FILE* f, const char* const* names, const long* x, int n) {
  fputc('{', f);
  for (int i = 0; i < n; i++) {
    fprintf(f, "%s", i ? "," : "");
    tool_jsonString(f, names[i]);
    fprintf(f, ":%ld", x[i]);
  }
  fputc('}', f);
}

void tool_jsonHead(FILE* f, const char* tool, char* const* model, int nmodel) {
  fprintf(f, "{\"tool\":");
  tool_jsonString(f, tool);
  fprintf(f, ",\"version\":");
  tool_jsonString(f, mjdiff_versionString());
  fprintf(f, ",\"model\":[");
  for (int i = 0; i < nmodel; i++) {
    if (i) fputc(',', f);
    tool_jsonString(f, model[i]);
  }
  fputc(']', f);
}

// PATH.tmp, where a report is written before it is renamed to PATH
static int tmpPath(const char* path, char* buf, size_t n) {
  int len = snprintf(buf, n, "%s.tmp", path);
  return len > 0 && (size_t)len < n;
}

FILE* tool_openOut(const char* tool, const char* path) {
  char tmp[4200];
  FILE* f = tmpPath(path, tmp, sizeof(tmp)) ? fopen(tmp, "w") : NULL;
  if (!f) fprintf(stderr, "%s: error: cannot write %s\n", tool, path);
  return f;
}

int tool_closeOut(const char* tool, const char* path, FILE* f) {
  if (!f) return 0;
  char tmp[4200];
  int bad = ferror(f) != 0;
  bad |= fclose(f) != 0;
  bad |= !tmpPath(path, tmp, sizeof(tmp));
  if (bad || rename(tmp, path) != 0) {
    if (!bad || tmpPath(path, tmp, sizeof(tmp))) remove(tmp);
    fprintf(stderr, "%s: error: cannot write %s\n", tool, path);
    return 0;
  }
  return 1;
}

static const char* gWarningTool = "";
static long gWarnings = 0;

static void onWarning(const char* msg) {
  if (gWarnings++ < 5) fprintf(stderr, "%s: MuJoCo warning: %s\n", gWarningTool, msg);
}

// MuJoCo's fatal errors (which would print to stdout, append MUJOCO_LOG.TXT and exit): stderr,
// exit 1
static void onError(const char* msg) {
  fprintf(stderr, "%s: error: MuJoCo: %s\n", gWarningTool, msg);
  exit(TOOL_EXIT_RUNTIME);
}

void tool_catchWarnings(const char* tool) {
  gWarningTool = tool;
  mju_user_warning = onWarning;
  mju_user_error = onError;
}

long tool_warnings(void) {
  return gWarnings;
}

// next field of a ':'-separated list in place: returns it (NUL-terminated), *rest past it
static char* nextField(char** rest) {
  if (!*rest) return NULL;
  char* f = *rest;
  char* c = strchr(f, ':');
  if (c) {
    *c = 0;
    *rest = c + 1;
  } else {
    *rest = NULL;
  }
  return f;
}

void tool_parseGoal(const char* tool, const char* v, int* term, double lo[3], double hi[3]) {
  char buf[256];
  if (strlen(v) >= sizeof(buf)) tool_usageError(tool, "--goal: too long");
  strcpy(buf, v);
  char* rest = buf;
  char* tok = nextField(&rest);
  long t;
  if (!tok || !tool_parseInt(tok, 0, 100000, &t)) {
    tool_usageError(tool, "--goal '%s': expected TERM:X0,X1:Y0,Y1:Z0,Z1 (TERM a term index)", v);
  }
  *term = (int)t;
  for (int k = 0; k < 3; k++) {
    tok = nextField(&rest);
    char* comma = tok ? strchr(tok, ',') : NULL;
    if (!comma) tool_usageError(tool, "--goal '%s': axis %d: expected LO,HI", v, k);
    *comma = 0;
    if (!tool_parseDouble(tok, lo + k) || !tool_parseDouble(comma + 1, hi + k) || lo[k] > hi[k]) {
      tool_usageError(tool, "--goal '%s': axis %d: expected numbers LO <= HI", v, k);
    }
  }
  if (rest) tool_usageError(tool, "--goal '%s': too many fields", v);
}
