// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The one place that knows which MuJoCo version we build against. Everything that differs between
// MuJoCo 2.2 and 3.x (scratch stack, disable flags, mjContact fields, tendon Jacobian storage, mass
// matrix storage) is reached through these helpers, so that supporting MuJoCo 3 touches this file
// (and adds an mjpPlugin adapter beside adapter_mj22.c).

#ifndef MJDIFF_COMPAT_H_
#define MJDIFF_COMPAT_H_

#include <mujoco/mujoco.h>

#if !defined(mjVERSION_HEADER)
#error "mujoco.h does not define mjVERSION_HEADER"
#endif
#define MJDIFF_MUJOCO_2_2 (mjVERSION_HEADER >= 220 && mjVERSION_HEADER < 230)

// ---------------------------------- scratch stack -------------------------------------------------
// 2.2: d->pstack is the top of d->stack, mj_stackAlloc(d, n) returns mjtNum*.
// 3.x: mj_markStack / mj_freeStack / mj_stackAllocNum.

typedef int mjdiffStackMark;

static inline mjdiffStackMark compat_stackMark(mjData* d) {
  return d->pstack;
}

static inline void compat_stackFree(mjData* d, mjdiffStackMark mark) {
  d->pstack = mark;
}

// space left on the stack, in mjtNums
static inline int compat_stackSpace(const mjData* d) {
  return d->nstack - d->pstack;
}

static inline mjtNum* compat_stackAllocNum(mjData* d, int n) {
  return mj_stackAlloc(d, n);
}

// ---------------------------------- disable flags -------------------------------------------------
// the hard constraints the smooth model replaces (3.x keeps these names)
#define COMPAT_DSBL_HARD (mjDSBL_CONTACT | mjDSBL_EQUALITY | mjDSBL_FRICTIONLOSS | mjDSBL_LIMIT)

// flags that also stop contact detection
#define COMPAT_DSBL_DETECT (mjDSBL_CONSTRAINT | mjDSBL_CONTACT)

// ---------------------------------- contacts ------------------------------------------------------
// 2.2: geom ids in geom1/geom2; normal in frame[0..2]; friction[5]; dim. 3.x: geom[2], plus flex and
// a changed exclude meaning.

static inline int compat_contactGeom1(const mjContact* c) {
  return c->geom1;
}

static inline int compat_contactGeom2(const mjContact* c) {
  return c->geom2;
}

// ---------------------------------- tendon Jacobian -----------------------------------------------
// 2.2: d->ten_J, dense (ntendon x nv) or row-sparse when mj_isSparse(m). 3.x: d->ten_J always
// row-sparse (ten_J_rownnz, ten_J_rowadr, ten_J_colind).

// res += f * J_ten(i, :)^T  (nv x 1)
static inline void compat_addTendonForce(const mjModel* m, const mjData* d, int i, mjtNum f,
                                         mjtNum* res) {
  if (mj_isSparse(m)) {
    int adr = d->ten_J_rowadr[i], nnz = d->ten_J_rownnz[i];
    for (int k = 0; k < nnz; k++) {
      res[d->ten_J_colind[adr + k]] += f * d->ten_J[adr + k];
    }
  } else {
    const mjtNum* row = d->ten_J + (size_t)i * m->nv;
    for (int j = 0; j < m->nv; j++) {
      res[j] += f * row[j];
    }
  }
}

// dense row i of the tendon Jacobian (nv x 1)
static inline void compat_tendonRow(const mjModel* m, const mjData* d, int i, mjtNum* row) {
  mju_zero(row, m->nv);
  compat_addTendonForce(m, d, i, 1, row);
}

// ---------------------------------- mass matrix ---------------------------------------------------
// 2.2 and 3.x (before 3.3): d->qM in MuJoCo's sparse "Madr" layout, diagonal at m->dof_Madr[i].
// The sparse LDL of M + h B in adjoint/step_d.c (factorLDL, solveLDL) relies on this layout too.

static inline mjtNum* compat_massDiag(const mjModel* m, mjtNum* qM, int i) {
  return qM + m->dof_Madr[i];
}

// ---------------------------------- equality data ------------------------------------------------
// 2.2: connect anchors at eq_data[0..2] (body1) and [3..5] (body2); weld anchors [3..5] on body1 and
// [0..2] on body2, relative pose quaternion [6..9], torquescale [10]; eq_active in the model.

static inline int compat_eqActive(const mjModel* m, const mjData* d, int i) {
  (void)d;
  return m->eq_active[i];
}

// anchors of a connect or weld in the frames of obj1 and obj2; weld relative pose and torquescale
// (NULL for a connect)
static inline void compat_eqAnchors(const mjModel* m, int i, const mjtNum* anchor[2],
                                    const mjtNum** relpose, mjtNum* torquescale) {
  const mjtNum* data = m->eq_data + mjNEQDATA * i;
  int weld = m->eq_type[i] == mjEQ_WELD;
  anchor[0] = weld ? data + 3 : data;
  anchor[1] = weld ? data : data + 3;
  *relpose = weld ? data + 6 : NULL;
  *torquescale = weld ? data[10] : 0;
}

#endif  // MJDIFF_COMPAT_H_
