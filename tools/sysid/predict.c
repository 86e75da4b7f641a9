// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-sysid --predict: open-loop prediction error of a model (the bundled one, a calibrated
// MJCF from --xml, or --set values) against recordings, at chosen horizons.
//
// For a horizon of H steps (H = T: the whole recording) the recording is cut into consecutive
// windows k0 = 0, H, 2H, .. with k0 + H <= T. Each window starts from the recorded state at k0:
// every measured coordinate from the recording (a ball or free rotation only when its 4 components
// are), the unmeasured ones carried on from the simulation of the previous window (the first:
// the model's keyframe 0 or its reference state). The smooth step (or a stepper: the hybrid of
// --residual, the network of --mlp) then runs H steps open loop
// under the recorded controls. Per joint, errors against the measured positions:
//   hinge, slide   e = q - q_rec                          (rad or m)
//   free           e_lin = |p - p_rec| (m), e_rot = |log(q_rec^-1 q)| (rad)
//   ball           e_rot as for free
// reported as the RMS over every simulated step of every window (rms) and over the windows' last
// steps (at the horizon: end), plus the largest |e| (max). Steps without a measurement count
// neither.

#include "predict.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "residual.h"
#include "toolutil.h"

typedef struct {
  double sum2[2], end2[2], max[2];
  long n[2], nend[2];
} acc;

// errors of d's positions against step k of R into a (per joint), last: a window's last step
static void score(const mjModel* m, const mjData* d, const sysidRecording* R, int k, int last,
                  acc* a) {
  const double* qp = R->qpos + (size_t)m->nq * k;
  for (int j = 0; j < m->njnt; j++) {
    int qa = m->jnt_qposadr[j], rq = sysid_rotQpos(m, j);
    double e[2] = {NAN, NAN};
    if (rq < 0) {
      if (!isnan(qp[qa])) e[0] = fabs(d->qpos[qa] - qp[qa]);
    } else {
      if (m->jnt_type[j] == mjJNT_FREE && sysid_measured(qp + qa, 3)) {
        double s = 0;
        for (int i = 0; i < 3; i++)
          s += (d->qpos[qa + i] - qp[qa + i]) * (d->qpos[qa + i] - qp[qa + i]);
        e[0] = sqrt(s);
      }
      if (sysid_measured(qp + rq, 4)) {
        double neg[4], dif[4], v[3];
        mju_negQuat(neg, qp + rq);
        mju_mulQuat(dif, neg, d->qpos + rq);
        mju_quat2Vel(v, dif, 1);
        e[1] = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
      }
    }
    for (int c = 0; c < 2; c++) {
      if (isnan(e[c])) continue;
      a[j].sum2[c] += e[c] * e[c];
      a[j].n[c]++;
      a[j].max[c] = fmax(a[j].max[c], e[c]);
      if (last) {
        a[j].end2[c] += e[c] * e[c];
        a[j].nend[c]++;
      }
    }
  }
}

static double rms(double s, long n) {
  return n > 0 ? sqrt(s / n) : NAN;
}

int sysid_predict(const mjModel* m, const mjdiffModel* s, const sysidRecording* rec, int nrec,
                  const double* horizons, int nh, const sysidStepper* stepper, FILE* json,
                  FILE* table, char* err, int errsz) {
  mjData* d = mj_makeData(m);
  acc* a = (acc*)calloc((size_t)m->njnt * (size_t)(nh > 0 ? nh : 1), sizeof(acc));
  long* windows = (long*)calloc((size_t)(nh > 0 ? nh : 1), sizeof(long));
  if (!d || !a || !windows) {
    if (d) mj_deleteData(d);
    free(a);
    free(windows);
    snprintf(err, (size_t)errsz, "out of memory");
    return -1;
  }
  double h = m->opt.timestep;
  int bad = 0;
  for (int ih = 0; ih < nh && !bad; ih++) {
    acc* ah = a + (size_t)m->njnt * ih;
    for (int r = 0; r < nrec && !bad; r++) {
      const sysidRecording* R = rec + r;
      int H = horizons[ih] > 0 ? (int)round(horizons[ih] / h) : R->T;
      if (H < 1) H = 1;
      if (H > R->T) {
        snprintf(err, (size_t)errsz,
                 "%s: %d steps (%g s) is shorter than the horizon %g s (%d steps): give a shorter "
                 "--horizon, or 0 for the whole recording",
                 R->path, R->T, R->T * h, horizons[ih], H);
        bad = 1;
        break;
      }
      mj_resetData(m, d);
      if (m->nkey) mj_resetDataKeyframe(m, d, 0);
      for (int k0 = 0; k0 + H <= R->T && !bad; k0 += H) {
        sysid_overwriteMeasured(m, d, R, k0);
        d->time = R->t0 + k0 * h;
        windows[ih]++;
        for (int k = k0; k < k0 + H; k++) {
          mju_copy(d->ctrl, R->ctrl + (size_t)m->nu * k, m->nu);
          int fail = stepper ? stepper->step(stepper->user, m, d, err, errsz) != 0
                             : mjdiff_step(m, d, s, err, errsz) != MJDIFF_OK;
          if (fail) {
            char msg[600];
            snprintf(msg, sizeof(msg), "%s: step %d (time %g s): %s", R->path, k, R->t0 + k * h,
                     err);
            snprintf(err, (size_t)errsz, "%s", msg);
            bad = 1;
            break;
          }
          score(m, d, R, k + 1, k + 1 == k0 + H, ah);
        }
      }
    }
  }
  if (!bad) {
    // table
    if (table) {
      fprintf(table, "%-10s  %-20s  %12s  %12s  %12s  %s\n", "horizon", "joint", "rms", "end",
              "max", "unit");
      for (int ih = 0; ih < nh; ih++) {
        char hz[32];
        if (horizons[ih] > 0) {
          snprintf(hz, sizeof(hz), "%g s", horizons[ih]);
        } else {
          snprintf(hz, sizeof(hz), "whole");
        }
        for (int j = 0; j < m->njnt; j++) {
          const acc* x = a + (size_t)m->njnt * ih + j;
          const char* name = mj_id2name(m, mjOBJ_JOINT, j);
          for (int c = 0; c < 2; c++) {
            if (!x->n[c]) continue;
            char label[80];
            snprintf(label, sizeof(label), "%s%s", name ? name : "?",
                     c == 1 ? ":rot" : (m->jnt_type[j] == mjJNT_FREE ? ":pos" : ""));
            const char* unit = c == 1 || m->jnt_type[j] == mjJNT_HINGE ? "rad" : "m";
            fprintf(table, "%-10s  %-20s  %12.4e  %12.4e  %12.4e  %s\n", hz, label,
                    rms(x->sum2[c], x->n[c]), rms(x->end2[c], x->nend[c]), x->max[c], unit);
          }
        }
      }
    }
    // JSON
    if (json) {
      fprintf(json, "[");
      for (int ih = 0; ih < nh; ih++) {
        fprintf(json, "%s{", ih ? ", " : "");
        tool_jsonKey(json, "horizon_s");
        tool_jsonNumber(json, horizons[ih] > 0 ? horizons[ih] : NAN);
        fprintf(json, ", \"whole\": %s, \"windows\": %ld, \"joints\": [",
                horizons[ih] > 0 ? "false" : "true", windows[ih]);
        int first = 1;
        for (int j = 0; j < m->njnt; j++) {
          const acc* x = a + (size_t)m->njnt * ih + j;
          for (int c = 0; c < 2; c++) {
            if (!x->n[c]) continue;
            const char* name = mj_id2name(m, mjOBJ_JOINT, j);
            fprintf(json, "%s{\"joint\": ", first ? "" : ", ");
            first = 0;
            tool_jsonString(json, name ? name : "");
            fprintf(
                json, ", \"component\": \"%s\", ",
                c == 1 ? "rotation" : (m->jnt_type[j] == mjJNT_FREE ? "position" : "coordinate"));
            tool_jsonField(json, "rms", rms(x->sum2[c], x->n[c]));
            fprintf(json, ", ");
            tool_jsonField(json, "end", rms(x->end2[c], x->nend[c]));
            fprintf(json, ", ");
            tool_jsonField(json, "max", x->max[c]);
            fprintf(json, ", \"samples\": %ld}", x->n[c]);
          }
        }
        fprintf(json, "]}");
      }
      fprintf(json, "]");
    }
  }
  mj_deleteData(d);
  free(a);
  free(windows);
  return bad ? -1 : 0;
}
