// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.

#include "guard.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int readerFail(char* err, int errsz, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int readerFail(char* err, int errsz, const char* fmt, ...) {
  if (err && errsz > 0) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(err, (size_t)errsz, fmt, args);
    va_end(args);
  }
  return -1;
}

void tool_readerInit(toolReader* r, FILE* f, const char* path, size_t maxlen, long maxlines) {
  memset(r, 0, sizeof(*r));
  r->f = f;
  r->path = path ? path : "(input)";
  r->maxlen = maxlen;
  r->maxlines = maxlines;
}

int tool_readLine(toolReader* r, char** line, size_t* len, char* err, int errsz) {
  if (err && errsz > 0) err[0] = 0;
  size_t n = 0;
  int c = EOF;
  r->unterminated = 0;
  while ((c = getc(r->f)) != EOF && c != '\n') {
    if (c == 0) {
      return readerFail(err, errsz, "%s: line %ld, column %zu: NUL byte (a binary file?)", r->path,
                        r->line + 1, n + 1);
    }
    if (n >= r->maxlen) {
      return readerFail(err, errsz, "%s: line %ld: longer than %zu bytes", r->path, r->line + 1,
                        r->maxlen);
    }
    if (n + 1 >= r->cap) {
      size_t cap = r->cap ? 2 * r->cap : 256;
      if (cap > r->maxlen + 1) cap = r->maxlen + 1;
      if (cap < n + 2) cap = n + 2;
      char* grown = (char*)realloc(r->buf, cap);
      if (!grown) return readerFail(err, errsz, "%s: out of memory", r->path);
      r->buf = grown;
      r->cap = cap;
    }
    r->buf[n++] = (char)c;
  }
  if (ferror(r->f)) {
    return readerFail(err, errsz, "%s: cannot read: %s", r->path, strerror(errno ? errno : EIO));
  }
  if (c == EOF && n == 0) return 0;
  if (r->line >= r->maxlines) {
    return readerFail(err, errsz, "%s: more than %ld lines", r->path, r->maxlines);
  }
  if (!r->buf) {
    r->buf = (char*)malloc(1);
    if (!r->buf) return readerFail(err, errsz, "%s: out of memory", r->path);
    r->cap = 1;
  }
  r->line++;
  r->unterminated = c == EOF;
  if (n > 0 && r->buf[n - 1] == '\r') n--;
  r->buf[n] = 0;
  char* s = r->buf;
  if (r->line == 1 && n >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3)) {
    s += 3;
    n -= 3;
  }
  *line = s;
  if (len) *len = n;
  return 1;
}

void tool_readerFree(toolReader* r) {
  free(r->buf);
  r->buf = NULL;
  r->cap = 0;
}

int tool_mulSize(size_t a, size_t b, size_t c, size_t* out) {
  *out = 0;
  if (b && a > SIZE_MAX / b) return 0;
  size_t ab = a * b;
  if (c && ab > SIZE_MAX / c) return 0;
  *out = ab * c;
  return 1;
}

void* tool_callocArray(size_t a, size_t b, size_t size) {
  size_t bytes;
  if (!tool_mulSize(a, b, size ? size : 1, &bytes)) return NULL;
  size_t count = a * b;
  return calloc(count ? count : 1, size ? size : 1);
}
