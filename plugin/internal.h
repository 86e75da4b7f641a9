// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Private definitions shared by the plugin's sources (and later the adjoint).

#ifndef MJDIFF_INTERNAL_H_
#define MJDIFF_INTERNAL_H_

#include <mjdiff/smooth.h>

// contact parameters that may be set per geom
typedef enum geomParam_ {
  GP_STIFFNESS = 0,
  GP_DAMPING,
  GP_WIDTH,
  GP_FRICTION_SPEED,
  GP_SPIN_SPEED,
  GP_COUNT
} geomParam;

// values of one limit or equality law: stiffness, damping, width (width unused by equalities)
typedef enum elemParam_ {
  EP_STIFFNESS = 0,
  EP_DAMPING,
  EP_WIDTH,
  EP_COUNT
} elemParam;

struct mjdiffModel_ {
  const mjModel* m;            // the model this smooth model was made for
  int ngeom;                   // sizes at creation, checked against m on every call
  int nv;
  mjdiffOptions opt;           // model-wide parameters (MJDIFF_DERIVED: derived per element)
  mjtNum* geom_param;          // per-geom contact parameters: explicit, model-wide or derived
                               //                                           (ngeom x GP_COUNT)
  unsigned char* geom_set;     // whether each was set explicitly           (ngeom x GP_COUNT)

  // values derived from the MJCF at make time (solref, solimp, timestep, invweight0; derive.c),
  // views into one block
  mjtNum* derived;             // the block
  mjtNum* geom_derived;        // per geom, against an immovable partner    (ngeom x GP_COUNT)
  mjtNum* geom_invweight;      // inverse inertia at the geom's farthest point (ngeom x 1)
  mjtNum* geom_invweightn;     // inverse inertia along a contact normal on the geom  (ngeom x 1)
  mjtNum* geom_cluster;        // the share radius of the geom's contacts (smooth.c, contact
                               // shares; 0 for planes and height fields; set at make time, from
                               // the sizes then, and copied)                  (ngeom x 1)
  mjtNum* pair_derived;        // per MJCF <pair>                           (npair x GP_COUNT)
  mjtNum* jnt_limit;           // joint limit law                           (njnt x EP_COUNT)
  mjtNum* ten_limit;           // tendon limit law                          (ntendon x EP_COUNT)
  mjtNum* dof_lossspeed;       // dof friction-loss speed                   (nv x 1)
  mjtNum* ten_lossspeed;       // tendon friction-loss speed                (ntendon x 1)
  mjtNum* eq_law;              // equality: translation k, c; rotation k, c (neq x 4)
  mjtNum* eq_invweight;        // equality: the inverse inertia its law is scaled with,
                               // translation or scalar, rotation (neq x 2; mjdiff_eqInvweight)
  int nsub;                    // substeps per mjdiff_step (derive.c; mjdiff_substepCount)
  int single;                  // 1: stepped by MuJoCo's own mj_step (attached, engine plugin):
                               // no substeps
  const mjModel* attached;     // model the adapter attached this to (its hard flags are set)
  int hardflags;               // the attached model's own hard-constraint flags before attaching
};

// the model as its user configured it: m itself, or, if the adapter attached s to m (and so set
// m's hard-constraint disable flags), view filled with m and the user's own hard-constraint flags
const mjModel* mjdiff_userModel(const mjModel* m, const mjdiffModel* s, mjModel* view);

// the MJCF <pair> of geoms g1 and g2 (either order) that MuJoCo collides them by, or -1 (none, or
// opt.collision is dynamic-only)
int mjdiff_pairIndex(const mjModel* m, int g1, int g2);

// contact parameters of the pair (g1, g2): explicit beats model-wide; both explicit: the mean.
// A field whose model-wide value is MJDIFF_DERIVED and that neither geom set explicitly takes
// the MJCF <pair>'s derived value if (g1, g2) is one, else combines the two geoms' derived values:
// stiffness and damping in series (1/k = 1/k1 + 1/k2), width and friction speed by the larger.
void mjdiff_pairParams(const mjdiffModel* s, int g1, int g2, mjtNum p[GP_COUNT]);

// limit law (EP_COUNT values) of joint j (tendon 0) or tendon j (tendon 1): the model-wide
// limit_* fields, or the element's derived values where a field is MJDIFF_DERIVED
void mjdiff_limitParams(const mjdiffModel* s, int tendon, int j, mjtNum p[EP_COUNT]);

// the model's integrator is Euler or MuJoCo 3's implicitfast: one velocity update
//   v' = v + h (M + h B)^-1 f,  q' = q (+) h v'
// with B diagonal (mjdiff_dampB); RK4 is the other integrator the smooth model steps
int mjdiff_eulerLike(const mjModel* m);
int mjdiff_integratorOk(const mjModel* m);
// MJDIFF_OK, or why m's integrator cannot be stepped: not one of the above
// (mjdiff_checkSupported's message), or implicitfast with a term B does not cover
// (mjdiff_implicitFastCovered); the step and its derivatives check it at every call
mjdiffStatus mjdiff_checkIntegrator(const mjModel* m, const mjdiffModel* s, char* err, int errsz);

// B (nv), the diagonal of the velocity-implicit term B = -D of the model's integrator at d's
// state (after the forward pass: the actuator forces' clamping; constant over a step's Newton
// iterates, which keep the start state's actuator forces), in O(nv + nu) (a fixed tendon's
// actuator: its wraps squared); per dof i:
//   Euler         dof_damping_i where mj_Euler takes damping implicitly (compat_eulerImplicit),
//                 else 0
//   implicitfast  -D_ii, D = d(qfrc_passive + qfrc_actuator)/dv as MuJoCo's mjd_smooth_vel
//                 without the bias forces, for what mjdiff_checkSupported lets through (a
//                 diagonal D, constant between force clamps): dof_damping_i (unless the damper is
//                 disabled) - sum over actuators with an affine bias on dof i's hinge or slide, or
//                 on a fixed tendon whose dofs lie on different branches (M's sparsity keeps
//                 only D's diagonal there), of gear^2 moment_i^2 biasprm[2], skipping an actuator
//                 that is off or whose force is clamped by its forcerange (mjd_actuator_vel's rule)
// mjdiff_hasDampB(m): whether any B_i can be nonzero (H = M otherwise)
void mjdiff_dampB(const mjModel* m, const mjData* d, mjtNum* B);
int mjdiff_hasDampB(const mjModel* m);
// dB_dof/dgear (gear 1) or dB_dof/dbiasprm[2] (gear 0) of actuator i under implicitfast (0 where
// the actuator adds nothing to B_dof)
mjtNum mjdiff_dampBActuator(const mjModel* m, const mjData* d, int i, int gear, int dof);
// 1 if fixed tendon t's servo adds to B's diagonal alone (plugin/step.c)
int mjdiff_tendonDiagonal(const mjModel* m, int t);
// 1 if B holds the dof damping (or would, once damping is set: Euler's implicit form is taken
// as soon as one dof has damping): the dof-damping parameter's column carries -h acc
int mjdiff_dampBHasDofDamping(const mjModel* m);
// under implicitfast: MJDIFF_OK, or the named refusal of what B does not cover (plugin/options.c;
// checked at make time and at every step, since parameters can change damping, fluid and gains)
mjdiffStatus mjdiff_implicitFastCovered(const mjModel* m, char* err, int errsz);

// friction-loss regularisation speed of dof j (tendon 0) or tendon j (tendon 1)
mjtNum mjdiff_lossSpeed(const mjdiffModel* s, int tendon, int j);

// body transmissions (adhesion, smooth.c): 1 if m has one; 1 if contact con counts towards body
// b's moment (it touches b within MuJoCo's own margin of the pair); the moments of every body
// transmission recomputed from d's contacts, with their actuator velocities (mjdiff_collide
// calls it last)
int mjdiff_hasBodyTransmission(const mjModel* m);
int mjdiff_adhesionCounts(const mjModel* m, const mjContact* con, int b);
void mjdiff_bodyTransmissions(const mjModel* m, mjData* d);

// equality i's penalty stiffness k and damping c for its translation (rot 0) or rotation (rot 1)
// (exported for tests/test_defaults.cc)
MJDIFF_API void mjdiff_eqParams(const mjdiffModel* s, int i, int rot, mjtNum* k, mjtNum* c);

// nonzero if mjdiff_step integrates the smooth forces implicitly (opt.integrator)
int mjdiff_implicit(const mjdiffModel* s);

// the largest substeps value
#define MJDIFF_MAX_SUBSTEPS 64
#define MJDIFF_MAX_CONTINUATION 8  // the implicit step's most halvings of the timestep (implicit.c)
#define MJDIFF_MAX_SPLIT 3         // the implicit step's most splits into halves (step.c)

// the timestep of one smooth substep: m's timestep / mjdiff_substepCount(s). Every law and
// integration inside mjdiff_step and its derivatives uses it.
mjtNum mjdiff_timestep(const mjModel* m, const mjdiffModel* s);

// the state of d as the step and its derivatives save and restore it: x = (qpos, qvel, act, time)
// (nq + nv + na + 1)
void mjdiff_saveState(const mjModel* m, const mjData* d, mjtNum* x);
void mjdiff_loadState(const mjModel* m, mjData* d, const mjtNum* x);

// one smooth substep of mjdiff_timestep(m, s) from the state in d, no sensors, no input checks
// (the step derivatives re-walk mjdiff_step's substeps with it); d's state restored on failure
mjdiffStatus mjdiff_substep(const mjModel* m, mjData* d, const mjdiffModel* s, char* err,
                            int errsz);

// the same substep from the state in d whose smooth forward pass (mjdiff_forward) is done: the
// substep's integration alone, the state bit for bit mjdiff_substep's (the forward pass may have
// read sensors, which mjdiff_substep skips); d's state restored on failure
mjdiffStatus mjdiff_substepForwarded(const mjModel* m, mjData* d, const mjdiffModel* s,
                                     char* err, int errsz);

// the steps an implicit mjdiff_step took (step.c, implicitStep): n steps, step k from state k
// (nq + nv + na + 1 numbers each, as mjdiff_saveState) over timestep h[k]; state n the end state.
// One step of the model's timestep where Newton converges, else halves split recursively down to
// 2^-implicit_split of it (at most 2^MJDIFF_MAX_SPLIT steps: max; state holds max + 1)
typedef struct mjdiffPieces_ {
  int n, max;
  mjtNum* state;
  mjtNum* h;
} mjdiffPieces;

// the implicit step from the state in d, as mjdiff_step takes it (sensors not read), its steps
// recorded; d advanced (restored on failure)
MJDIFF_API mjdiffStatus mjdiff_implicitPieces(const mjModel* m, mjData* d,
                                              const mjdiffModel* s, mjdiffPieces* rec, char* err,
                                              int errsz);

// append to err (after its message) the description of the most unstable smooth force at the
// state in d after its forward pass (stability.c), as a failed step names it
void mjdiff_describeCulprit(const mjModel* m, mjData* d, const mjdiffModel* s, char* err,
                            int errsz);

// 1 if w's elements together are what is unstable (stability.c, "Elements together"): two or more
// in the worst mode, its ratio above 1 and above the worst single element's; the step's test (d)
// and mjdiff_describeStability's "together" clause
int mjdiff_unstableTogether(const mjdiffStability* w);

// single = 1: s is stepped by MuJoCo's own mj_step (the 2.2 adapter, the 3.x engine plugin), one
// step of the model's timestep: no substeps; derives s's values again if this changes
MJDIFF_API void mjdiff_setSingleStep(mjdiffModel* s, int single);

// nonzero if the substeps s's values were derived with are not those its options and explicit
// contact stiffnesses now ask for (derive.c)
int mjdiff_substepsStale(const mjModel* m, const mjdiffModel* s);

// fill the derived arrays of s from m (derive.c) for s's integrator; s's arrays are allocated
void mjdiff_deriveParams(const mjModel* m, mjdiffModel* s);

// the inverse inertia equality i's law is scaled with (derive.c, fixed at make time): translation
// or scalar At, and for connect and weld the rotation Ar (0 otherwise)
void mjdiff_eqInvweight(const mjdiffModel* s, int i, mjtNum* At, mjtNum* Ar);

// the smoothing width derived from a solimp (mjNIMP)
mjtNum mjdiff_derivedWidth(const mjtNum* solimp);


// inverse inertia of a contact between geoms g1 and g2 that scales its friction speeds by the
// load (law.h law_frictionSpeed): translation At (the two geoms' geom_invweight), rotation Ar
// (MuJoCo's rotational body_invweight0 of the two bodies summed) where the pair's friction speed
// is derived; 0 where it is explicit (a speed set by the user is used as given)
MJDIFF_API void mjdiff_contactInvweight(const mjdiffModel* s, int g1, int g2, mjtNum* At,
                                        mjtNum* Ar);

// nonzero if contact con bears sliding friction at d's state (condim >= 3, friction > 0, active,
// normal force > 0); then its slip vt (the tangential components of geom2's velocity relative to
// geom1's at the contact point, in the contact frame: what the friction law regularises) and its
// regularisation speed v_e (law.h law_frictionSpeed, under the current load)
// (exported for tests/test_implicit.cc)
MJDIFF_API int mjdiff_contactSlip(const mjModel* m, const mjData* d, const mjdiffModel* s,
                                  const mjContact* con, mjtNum vt[2], mjtNum* ve);

// contact i's share of its geom pair's force (smooth.c, "Contact shares"): 1 for a contact that
// no other active contact of its pair comes near; with grad (nullable) also the share's gradient
// in the distances and points of its pair's contacts and in the pair's contact width, and the
// contact law's force and torque before the share
#define MJDIFF_SHARE_MAX 64  // contacts of one run a share looks at (MuJoCo's mjMAXCONPAIR: 50)
typedef struct mjdiffShare_ {
  int first, count;                   // the pair's run of contacts d->contact[first, first + count)
  int varies;                         // some entry of the gradient is nonzero
  mjtNum ddist[MJDIFF_SHARE_MAX];     // d share / d dist_j                    (index j - first)
  mjtNum dpos[3 * MJDIFF_SHARE_MAX];  // d share / d pos_j
  mjtNum dwidth;                      // d share / d w, the pair's contact width
  mjtNum F[3], T[3];                  // the law's world force, torque on geom2 before the share
                                      // (set where varies)
} mjdiffShare;
MJDIFF_API mjtNum mjdiff_clusterRadius(int type, const mjtNum sz[3]);
MJDIFF_API mjtNum mjdiff_contactShare(const mjModel* m, const mjData* d, const mjdiffModel* s,
                                      int i, mjdiffShare* grad);

// MuJoCo 3's implicitfast block of a standalone free body (step.c, "implicitfast: standalone free
// bodies"): whether body b has one (MuJoCo's mj_isFreeBody under implicitfast; never on 2.2), the
// first such body (0: none); the velocity derivative G (6 x 3, the rotational columns) of its bias
// force at the body-frame angular velocity om; -R [u_a]x, the linear rows' change of G a in the
// body's rotation (3 x 3); its blocks H_bb = M_bb + h diag(B_b) and A_b = H_bb + h [0 G] at d's
// state (6 x 6); and acc_b = A_b^-1 rhs_b for every such body (the first body whose A_b is
// singular, 0 if none)
MJDIFF_API int mjdiff_freeBlockBody(const mjModel* m, int b);
MJDIFF_API int mjdiff_hasFreeBlock(const mjModel* m);
MJDIFF_API void mjdiff_freeBiasG(const mjModel* m, const mjData* d, int b, const mjtNum om[3],
                                 mjtNum G[18]);
MJDIFF_API void mjdiff_freeBiasLinQ(const mjModel* m, const mjData* d, int b, const mjtNum om[3],
                                    const mjtNum a[3], mjtNum D[9]);
MJDIFF_API void mjdiff_freeBlock(const mjModel* m, mjData* d, int b, mjtNum h, const mjtNum* B,
                                 mjtNum Hbb[36], mjtNum A[36]);
MJDIFF_API int mjdiff_freeBlockSolve(const mjModel* m, mjData* d, mjtNum h, const mjtNum* B,
                                     const mjtNum* rhs, mjtNum* acc);
// d(G a)/dp of body b's block at angular velocity om for its inertials: kind 0 its mass, 1 its
// principal inertia k, 2 its com's body-frame component k, 3 its inertia tensor's body-frame
// component k (xx yy zz xy xz yz) (6 rows)
MJDIFF_API void mjdiff_freeBiasParamChange(const mjModel* m, const mjData* d, int b, int kind,
                                           int k, const mjtNum om[3], const mjtNum a[3],
                                           mjtNum out[6]);
// the blocks' G at d's state by rows: Gr (nv x 3) row i holds G's row for dof i, whose body's
// dofs start at badr[i] (-1: dof i has no block); returns the number of blocks. out += scale G x;
// N (nv x nv, dense) += scale G
MJDIFF_API int mjdiff_freeBlockRows(const mjModel* m, const mjData* d, mjtNum* Gr, int* badr);
MJDIFF_API void mjdiff_freeBlockMul(int nv, const mjtNum* Gr, const int* badr, mjtNum scale,
                                    const mjtNum* x, mjtNum* out);
MJDIFF_API void mjdiff_freeBlockAddDense(int nv, const mjtNum* Gr, const int* badr, mjtNum scale,
                                         mjtNum* N);

// the implicit step's transition-aware cap on a Newton step dv at the iterate v, whose kinematics
// and contacts d holds (implicit.c); jac: scratch of 6 nv (exported for tests/test_implicit.cc)
MJDIFF_API mjtNum mjdiff_frictionCap(const mjModel* m, const mjData* d, const mjdiffModel* s,
                                     const mjtNum* v, const mjtNum* dv, mjtNum* jac);

// the smooth normal force fn (contactForce's force[0]) of contact con if touch sensor i counts it,
// else 0; the count follows MuJoCo 2.2.2: fn > 0, the site's body is one of the contact's two
// bodies, and the ray from con->pos along the normal (reversed if the site's body is the contact's
// second) meets the site's volume (always when con->pos is inside it)
mjtNum mjdiff_touchForce(const mjModel* m, const mjData* d, const mjdiffModel* s, int i,
                         const mjContact* con);

// touch readings of the smooth model: sensordata[sensor_adr[i]] = sum over d's contacts of
// mjdiff_touchForce for every touch sensor i (before noise and cutoff); 0 when m (as its user
// configured it) disables the smooth contact forces. Other sensors are not touched.
void mjdiff_smoothTouch(const mjModel* m, const mjData* d, const mjdiffModel* s,
                        mjtNum* sensordata);

// ---------------------------------- the implicit step (implicit.c) -------------------------------

// MJDIFF_ERR_UNSUPPORTED naming nv where m->nv exceeds MJDIFF_IMPLICIT_MAX_NV (the implicit
// step's dense Newton system), else MJDIFF_OK; checked where the implicit step is chosen
// (mjdiff_checkSupported at make time, mjdiff_setParam)
mjdiffStatus mjdiff_implicitSize(const mjModel* m, char* err, int errsz);

// Solve the implicit smooth step from the state in d after the smooth forward pass: on success
// d->qpos, d->qvel hold q', v' (act and time are the caller's), with d's kinematics, contacts
// and body velocities at the last evaluated iterate (within implicit_tol of (q', v')); iters and correction report Newton's iterations and its last
// relative velocity correction (also d->solver_iter, d->solver[i].improvement = |g|,
// .gradient = the correction, per iteration). On failure qpos and qvel are restored and err
// names the cause. vstart (nv, or NULL): Newton's first iterate instead of v' = v, e.g. a
// stored trajectory's v' (the rollout adjoint's backward pass: it then converges at once, on
// the forward pass's own solution).
mjdiffStatus mjdiff_implicitSolve(const mjModel* m, mjData* d, const mjdiffModel* s,
                                  const mjtNum* vstart, int* iters, mjtNum* correction, char* err,
                                  int errsz);

// the smooth forces fs (nv) at d's qpos and qvel: kinematics, com quantities, tendons, collision,
// tendon and body velocities (no mass matrix, no bias forces), then mjdiff_addForces into fs
MJDIFF_API void mjdiff_evalSmooth(const mjModel* mu, mjData* d, const mjdiffModel* s, mjtNum* fs);

// dense LU with partial pivoting of A (n x n, row-major, in place): 0, or -1 if singular;
// x = A^-1 x, x = A^-T x with the factor
int mjdiff_luFactor(int n, mjtNum* A, int* piv);
void mjdiff_luSolve(int n, const mjtNum* LU, const int* piv, mjtNum* x);
void mjdiff_luSolveT(int n, const mjtNum* LU, const int* piv, mjtNum* x);

// write a formatted message into err (NULL-safe); returns status
mjdiffStatus mjdiff_error(char* err, int errsz, mjdiffStatus status, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

// check sizes and pairing of (m, s); fills err
mjdiffStatus mjdiff_checkPair(const mjModel* m, const mjdiffModel* s, char* err, int errsz);

// check features the smooth model cannot handle (integrator, distance equality, ...); fills err
mjdiffStatus mjdiff_checkSupported(const mjModel* m, const mjdiffOptions* opt, char* err,
                                   int errsz);

// the model-wide parameters by name, in a fixed order (the MuJoCo 3 plugin's config keys)
MJDIFF_API int mjdiff_optionCount(void);
MJDIFF_API const char* mjdiff_optionName(int i);

#endif  // MJDIFF_INTERNAL_H_
