// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// splitmix64 seeding and xoshiro256** (<mjdiff/random.h>).
//   splitmix64: z = (x += 0x9E3779B97F4A7C15); z = (z ^ z >> 30) 0xBF58476D1CE4E5B9;
//               z = (z ^ z >> 27) 0x94D049BB133111EB; z ^ z >> 31
//   xoshiro256**: out = rotl(s1 5, 7) 9; t = s1 << 17; s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3;
//                 s2 ^= t; s3 = rotl(s3, 45)

#include <math.h>

#include <mjdiff/random.h>

static uint64_t splitmix(uint64_t* x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

void mjdiff_rngSeed(mjdiffRng* r, uint64_t seed) {
  if (!r) return;
  uint64_t x = seed;
  for (int i = 0; i < 4; i++) r->s[i] = splitmix(&x);
}

uint64_t mjdiff_rngNext(mjdiffRng* r) {
  uint64_t* s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double mjdiff_rngUniform(mjdiffRng* r) {
  return (double)(mjdiff_rngNext(r) >> 11) * (1.0 / 9007199254740992.0);
}

double mjdiff_rngUniformOpen(mjdiffRng* r) {
  return ((double)(mjdiff_rngNext(r) >> 11) + 0.5) / 9007199254740992.0;
}

double mjdiff_rngNormal(mjdiffRng* r) {
  double u1 = mjdiff_rngUniformOpen(r), u2 = mjdiff_rngUniform(r);
  return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}
