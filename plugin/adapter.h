// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Auto-attach mode of the MuJoCo 2.2 adapter, for hosts that do not know mjdiff (MuJoCo's simulate
// with the preloaded library): every model that asks for the smooth model (mjdiff_wantsSmooth) is
// attached on its first mj_step. The first step of such a model still carries MuJoCo's hard
// constraints, built before the callback ran. Not part of the installed API.

#ifndef MJDIFF_ADAPTER_H_
#define MJDIFF_ADAPTER_H_

#include <mjdiff/smooth.h>

// called once per model seen in auto-attach mode: status and "attached" or the error message
typedef void (*mjdiffAutoLog)(const mjModel* m, mjdiffStatus status, const char* message);

// turn auto-attach on or off. Nullable: log.
MJDIFF_API void mjdiff_adapterAutoAttach(int on, mjdiffAutoLog log);

#endif  // MJDIFF_ADAPTER_H_
