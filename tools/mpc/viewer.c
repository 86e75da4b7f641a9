// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-mpc's viewer: the closed loop live in a GLFW window (MuJoCo's mjv/mjr rendering).
//   the plant     rendered at its current state (the loop's copy after mjdiff_forward, so that
//                 kinematics and contacts belong to the state shown)
//   the plan      ghost: the bodies' centres of mass and the sites along mpc_planStates as small
//                 spheres joined by capsules, and the plan's final configuration as transparent
//                 geoms
//   contacts      arrows of the smooth contact force on geom2 (mjdiff_contactForce),
//                 F = R^T (fn, ft1, ft2) with R the contact frame (rows: normal, tangents), scaled
//                 so that the largest is a quarter of the model's extent long
// The run pauses when it reaches --seconds (space continues). Keys: space pause, right arrow single
// step (paused), backspace reset, F1 help, G ghost, F force arrows, C contact points,
// T transparency, Esc quit. Mouse: left rotate, right move, scroll zoom.
// --screenshot: step the loop, render one frame into the offscreen buffer, write a PNG (stored
// deflate blocks, CRC-32 and Adler-32: no image library), exit.
// MJDIFF_VIEW_LOG=FILE (for tests): append one line per handled input event with the state it left
// (step and reset once done), and a line "start" when the window is up:
//   event=NAME paused=0|1 time=T steps=N help=0|1 azimuth=DEG elevation=DEG distance=D
// NAME: start, pause (space), step, reset, help, ghost, forces, contacts, transparency, quit,
// button, rotate, move, zoom; T simulated time since the reset (s), N control steps since it.

#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <GLFW/glfw3.h>

#include "compat.h"
#include "loop.h"
#include "toolutil.h"

//---------------------------------- PNG -----------------------------------------------------------

static uint32_t gCrcTable[256];
static int gCrcReady = 0;

// CRC-32 (polynomial 0xEDB88320, reflected), as PNG chunks use
static uint32_t crc32Update(uint32_t crc, const unsigned char* buf, size_t n) {
  if (!gCrcReady) {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      gCrcTable[i] = c;
    }
    gCrcReady = 1;
  }
  crc = ~crc;
  for (size_t i = 0; i < n; i++) crc = gCrcTable[(crc ^ buf[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

static void put32(unsigned char* p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

// one chunk: length, type, data, CRC over type and data
static int writeChunk(FILE* f, const char* type, const unsigned char* data, size_t n) {
  unsigned char head[8];
  put32(head, (uint32_t)n);
  memcpy(head + 4, type, 4);
  uint32_t crc = crc32Update(0, head + 4, 4);
  crc = crc32Update(crc, data, n);
  unsigned char tail[4];
  put32(tail, crc);
  return fwrite(head, 1, 8, f) == 8 && (n == 0 || fwrite(data, 1, n, f) == n) &&
         fwrite(tail, 1, 4, f) == 4;
}

int mpc_writePNG(const char* path, const unsigned char* rgb, int width, int height) {
  if (width <= 0 || height <= 0) return 0;

  // raw scanlines, top row first: filter byte 0, then RGB
  size_t row = 3 * (size_t)width;
  size_t nraw = (row + 1) * (size_t)height;

  // zlib stream: header 78 01, stored blocks of <= 65535 bytes, Adler-32 of the raw data
  size_t nblock = (nraw + 65534) / 65535;
  size_t nz = 2 + nraw + 5 * nblock + 4;
  unsigned char* raw = malloc(nraw);
  unsigned char* z = malloc(nz);
  if (!raw || !z) {
    free(raw);
    free(z);
    return 0;
  }
  for (int y = 0; y < height; y++) {
    unsigned char* dst = raw + (row + 1) * (size_t)y;
    dst[0] = 0;
    memcpy(dst + 1, rgb + row * (size_t)(height - 1 - y), row);
  }
  uint32_t a = 1, b = 0;
  for (size_t i = 0; i < nraw; i++) {
    a = (a + raw[i]) % 65521u;
    b = (b + a) % 65521u;
  }
  size_t w = 0;
  z[w++] = 0x78;
  z[w++] = 0x01;
  for (size_t off = 0; off < nraw; off += 65535) {
    size_t len = nraw - off < 65535 ? nraw - off : 65535;
    z[w++] = off + len == nraw ? 1 : 0;  // BFINAL, BTYPE 00 (stored)
    z[w++] = (unsigned char)(len & 0xFF);
    z[w++] = (unsigned char)(len >> 8);
    z[w++] = (unsigned char)(~len & 0xFF);
    z[w++] = (unsigned char)((~len >> 8) & 0xFF);
    memcpy(z + w, raw + off, len);
    w += len;
  }
  put32(z + w, (b << 16) | a);
  w += 4;
  free(raw);

  static const unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  unsigned char ihdr[13];
  put32(ihdr, (uint32_t)width);
  put32(ihdr + 4, (uint32_t)height);
  ihdr[8] = 8;   // bit depth
  ihdr[9] = 2;   // colour type: RGB
  ihdr[10] = 0;  // compression: deflate
  ihdr[11] = 0;  // filter method
  ihdr[12] = 0;  // no interlace
  FILE* f = fopen(path, "wb");
  int ok = f != NULL;
  if (ok) {
    ok = fwrite(kSignature, 1, 8, f) == 8 && writeChunk(f, "IHDR", ihdr, 13) &&
         writeChunk(f, "IDAT", z, w) && writeChunk(f, "IEND", NULL, 0);
    ok = (fclose(f) == 0) && ok;
  }
  free(z);
  return ok;
}

//---------------------------------- viewer state --------------------------------------------------

typedef struct viewer_ {
  mpcLoop* loop;
  mjData* dg;                  // scratch for the plan's kinematics
  mjvCamera cam;
  mjvOption opt;
  mjvScene scn;
  mjrContext con;
  int paused, step_request, reset_request, help, ghost, forces;
  int button_left, button_right, button_middle;
  double lastx, lasty;
  double sim0, wall0;          // real-time synchronisation
  double render_s;             // wall time of the last frame's rendering (s)
  int ended;                   // the run reached opt.seconds (and was paused)
  int nforce;                  // contact arrows drawn in the last frame
  double fmax;                 // largest contact force in the last frame (N)
  FILE* log;                   // MJDIFF_VIEW_LOG, or NULL
} viewer;

// one line of the event log (see the top of the file)
static void logEvent(const viewer* v, const char* event) {
  if (!v->log) return;
  fprintf(v->log,
          "event=%s paused=%d time=%.6f steps=%d help=%d azimuth=%.4f elevation=%.4f "
          "distance=%.6f\n",
          event, v->paused, mpc_loopTime(v->loop), v->loop->nrec, v->help, v->cam.azimuth,
          v->cam.elevation, v->cam.distance);
  fflush(v->log);
}

static void keyboard(GLFWwindow* win, int key, int scancode, int act, int mods) {
  (void)scancode;
  (void)mods;
  viewer* v = glfwGetWindowUserPointer(win);
  if (act != GLFW_PRESS && act != GLFW_REPEAT) return;
  const char* event = NULL;  // logged on a press; step and reset are logged by advance()
  switch (key) {
    case GLFW_KEY_SPACE:
      if (act == GLFW_PRESS) v->paused = !v->paused;
      event = "pause";
      break;
    case GLFW_KEY_RIGHT:
      v->step_request = 1;
      break;
    case GLFW_KEY_BACKSPACE:
      v->reset_request = 1;
      break;
    case GLFW_KEY_F1:
      if (act == GLFW_PRESS) v->help = !v->help;
      event = "help";
      break;
    case GLFW_KEY_G:
      if (act == GLFW_PRESS) v->ghost = !v->ghost;
      event = "ghost";
      break;
    case GLFW_KEY_F:
      if (act == GLFW_PRESS) v->forces = !v->forces;
      event = "forces";
      break;
    case GLFW_KEY_C:
      if (act == GLFW_PRESS) v->opt.flags[mjVIS_CONTACTPOINT] = !v->opt.flags[mjVIS_CONTACTPOINT];
      event = "contacts";
      break;
    case GLFW_KEY_T:
      if (act == GLFW_PRESS) v->opt.flags[mjVIS_TRANSPARENT] = !v->opt.flags[mjVIS_TRANSPARENT];
      event = "transparency";
      break;
    case GLFW_KEY_ESCAPE:
      glfwSetWindowShouldClose(win, GLFW_TRUE);
      event = "quit";
      break;
    default:
      break;
  }
  if (event && act == GLFW_PRESS) logEvent(v, event);
}

static void mouseButton(GLFWwindow* win, int button, int act, int mods) {
  (void)button;
  (void)act;
  (void)mods;
  viewer* v = glfwGetWindowUserPointer(win);
  v->button_left = glfwGetMouseButton(win, GLFW_MOUSE_BUTTON_LEFT) == GLFW_PRESS;
  v->button_right = glfwGetMouseButton(win, GLFW_MOUSE_BUTTON_RIGHT) == GLFW_PRESS;
  v->button_middle = glfwGetMouseButton(win, GLFW_MOUSE_BUTTON_MIDDLE) == GLFW_PRESS;
  glfwGetCursorPos(win, &v->lastx, &v->lasty);
  logEvent(v, "button");
}

static void mouseMove(GLFWwindow* win, double x, double y) {
  viewer* v = glfwGetWindowUserPointer(win);
  double dx = x - v->lastx, dy = y - v->lasty;
  v->lastx = x;
  v->lasty = y;
  if (!v->button_left && !v->button_right && !v->button_middle) return;
  int width, height;
  glfwGetWindowSize(win, &width, &height);
  if (height <= 0) return;
  int shift = glfwGetKey(win, GLFW_KEY_LEFT_SHIFT) == GLFW_PRESS ||
              glfwGetKey(win, GLFW_KEY_RIGHT_SHIFT) == GLFW_PRESS;
  int action = v->button_right  ? (shift ? mjMOUSE_MOVE_H : mjMOUSE_MOVE_V)
               : v->button_left ? (shift ? mjMOUSE_ROTATE_H : mjMOUSE_ROTATE_V)
                                : mjMOUSE_ZOOM;
  mjv_moveCamera(v->loop->m, action, dx / height, dy / height, &v->scn, &v->cam);
  logEvent(v, v->button_right ? "move" : v->button_left ? "rotate" : "zoom");
}

static void scroll(GLFWwindow* win, double xoff, double yoff) {
  (void)xoff;
  viewer* v = glfwGetWindowUserPointer(win);
  mjv_moveCamera(v->loop->m, mjMOUSE_ZOOM, 0, -0.05 * yoff, &v->scn, &v->cam);
  logEvent(v, "zoom");
}

//---------------------------------- decorations ---------------------------------------------------

// next free geom of the scene, or NULL when it is full
static mjvGeom* newGeom(mjvScene* scn) {
  if (scn->ngeom >= scn->maxgeom) return NULL;
  return scn->geoms + scn->ngeom++;
}

// the plan: body positions along the predicted states, and the final configuration
static void addGhost(viewer* v) {
  const mjModel* m = v->loop->m;
  int H = 0;
  const double* X = mpc_planStates(v->loop->planner, &H);
  if (!X || H <= 0) return;
  int nx = m->nq + m->nv + m->na;
  int every = H > 40 ? (H + 39) / 40 : 1;
  double r = fmin(0.03, fmax(0.004, 0.006 * m->stat.extent));
  mjvScene* scn = &v->scn;
  mjtNum* prev = malloc(sizeof(mjtNum) * 3 * (size_t)(m->nbody + m->nsite));
  if (!prev) return;
  int havePrev = 0;
  for (int k = 0; k <= H; k += every) {
    if (k + every > H && k != H) k = H;  // always end at the horizon
    mju_copy(v->dg->qpos, X + (size_t)nx * k, m->nq);
    mju_copy(v->dg->mocap_pos, v->loop->dc->mocap_pos, 3 * m->nmocap);
    mju_copy(v->dg->mocap_quat, v->loop->dc->mocap_quat, 4 * m->nmocap);
    mj_kinematics(m, v->dg);
    float fade = (float)k / (float)H;
    float rgba[4] = {0.2f + 0.8f * fade, 0.9f - 0.5f * fade, 1.0f - 0.8f * fade, 0.8f};
    // points: the bodies' centres of mass, then the sites (prev holds nbody + nsite points)
    for (int b = 1; b < m->nbody + m->nsite; b++) {
      int site = b - m->nbody;
      if (site < 0 && m->body_geomnum[b] == 0) continue;
      if (site >= 0 && m->site_bodyid[site] == 0) continue;
      const mjtNum* p = site < 0 ? v->dg->xipos + 3 * b : v->dg->site_xpos + 3 * site;
      mjtNum size[3] = {r, r, r};
      mjvGeom* g = newGeom(scn);
      if (!g) break;
      mjv_initGeom(g, mjGEOM_SPHERE, size, p, NULL, rgba);
      g->category = mjCAT_DECOR;
      if (havePrev) {
        g = newGeom(scn);
        if (!g) break;
        mjv_initGeom(g, mjGEOM_CAPSULE, NULL, NULL, NULL, rgba);
        mjv_makeConnector(g, mjGEOM_CAPSULE, 0.35 * r, prev[3 * b], prev[3 * b + 1],
                          prev[3 * b + 2], p[0], p[1], p[2]);
        g->category = mjCAT_DECOR;
      }
      mju_copy3(prev + 3 * b, p);
    }
    havePrev = 1;
    if (k == H) break;
  }
  free(prev);

  // the final planned configuration, transparent (dg holds the state at the horizon)
  float rgba[4] = {0.3f, 0.6f, 1.0f, 0.25f};
  for (int i = 0; i < m->ngeom; i++) {
    int type = m->geom_type[i];
    if (m->geom_bodyid[i] == 0 || type == mjGEOM_PLANE || type == mjGEOM_HFIELD ||
        type == mjGEOM_MESH || m->geom_rgba[4 * i + 3] == 0) {
      continue;
    }
    mjvGeom* g = newGeom(scn);
    if (!g) break;
    mjv_initGeom(g, type, m->geom_size + 3 * i, v->dg->geom_xpos + 3 * i,
                 v->dg->geom_xmat + 9 * i, rgba);
    g->category = mjCAT_DECOR;
  }
}

// arrows of the smooth contact forces at the state shown; the largest is 0.25 extent long
static void addForces(viewer* v) {
  const mjModel* m = v->loop->m;
  const mjData* d = v->loop->dc;
  v->nforce = 0;
  v->fmax = 0;
  mjtNum* F = malloc(sizeof(mjtNum) * 3 * (size_t)(d->ncon > 0 ? d->ncon : 1));
  if (!F) return;
  for (int i = 0; i < d->ncon; i++) {
    mjdiffContactForce cf;
    mju_zero3(F + 3 * i);
    if (mjdiff_contactForce(m, d, v->loop->s, i, &cf) != MJDIFF_OK || !(cf.force[0] > 0)) continue;
    const mjtNum* R = d->contact[i].frame;
    for (int j = 0; j < 3; j++) {
      F[3 * i + j] = cf.force[0] * R[j] + cf.force[1] * R[3 + j] + cf.force[2] * R[6 + j];
    }
    v->fmax = fmax(v->fmax, mju_norm3(F + 3 * i));
  }
  double scale = v->fmax > 0 ? 0.25 * m->stat.extent / v->fmax : 0;
  double width = m->vis.scale.forcewidth * m->stat.meansize;
  float rgba[4] = {m->vis.rgba.contactforce[0], m->vis.rgba.contactforce[1],
                   m->vis.rgba.contactforce[2], m->vis.rgba.contactforce[3]};
  for (int i = 0; i < d->ncon; i++) {
    const mjtNum* f = F + 3 * i;
    if (mju_norm3(f) * scale < 0.02 * width) continue;
    const mjtNum* p = d->contact[i].pos;
    mjvGeom* g = newGeom(&v->scn);
    if (!g) break;
    mjv_initGeom(g, mjGEOM_ARROW, NULL, NULL, NULL, rgba);
    mjv_makeConnector(g, mjGEOM_ARROW, width, p[0], p[1], p[2], p[0] + scale * f[0],
                      p[1] + scale * f[1], p[2] + scale * f[2]);
    g->category = mjCAT_DECOR;
    v->nforce++;
  }
  free(F);
}

//---------------------------------- frame ---------------------------------------------------------

static void render(viewer* v, mjrRect viewport, const char* title) {
  mpcLoop* loop = v->loop;
  const mjModel* m = loop->m;
  mjv_updateScene(m, loop->dc, &v->opt, NULL, &v->cam, mjCAT_ALL, &v->scn);
  if (v->ghost) addGhost(v);
  if (v->forces) addForces(v);
  mjr_render(viewport, &v->scn, &v->con);

  // status, bottom left
  char labels[512], values[1024];
  const mpcLoopRecord* r = loop->nrec ? loop->rec + loop->nrec - 1 : NULL;
  snprintf(labels, sizeof(labels),
           "Time\nCost\nPlan cost\nPlan time\nSuccess\nReal-time\nContacts\nStatus");
  snprintf(values, sizeof(values),
           "%.3f s\n%.5g\n%.5g\n%.2f ms\n%s\n%.3f x\n%d, largest %.3g N\n%s",
           mpc_loopTime(loop), loop->cost, r ? r->plan_cost : 0.0, r ? 1e3 * r->plan_s : 0.0,
           loop->success ? "yes" : "no", mpc_loopRealtime(loop), v->nforce, v->fmax,
           loop->failed ? "FAILED (backspace resets)"
           : v->ended && v->paused ? "end of run (space continues)"
           : v->paused ? "paused" : "running");
  mjr_overlay(mjFONT_NORMAL, mjGRID_BOTTOMLEFT, viewport, labels, values, &v->con);
  mjr_overlay(mjFONT_NORMAL, mjGRID_TOPRIGHT, viewport, title, NULL, &v->con);
  if (loop->failed) {
    mjr_overlay(mjFONT_NORMAL, mjGRID_BOTTOMRIGHT, viewport, loop->err, NULL, &v->con);
  }
  if (v->help) {
    mjr_overlay(mjFONT_NORMAL, mjGRID_TOPLEFT, viewport,
                "Pause / run\nSingle step\nReset\nGhost (plan)\nForce arrows\nContact points\n"
                "Transparency\nRotate\nMove\nZoom\nHelp\nQuit",
                "Space\nRight arrow\nBackspace\nG\nF\nC\nT\nLeft drag\nRight drag\nScroll\nF1\n"
                "Esc",
                &v->con);
  } else {
    mjr_overlay(mjFONT_NORMAL, mjGRID_TOPLEFT, viewport, "F1: help", NULL, &v->con);
  }
}

static void sleepSeconds(double s) {
  struct timespec ts;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
  nanosleep(&ts, NULL);
}

static void resync(viewer* v) {
  v->sim0 = mpc_loopTime(v->loop);
  v->wall0 = tool_now();
}

// step the loop for one frame: as close to real time as planning allows, for at most three times
// the last frame's rendering time (1/30 to 1/4 s) of wall time per frame; pause at opt.seconds
static void advance(viewer* v) {
  mpcLoop* loop = v->loop;
  if (v->reset_request) {
    v->reset_request = 0;
    mpc_resetLoop(loop);
    v->ended = 0;
    resync(v);
    logEvent(v, "reset");
  }
  if (loop->failed) return;
  if (v->paused) {
    if (v->step_request) {
      mpc_loopStep(loop);
      logEvent(v, "step");
    }
    v->step_request = 0;
    resync(v);
    return;
  }
  if (v->step_request) logEvent(v, "step");  // running: nothing to do
  v->step_request = 0;
  double budget = fmin(0.25, fmax(1.0 / 30, 3 * v->render_s));
  double start = tool_now();
  int stepped = 0;
  while (!loop->failed && tool_now() - start < budget &&
         mpc_loopTime(loop) - v->sim0 < tool_now() - v->wall0) {
    if (!v->ended && mpc_loopTime(loop) + 0.5 * loop->m->opt.timestep >= loop->opt.seconds) {
      v->ended = 1;
      v->paused = 1;
      break;
    }
    mpc_loopStep(loop);
    stepped = 1;
  }
  // slower than real time: do not try to catch up later
  if (tool_now() - start >= budget) resync(v);
  if (!stepped) sleepSeconds(0.002);
}

int mpc_view(mpcLoop* loop, const mpcViewOptions* opt, char* err, int errsz) {
  const mjModel* m = loop->m;
  if (!glfwInit()) {
    snprintf(err, (size_t)errsz, "cannot initialise GLFW (no display? try xvfb-run)");
    return TOOL_EXIT_RUNTIME;
  }
  int width = opt->width > 0 ? opt->width : 1200;
  int height = opt->height > 0 ? opt->height : 800;
  GLFWwindow* win = glfwCreateWindow(width, height, opt->title ? opt->title : "mjdiff-mpc", NULL,
                                     NULL);
  if (!win) {
    snprintf(err, (size_t)errsz, "cannot create a window with an OpenGL context");
    glfwTerminate();
    return TOOL_EXIT_RUNTIME;
  }
  glfwMakeContextCurrent(win);
  glfwSwapInterval(opt->screenshot ? 0 : 1);

  viewer* v = calloc(1, sizeof(viewer));
  mjData* dg = mj_makeData(m);
  if (!v || !dg) {
    snprintf(err, (size_t)errsz, "out of memory");
    free(v);
    if (dg) mj_deleteData(dg);
    glfwDestroyWindow(win);
    glfwTerminate();
    return TOOL_EXIT_RUNTIME;
  }
  v->loop = loop;
  v->dg = dg;
  v->ghost = 1;
  v->forces = 1;
  mjv_defaultCamera(&v->cam);
  mjv_defaultFreeCamera(m, &v->cam);
  mjv_defaultOption(&v->opt);
  mjv_defaultScene(&v->scn);
  mjr_defaultContext(&v->con);
  mjv_makeScene(m, &v->scn, 2000 + 2 * m->ngeom + 100 * (m->nbody + m->nsite));

  // the offscreen buffer as large as the window: a shallow copy of the model with that size
  // (mjr_makeContext only reads the model)
  int fbw, fbh;
  glfwGetFramebufferSize(win, &fbw, &fbh);
  mjModel sized = *m;
  if (sized.vis.global.offwidth < fbw) sized.vis.global.offwidth = fbw;
  if (sized.vis.global.offheight < fbh) sized.vis.global.offheight = fbh;
  mjr_makeContext(&sized, &v->con, mjFONTSCALE_150);

  glfwSetWindowUserPointer(win, v);
  glfwSetKeyCallback(win, keyboard);
  glfwSetCursorPosCallback(win, mouseMove);
  glfwSetMouseButtonCallback(win, mouseButton);
  glfwSetScrollCallback(win, scroll);

  int code = TOOL_EXIT_OK;
  const char* title = opt->title ? opt->title : "mjdiff-mpc";
  const char* logPath = getenv("MJDIFF_VIEW_LOG");
  if (logPath && *logPath && !(v->log = fopen(logPath, "a"))) {
    snprintf(err, (size_t)errsz, "cannot open MJDIFF_VIEW_LOG file '%s'", logPath);
    code = TOOL_EXIT_RUNTIME;
  } else if (opt->screenshot) {
    // step, render one frame offscreen (or in the window if there is no offscreen buffer), save
    while (loop->nrec < opt->screenshot_after && !loop->failed && !tool_interrupted()) {
      mpc_loopStep(loop);
    }
    mjr_setBuffer(mjFB_OFFSCREEN, &v->con);
    mjrRect viewport = {0, 0, fbw, fbh};
    if (v->con.currentBuffer != mjFB_OFFSCREEN) {
      fprintf(stderr, "mjdiff-mpc: note: no offscreen buffer; reading the window\n");
    } else {
      mjrRect mx = mjr_maxViewport(&v->con);
      viewport.width = mx.width < fbw ? mx.width : fbw;
      viewport.height = mx.height < fbh ? mx.height : fbh;
    }
    render(v, viewport, title);
    unsigned char* rgb = malloc(3 * (size_t)viewport.width * (size_t)viewport.height);
    if (!rgb) {
      snprintf(err, (size_t)errsz, "out of memory");
      code = TOOL_EXIT_RUNTIME;
    } else {
      mjr_readPixels(rgb, NULL, viewport, &v->con);
      if (!mpc_writePNG(opt->screenshot, rgb, viewport.width, viewport.height)) {
        snprintf(err, (size_t)errsz, "cannot write '%s'", opt->screenshot);
        code = TOOL_EXIT_RUNTIME;
      } else {
        fprintf(stderr, "mjdiff-mpc: wrote %s (%dx%d) after %d control steps (t = %.3f s)\n",
                opt->screenshot, viewport.width, viewport.height, loop->nrec,
                mpc_loopTime(loop));
      }
      free(rgb);
    }
    mjr_setBuffer(mjFB_WINDOW, &v->con);
    glfwSwapBuffers(win);
  } else {
    resync(v);
    logEvent(v, "start");
    while (!glfwWindowShouldClose(win) && !tool_interrupted()) {
      advance(v);
      double t0 = tool_now();
      mjrRect viewport = {0, 0, 0, 0};
      glfwGetFramebufferSize(win, &viewport.width, &viewport.height);
      render(v, viewport, title);
      glfwSwapBuffers(win);
      v->render_s = tool_now() - t0;
      glfwPollEvents();
    }
  }

  if (v->log) fclose(v->log);
  mjv_freeScene(&v->scn);
  mjr_freeContext(&v->con);
  mj_deleteData(dg);
  free(v);
  glfwDestroyWindow(win);
  glfwTerminate();
  return code;
}
