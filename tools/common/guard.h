// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Guards for input the tools read: a line reader with bounded line length and line count that
// refuses NUL bytes, and overflow-checked sizes for allocations derived from input. Plain C, no
// MuJoCo: the fuzz targets (fuzz/) drive the readers through these as the tools do.

#ifndef MJDIFF_TOOL_GUARD_H_
#define MJDIFF_TOOL_GUARD_H_

#include <stddef.h>
#include <stdio.h>

// a text file read line by line
typedef struct toolReader_ {
  FILE* f;                     // read from (not owned)
  const char* path;            // named in messages
  size_t maxlen;               // longest line accepted (bytes without the line end)
  long maxlines;               // most lines accepted
  long line;                   // number of the line last read (1-based; 0 before the first)
  int unterminated;            // 1: the line last read ended at the end of the file without '\n'
  char* buf;                   // the line last read (grows up to maxlen + 1)
  size_t cap;
} toolReader;

// a reader of f for lines of at most maxlen bytes and at most maxlines lines
void tool_readerInit(toolReader* r, FILE* f, const char* path, size_t maxlen, long maxlines);

// The next line in *line (NUL-terminated, without its '\n' and a '\r' before it; the first line
// without a UTF-8 byte order mark), its length in *len (nullable). Returns 1, 0 at the end of the
// file, or -1 with a message in err: "PATH: line L, column C: NUL byte (a binary file?)",
// "PATH: line L: longer than N bytes", "PATH: more than N lines", "PATH: cannot read: ...",
// "PATH: out of memory". A NUL byte is refused rather than read as the end of the line.
int tool_readLine(toolReader* r, char** line, size_t* len, char* err, int errsz);

// free the line buffer (not the file)
void tool_readerFree(toolReader* r);

// *out = a * b * c; 1, or 0 (*out = 0) if the product overflows size_t
int tool_mulSize(size_t a, size_t b, size_t c, size_t* out);

// zeroed array of a * b elements of size bytes (at least one element); NULL if the size overflows
// or memory runs out
void* tool_callocArray(size_t a, size_t b, size_t size);

#endif  // MJDIFF_TOOL_GUARD_H_
