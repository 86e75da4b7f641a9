// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Save and load networks as .npz: a zip archive (stored, no compression) of .npy files, the
// format of numpy.savez, written and read here by hand (no zlib).
//   .npy (format 1.0): "\x93NUMPY" 0x01 0x00, header length H (uint16 LE), then the header, a
//        Python dict literal {'descr': '<f8', 'fortran_order': False, 'shape': (r, c), } padded
//        with spaces and a final '\n' so that 10 + H is a multiple of 64, then the data
//        (C order, little-endian). Versions 2.0 and 3.0 (uint32 H) are read too.
//   zip: per entry a local header (signature 0x04034b50, method 0 = stored, CRC-32, sizes, name)
//        and the bytes; then the central directory (0x02014b50 per entry, with the local
//        header's offset) and the end record (0x06054b50: entry count, directory size and
//        offset). Zip64 fields (0xffffffff sizes or offsets, numpy's force_zip64 local headers)
//        are read from the zip64 extra field (id 0x0001) and end records.
//   CRC-32: the reflected polynomial 0xedb88320, initial value and final xor 0xffffffff.
// All integers are little-endian, read and written byte by byte (any host). The reader
// bounds-checks every offset and length against the file; a truncated or corrupt file gets an
// error, never a read out of bounds.

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/nn.h>

#include "internal.h"
#include "nn_internal.h"

#define FORMAT_NAME "mjdiff.mlp.v1"
#define MAX_FILE (1L << 31)   // files larger than 2 GiB are refused
#define MAX_ENTRY 256         // arrays in a file, at most

//---------------------------------- bytes --------------------------------------------------------

static uint32_t crc32(uint32_t crc, const unsigned char* p, size_t n) {
  crc = ~crc;
  for (size_t i = 0; i < n; i++) {
    crc ^= p[i];
    for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

static void put16(unsigned char* p, unsigned v) {
  p[0] = (unsigned char)(v & 0xff);
  p[1] = (unsigned char)((v >> 8) & 0xff);
}

static void put32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)((v >> (8 * i)) & 0xff);
}

static void put64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)((v >> (8 * i)) & 0xff);
}

static unsigned get16(const unsigned char* p) {
  return (unsigned)p[0] | ((unsigned)p[1] << 8);
}

static uint32_t get32(const unsigned char* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint64_t get64(const unsigned char* p) {
  return (uint64_t)get32(p) | ((uint64_t)get32(p + 4) << 32);
}

//---------------------------------- writing ------------------------------------------------------

// a growing byte buffer; ok = 0 after a failed allocation
typedef struct buffer_ {
  unsigned char* p;
  size_t n, cap;
  int ok;
} buffer;

static unsigned char* reserve(buffer* b, size_t n) {
  if (!b->ok) return NULL;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + n) cap *= 2;
    unsigned char* q = (unsigned char*)realloc(b->p, cap);
    if (!q) {
      b->ok = 0;
      return NULL;
    }
    b->p = q;
    b->cap = cap;
  }
  unsigned char* r = b->p + b->n;
  b->n += n;
  return r;
}

static void append(buffer* b, const void* data, size_t n) {
  unsigned char* q = reserve(b, n);
  if (q && n) memcpy(q, data, n);
}

// one array to write: kind 'f' float64, 'i' int64, 'U' fixed-width strings (ulen characters)
typedef struct outArray_ {
  char name[48];
  char kind;
  int ndim;                    // 0, 1 or 2
  long shape[2];
  const double* f;
  const long* i;
  const char* const* s;        // strings (ASCII), prod(shape) of them
  int ulen;
} outArray;

// the .npy bytes of a into b
static void npyBytes(buffer* b, const outArray* a) {
  char header[256], shape[64];
  if (a->ndim == 0) {
    snprintf(shape, sizeof(shape), "()");
  } else if (a->ndim == 1) {
    snprintf(shape, sizeof(shape), "(%ld,)", a->shape[0]);
  } else {
    snprintf(shape, sizeof(shape), "(%ld, %ld)", a->shape[0], a->shape[1]);
  }
  char descr[16];
  if (a->kind == 'U') {
    snprintf(descr, sizeof(descr), "<U%d", a->ulen);
  } else {
    snprintf(descr, sizeof(descr), a->kind == 'f' ? "<f8" : "<i8");
  }
  int h = snprintf(header, sizeof(header), "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                   descr, shape);
  int total = 10 + h + 1;
  int pad = (64 - total % 64) % 64;
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
  put16(pre + 8, (unsigned)(h + pad + 1));
  append(b, pre, 10);
  append(b, header, (size_t)h);
  for (int i = 0; i < pad; i++) append(b, " ", 1);
  append(b, "\n", 1);
  long count = a->ndim == 0 ? 1 : a->ndim == 1 ? a->shape[0] : a->shape[0] * a->shape[1];
  for (long k = 0; k < count; k++) {
    if (a->kind == 'U') {
      unsigned char* q = reserve(b, 4 * (size_t)a->ulen);
      if (!q) return;
      memset(q, 0, 4 * (size_t)a->ulen);
      const char* str = a->s[k];
      for (int c = 0; c < a->ulen && str[c]; c++) q[4 * c] = (unsigned char)str[c];
    } else {
      unsigned char* q = reserve(b, 8);
      if (!q) return;
      uint64_t v;
      if (a->kind == 'f') {
        memcpy(&v, &a->f[k], 8);
      } else {
        int64_t iv = a->i[k];
        memcpy(&v, &iv, 8);
      }
      put64(q, v);
    }
  }
}

// a zip of the arrays (stored), into z
static void zipBytes(buffer* z, const outArray* arrays, int n) {
  buffer central = {NULL, 0, 0, 1};
  buffer npy = {NULL, 0, 0, 1};
  for (int e = 0; e < n && z->ok; e++) {
    npy.n = 0;
    npyBytes(&npy, arrays + e);
    if (!npy.ok) {
      z->ok = 0;
      break;
    }
    char fname[64];
    int nl = snprintf(fname, sizeof(fname), "%s.npy", arrays[e].name);
    uint32_t crc = crc32(0, npy.p, npy.n);
    uint32_t offset = (uint32_t)z->n;
    unsigned char lh[30] = {0};
    put32(lh, 0x04034b50u);
    put16(lh + 4, 20);         // version needed
    put16(lh + 6, 0);          // flags
    put16(lh + 8, 0);          // stored
    put16(lh + 10, 0);         // time 00:00:00
    put16(lh + 12, 0x21);      // date 1980-01-01
    put32(lh + 14, crc);
    put32(lh + 18, (uint32_t)npy.n);
    put32(lh + 22, (uint32_t)npy.n);
    put16(lh + 26, (unsigned)nl);
    put16(lh + 28, 0);
    append(z, lh, 30);
    append(z, fname, (size_t)nl);
    append(z, npy.p, npy.n);

    unsigned char ch[46] = {0};
    put32(ch, 0x02014b50u);
    put16(ch + 4, 20);         // made by
    put16(ch + 6, 20);         // needed
    put16(ch + 12, 0);
    put16(ch + 14, 0x21);
    put32(ch + 16, crc);
    put32(ch + 20, (uint32_t)npy.n);
    put32(ch + 24, (uint32_t)npy.n);
    put16(ch + 28, (unsigned)nl);
    put32(ch + 38, 0x81a40000u);  // external attributes: a regular file, rw-r--r--
    put32(ch + 42, offset);
    append(&central, ch, 46);
    append(&central, fname, (size_t)nl);
  }
  if (!central.ok) z->ok = 0;
  uint32_t cdoff = (uint32_t)z->n;
  append(z, central.p, central.n);
  unsigned char end[22] = {0};
  put32(end, 0x06054b50u);
  put16(end + 8, (unsigned)n);
  put16(end + 10, (unsigned)n);
  put32(end + 12, (uint32_t)central.n);
  put32(end + 16, cdoff);
  append(z, end, 22);
  free(central.p);
  free(npy.p);
}

mjdiffStatus mjdiff_saveMLP(const mjdiffMLP* net, const char* path, char* err, int errsz) {
  if (!net || !path) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "net or path is NULL");
  const mjdiffMLPDef* def = &net->def;
  int L = net->nlayer;
  outArray a[6 + 2 * NN_MAXLAYER];
  memset(a, 0, sizeof(a));
  int n = 0;
  char spec[MJDIFF_NN_MAXHIDDEN * 16 + 8];
  mjdiff_formatMLPSpec(def, spec, sizeof(spec));
  const char* format = FORMAT_NAME;
  const char* specp = spec;
  long sizes[NN_MAXLAYER + 1];
  const char* acts[MJDIFF_NN_MAXHIDDEN];
  for (int k = 0; k <= L; k++) sizes[k] = net->dims[k];
  for (int k = 0; k < def->nhidden; k++) acts[k] = mjdiff_activationName(def->act[k]);

  a[n] = (outArray){"format", 'U', 0, {0, 0}, NULL, NULL, &format, (int)strlen(format)};
  n++;
  a[n] = (outArray){"spec", 'U', 0, {0, 0}, NULL, NULL, &specp, (int)strlen(spec)};
  n++;
  a[n] = (outArray){"sizes", 'i', 1, {L + 1, 0}, NULL, sizes, NULL, 0};
  n++;
  a[n] = (outArray){"activations", 'U', 1, {def->nhidden, 0}, NULL, NULL, acts, 8};
  n++;
  a[n] = (outArray){"input_mean", 'f', 1, {def->nin, 0}, net->mean, NULL, NULL, 0};
  n++;
  a[n] = (outArray){"input_std", 'f', 1, {def->nin, 0}, net->std, NULL, NULL, 0};
  n++;
  for (int k = 0; k < L; k++) {
    snprintf(a[n].name, sizeof(a[n].name), "layers.%d.weight", k);
    a[n].kind = 'f';
    a[n].ndim = 2;
    a[n].shape[0] = net->dims[k + 1];
    a[n].shape[1] = net->dims[k];
    a[n].f = net->params + net->woff[k];
    n++;
    snprintf(a[n].name, sizeof(a[n].name), "layers.%d.bias", k);
    a[n].kind = 'f';
    a[n].ndim = 1;
    a[n].shape[0] = net->dims[k + 1];
    a[n].f = net->params + net->boff[k];
    n++;
  }

  buffer z = {NULL, 0, 0, 1};
  zipBytes(&z, a, n);
  if (!z.ok || z.n > (size_t)UINT32_MAX) {
    free(z.p);
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "saving %s: out of memory", path);
  }

  // write a temporary file beside path, then rename it (no half-written file at path)
  size_t plen = strlen(path);
  char* tmp = (char*)malloc(plen + 8);
  if (!tmp) {
    free(z.p);
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "saving %s: out of memory", path);
  }
  snprintf(tmp, plen + 8, "%s.tmp", path);
  FILE* f = fopen(tmp, "wb");
  int ok = f != NULL;
  if (f) {
    ok = fwrite(z.p, 1, z.n, f) == z.n;
    ok = (fclose(f) == 0) && ok;
  }
  if (ok) ok = rename(tmp, path) == 0;
  if (!ok) remove(tmp);
  free(tmp);
  free(z.p);
  if (!ok) return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "cannot write %s", path);
  return MJDIFF_OK;
}

//---------------------------------- reading ------------------------------------------------------

// one array read from a file (data points into the file's bytes)
typedef struct inArray_ {
  char name[64];
  char kind;                   // 'f' float, 'i' integer, 'U' unicode string
  int itemsize;                // bytes per element (f: 4 or 8, i: 4 or 8, U: 4 per character)
  int ndim;
  long shape[8];
  long count;                  // elements
  const unsigned char* data;
  int used;                    // matched to an expected name
} inArray;

typedef struct archive_ {
  unsigned char* bytes;
  size_t size;
  inArray a[MAX_ENTRY];
  int n;
} archive;

static void shapeString(char* buf, size_t sz, int ndim, const long* shape) {
  int k = snprintf(buf, sz, "(");
  for (int i = 0; i < ndim && (size_t)k < sz; i++) {
    k += snprintf(buf + k, sz - (size_t)k, i ? ", %ld" : "%ld", shape[i]);
  }
  if ((size_t)k < sz) snprintf(buf + k, sz - (size_t)k, ndim == 1 ? ",)" : ")");
}

// the value text after 'key': in header h (length n); NULL if absent
static const char* findKey(const char* h, size_t n, const char* key) {
  size_t kl = strlen(key);
  for (size_t i = 0; i + kl <= n; i++) {
    if (memcmp(h + i, key, kl) == 0) {
      size_t j = i + kl;
      while (j < n && h[j] == ' ') j++;
      if (j < n && h[j] == ':') {
        j++;
        while (j < n && h[j] == ' ') j++;
        return h + j;
      }
    }
  }
  return NULL;
}

// parse the .npy bytes p (n) of entry name into a
static mjdiffStatus parseNpy(const char* name, const unsigned char* p, size_t n, inArray* a,
                             const char* path, char* err, int errsz) {
  static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (n < 10 || memcmp(p, magic, 6) != 0) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: entry %s is not a .npy array", path,
                        name);
  }
  int major = p[6];
  size_t hl, start;
  if (major == 1) {
    hl = get16(p + 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (n < 12) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: array %s: truncated header", path,
                          name);
    }
    hl = get32(p + 8);
    start = 12;
  } else {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "%s: array %s: .npy format version %d is not supported", path, name,
                        major);
  }
  if (hl > n - start || hl < 16) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: array %s: truncated header", path,
                        name);
  }
  const char* h = (const char*)p + start;

  // descr: '<f8' '<f4' '<i8' '<i4' '<U#' ('|' for one-byte types is not used here)
  const char* d = findKey(h, hl, "'descr'");
  if (!d || d >= h + hl - 4 || *d != '\'') {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: array %s: no descr in the header",
                        path, name);
  }
  d++;
  char descr[16];
  size_t dl = 0;
  while (d + dl < h + hl && d[dl] != '\'' && dl < sizeof(descr) - 1) {
    descr[dl] = d[dl];
    dl++;
  }
  descr[dl] = 0;
  if (descr[0] == '>') {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "%s: array %s: big-endian dtype %s is not supported (save as '<')", path,
                        name, descr);
  }
  if (strcmp(descr, "<f8") == 0) {
    a->kind = 'f';
    a->itemsize = 8;
  } else if (strcmp(descr, "<f4") == 0) {
    a->kind = 'f';
    a->itemsize = 4;
  } else if (strcmp(descr, "<i8") == 0) {
    a->kind = 'i';
    a->itemsize = 8;
  } else if (strcmp(descr, "<i4") == 0) {
    a->kind = 'i';
    a->itemsize = 4;
  } else if (descr[0] == '<' && descr[1] == 'U' && descr[2] >= '1' && descr[2] <= '9' &&
             dl < 8) {
    a->kind = 'U';
    long len = 0;
    for (size_t i = 2; i < dl; i++) {
      if (descr[i] < '0' || descr[i] > '9') {
        len = -1;
        break;
      }
      len = len * 10 + (descr[i] - '0');
    }
    if (len < 1 || len > 4096) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: array %s: bad dtype %s", path, name,
                          descr);
    }
    a->itemsize = (int)(4 * len);
  } else {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "%s: array %s: dtype %s is not supported (float64, float32, int64, int32 "
                        "or a unicode string)",
                        path, name, descr);
  }

  // fortran_order
  const char* fo = findKey(h, hl, "'fortran_order'");
  if (!fo || (size_t)(h + hl - fo) < 4) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: array %s: no fortran_order", path,
                        name);
  }
  if (strncmp(fo, "False", 5) != 0) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "%s: array %s: Fortran-ordered arrays are not supported (save a "
                        "C-contiguous array, numpy.ascontiguousarray)",
                        path, name);
  }

  // shape: (a, b, ...)
  const char* s = findKey(h, hl, "'shape'");
  if (!s || *s != '(') {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: array %s: no shape", path, name);
  }
  s++;
  a->ndim = 0;
  a->count = 1;
  const char* hend = h + hl;
  for (;;) {
    while (s < hend && (*s == ' ' || *s == ',')) s++;
    if (s >= hend) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: array %s: bad shape", path, name);
    }
    if (*s == ')') break;
    if (*s < '0' || *s > '9' || a->ndim == 8) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: array %s: bad shape", path, name);
    }
    long v = 0;
    while (s < hend && *s >= '0' && *s <= '9') {
      v = v * 10 + (*s - '0');
      if (v > (1L << 31)) {
        return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: array %s: bad shape", path, name);
      }
      s++;
    }
    a->shape[a->ndim++] = v;
    a->count *= v;
    if (a->count > (1L << 31)) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: array %s: too large", path, name);
    }
  }
  size_t need = (size_t)a->count * (size_t)a->itemsize;
  if (n - start - hl < need) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "%s: array %s: truncated data (%zu bytes for %ld elements of %d)", path,
                        name, n - start - hl, a->count, a->itemsize);
  }
  a->data = p + start + hl;
  return MJDIFF_OK;
}

// read the file and index its entries
static mjdiffStatus readArchive(const char* path, archive* ar, char* err, int errsz) {
  memset(ar, 0, sizeof(*ar));
  FILE* f = fopen(path, "rb");
  if (!f) return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "cannot open %s", path);
  long size = -1;
  if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
  if (size < 0 || size > MAX_FILE || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: cannot read (or larger than 2 GiB)",
                        path);
  }
  ar->bytes = (unsigned char*)malloc((size_t)size + 1);
  if (!ar->bytes) {
    fclose(f);
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "%s: out of memory", path);
  }
  size_t got = fread(ar->bytes, 1, (size_t)size, f);
  fclose(f);
  if (got != (size_t)size) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "cannot read %s", path);
  }
  ar->size = (size_t)size;
  const unsigned char* b = ar->bytes;
  size_t n = ar->size;

  // end of central directory: the last signature within 22 + 65535 bytes of the end
  long eocd = -1;
  if (n >= 22) {
    size_t lo = n > 22 + 65535 ? n - 22 - 65535 : 0;
    for (size_t i = n - 22 + 1; i-- > lo;) {
      if (get32(b + i) == 0x06054b50u && i + 22 + get16(b + i + 20) == n) {
        eocd = (long)i;
        break;
      }
    }
  }
  if (eocd < 0) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "%s: not an .npz file, or truncated (no zip end record)", path);
  }
  uint64_t count = get16(b + eocd + 10);
  uint64_t cdsize = get32(b + eocd + 12), cdoff = get32(b + eocd + 16);
  if (count == 0xffff || cdsize == 0xffffffffu || cdoff == 0xffffffffu) {
    // zip64: the locator right before the end record points to the zip64 end record
    if (eocd < 20 || get32(b + eocd - 20) != 0x07064b50u) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: corrupt zip64 end record", path);
    }
    uint64_t z64 = get64(b + eocd - 20 + 8);
    if (n < 56 || z64 > n - 56 || get32(b + z64) != 0x06064b50u) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: corrupt zip64 end record", path);
    }
    count = get64(b + z64 + 32);
    cdsize = get64(b + z64 + 40);
    cdoff = get64(b + z64 + 48);
  }
  if (cdoff > n || cdsize > n - cdoff) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "%s: corrupt or truncated (central directory out of the file)", path);
  }
  if (count > MAX_ENTRY) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: %llu entries, at most %d", path,
                        (unsigned long long)count, MAX_ENTRY);
  }

  size_t pos = (size_t)cdoff, cdend = (size_t)(cdoff + cdsize);
  for (uint64_t e = 0; e < count; e++) {
    if (pos + 46 > cdend || get32(b + pos) != 0x02014b50u) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: corrupt central directory entry %llu",
                          path, (unsigned long long)e);
    }
    unsigned method = get16(b + pos + 10);
    uint32_t crc = get32(b + pos + 16);
    uint64_t csize = get32(b + pos + 20), usize = get32(b + pos + 24);
    unsigned nl = get16(b + pos + 28), xl = get16(b + pos + 30), cl = get16(b + pos + 32);
    uint64_t loff = get32(b + pos + 42);
    if (pos + 46 + nl + xl + cl > cdend) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: corrupt central directory entry %llu",
                          path, (unsigned long long)e);
    }
    char fname[64];
    if (nl < 5 || nl >= sizeof(fname)) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                          "%s: entry %llu: name of %u bytes (expected NAME.npy, under 64)", path,
                          (unsigned long long)e, nl);
    }
    memcpy(fname, b + pos + 46, nl);
    fname[nl] = 0;
    if (strlen(fname) != nl || strcmp(fname + nl - 4, ".npy") != 0) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: entry '%s' is not a .npy file",
                          path, fname);
    }
    // zip64 extra field: the fields that are 0xffffffff, in this order
    const unsigned char* x = b + pos + 46 + nl;
    for (unsigned j = 0; j + 4 <= xl;) {
      unsigned id = get16(x + j), len = get16(x + j + 2);
      if (j + 4 + len > xl) break;
      if (id == 0x0001) {
        unsigned q = j + 4;
        if (usize == 0xffffffffu && q + 8 <= j + 4 + len) {
          usize = get64(x + q);
          q += 8;
        }
        if (csize == 0xffffffffu && q + 8 <= j + 4 + len) {
          csize = get64(x + q);
          q += 8;
        }
        if (loff == 0xffffffffu && q + 8 <= j + 4 + len) loff = get64(x + q);
      }
      j += 4 + len;
    }
    pos += 46 + nl + xl + cl;

    fname[nl - 4] = 0;  // the array's name
    if (method != 0) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                          "%s: array %s is compressed (zip method %u); save with numpy.savez, not "
                          "numpy.savez_compressed",
                          path, fname, method);
    }
    if (n < 30 || loff > n - 30 || get32(b + loff) != 0x04034b50u) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: array %s: corrupt local header",
                          path, fname);
    }
    // the local header agrees with the directory: name, CRC and sizes (unless a data descriptor
    // (flag 3) or zip64 (0xffffffff) leaves them out)
    unsigned lflags = get16(b + loff + 6), lnl = get16(b + loff + 26);
    uint32_t lcrc = get32(b + loff + 14), lcs = get32(b + loff + 18), lus = get32(b + loff + 22);
    int described = (lflags & 8) != 0;
    if (lnl != nl || loff + 30 + nl > n || memcmp(b + loff + 30, b + pos - nl - xl - cl, nl) != 0 ||
        (!described && lcrc != crc) ||
        (!described && lcs != 0xffffffffu && lcs != csize) ||
        (!described && lus != 0xffffffffu && lus != usize)) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                          "%s: array %s: the local header disagrees with the directory (corrupt "
                          "file)",
                          path, fname);
    }
    uint64_t data = loff + 30 + lnl + get16(b + loff + 28);
    if (csize != usize || data > n || csize > n - data) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                          "%s: array %s: truncated or corrupt (data beyond the end of the file)",
                          path, fname);
    }
    if (crc32(0, b + data, (size_t)csize) != crc) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: array %s: CRC mismatch (corrupt file)",
                          path, fname);
    }
    inArray* a = ar->a + ar->n;
    snprintf(a->name, sizeof(a->name), "%s", fname);
    for (int k = 0; k < ar->n; k++) {
      if (strcmp(ar->a[k].name, fname) == 0) {
        return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: array %s appears twice", path,
                            fname);
      }
    }
    mjdiffStatus st = parseNpy(fname, b + data, (size_t)csize, a, path, err, errsz);
    if (st != MJDIFF_OK) return st;
    ar->n++;
  }
  return MJDIFF_OK;
}

static inArray* findArray(archive* ar, const char* name) {
  for (int i = 0; i < ar->n; i++) {
    if (strcmp(ar->a[i].name, name) == 0) {
      ar->a[i].used = 1;
      return ar->a + i;
    }
  }
  return NULL;
}

static double getFloat(const inArray* a, long k) {
  const unsigned char* p = a->data + (size_t)k * (size_t)a->itemsize;
  if (a->kind == 'f' && a->itemsize == 8) {
    uint64_t v = get64(p);
    double d;
    memcpy(&d, &v, 8);
    return d;
  }
  if (a->kind == 'f') {
    uint32_t v = get32(p);
    float fl;
    memcpy(&fl, &v, 4);
    return fl;
  }
  if (a->itemsize == 8) return (double)(int64_t)get64(p);
  return (double)(int32_t)get32(p);
}

// string element k of a 'U' array (ASCII only; longer than bufsz - 1 or non-ASCII: "?")
static void getString(const inArray* a, long k, char* buf, size_t bufsz) {
  const unsigned char* p = a->data + (size_t)k * (size_t)a->itemsize;
  int len = a->itemsize / 4;
  size_t j = 0;
  for (int c = 0; c < len; c++) {
    uint32_t ch = get32(p + 4 * c);
    if (ch == 0) break;
    if (ch > 127 || j + 1 >= bufsz) {
      snprintf(buf, bufsz, "?");
      return;
    }
    buf[j++] = (char)ch;
  }
  buf[j] = 0;
}

// array name of kind with the expected shape (ndim, shape); NULL and err filled if absent or
// mismatched
static inArray* expectArray(archive* ar, const char* name, char kind, int ndim, const long* shape,
                            const char* path, char* err, int errsz, mjdiffStatus* st) {
  char want[96], got[96];
  shapeString(want, sizeof(want), ndim, shape);
  inArray* a = findArray(ar, name);
  if (!a) {
    *st = mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: array %s %s is missing", path, name,
                       want);
    return NULL;
  }
  int okShape = a->ndim == ndim;
  for (int i = 0; okShape && i < ndim; i++) okShape = shape[i] < 0 || a->shape[i] == shape[i];
  if (!okShape) {
    shapeString(got, sizeof(got), a->ndim, a->shape);
    *st = mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: array %s: expected shape %s, got %s",
                       path, name, want, got);
    return NULL;
  }
  int okKind = kind == 'U' ? a->kind == 'U' : kind == 'i' ? a->kind == 'i' : a->kind != 'U';
  if (!okKind) {
    *st = mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: array %s: expected %s, got another dtype",
                       path, name,
                       kind == 'U' ? "a unicode string" : kind == 'i' ? "integers" : "numbers");
    return NULL;
  }
  return a;
}

// a new network from the archive's arrays
static mjdiffStatus buildNet(archive* ar, const char* path, mjdiffMLP** out, char* err,
                             int errsz) {
  mjdiffStatus st = MJDIFF_OK;
  long any[1] = {-1};

  // format (optional: files written by hand may leave it out)
  inArray* fa = findArray(ar, "format");
  if (fa) {
    char fmt[64];
    if (fa->kind != 'U' || fa->count != 1) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: array format: expected a string",
                          path);
    }
    getString(fa, 0, fmt, sizeof(fmt));
    if (strcmp(fmt, FORMAT_NAME) != 0) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: format '%s', expected '%s'", path,
                          fmt, FORMAT_NAME);
    }
  }
  findArray(ar, "spec");  // informational

  // architecture: sizes and activations
  inArray* sa = expectArray(ar, "sizes", 'i', 1, any, path, err, errsz, &st);
  if (!sa) return st;
  if (sa->count < 2 || sa->count > MJDIFF_NN_MAXHIDDEN + 2) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "%s: array sizes: expected 2 to %d entries (nin, widths, nout), got %ld",
                        path, MJDIFF_NN_MAXHIDDEN + 2, sa->count);
  }
  mjdiffMLPDef def;
  memset(&def, 0, sizeof(def));
  int L = (int)sa->count - 1;
  def.nhidden = L - 1;
  long sz[NN_MAXLAYER + 1];
  for (int k = 0; k <= L; k++) {
    double v = getFloat(sa, k);
    if (!(v >= 1 && v <= MJDIFF_NN_MAXWIDTH)) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                          "%s: array sizes: entry %d must be in [1, %d], got %g", path, k,
                          MJDIFF_NN_MAXWIDTH, v);
    }
    sz[k] = (long)v;
  }
  def.nin = (int)sz[0];
  def.nout = (int)sz[L];
  for (int k = 0; k < def.nhidden; k++) def.width[k] = (int)sz[k + 1];
  long nh[1] = {def.nhidden};
  inArray* aa = findArray(ar, "activations");
  if (def.nhidden > 0 || aa) {
    if (aa) aa->used = 0;
    aa = expectArray(ar, "activations", 'U', 1, nh, path, err, errsz, &st);
    if (!aa) return st;
  }
  for (int k = 0; k < def.nhidden; k++) {
    char name[32];
    getString(aa, k, name, sizeof(name));
    def.act[k] = -1;
    for (int a = 0; a < MJDIFF_ACT_COUNT; a++) {
      if (strcmp(name, mjdiff_activationName(a)) == 0) def.act[k] = a;
    }
    if (def.act[k] < 0) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                          "%s: array activations: entry %d is '%s' (expected tanh, relu, elu or "
                          "softplus)",
                          path, k, name);
    }
  }
  mjdiffMLP* net = NULL;
  st = mjdiff_makeMLP(&def, &net, err, errsz);
  if (st != MJDIFF_OK) return st;

  // normalisation (optional: identity)
  long nin[1] = {def.nin};
  const char* nnames[2] = {"input_mean", "input_std"};
  for (int j = 0; j < 2; j++) {
    inArray* a = findArray(ar, nnames[j]);
    if (!a) continue;
    a->used = 0;
    a = expectArray(ar, nnames[j], 'f', 1, nin, path, err, errsz, &st);
    if (!a) {
      mjdiff_freeMLP(net);
      return st;
    }
    double* dst = j == 0 ? net->mean : net->std;
    for (long i = 0; i < a->count; i++) {
      double v = getFloat(a, i);
      if (!isfinite(v) || (j == 1 && !(v > 0))) {
        mjdiff_freeMLP(net);
        return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "%s: array %s: entry %ld is %g (%s)",
                            path, nnames[j], i, v, j == 1 ? "must be > 0" : "must be finite");
      }
      dst[i] = v;
    }
  }

  // weights
  for (int k = 0; k < L; k++) {
    for (int j = 0; j < 2; j++) {
      char name[48];
      snprintf(name, sizeof(name), j == 0 ? "layers.%d.weight" : "layers.%d.bias", k);
      long shape[2] = {net->dims[k + 1], net->dims[k]};
      inArray* a = expectArray(ar, name, 'f', j == 0 ? 2 : 1, shape, path, err, errsz, &st);
      if (!a) {
        mjdiff_freeMLP(net);
        return st;
      }
      double* dst = net->params + (j == 0 ? net->woff[k] : net->boff[k]);
      for (long i = 0; i < a->count; i++) {
        double v = getFloat(a, i);
        if (!isfinite(v)) {
          mjdiff_freeMLP(net);
          return mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE,
                              "%s: array %s: entry %ld is not finite", path, name, i);
        }
        dst[i] = v;
      }
    }
  }

  // every array accounted for
  for (int i = 0; i < ar->n; i++) {
    if (!ar->a[i].used) {
      mjdiff_freeMLP(net);
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                          "%s: unexpected array %s (not part of a %d-layer network)", path,
                          ar->a[i].name, L);
    }
  }
  *out = net;
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_loadMLP(const char* path, mjdiffMLP** out, char* err, int errsz) {
  if (!out) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "out is NULL");
  *out = NULL;
  if (!path) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "path is NULL");
  archive* ar = (archive*)malloc(sizeof(archive));
  if (!ar) return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "loading %s: out of memory", path);
  mjdiffStatus st = readArchive(path, ar, err, errsz);
  if (st == MJDIFF_OK) st = buildNet(ar, path, out, err, errsz);
  free(ar->bytes);
  free(ar);
  return st;
}

mjdiffStatus mjdiff_loadMLPWeights(mjdiffMLP* net, const char* path, char* err, int errsz) {
  if (!net) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "net is NULL");
  mjdiffMLP* f = NULL;
  mjdiffStatus st = mjdiff_loadMLP(path, &f, err, errsz);
  if (st != MJDIFF_OK) return st;
  char want[MJDIFF_NN_MAXHIDDEN * 16 + 8], got[MJDIFF_NN_MAXHIDDEN * 16 + 8];
  mjdiff_formatMLPSpec(&net->def, want, sizeof(want));
  mjdiff_formatMLPSpec(&f->def, got, sizeof(got));
  if (f->def.nin != net->def.nin || f->def.nout != net->def.nout || strcmp(want, got) != 0) {
    st = mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                      "%s: the file's network (%s, %d inputs, %d outputs) is not this network "
                      "(%s, %d inputs, %d outputs)",
                      path, got, f->def.nin, f->def.nout, want, net->def.nin, net->def.nout);
    mjdiff_freeMLP(f);
    return st;
  }
  memcpy(net->params, f->params, sizeof(double) * (size_t)net->nparam);
  memcpy(net->mean, f->mean, sizeof(double) * (size_t)net->def.nin);
  memcpy(net->std, f->std, sizeof(double) * (size_t)net->def.nin);
  mjdiff_freeMLP(f);
  return MJDIFF_OK;
}
