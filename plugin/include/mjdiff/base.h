// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff: differentiable MuJoCo. Base definitions: status codes, version, export macro.

#ifndef MJDIFF_BASE_H_
#define MJDIFF_BASE_H_

#define MJDIFF_VERSION_MAJOR 0
#define MJDIFF_VERSION_MINOR 1
#define MJDIFF_VERSION_PATCH 0
#define MJDIFF_VERSION_STRING "0.1.0"

// exported symbols
#if defined(_WIN32)
  #define MJDIFF_API __declspec(dllexport)
#else
  #define MJDIFF_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

// Result of every mjdiff call that can fail. Errors only: outcomes such as convergence are reported
// apart, by the functions that have them.
typedef enum mjdiffStatus_ {
  MJDIFF_OK = 0,               // success
  MJDIFF_ERR_ARGUMENT,         // a NULL or out-of-range argument, or objects that do not belong together
  MJDIFF_ERR_VALUE,            // a parameter value out of its range (message names field and value)
  MJDIFF_ERR_NAME,             // an unknown parameter, geom, joint or other name
  MJDIFF_ERR_UNSUPPORTED,      // a model feature or integrator the smooth model cannot handle
  MJDIFF_ERR_NONFINITE,        // a NaN or infinite state, control or result, or a step that
                               // diverged or whose implicit solve did not converge (the
                               // message says which, naming the element)
  MJDIFF_ERR_MEMORY            // an allocation failed
} mjdiffStatus;

// Short name of a status, for example "MJDIFF_ERR_VALUE". Never NULL.
MJDIFF_API const char* mjdiff_statusName(mjdiffStatus status);

// Version string of the library, for example "0.1.0".
MJDIFF_API const char* mjdiff_versionString(void);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_BASE_H_
