// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-sysid recordings: CSV reading and writing, alignment to the model timestep.
//
// Samples (t_i, y_i), i = 0..n-1, t strictly increasing; model steps s_k = t_0 + k h,
// k = 0..T, T = floor((t_{n-1} - t_0) / h + 1e-9), h = m->opt.timestep.
//   measurement  y(s_k) = (1 - a) y_j + a y_{j+1},  a = (s_k - t_j) / (t_{j+1} - t_j),
//                j the last sample with t_j <= s_k (a sample within 1e-9 h of s_k is taken as is)
//   control      u_k = u_j                           (zero-order hold; k = 0..T-1)
//   quaternion   q(s_k) = lerp / |lerp|              (ball and free joints, all 4 columns present)
//
// The CSV dialect: comma-separated, no quoting; names and numbers trimmed of blanks (so CRLF line
// ends are fine); an optional UTF-8 byte order mark; trailing blank lines are ignored, blank lines
// between rows are an error; every row ends with a line end (a last row without one may be cut
// off). Numbers are parsed whole with strtod and must be finite and within 1e10; lines are read
// by tool_readLine (bounded, no NUL bytes).

#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "recording.h"

// a sample within this fraction of a timestep of a step time counts as at the step
#define TIME_TOL 1e-9

// largest recording accepted: (T+1) x (nq + nv + nsensordata + nu) numbers
#define MAX_ALIGNED 100000000.0

// largest gap between two samples, in model timesteps (a gap is interpolated step by step)
#define MAX_GAP_STEPS 1000

// longest line and most lines of a CSV file
#define MAX_LINE_BYTES ((size_t)1 << 24)
#define MAX_LINES 50000000L

// largest magnitude of a number (MuJoCo's own bound on states, mjMAXVAL)
#define MAX_VALUE 1e10

//---------------------------------- column names -------------------------------------------------

typedef enum colKind_ { COL_TIME = 0, COL_CTRL, COL_QPOS, COL_QVEL, COL_SENSOR } colKind;

// name of object id of type (mjOBJ_*), "" if it has none
static const char* objName(const mjModel* m, int type, int id) {
  const int* adr = NULL;
  switch (type) {
    case mjOBJ_ACTUATOR:
      adr = m->name_actuatoradr;
      break;
    case mjOBJ_JOINT:
      adr = m->name_jntadr;
      break;
    case mjOBJ_SENSOR:
      adr = m->name_sensoradr;
      break;
    default:
      return "";
  }
  return m->names + adr[id];
}

// number of qpos / qvel coordinates of joint j
static int jointNq(const mjModel* m, int j) {
  switch (m->jnt_type[j]) {
    case mjJNT_FREE:
      return 7;
    case mjJNT_BALL:
      return 4;
    default:
      return 1;
  }
}

static int jointNv(const mjModel* m, int j) {
  switch (m->jnt_type[j]) {
    case mjJNT_FREE:
      return 6;
    case mjJNT_BALL:
      return 3;
    default:
      return 1;
  }
}

// the joint owning qpos[i] (qvel[i] if vel), and the component index within it
static int jointOf(const mjModel* m, int i, int vel, int* comp) {
  for (int j = 0; j < m->njnt; j++) {
    int adr = vel ? m->jnt_dofadr[j] : m->jnt_qposadr[j];
    int n = vel ? jointNv(m, j) : jointNq(m, j);
    if (i >= adr && i < adr + n) {
      *comp = i - adr;
      return j;
    }
  }
  return -1;
}

static int sensorOf(const mjModel* m, int i, int* comp) {
  for (int s = 0; s < m->nsensor; s++) {
    if (i >= m->sensor_adr[s] && i < m->sensor_adr[s] + m->sensor_dim[s]) {
      *comp = i - m->sensor_adr[s];
      return s;
    }
  }
  return -1;
}

int sysid_columnCount(const mjModel* m) {
  return 1 + m->nu + m->nq + m->nv + m->nsensordata;
}

int sysid_columnName(const mjModel* m, int i, char* buf, int bufsz) {
  if (!m || !buf || bufsz <= 0) return -1;
  buf[0] = 0;
  if (i < 0 || i >= sysid_columnCount(m)) return -1;
  int n = 0;
  if (i == 0) {
    n = snprintf(buf, (size_t)bufsz, "time");
  } else if ((i -= 1) < m->nu) {
    const char* name = objName(m, mjOBJ_ACTUATOR, i);
    if (!*name) return -1;
    n = snprintf(buf, (size_t)bufsz, "ctrl:%s", name);
  } else if ((i -= m->nu) < m->nq + m->nv) {
    int vel = i >= m->nq, comp = 0;
    int j = jointOf(m, vel ? i - m->nq : i, vel, &comp);
    const char* name = j < 0 ? "" : objName(m, mjOBJ_JOINT, j);
    if (!*name) return -1;
    if (jointNq(m, j) == 1) {
      n = snprintf(buf, (size_t)bufsz, "%s:%s", vel ? "qvel" : "qpos", name);
    } else {
      n = snprintf(buf, (size_t)bufsz, "%s:%s:%d", vel ? "qvel" : "qpos", name, comp);
    }
  } else {
    int comp = 0;
    int s = sensorOf(m, i - m->nq - m->nv, &comp);
    const char* name = s < 0 ? "" : objName(m, mjOBJ_SENSOR, s);
    if (!*name) return -1;
    if (m->sensor_dim[s] == 1) {
      n = snprintf(buf, (size_t)bufsz, "sensor:%s", name);
    } else {
      n = snprintf(buf, (size_t)bufsz, "sensor:%s:%d", name, comp);
    }
  }
  if (n < 0 || n >= bufsz) {
    buf[0] = 0;
    return -1;
  }
  return 0;
}

//---------------------------------- reading ------------------------------------------------------

// what a column of the file fills
typedef struct column_ {
  colKind kind;
  int index;   // into ctrl (nu), qpos (nq), qvel (nv) or sensordata
  char* name;  // as in the header (trimmed)
} column;

// parse state: everything read so far, freed in one place
typedef struct reader_ {
  const mjModel* m;
  const char* path;
  char* err;
  int errsz;
  toolReader in;  // lines of the file
  char* line;     // the current line (in's buffer)
  column* col;  // (ncol)
  int ncol;
  double* data;  // (nrow x ncol) samples
  int* lineno;   // (nrow) file line of each sample
  int nrow, caprow;
  int missing;    // sensor, qpos and qvel fields may be empty or NaN: not measured
} reader;

static void fail(reader* r, int line, const char* colname, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

// "PATH: line L: COLUMN: message" (line and column when known)
static void fail(reader* r, int line, const char* colname, const char* fmt, ...) {
  if (!r->err || r->errsz <= 0) return;
  char msg[600];
  va_list args;
  va_start(args, fmt);
  vsnprintf(msg, sizeof(msg), fmt, args);
  va_end(args);
  char where[64] = "";
  if (line > 0) snprintf(where, sizeof(where), "line %d: ", line);
  snprintf(r->err, (size_t)r->errsz, "%s: %s%s%s%s", r->path, where, colname ? colname : "",
           colname ? ": " : "", msg);
}

// read one line into r->line (tool_readLine: bounded length and count, no NUL bytes); 1, 0 at the
// end of the file, -1 with the message in err
static int readLine(reader* r) {
  return tool_readLine(&r->in, &r->line, NULL, r->err, r->errsz);
}

static int isBlank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

// trim blanks in place
static char* trim(char* s) {
  while (isBlank(*s)) s++;
  size_t n = strlen(s);
  while (n > 0 && isBlank(s[n - 1])) s[--n] = 0;
  return s;
}

static int blankLine(const char* s) {
  for (; *s; s++) {
    if (!isBlank(*s)) return 0;
  }
  return 1;
}

// split s at commas in place; fields (trimmed) into field[0..cap); returns the field count (may
// exceed cap, then only cap are stored)
static int splitFields(char* s, char** field, int cap) {
  int n = 0;
  for (;;) {
    char* comma = strchr(s, ',');
    if (comma) *comma = 0;
    if (n < cap) field[n] = trim(s);
    n++;
    if (!comma) return n;
    s = comma + 1;
  }
}

static int countFields(const char* s) {
  int n = 1;
  for (; *s; s++) n += *s == ',';
  return n;
}

// component suffix ":K" of rest: the name part is rest[0..*namelen), K in *comp; 0 if none
static int splitComponent(const char* rest, size_t* namelen, long* comp) {
  const char* colon = strrchr(rest, ':');
  if (!colon || !colon[1] || colon == rest) return 0;
  long k = 0;
  for (const char* p = colon + 1; *p; p++) {
    if (*p < '0' || *p > '9') return 0;
    if (k > 100000000) return 0;
    k = 10 * k + (*p - '0');
  }
  *namelen = (size_t)(colon - rest);
  *comp = k;
  return 1;
}

static const char* jointTypeName(int type) {
  switch (type) {
    case mjJNT_FREE:
      return "free";
    case mjJNT_BALL:
      return "ball";
    case mjJNT_SLIDE:
      return "slide";
    default:
      return "hinge";
  }
}

// resolve the header's column c; 0 or -1 (message)
static int resolveColumn(reader* r, int c) {
  const mjModel* m = r->m;
  column* col = r->col + c;
  const char* name = col->name;
  if (!*name) {
    fail(r, 1, NULL, "column %d has an empty name", c + 1);
    return -1;
  }
  if (!strcmp(name, "time")) {
    col->kind = COL_TIME;
    col->index = 0;
    return 0;
  }

  const char* colon = strchr(name, ':');
  size_t plen = colon ? (size_t)(colon - name) : 0;
  int type;
  const char* what;
  if (colon && plen == 4 && !strncmp(name, "ctrl", 4)) {
    col->kind = COL_CTRL, type = mjOBJ_ACTUATOR, what = "actuator";
  } else if (colon && plen == 4 && !strncmp(name, "qpos", 4)) {
    col->kind = COL_QPOS, type = mjOBJ_JOINT, what = "joint";
  } else if (colon && plen == 4 && !strncmp(name, "qvel", 4)) {
    col->kind = COL_QVEL, type = mjOBJ_JOINT, what = "joint";
  } else if (colon && plen == 6 && !strncmp(name, "sensor", 6)) {
    col->kind = COL_SENSOR, type = mjOBJ_SENSOR, what = "sensor";
  } else {
    fail(r, 1, name,
         "unknown column (expected time, ctrl:ACTUATOR, qpos:JOINT[:K], "
         "qvel:JOINT[:K] or sensor:SENSOR[:K])");
    return -1;
  }

  // the whole rest as a name, else NAME:K
  const char* rest = colon + 1;
  int id = *rest ? mj_name2id(m, type, rest) : -1;
  long comp = -1;
  char objname[512];
  snprintf(objname, sizeof(objname), "%s", rest);
  if (id < 0) {
    size_t namelen = 0;
    if (splitComponent(rest, &namelen, &comp) && namelen < sizeof(objname)) {
      memcpy(objname, rest, namelen);
      objname[namelen] = 0;
      id = mj_name2id(m, type, objname);
    }
    if (id < 0) {
      fail(r, 1, name, "no %s named '%s'", what, objname);
      return -1;
    }
  }

  // number of components and the first index
  int ncomp, adr;
  if (col->kind == COL_CTRL) {
    ncomp = 1, adr = id;
  } else if (col->kind == COL_QPOS) {
    ncomp = jointNq(m, id), adr = m->jnt_qposadr[id];
  } else if (col->kind == COL_QVEL) {
    ncomp = jointNv(m, id), adr = m->jnt_dofadr[id];
  } else {
    ncomp = m->sensor_dim[id], adr = m->sensor_adr[id];
  }
  if (comp < 0) {
    if (ncomp != 1) {
      if (col->kind == COL_SENSOR) {
        fail(r, 1, name, "sensor '%s' has %d components: name one as %.*s:%s:K, K = 0..%d", objname,
             ncomp, (int)plen, name, objname, ncomp - 1);
      } else {
        fail(r, 1, name, "joint '%s' is a %s joint: name a component as %.*s:%s:K, K = 0..%d",
             objname, jointTypeName(m->jnt_type[id]), (int)plen, name, objname, ncomp - 1);
      }
      return -1;
    }
    comp = 0;
  } else if (comp >= ncomp) {
    fail(r, 1, name, "component %ld out of range: %s '%s' has components 0..%d", comp, what,
         objname, ncomp - 1);
    return -1;
  }
  col->index = adr + (int)comp;
  return 0;
}

// parse a whole field as a finite number; 0 or -1 (message)
static int parseNumber(reader* r, int line, int c, const char* s, double* out) {
  const char* name = r->col[c].name;
  colKind kind = r->col[c].kind;
  if (r->missing && (kind == COL_SENSOR || kind == COL_QPOS || kind == COL_QVEL) &&
      (!*s || !strcmp(s, "nan") || !strcmp(s, "NaN") || !strcmp(s, "NAN"))) {
    *out = NAN;
    return 0;
  }
  if (!*s) {
    fail(r, line, name, "empty field");
    return -1;
  }
  char* end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end) {
    fail(r, line, name, "cannot parse '%s' as a number", s);
    return -1;
  }
  if (isnan(v)) {
    fail(r, line, name, "'%s' is NaN (not measured: leave the column out)", s);
    return -1;
  }
  if (isinf(v)) {
    fail(r, line, name, "'%s' is not finite", s);
    return -1;
  }
  if (fabs(v) > MAX_VALUE) {
    fail(r, line, name, "'%s' is out of range (|value| > %g, MuJoCo's bound on states)", s,
         MAX_VALUE);
    return -1;
  }
  // ERANGE with a finite value is an underflow to (near) zero: accepted
  *out = v;
  return 0;
}

static int addRow(reader* r, int line) {
  if (r->nrow == r->caprow) {
    int cap = r->caprow ? 2 * r->caprow : 64;
    if (cap > INT_MAX / 2 / (r->ncol + 1)) return -1;
    double* data = (double*)realloc(r->data, sizeof(double) * (size_t)cap * (size_t)r->ncol);
    if (!data) return -1;
    r->data = data;
    int* lineno = (int*)realloc(r->lineno, sizeof(int) * (size_t)cap);
    if (!lineno) return -1;
    r->lineno = lineno;
    r->caprow = cap;
  }
  r->lineno[r->nrow] = line;
  r->nrow++;
  return 0;
}

// header and rows into r; 0 or -1 (message)
static int readTable(reader* r) {
  int line = 0;
  int st = readLine(r);
  line++;
  if (st < 0) return -1;
  if (st == 0) {
    fail(r, 0, NULL, "empty file (no header)");
    return -1;
  }

  // header (tool_readLine skips a UTF-8 byte order mark)
  char* header = r->line;
  if (blankLine(header)) {
    fail(r, 1, NULL, "empty header (expected column names, e.g. time,qpos:JOINT)");
    return -1;
  }
  r->ncol = countFields(header);
  r->col = (column*)calloc((size_t)r->ncol, sizeof(column));
  char** field = (char**)calloc((size_t)r->ncol, sizeof(char*));
  if (!r->col || !field) {
    free(field);
    fail(r, 0, NULL, "out of memory");
    return -1;
  }
  splitFields(header, field, r->ncol);
  int ok = 1;
  for (int c = 0; c < r->ncol && ok; c++) {
    r->col[c].name = (char*)malloc(strlen(field[c]) + 1);
    if (!r->col[c].name) {
      fail(r, 0, NULL, "out of memory");
      ok = 0;
      break;
    }
    strcpy(r->col[c].name, field[c]);
  }
  for (int c = 0; c < r->ncol && ok; c++) {
    if (resolveColumn(r, c)) ok = 0;
  }

  // duplicates: two columns filling the same value
  for (int c = 0; c < r->ncol && ok; c++) {
    for (int c2 = 0; c2 < c; c2++) {
      if (r->col[c2].kind == r->col[c].kind && r->col[c2].index == r->col[c].index) {
        if (!strcmp(r->col[c2].name, r->col[c].name)) {
          fail(r, 1, r->col[c].name, "duplicate column (columns %d and %d)", c2 + 1, c + 1);
        } else {
          fail(r, 1, r->col[c].name, "duplicate column: same value as column %d (%s)", c2 + 1,
               r->col[c2].name);
        }
        ok = 0;
        break;
      }
    }
  }
  int tcol = -1;
  for (int c = 0; c < r->ncol && ok; c++) {
    if (r->col[c].kind == COL_TIME) tcol = c;
  }
  if (ok && tcol < 0) {
    fail(r, 1, NULL, "missing 'time' column");
    ok = 0;
  }
  if (!ok) {
    free(field);
    return -1;
  }

  // rows
  int blank = 0;  // line of the first blank line, if any so far
  while ((st = readLine(r)) > 0) {
    line++;
    if (blankLine(r->line)) {
      if (!blank) blank = line;
      continue;
    }
    if (blank) {
      fail(r, blank, NULL, "blank line between rows");
      ok = 0;
      break;
    }
    int n = splitFields(r->line, field, r->ncol);
    if (n != r->ncol) {
      fail(r, line, NULL, "%d fields, but the header names %d columns", n, r->ncol);
      ok = 0;
      break;
    }
    if (r->in.unterminated) {
      fail(r, line, NULL,
           "the last row has no line end: the file may be cut off (end it with a newline if it "
           "is complete)");
      ok = 0;
      break;
    }
    if (addRow(r, line)) {
      fail(r, line, NULL, "too many rows or out of memory");
      ok = 0;
      break;
    }
    double* row = r->data + (size_t)(r->nrow - 1) * (size_t)r->ncol;
    for (int c = 0; c < r->ncol && ok; c++) {
      if (parseNumber(r, line, c, field[c], row + c)) ok = 0;
    }
    if (!ok) break;
    if (r->nrow > 1) {
      double tprev = row[tcol - r->ncol];
      if (!(row[tcol] > tprev)) {
        fail(r, line, "time",
             "%.17g is not after the previous sample's %.17g (time must "
             "increase strictly)",
             row[tcol], tprev);
        ok = 0;
        break;
      }
      double h = r->m->opt.timestep;
      if (h > 0 && (row[tcol] - tprev) / h > MAX_GAP_STEPS) {
        fail(r, line, "time",
             "%.17g is %g s after the previous sample: more than %d timesteps of %g s (samples "
             "at most that far apart are interpolated)",
             row[tcol], row[tcol] - tprev, MAX_GAP_STEPS, h);
        ok = 0;
        break;
      }
    }
  }
  free(field);
  if (!ok || st < 0) return -1;
  if (r->nrow == 0) {
    fail(r, 0, NULL, "no data rows (only a header)");
    return -1;
  }
  return 0;
}

// normalise the quaternion q (4) unless it is zero
static void normalise4(double* q) {
  double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  if (n > 0) {
    for (int i = 0; i < 4; i++) q[i] /= n;
  }
}

// zeroed (a x b) array, at least one element; NULL if the size overflows (tool_callocArray)
static void* allocArray(size_t a, size_t b, size_t size) {
  return tool_callocArray(a, b, size);
}

// align the samples in r to the model's steps into rec; 0 or -1 (message)
static int align(reader* r, sysidRecording* rec) {
  const mjModel* m = r->m;
  int nu = m->nu, nq = m->nq, nv = m->nv, ns = m->nsensordata, ncol = r->ncol;
  double h = m->opt.timestep;
  int tcol = 0;
  for (int c = 0; c < ncol; c++) {
    if (r->col[c].kind == COL_TIME) tcol = c;
  }
  const double* time = r->data + tcol;  // time[i * ncol]
  double t0 = time[0], tlast = time[(size_t)(r->nrow - 1) * (size_t)ncol];
  if (!(h > 0)) {
    fail(r, 0, NULL, "model timestep %g is not positive", h);
    return -1;
  }
  double steps = floor((tlast - t0) / h + TIME_TOL);
  if ((steps + 1) * (double)(nu + nq + nv + ns + 1) > MAX_ALIGNED) {
    fail(r, r->lineno[r->nrow - 1], "time", "recording spans %.0f steps of %g s: too long", steps,
         h);
    return -1;
  }
  int T = (int)steps;
  size_t T1 = (size_t)T + 1;

  rec->T = T;
  rec->t0 = t0;
  rec->nrow = r->nrow;
  rec->ctrl = (double*)allocArray((size_t)T, (size_t)nu, sizeof(double));
  rec->has_ctrl = (int*)allocArray((size_t)nu, 1, sizeof(int));
  rec->qpos = (double*)allocArray(T1, (size_t)nq, sizeof(double));
  rec->qvel = (double*)allocArray(T1, (size_t)nv, sizeof(double));
  rec->sensor = (double*)allocArray(T1, (size_t)ns, sizeof(double));
  if (!rec->ctrl || !rec->has_ctrl || !rec->qpos || !rec->qvel || !rec->sensor) {
    fail(r, 0, NULL, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < T1 * (size_t)nq; i++) rec->qpos[i] = NAN;
  for (size_t i = 0; i < T1 * (size_t)nv; i++) rec->qvel[i] = NAN;
  for (size_t i = 0; i < T1 * (size_t)ns; i++) rec->sensor[i] = NAN;
  for (int c = 0; c < ncol; c++) {
    if (r->col[c].kind == COL_CTRL) rec->has_ctrl[r->col[c].index] = 1;
  }

  // quaternions to normalise: ball and free joints with all 4 columns present
  int* hasq = (int*)allocArray((size_t)nq, 1, sizeof(int));
  if (!hasq) {
    fail(r, 0, NULL, "out of memory");
    return -1;
  }
  for (int c = 0; c < ncol; c++) {
    if (r->col[c].kind == COL_QPOS) hasq[r->col[c].index] = 1;
  }

  int j = 0;  // last sample with time <= step time (+ tolerance)
  for (int k = 0; k <= T; k++) {
    double tk = t0 + k * h;
    double tol = TIME_TOL * h;
    while (j + 1 < r->nrow && time[(size_t)(j + 1) * ncol] <= tk + tol) j++;
    const double* y0 = r->data + (size_t)j * ncol;
    int exact = j + 1 >= r->nrow || time[(size_t)j * ncol] >= tk - tol;
    const double* y1 = exact ? y0 : y0 + ncol;
    double a = exact ? 0 : (tk - y0[tcol]) / (y1[tcol] - y0[tcol]);
    if (a < 0) a = 0;
    if (a > 1) a = 1;

    for (int c = 0; c < ncol; c++) {
      const column* col = r->col + c;
      double v = exact ? y0[c] : (1 - a) * y0[c] + a * y1[c];
      switch (col->kind) {
        case COL_CTRL:
          if (k < T) rec->ctrl[(size_t)k * nu + col->index] = y0[c];  // hold
          break;
        case COL_QPOS:
          rec->qpos[(size_t)k * nq + col->index] = v;
          break;
        case COL_QVEL:
          rec->qvel[(size_t)k * nv + col->index] = v;
          break;
        case COL_SENSOR:
          rec->sensor[(size_t)k * ns + col->index] = v;
          break;
        default:
          break;
      }
    }

    // interpolated quaternions back to unit length
    if (!exact) {
      for (int jnt = 0; jnt < m->njnt; jnt++) {
        int type = m->jnt_type[jnt];
        if (type != mjJNT_BALL && type != mjJNT_FREE) continue;
        int adr = m->jnt_qposadr[jnt] + (type == mjJNT_FREE ? 3 : 0);
        if (hasq[adr] && hasq[adr + 1] && hasq[adr + 2] && hasq[adr + 3]) {
          normalise4(rec->qpos + (size_t)k * nq + adr);
        }
      }
    }
  }
  free(hasq);
  return 0;
}

static void freeReader(reader* r) {
  tool_readerFree(&r->in);
  if (r->col) {
    for (int c = 0; c < r->ncol; c++) free(r->col[c].name);
  }
  free(r->col);
  free(r->data);
  free(r->lineno);
}

int sysid_readRecording(const mjModel* m, const char* path, sysidRecording* rec, char* err,
                        int errsz) {
  if (err && errsz > 0) err[0] = 0;
  if (rec) memset(rec, 0, sizeof(*rec));
  reader r;
  memset(&r, 0, sizeof(r));
  r.m = m;
  r.path = path ? path : "(null)";
  r.err = err;
  r.errsz = errsz;
  if (!m || !path || !rec) {
    fail(&r, 0, NULL, "sysid_readRecording: model, path and recording must not be NULL");
    return -1;
  }

  FILE* f = fopen(path, "rb");
  if (!f) {
    fail(&r, 0, NULL, "cannot open: %s", strerror(errno));
    return -1;
  }
  int st = sysid_readRecordingFile(m, f, path, rec, err, errsz);
  fclose(f);
  return st;
}

int sysid_readRecordingFile(const mjModel* m, FILE* f, const char* path, sysidRecording* rec,
                            char* err, int errsz) {
  return sysid_readRecordingMissing(m, f, path, 0, rec, err, errsz);
}

int sysid_readRecordingMissing(const mjModel* m, FILE* f, const char* path, int missing,
                               sysidRecording* rec, char* err, int errsz) {
  if (err && errsz > 0) err[0] = 0;
  if (rec) memset(rec, 0, sizeof(*rec));
  reader r;
  memset(&r, 0, sizeof(r));
  r.m = m;
  r.path = path ? path : "(null)";
  r.err = err;
  r.errsz = errsz;
  if (!m || !f || !rec) {
    fail(&r, 0, NULL, "sysid_readRecording: model, file and recording must not be NULL");
    return -1;
  }
  r.missing = missing;
  snprintf(rec->path, sizeof(rec->path), "%s", r.path);
  tool_readerInit(&r.in, f, r.path, MAX_LINE_BYTES, MAX_LINES);
  int st = readTable(&r);
  if (!st) st = align(&r, rec);
  freeReader(&r);
  if (st) {
    sysid_freeRecording(rec);
    return -1;
  }
  return 0;
}

void sysid_freeRecording(sysidRecording* rec) {
  if (!rec) return;
  free(rec->ctrl);
  free(rec->has_ctrl);
  free(rec->qpos);
  free(rec->qvel);
  free(rec->sensor);
  memset(rec, 0, sizeof(*rec));
}

//---------------------------------- writing ------------------------------------------------------

// value of column i (in the sysid_columnName layout) at row k
static double columnValue(const mjModel* m, int i, int k, int T, double t0, const double* ctrl,
                          const double* qpos, const double* qvel, const double* sensor) {
  if (i == 0) return t0 + k * m->opt.timestep;
  i -= 1;
  if (i < m->nu) {
    if (T == 0) return 0;
    int kk = k < T ? k : T - 1;  // the last row repeats the last control
    return ctrl[(size_t)kk * m->nu + i];
  }
  i -= m->nu;
  if (i < m->nq) return qpos[(size_t)k * m->nq + i];
  i -= m->nq;
  if (i < m->nv) return qvel[(size_t)k * m->nv + i];
  return sensor[(size_t)k * m->nsensordata + i - m->nv];
}

// 1 if the array column i reads was given (time always is)
static int columnGiven(const mjModel* m, int i, const double* ctrl, const double* qpos,
                       const double* qvel, const double* sensor) {
  if (i == 0) return 1;
  i -= 1;
  if (i < m->nu) return ctrl != NULL;
  i -= m->nu;
  if (i < m->nq) return qpos != NULL;
  i -= m->nq;
  if (i < m->nv) return qvel != NULL;
  return sensor != NULL;
}

static void writeError(char* err, int errsz, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void writeError(char* err, int errsz, const char* fmt, ...) {
  if (!err || errsz <= 0) return;
  va_list args;
  va_start(args, fmt);
  vsnprintf(err, (size_t)errsz, fmt, args);
  va_end(args);
}

// Writes the columns of sysid_columnName in that order, leaving out (besides elements without a
// name, which a CSV cannot name) every column whose array is NULL or that is NaN at every step
// (not measured), so that writing a recording read from a file gives back its columns. A column
// NaN at some steps only is an error. Nullable: ctrl, qpos, qvel, sensor.
int sysid_writeRecording(const mjModel* m, const char* path, int T, double t0, const double* ctrl,
                         const double* qpos, const double* qvel, const double* sensor, char* err,
                         int errsz) {
  if (err && errsz > 0) err[0] = 0;
  if (!m || !path) {
    writeError(err, errsz, "sysid_writeRecording: model and path must not be NULL");
    return -1;
  }
  if (T < 0) {
    writeError(err, errsz, "%s: number of steps must be >= 0, got %d", path, T);
    return -1;
  }
  if (!isfinite(t0)) {
    writeError(err, errsz, "%s: start time must be finite, got %g", path, t0);
    return -1;
  }
  size_t plen = strlen(path);
  char* tmp = (char*)malloc(plen + 5);
  int ncol = sysid_columnCount(m);
  int* use = (int*)calloc((size_t)ncol, sizeof(int));
  if (!tmp || !use) {
    free(tmp);
    free(use);
    writeError(err, errsz, "%s: out of memory", path);
    return -1;
  }
  memcpy(tmp, path, plen);
  memcpy(tmp + plen, ".tmp", 5);

  // columns to write
  char name[600];
  int st = 0;
  for (int i = 0; i < ncol && !st; i++) {
    if (sysid_columnName(m, i, name, sizeof(name))) continue;
    if (!columnGiven(m, i, ctrl, qpos, qvel, sensor)) continue;
    int isctrl = i >= 1 && i <= m->nu;
    int nrow = isctrl ? T : T + 1;  // controls: T rows
    int nnan = 0, firstbad = -1, inf = 0;
    for (int k = 0; k < nrow; k++) {
      double v = columnValue(m, i, k, T, t0, ctrl, qpos, qvel, sensor);
      if (isfinite(v)) continue;
      if (firstbad < 0) firstbad = k;
      if (isnan(v)) {
        nnan++;
      } else {
        inf = 1;
      }
    }
    if (!isctrl && i > 0 && nnan == nrow) continue;  // not measured
    if (firstbad >= 0) {
      writeError(err, errsz, "%s: %s: value at step %d is %s", path, name, firstbad,
                 inf ? "not finite" : "NaN (a column must be measured at every step or none)");
      st = -1;
      break;
    }
    use[i] = 1;
  }

  FILE* f = NULL;
  if (!st) {
    f = fopen(tmp, "w");
    if (!f) {
      writeError(err, errsz, "%s: cannot open %s for writing: %s", path, tmp, strerror(errno));
      st = -1;
    }
  }
  if (!st) {
    // header
    int first = 1;
    for (int i = 0; i < ncol; i++) {
      if (!use[i]) continue;
      sysid_columnName(m, i, name, sizeof(name));
      fprintf(f, "%s%s", first ? "" : ",", name);
      first = 0;
    }
    fputc('\n', f);

    // rows
    for (int k = 0; k <= T && !ferror(f); k++) {
      first = 1;
      for (int i = 0; i < ncol; i++) {
        if (!use[i]) continue;
        fprintf(f, "%s%.17g", first ? "" : ",",
                columnValue(m, i, k, T, t0, ctrl, qpos, qvel, sensor));
        first = 0;
      }
      fputc('\n', f);
    }
    int werr = ferror(f) ? errno : 0;
    if (fclose(f) != 0 && !werr) werr = errno ? errno : EIO;
    f = NULL;
    if (werr) {
      writeError(err, errsz, "%s: cannot write %s: %s", path, tmp, strerror(werr));
      st = -1;
    } else if (rename(tmp, path) != 0) {
      writeError(err, errsz, "%s: cannot rename %s to it: %s", path, tmp, strerror(errno));
      st = -1;
    }
    if (st) remove(tmp);
  }
  free(tmp);
  free(use);
  return st;
}

int sysid_checkControls(const mjModel* m, const sysidRecording* rec, char* err, int errsz) {
  for (int i = 0; i < m->nu; i++) {
    const char* name = mj_id2name(m, mjOBJ_ACTUATOR, i);
    if (rec->has_ctrl[i] || !name || !name[0]) continue;
    snprintf(err, (size_t)errsz,
             "%s: missing column 'ctrl:%s' (actuator %d; give its control, zeros if unused)",
             rec->path, name, i);
    return -1;
  }
  return 0;
}
