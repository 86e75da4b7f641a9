// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The smooth model: MuJoCo's hard constraints (contacts, joint and tendon limits, friction loss,
// equality constraints) replaced by smooth penalty forces, so that one step is a smooth function of
// state, controls and parameters.
// Touch sensors read the smooth normal force: the sum of fn over the contacts MuJoCo 2.2.2's touch
// rule counts (the site's body; contact point in the site, or the normal ray from it, pointing away
// from that body, meeting the site), then MuJoCo's noise and cutoff (mjdiff_forward, mjdiff_step;
// the adapter's plain mj_step keeps MuJoCo's reading, 0). Smooth contacts act before the geoms
// touch, so their points can lie just outside the geom: let touch sites reach past it by about
// the contact width.
//
// Force laws (x is the activation depth, w the smoothing width, k a stiffness, b a damping):
//   contact    x = w - (dist - o)                  (dist: signed distance, < 0 in penetration;
//                                                   o: MuJoCo's includemargin, 2.2 margin -
//                                                   gap, 3.x margin; 0 unless the MJCF sets
//                                                   a margin)
//              s(x) = 0                    x <= 0
//                     x^3 / (6 w^2)        0 < x <= w
//                     x - w + (2w-x)^3/(6w^2)   w < x <= 2w
//                     x - w                x > 2w   (C2, monotone, convex; s = -dist when deep)
//              g = k s(x), e = -c s'(x) vn     vn: normal velocity, > 0 when separating
//              fn = g + e  (e >= -g/2),   g^2 / (-4 e)  (e < -g/2)   (C1, > 0: never pulls)
//   friction   u = v_t / v_s;  f_t = -mu fn u / sqrt(1 + |u|^2)   (sliding, condim >= 3)
//              torsional (condim >= 4) and rolling (condim 6) likewise with angular velocities and
//              the spin speed w_s
//   limits     joint or tendon value q in [lo, hi]: the contact law on dist = q - lo and hi - q
//   frictionloss   f = -floss v / sqrt(v^2 + v_f^2)
//   equality   connect, weld, joint, tendon: f = -k_eq e - b_eq de/dt on the constraint error e
//              (weld rotation error scaled by the weld's torquescale)
//   long range f_r = a S(dist / R) along n on every contact out to dist = R (a = reach_strength,
//              default 0: off; plugin/reach.h): S = 1 (dist <= 0), (1-t)^3 (1 + 3t + 6t^2), 0
//              (dist >= R), C2; for optimisation, annealed by <mjdiff/reach.h>; not in touch
//              sensors or mjdiff_contactForce
//
// Parameters are read from the model's <custom> numerics named mjdiff_<field>; contact fields may be
// set per geom with mjdiff_<field>:<geomname> (in C: mjdiff_setParam with
// "geom:<geomname>:<field>", the name <mjdiff/params.h> uses). A pair of geoms uses the geom value that was set
// explicitly; if both were, their mean; if neither, the model-wide value, or, where that is
// MJDIFF_DERIVED (the default), the value derived for the pair from the MJCF (plugin/derive.c).

#ifndef MJDIFF_SMOOTH_H_
#define MJDIFF_SMOOTH_H_

#include <mujoco/mujoco.h>
#include <mjdiff/base.h>

#ifdef __cplusplus
extern "C" {
#endif

// A parameter value meaning "derived from the MJCF": per contact pair, limit and equality from
// MuJoCo's own solref and solimp, the timestep and the element's effective mass (MuJoCo's
// invweight0 at qpos0), fixed at make time (README, "Defaults"). The default of every field but
// spin_speed.
#define MJDIFF_DERIVED (-1.0)

// Model-wide parameters of the smooth model. Units are SI; "rad" variants apply to hinge and ball
// joints, "m" variants to slide joints and tendons. Every field but spin_speed may be
// MJDIFF_DERIVED.
typedef struct mjdiffOptions_ {
  mjtNum contact_stiffness;    // normal stiffness k (N/m), > 0
  mjtNum contact_damping;      // normal damping c (N s/m), >= 0
  mjtNum contact_width;        // activation distance and smoothing width w (m), > 0
  mjtNum friction_speed;       // sliding-friction regularisation speed v_s (m/s), > 0
  mjtNum spin_speed;           // torsional and rolling regularisation speed w_s (rad/s), > 0
  mjtNum limit_stiffness;      // joint and tendon limit stiffness (N/m or N m/rad), > 0
  mjtNum limit_damping;        // limit damping (N s/m or N m s/rad), >= 0
  mjtNum limit_width;          // limit smoothing width (m or rad), > 0
  mjtNum frictionloss_speed;   // friction-loss regularisation speed (m/s or rad/s), > 0
  mjtNum eq_stiffness;         // equality penalty stiffness (N/m, N m/rad), > 0
  mjtNum eq_damping;           // equality penalty damping (N s/m, N m s/rad), >= 0

  // time stepping of mjdiff_step (not parameters: no derivative in them)
  mjtNum integrator;           // MJDIFF_INT_EXPLICIT, MJDIFF_INT_IMPLICIT, or MJDIFF_DERIVED
  mjtNum implicit_tol;         // implicit step: Newton stops at a velocity change <= tol (1 + |v'|)
  mjtNum implicit_maxiter;     // implicit step: most Newton iterations, an integer >= 1
  mjtNum implicit_continuation;  // implicit step: where Newton from v' = v fails, the same
                               // equation is solved at timestep h / 2^j (j up to this, an
                               // integer in [0, 8]; 0: off) and continued back to h
  mjtNum implicit_split;       // implicit step: where Newton fails even so, two steps of h / 2
                               // instead, each split again likewise, down to h / 2^this (an
                               // integer in [0, 3]; 0: off; README, "The implicit smooth step")
  mjtNum substeps;             // explicit step: smooth steps of timestep / n per mjdiff_step, an
                               // integer in [1, 64], or MJDIFF_DERIVED (README, "Substeps")

  // long-range contact term for optimisation (plugin/reach.h; <mjdiff/reach.h> anneals it): a
  // repulsive normal force a S(dist / R) on every contact out to dist = R, S C2, 1 at dist <= 0
  mjtNum reach_strength;       // its strength a (N), >= 0; 0 (the default): off, bit for bit
  mjtNum reach_width;          // its range R (m), > 0 (default 0.1); the collision margin while on
  mjtNum reach_static;         // 1 (default): on every pair; 0: only on pairs of two moving
                               // bodies (not on support contacts with the static world)
} mjdiffOptions;

// Values of mjdiffOptions.integrator:
//   MJDIFF_INT_EXPLICIT  the model's own integrator on the smooth forces (Euler with MuJoCo's
//                        implicit joint damping, or RK4): the derived stiffness is capped by the
//                        explicit step's stability bound (README, "Defaults")
//   MJDIFF_INT_IMPLICIT  backward Euler on the smooth forces (contacts, limits, friction loss,
//                        equalities), Newton-solved each step; the other forces as MuJoCo's Euler
//                        treats them (RK4 models too): derived values as firm as MuJoCo's solref
//   MJDIFF_DERIVED       the default: explicit
#define MJDIFF_INT_EXPLICIT 0
#define MJDIFF_INT_IMPLICIT 1

// The largest m->nv the implicit step takes. Its Newton system is dense (an LU of nv x nv, about
// 2 nv^3 / 3 flops per Newton iteration, and nv x nv force Jacobians): at nv = 3000 (MuJoCo's
// particle sample) an iteration takes seconds and a step with contacts half a minute or more.
// Above it, making the smooth model with the implicit step and setting the integrator to it
// (mjdiff_setParam, a MuJoCo 3 plugin config key) fail with MJDIFF_ERR_UNSUPPORTED naming nv
// (those are the only ways to choose it); the explicit step has no such limit.
#define MJDIFF_IMPLICIT_MAX_NV 1000

// After an implicit mjdiff_step on d: the Newton iterations it took (0 after an explicit step that
// followed mj_resetData; otherwise whatever MuJoCo's solver left), with the last relative velocity
// correction and residual norm (nullable). Per iteration they are in MuJoCo's own solver
// statistics (2.2: d->solver_iter, d->solver[i].gradient = correction, .improvement = residual).
MJDIFF_API int mjdiff_implicitStats(const mjData* d, mjtNum* correction, mjtNum* residual);

// Per-contact force in the contact frame (normal, tangent 1, tangent 2), acting on geom2;
// geom1 receives the opposite.
typedef struct mjdiffContactForce_ {
  mjtNum force[3];             // normal force and two friction forces (N)
  mjtNum torque[3];            // torsional and two rolling torques (N m)
} mjdiffContactForce;

// The smooth model of one mjModel: its parameters, per-geom values and two shallow views of the
// model (hard constraints off; collision with activation margins). Opaque; one per mjModel, shared
// read-only by every thread stepping that model.
typedef struct mjdiffModel_ mjdiffModel;

// The number of smooth steps of timestep / n one mjdiff_step takes (controls, applied forces and
// the model's timestep held; sensors read at the step's start state, as mj_step's): the option
// substeps where set, 1 under the implicit step or while attached to MuJoCo's own mj_step (the 2.2
// adapter, the MuJoCo 3 engine plugin), else derived from the geoms whose contact stiffness is
// derived (not set in the MJCF, on the geom or model-wide): 1 where the explicit step's stability
// cap is within 1.5x of MuJoCo's own contact firmness, else the smallest n that reaches it (at most
// 8; README, "Substeps"); 1 where the model's flags turn contacts off (contact or constraint
// disabled). Fixed when the model is made (or its integrator or substeps are set): a model made
// with contacts off keeps 1 when they are turned on later (set substeps, or make it again).
// The derived values and the step derivatives use timestep / n.
MJDIFF_API int mjdiff_substepCount(const mjdiffModel* s);

// Fill opt with the defaults: MJDIFF_DERIVED for every field but spin_speed (0.5 rad/s),
// implicit_tol (1e-10), implicit_maxiter (100), implicit_continuation (4), implicit_split (3),
// reach_strength (0: off),
// reach_width (0.1 m) and reach_static (1).
MJDIFF_API void mjdiff_defaultOptions(mjdiffOptions* opt);

// Check every field of opt. On failure err names the first bad field and its value.
// Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_validateOptions(const mjdiffOptions* opt, char* err, int errsz);

// Nonzero if the model asks for the smooth model: it holds a custom numeric named mjdiff_* (or, on
// MuJoCo 3, an instance of the engine plugin mjdiff.smooth) and no mjdiff_enable equal to 0.
MJDIFF_API int mjdiff_wantsSmooth(const mjModel* m);

// Make the smooth model of m. Parameters start from opt (defaults if NULL) and are then overridden
// by the model's mjdiff_* custom numerics, then (MuJoCo 3) by the config keys of its mjdiff.smooth
// plugin instance (model-wide fields; at most one instance). Fails on an unknown mjdiff_* name, a
// bad value, or a model feature the smooth model cannot handle (named in err). m must outlive the
// result and must not be resized; its option and parameter arrays may change between steps.
// Nullable: opt, err.
MJDIFF_API mjdiffStatus mjdiff_makeModel(const mjModel* m, const mjdiffOptions* opt,
                                         mjdiffModel** out, char* err, int errsz);

// Numbers of mjData stack (mjtNum) the smooth model's steps (explicit and implicit) and the step
// derivatives take beyond MuJoCo's own forward pass. An mjData's stack is sized at mj_makeData:
// on MuJoCo 2.2 by m->nstack (numbers), on MuJoCo 3 by m->narena (bytes, shared with the contacts
// and constraint rows). Raise it by this much before making the mjData you differentiate with
// (m->nstack += need, or m->narena += need * sizeof(mjtNum)); the calls otherwise fail, naming
// the stack (or MuJoCo 3 reports its own stack overflow).
MJDIFF_API size_t mjdiff_stackNeed(const mjModel* m);

// Copy a smooth model (its parameters and per-geom values) for m, a copy of the mjModel src was
// made for (mj_copyModel), not attached.
// Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_copyModel(const mjdiffModel* src, const mjModel* m,
                                         mjdiffModel** out, char* err, int errsz);

// Free a smooth model. NULL is a no-op.
MJDIFF_API void mjdiff_freeModel(mjdiffModel* s);

// Current model-wide parameters (MJDIFF_DERIVED where derived per element).
MJDIFF_API const mjdiffOptions* mjdiff_getOptions(const mjdiffModel* s);

// Set one parameter by name. The spelling of <mjdiff/params.h>, "mjdiff:contact_stiffness"
// (model-wide) and "geom:geomname:contact_stiffness" (one geom; contact fields only), is the one
// to use in C; the MJCF numerics' spelling without the prefix, "contact_stiffness" and
// "contact_stiffness:geomname", is accepted too (MuJoCo 2.2 custom numerics carry it).
// MJDIFF_DERIVED returns a model-wide field to its derived values, and makes a geom's field follow
// the model-wide one again. Not thread-safe against a concurrent step of the same model.
// Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_setParam(mjdiffModel* s, const char* name, mjtNum value,
                                        char* err, int errsz);

// Read one parameter by name (same names as mjdiff_setParam). A derived model-wide field reads
// MJDIFF_DERIVED; a geom's derived field reads its value against an immovable partner (infinite
// stiffness and damping for a geom that cannot move).
// Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_getParam(const mjdiffModel* s, const char* name, mjtNum* value,
                                        char* err, int errsz);

// The value of a contact field ("contact_stiffness", "contact_damping", "contact_width",
// "friction_speed", "spin_speed") that contacts between geoms g1 and g2 use: explicit per geom,
// model-wide, or derived for the pair (README, "Defaults").
// Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_getPairParam(const mjdiffModel* s, const char* field, int g1,
                                            int g2, mjtNum* value, char* err, int errsz);

// Smooth forward dynamics: MuJoCo's pipeline with hard constraints off, contact candidates from
// MuJoCo's collision detection within the activation distance (written to d->contact, d->ncon), and
// the smooth forces added to d->qfrc_passive. Fills d->qacc like mj_forward.
// Fails, leaving d's state (qpos, qvel, act, ctrl, time) untouched, if the state or result is not
// finite (err names the array and index). MuJoCo callbacks receive a shallow copy of m.
// Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_forward(const mjModel* m, mjData* d, const mjdiffModel* s,
                                       char* err, int errsz);

// Smooth step: a drop-in for mj_step (Euler, semi-implicit in velocity with MuJoCo's implicit
// joint damping, or RK4). Any other integrator is MJDIFF_ERR_UNSUPPORTED. A step that diverges
// (see mjdiff_stability) fails with MJDIFF_ERR_NONFINITE and a message naming the most unstable
// smooth force. On failure d's state is untouched and the matching MuJoCo warning counter in
// d->warning is raised.
// Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_step(const mjModel* m, mjData* d, const mjdiffModel* s,
                                    char* err, int errsz);

// The core, independent of how the model is attached: from the kinematics and velocities already
// in d (mj_fwdPosition and mj_comVel done, contacts in d->contact), add the generalised smooth
// forces to qfrc (nv x 1). Uses d's stack for scratch; allocates nothing.
MJDIFF_API void mjdiff_addForces(const mjModel* m, mjData* d, const mjdiffModel* s, mjtNum* qfrc);

// Run MuJoCo's collision detection with the smooth model's activation margins, filling d->contact
// and d->ncon. m is the model as its user configured it (not the view with hard constraints off):
// nothing is detected when it disables contacts, constraints or passive forces. Body
// transmissions (adhesion actuators), whose moment MuJoCo builds from its own contact list, get
// their moments and actuator velocities from these contacts. Needs mj_kinematics done (and
// mj_comPos where the model has body transmissions: their moments use the point Jacobians).
MJDIFF_API void mjdiff_collide(const mjModel* m, mjData* d, const mjdiffModel* s);

// Smooth force of contact i (0 <= i < d->ncon) at the state of the last forward pass.
MJDIFF_API mjdiffStatus mjdiff_contactForce(const mjModel* m, const mjData* d,
                                            const mjdiffModel* s, int i,
                                            mjdiffContactForce* force);

// Stability of the smooth forces at the state of the last forward pass: for each active element
// (contact, its friction, joint or tendon limit, friction loss, equality) its law near the state
// as a spring-damper on MuJoCo's approximate inverse inertia (invweight0), and the ratio of the
// timestep to the largest timestep at which semi-implicit Euler integrates that spring-damper
// stably. The worst element is kept. mjdiff_step fails with its description when a step diverges:
// a non-finite result, or the kinetic energy more than quadrupling in one step (past the scale
// of slow motion, half the total mass times (1 m/s)^2) while the worst ratio, at the current
// configuration, exceeds 1.5 (plugin/stability.c).
typedef enum mjdiffStabilityKind_ {
  MJDIFF_STAB_NONE = 0,
  MJDIFF_STAB_CONTACT,         // id, id2: the two geoms
  MJDIFF_STAB_FRICTION,        // id, id2: the two geoms
  MJDIFF_STAB_JOINT_LIMIT,     // id: joint
  MJDIFF_STAB_TENDON_LIMIT,    // id: tendon
  MJDIFF_STAB_DOF_LOSS,        // id: dof
  MJDIFF_STAB_TENDON_LOSS,     // id: tendon
  MJDIFF_STAB_EQUALITY         // id: equality
} mjdiffStabilityKind;

typedef struct mjdiffStability_ {
  mjtNum ratio;                // timestep / hmax of the worst element (0: none active)
  mjtNum hmax;                 // its largest stable timestep (s)
  mjtNum stiffness;            // its stiffness slope (N/m, N m/rad) at the state
  mjtNum damping;              // its damping slope (N s/m, N m s/rad) at the state
  mjtNum mass;                 // its effective mass 1/A (kg, kg m^2)
  int kind;                    // mjdiffStabilityKind
  int id, id2;                 // the element (see the kinds), -1 if unused
  int exact;                   // A: 1 at the configuration, 0 MuJoCo's invweight0
  // the active elements together (exact only; equalities not included): semi-implicit Euler on
  // the linearised smooth forces M dv/dt = -K dx - C dv is stable while h < group_hmax
  mjtNum group_ratio;          // timestep / group_hmax (0: fewer than two rows, or not exact);
                               // at least each of its rows' own ratio (a contact's row carries
                               // its share of the pair's force; ratio above does not); rows past
                               // the stack's room are left out (then a lower bound)
  mjtNum group_hmax;           // largest stable timestep of the elements together (s)
  int group_count;             // elements taking part in the worst mode (a contact is one)
  int group_kind;              // its largest participant (kind, id, id2 as above)
  int group_id, group_id2;
} mjdiffStability;

// Largest timestep (s) at which semi-implicit Euler integrates a spring-damper of stiffness k
// and damping c on inverse inertia invw stably: with omega^2 = k invw, 2 gamma = c invw, stable
// while (omega h)^2 + 4 gamma h < 4 and gamma h < 1. Infinite for k = c = 0.
MJDIFF_API mjtNum mjdiff_stableTimestep(mjtNum k, mjtNum c, mjtNum invw);

// The worst element at the state in d (after mjdiff_forward or mjdiff_step's forward pass). exact
// 0: MuJoCo's invweight0 approximation of each element's inverse inertia A (cheap); 1: A at d's
// configuration (a solve with M's factor per active element; uses d's stack).
MJDIFF_API void mjdiff_stability(const mjModel* m, mjData* d, const mjdiffModel* s, int exact,
                                 mjdiffStability* out);

// One line describing out, naming the element, its law, effective mass and largest stable
// timestep. Returns the length snprintf would write.
MJDIFF_API int mjdiff_describeStability(const mjModel* m, const mjdiffStability* out, char* buf,
                                        int bufsz);

// ---------------------------------------------------------------------------------------------
// Callback adapter for MuJoCo 2.2 (the only global state in the library).
//
// MuJoCo 2.2 has no engine-plugin API. An attached model is stepped by the plain mj_step: the adapter
// disables the model's hard constraints (its opt.disableflags) and installs mjcb_passive, which looks
// the model up in a small registry keyed by model pointer and adds the smooth forces. Several models
// and threads work at once. A model must be detached before it is freed.

// Attach a smooth model to its mjModel (the one s was made from). Sets contact, equality,
// frictionloss and limit in m->opt.disableflags (s remembers the model's own values, so that
// mjdiff_step keeps working on the attached model). Fails if m or s is already attached. The
// smooth forces are passive forces: disabling passive forces (mjDSBL_PASSIVE) disables them, in
// mjdiff_step as in MuJoCo 2.2's mj_step, which then skips mjcb_passive.
// Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_attach(mjModel* m, mjdiffModel* s, char* err, int errsz);

// Detach m, restoring the disable flags it had before mjdiff_attach; returns its smooth model (the
// caller frees it), or NULL if m was not attached.
MJDIFF_API mjdiffModel* mjdiff_detach(mjModel* m);

// The smooth model attached to m, or NULL.
MJDIFF_API const mjdiffModel* mjdiff_attached(const mjModel* m);

// Number of times the adapter's callback added smooth forces, and contacts it saw, since start.
MJDIFF_API void mjdiff_adapterStats(long long* ncall, long long* ncontact);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_SMOOTH_H_
