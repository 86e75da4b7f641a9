// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Network spec strings: "mlp:" widths [":" activations], for example "mlp:64,64" (tanh),
// "mlp:64,64:relu" (every layer), "mlp:128,64:elu,tanh" (one per layer).
//   spec   = "mlp:" width ("," width)* [":" act ("," act)*]
//   width  = digit+ (1..MJDIFF_NN_MAXWIDTH, no sign, no leading '+')
//   act    = "tanh" | "relu" | "elu" | "softplus"
// and "linear": no hidden layer (an affine map).
// Errors name the spec, the 0-based position and what was expected there.

#include <stdio.h>
#include <string.h>

#include <mjdiff/nn.h>

#include "internal.h"
#include "nn_internal.h"

static mjdiffStatus specError(char* err, int errsz, const char* spec, long pos, const char* what) {
  return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                      "network spec \"%s\": %s at position %ld (\"%.12s\")", spec, what, pos,
                      spec + pos);
}

mjdiffStatus mjdiff_parseMLPSpec(const char* spec, mjdiffMLPDef* def, char* err, int errsz) {
  if (!spec || !def) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "spec or def is NULL");
  if (strcmp(spec, "linear") == 0) {
    def->nhidden = 0;
    for (int i = 0; i < MJDIFF_NN_MAXHIDDEN; i++) def->width[i] = def->act[i] = 0;
    return MJDIFF_OK;
  }
  if (strncmp(spec, "mlp:", 4) != 0) {
    return specError(err, errsz, spec, 0,
                     "expected \"mlp:\" followed by layer widths, or \"linear\"");
  }
  int width[MJDIFF_NN_MAXHIDDEN], act[MJDIFF_NN_MAXHIDDEN], nw = 0, na = 0;
  const char* p = spec + 4;

  // widths
  for (;;) {
    if (*p < '0' || *p > '9') {
      return specError(err, errsz, spec, p - spec, "expected a layer width (a positive integer)");
    }
    long v = 0;
    const char* start = p;
    while (*p >= '0' && *p <= '9') {
      v = v * 10 + (*p - '0');
      if (v > MJDIFF_NN_MAXWIDTH) break;
      p++;
    }
    if (v < 1 || v > MJDIFF_NN_MAXWIDTH) {
      char what[80];
      snprintf(what, sizeof(what), "a layer width must be in [1, %d]", MJDIFF_NN_MAXWIDTH);
      return specError(err, errsz, spec, start - spec, what);
    }
    if (nw == MJDIFF_NN_MAXHIDDEN) {
      char what[80];
      snprintf(what, sizeof(what), "more than %d hidden layers", MJDIFF_NN_MAXHIDDEN);
      return specError(err, errsz, spec, start - spec, what);
    }
    width[nw++] = (int)v;
    if (*p == ',') {
      p++;
      continue;
    }
    if (*p == ':' || *p == 0) break;
    return specError(err, errsz, spec, p - spec, "expected ',', ':' or the end after a width");
  }

  // activations
  if (*p == ':') {
    p++;
    for (;;) {
      int found = -1;
      size_t len = 0;
      for (int a = 0; a < MJDIFF_ACT_COUNT; a++) {
        const char* name = mjdiff_activationName(a);
        size_t n = strlen(name);
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == 0)) {
          found = a;
          len = n;
          break;
        }
      }
      if (found < 0) {
        return specError(err, errsz, spec, p - spec,
                         "expected an activation (tanh, relu, elu or softplus)");
      }
      if (na == nw) {
        char what[96];
        snprintf(what, sizeof(what), "more activations than the %d hidden layers", nw);
        return specError(err, errsz, spec, p - spec, what);
      }
      act[na++] = found;
      p += len;
      if (*p == ',') {
        p++;
        continue;
      }
      break;  // the end (the match above allows ',' or the end only)
    }
    if (na != 1 && na != nw) {
      char what[96];
      snprintf(what, sizeof(what), "%d activations for %d hidden layers (give 1 or %d)", na, nw,
               nw);
      return specError(err, errsz, spec, p - spec, what);
    }
  }

  def->nhidden = nw;
  for (int i = 0; i < MJDIFF_NN_MAXHIDDEN; i++) {
    def->width[i] = i < nw ? width[i] : 0;
    def->act[i] = i >= nw ? 0 : na == 0 ? MJDIFF_ACT_TANH : na == 1 ? act[0] : act[i];
  }
  return MJDIFF_OK;
}

int mjdiff_formatMLPSpec(const mjdiffMLPDef* def, char* buf, int bufsz) {
  if (!def || def->nhidden < 0 || def->nhidden > MJDIFF_NN_MAXHIDDEN) return -1;
  if (def->nhidden == 0) {
    if (buf && bufsz > 0) snprintf(buf, (size_t)bufsz, "linear");
    return 6;
  }
  char tmp[MJDIFF_NN_MAXHIDDEN * 16 + 8];
  int n = snprintf(tmp, sizeof(tmp), "mlp:");
  for (int i = 0; i < def->nhidden; i++) {
    if (def->act[i] < 0 || def->act[i] >= MJDIFF_ACT_COUNT) return -1;
    n += snprintf(tmp + n, sizeof(tmp) - (size_t)n, i ? ",%d" : "%d", def->width[i]);
  }
  for (int i = 0; i < def->nhidden; i++) {
    n += snprintf(tmp + n, sizeof(tmp) - (size_t)n, "%c%s", i ? ',' : ':',
                  mjdiff_activationName(def->act[i]));
  }
  if (buf && bufsz > 0) snprintf(buf, (size_t)bufsz, "%s", tmp);
  return n;
}
