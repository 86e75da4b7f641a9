// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The library's random numbers: one generator for every sampling tool (network initialisers,
// the sampling MPC planners, and the learners and estimators that follow), so that a seed means
// the same stream everywhere and on every platform.
//   seeding   splitmix64 from the seed, four times: the 256-bit state
//   numbers   xoshiro256** (Blackman and Vigna): 64-bit outputs
//   uniform   the top 53 bits: u = (x >> 11) 2^-53 in [0, 1), or (u + 2^-54) in (0, 1) where a
//             logarithm follows (Box-Muller)
//   normal    Box-Muller's cosine branch on (u1 open, u2): one normal per two draws
// A generator is a plain struct, owned by its user (one per thread); nothing is global.

#ifndef MJDIFF_RANDOM_H_
#define MJDIFF_RANDOM_H_

#include <stdint.h>

#include <mjdiff/base.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mjdiffRng_ {
  uint64_t s[4];
} mjdiffRng;

// Seed r: the same seed gives the same stream. Any seed, 0 included.
MJDIFF_API void mjdiff_rngSeed(mjdiffRng* r, uint64_t seed);

// The next 64 random bits.
MJDIFF_API uint64_t mjdiff_rngNext(mjdiffRng* r);

// Uniform in [0, 1).
MJDIFF_API double mjdiff_rngUniform(mjdiffRng* r);

// Uniform in the open interval (0, 1): never 0 (a logarithm's argument).
MJDIFF_API double mjdiff_rngUniformOpen(mjdiffRng* r);

// A standard normal by Box-Muller, one per two draws: sqrt(-2 log u1) cos(2 pi u2) with u1 from
// mjdiff_rngUniformOpen, then u2 from mjdiff_rngUniform.
MJDIFF_API double mjdiff_rngNormal(mjdiffRng* r);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_RANDOM_H_
