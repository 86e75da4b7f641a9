// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-sysid: shared definitions of its parts.
//   recordings: tools/common/recording.c (CSV reading and writing, alignment to the model
//               timestep), shared with mjdiff-estimate
//   least squares: the library's mjdiff_lsqSolve (<mjdiff/optim.h>, optim/lsq.c)
//   residual.c  residuals of a model against recordings (multiple shooting) and their exact
//               Jacobians from the step adjoint
//   sysid.c     the command line tool

#ifndef MJDIFF_TOOLS_SYSID_H_
#define MJDIFF_TOOLS_SYSID_H_

#include <stdio.h>

#include <mjdiff/mjdiff.h>
#include <mjdiff/params.h>

//---------------------------------- recordings (tools/common/recording.h) ---------------------

#include "recording.h"

//---------------------------------- least squares ----------------------------------------------
//
// Levenberg-Marquardt and Nelder-Mead: the library's (<mjdiff/optim.h>, optim/lsq.c)

#include <mjdiff/optim.h>

#endif  // MJDIFF_TOOLS_SYSID_H_
