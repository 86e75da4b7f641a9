// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Model parameters selected by MuJoCo names, for derivatives of the smooth step with respect to
// them (mjdiff_makeStepDeriv) and for reading and writing them.
//
// A selection is made from names "kind:object:field" (or "kind:field" for model-wide values).
// object is a MuJoCo name or a glob pattern with '*' (any run of characters); patterns match named
// objects only. A field with several components selects all of them, or one with an index suffix
// "[k]"; the expanded names (mjdiff_paramName) carry the index and are accepted back as input.
//
//   body:B:mass                  body_mass (kg), > 0
//   body:B:inertia               body_inertia[3]: principal moments in the inertial frame
//                                (body_iquat) (kg m^2), > 0 each
//   body:B:ipos                  body_ipos[3]: center of mass in the body frame (m)
//   joint:J:damping              dof_damping of every dof of J (hinge, slide: one entry
//                                "joint:J:damping"; ball: 3, free: 6 entries "joint:J:damping[k]"),
//                                >= 0
//   joint:J:armature             dof_armature, per dof like damping, >= 0
//   joint:J:frictionloss         dof_frictionloss, per dof like damping, >= 0
//   joint:J:stiffness            jnt_stiffness (any joint type), >= 0
//   joint:J:springref            qpos_spring of a hinge or slide joint
//   tendon:T:stiffness           tendon_stiffness, >= 0
//   tendon:T:damping             tendon_damping, >= 0
//   tendon:T:frictionloss        tendon_frictionloss, >= 0
//   geom:G:friction              geom_friction[3] (sliding, torsional, rolling), >= 0
//   geom:G:contact_stiffness     the smooth model's per-geom contact values (also contact_damping,
//                                contact_width, friction_speed, spin_speed); setting one marks it
//                                explicit for G (see <mjdiff/smooth.h> for the pair rule)
//   actuator:A:gear              actuator_gear[0] (hinge/slide joint or tendon transmission)
//   actuator:A:gainprm           actuator_gainprm[0..2] ("actuator:A:gainprm[1]" selects one)
//   actuator:A:biasprm           actuator_biasprm[0..2]
//   actuator:A:dynprm            actuator_dynprm[0] of a filter actuator (time constant, s), > 0
//   option:gravity               opt.gravity[3] (m/s^2)
//   option:density               opt.density (kg/m^3), >= 0: MuJoCo's fluid forces
//   option:viscosity             opt.viscosity (Pa s), >= 0
//   option:wind                  opt.wind[3] (m/s)
//   mjdiff:FIELD                 a model-wide smooth-model value: contact_stiffness,
//                                contact_damping, contact_width, friction_speed, spin_speed,
//                                limit_stiffness, limit_damping, limit_width, frictionloss_speed,
//                                eq_stiffness, eq_damping (ranges as in mjdiff_setParam); per-geom
//                                fields affect the geoms without an explicit value
//
// With a pattern, objects a field does not apply to (the world body; springref of ball and free
// joints; gear of other transmissions; dynprm of actuators without filter dynamics; gain and bias
// of muscle or user actuators) are skipped; an exact name that does not apply is
// MJDIFF_ERR_UNSUPPORTED. A parameter selected twice appears once, at its first position.
// Geometry (adjoint/design_d.c; its header has the compile-time map and the derivative):
//   body:B:pos[3]                body_pos, in the parent's frame (not the world body)
//   body:B:scale                 a scalar, 1 as compiled: every position in B's frame (child
//                                bodies, B's geoms, sites and joint anchors) and the half-length of
//                                B's capsule and cylinder geoms and sites scale with it (a link's
//                                length), > 0
//   geom:G:pos[3]                geom_pos in the body frame (not meshes, height fields)
//   geom:G:size[k]               the sizes the type reads (sphere 1, capsule, cylinder 2, box,
//                                ellipsoid 3), > 0; not meshes, planes, height fields
//   site:S:pos[3]                site_pos in the body frame
//   joint:J:pos[3]               jnt_pos, the anchor in the body frame
// Where the compiler inferred a body's mass and inertia from its geoms (detected by
// recomputing them), they follow the geoms (MuJoCo's GetVolume, SetInertia, GeomFrame: density
// held, or the mass: mjdiff_designFixMass), so do bounding radii. Setting any of them turns off
// MuJoCo's same-frame and simple-body shortcuts for the whole model (the general path is exact).
//
// Names are the one spelling of the C API: mjdiff_setParam and mjdiff_getParam accept
// "geom:G:contact_stiffness" and "mjdiff:contact_stiffness" as well. A name with several
// components expands unseen ("geom:table:friction" is 3 parameters, sliding, torsional, rolling):
// find them with mjdiff_paramIndex and mjdiff_paramNameCount, or select one ("...friction[0]").
//
// An explicit MJCF <pair> has values of its own: its friction (pair_friction, 5 values) is not a
// parameter -- geom:G:friction does not reach a <pair>'s contacts (derivative 0 there); change
// m->pair_friction directly, or drop the <pair> so that the geoms' values apply. Its smooth-model
// values are derived from the pair's solref/solimp unless a geom or the model sets them
// explicitly: name them through the geoms (geom:G:contact_stiffness, the pair rule of
// <mjdiff/smooth.h>) or model-wide (mjdiff:contact_stiffness); mjdiff_getPairParam(s, field, g1,
// g2) reads the value a pair uses.
//
// Derivatives at non-smooth points: a contact's friction is the larger of its two geoms' values
// (MuJoCo's mj_collideGeoms; the value of the higher-priority geom if priorities differ; the
// pair's own value for explicit <pair> contacts, which geom friction does not touch). The
// derivative goes to the geom whose value is used; on a tie each geom gets half (the mean of the
// one-sided derivatives, what centered differences measure). Friction loss (joint, tendon) at
// exactly 0 is off in the smooth model; its derivative there is the one-sided one from above.
// So are density and viscosity at 0 (MuJoCo switches the fluid forces on above 0). The fluid
// forces of bodies on MuJoCo's inertia-box model depend on the body's mass, inertia and com too;
// those derivatives include them (bodies on the ellipsoid model: geom sizes only, not parameters).
// The per-geom smooth values are differentiated as explicit values: if a geom follows the
// model-wide value while a contact partner has an explicit one, setting it explicitly changes the
// pair value (mean rule) -- write the current values back with mjdiff_setParamValues first.
//
// Setting values changes the mjModel arrays directly (and body_subtreemass with body masses).
// A body whose mass, inertia, com or dof armature is set loses MuJoCo's compile-time shortcuts
// (body_sameframe: xipos = xpos; body_simple, dof_simplenum: a diagonal mass matrix copied from
// dof_M0), which hold for the compiled values only; the general path gives the same results.
// Geoms and sites that the compiler placed on a body's inertial frame (geom_sameframe 2) stay
// where they are in the body frame when its com (ipos) is set.
// Constants that mj_setConst derives for MuJoCo's hard constraints and muscles (dof_invweight0,
// actuator_acc0, ...) are not recomputed; the smooth model does not use them.

#ifndef MJDIFF_PARAMS_H_
#define MJDIFF_PARAMS_H_

#include <mujoco/mujoco.h>
#include <mjdiff/base.h>
#include <mjdiff/smooth.h>

#ifdef __cplusplus
extern "C" {
#endif

// A selection of model parameters of one mjModel. Opaque; read-only once made, so it may be
// shared by threads.
typedef struct mjdiffParams_ mjdiffParams;

// Select the parameters named by names (n strings, syntax above) of m, in order. s is the smooth
// model of m (needed only for the smooth model's fields; NULL rejects them). Fails with
// MJDIFF_ERR_NAME for an unknown kind, field or object or a pattern that matches nothing, and
// MJDIFF_ERR_UNSUPPORTED for a parameter without a derivative; err names it. The selection refers
// to m by its sizes: use it with m (or an identical copy) only.
// Nullable: s, err.
MJDIFF_API mjdiffStatus mjdiff_makeParams(const mjModel* m, const mjdiffModel* s,
                                          const char* const* names, int n, mjdiffParams** out,
                                          char* err, int errsz);

// Free a selection. NULL is a no-op.
MJDIFF_API void mjdiff_freeParams(mjdiffParams* p);

// Number of selected scalar parameters np (0 for NULL).
MJDIFF_API int mjdiff_paramCount(const mjdiffParams* p);

// Expanded name of parameter i (0 <= i < np), e.g. "body:torso:mass", "body:torso:inertia[1]";
// NULL if i is out of range. Valid while p lives.
MJDIFF_API const char* mjdiff_paramName(const mjdiffParams* p, int i);

// What setting a parameter changes, for tools that perturb values (domain randomisation,
// design): mjdiff_paramClass.
typedef enum mjdiffParamClass_ {
  MJDIFF_PARAM_PHYSICAL = 0,   // a value of mjModel the dynamics read as it is (masses, inertias,
                               // damping, friction, gains, gravity, fluid values ...)
  MJDIFF_PARAM_SMOOTH,         // a model-wide smooth-model numeric (mjdiff:*; selectable only
                               // where the model sets it rather than deriving it per element)
  MJDIFF_PARAM_SMOOTH_GEOM,    // a smooth-model numeric of one geom (geom:*:contact_*,
                               // friction_speed, spin_speed): setting one, even to its own value,
                               // replaces its pairs' combined law with the geom's own value
  MJDIFF_PARAM_GEOMETRY        // positions, sizes, scales: they move the kinematics and the
                               // contact geometry, and may recompute inertials
} mjdiffParamClass;

// Class of parameter i (0 <= i < np), or -1 if i is out of range.
// Nullable: p (-1).
MJDIFF_API int mjdiff_paramClass(const mjdiffParams* p, int i);

// Index of the first parameter named name, or -1: an expanded name ("geom:table:friction[0]")
// or a name as given to mjdiff_makeParams without an index ("geom:table:friction" expands to
// three parameters, [0] sliding, [1] torsional, [2] rolling: its first is returned). Patterns with
// '*' are not looked up. The components of one name are consecutive.
// Nullable: p, name (-1).
MJDIFF_API int mjdiff_paramIndex(const mjdiffParams* p, const char* name);

// Number of parameters name expands to in p (1 for a scalar field, 3 for geom friction or a body
// inertia, a joint's dof count for damping, ...; 0 if absent).
// Nullable: p, name (0).
MJDIFF_API int mjdiff_paramNameCount(const mjdiffParams* p, const char* name);

// Current values of the selected parameters (np x 1). A smooth-model field with s NULL reads NaN.
// Nullable: s.
MJDIFF_API void mjdiff_getParamValues(const mjModel* m, const mjdiffModel* s,
                                      const mjdiffParams* p, mjtNum* values);

// Set the selected parameters to values (np x 1). Every value is checked first (finite; masses,
// inertias, filter time constants > 0; damping, armature, friction loss, stiffness, friction >= 0;
// smooth-model fields as mjdiff_setParam); on error nothing is changed and err names the parameter
// and its value. Not thread-safe against a concurrent step of the same model.
// Nullable: s (only without smooth-model fields), err.
MJDIFF_API mjdiffStatus mjdiff_setParamValues(mjModel* m, mjdiffModel* s, const mjdiffParams* p,
                                              const mjtNum* values, char* err, int errsz);

// Geometry parameters (body, geom, site and joint positions, geom sizes, body scales) of a
// selection recompute the inertials of bodies that the compiler inferred from geoms, with each
// geom's density held (mass = density x volume, MuJoCo's default). A geom whose MJCF gives an
// explicit mass= keeps that mass instead: declare it here, after mjdiff_makeParams and before the
// selection is used (the compiled model does not record which). MJDIFF_ERR_NAME for an unknown
// geom; a no-op for selections without geometry parameters or bodies with fixed inertials.
MJDIFF_API mjdiffStatus mjdiff_designFixMass(mjdiffParams* p, const mjModel* m, const char* geom,
                                             char* err, int errsz);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_PARAMS_H_
