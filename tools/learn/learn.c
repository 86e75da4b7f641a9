// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-learn: train an MLP policy u = pi(o) on a task through the smooth physics.
//
//   mjdiff-learn policy MODEL.xml TASK [options]     train (--method apg, es or ppo)
//   mjdiff-learn eval MODEL.xml TASK WEIGHTS.npz     closed loop on the smooth and native plants
//   ... eval ... --plant FILE [--record PREFIX]      and on a plant file (tools/common/plant.h),
//        recording rollouts as sysid CSVs
//
// Methods (same network, task, batch of randomised starts and goals, simulated-step budget):
//   apg  analytic policy gradients: the batch objective's exact gradient (<mjdiff/learn.h>:
//        BPTT through the step VJP and the network's VJP), Adam
//   es   antithetic evolution strategies / ARS-style random search (derivative-free):
//        g = 1/(2 N sigma) sum_k (J(theta + sigma e_k) - J(theta - sigma e_k)) e_k, e_k ~ N(0, I),
//        every perturbation on the same batch of starts (common random numbers), Adam on g
//   ppo  proximal policy optimisation (tools/learn/ppo.c)
//   shac analytic policy gradients through short rollouts (--short T steps) that continue one
//        another over episodes of the rollout length, a learned value as the terminal cost
//        (tools/learn/shac.c)
// Iteration k uses the batch seed (seed, k); every method counts the forward steps it simulates.
// Success rate and cost on the curve come from a fixed evaluation set (seed + 1, --eval-batch
// rollouts, reach term off), apart from the budget. Output: one line per iteration on stderr;
// PREFIX.csv (curves), PREFIX.png (gnuplot, if present), PREFIX.npz (the weights, nn/ format).
// Ctrl-C stops after the iteration in flight, saves the last weights and exits 130.

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mujoco/mujoco.h>
#include <mjdiff/learn.h>
#include <mjdiff/mjdiff.h>
#include <mjdiff/nn.h>
#include <mjdiff/optim.h>
#include <mjdiff/random.h>
#include <mjdiff/reach.h>
#include <mjdiff/task.h>

#include "plant.h"
#include "policyargs.h"
#include "ppo.h"
#include "shac.h"
#include "recording.h"
#include "toolutil.h"

#define TOOL "mjdiff-learn"
#define MAXRANDOM 16  // --randomize parameters

static void usage(FILE* f) {
  fprintf(f,
          "usage: " TOOL " policy MODEL.xml TASK [options]   train a policy\n"
          "       " TOOL " eval MODEL.xml TASK WEIGHTS.npz [options]   closed loop on both plants\n"
          "options:\n"
          "  --method apg|es|ppo|shac  analytic policy gradients (default), evolution strategies,\n"
          "                         PPO, short-horizon gradients with a learned value (SHAC)\n"
          "  --short T              shac: steps of a short rollout (default 32)\n"
          "  --gamma G              shac: discount per step (default 0.99)\n"
          "  --critic-lr LR         shac: the critic's Adam rate (default 1e-3)\n"
          "  --action-noise S       apg, shac (and es): Gaussian noise of std S on the network's\n"
          "                         output before the squashing in training rollouts (default 0)\n"
          "  --grad-decay A         apg, shac: scale the state adjoint by A in (0, 1] at each\n"
          "                         step back (a biased gradient for long unstable rollouts;\n"
          "                         default exact)\n"
          "  --pos-scale S          input normalisation of qpos (and --trig's cos, sin): by\n"
          "                         max(spread over the starts, S) (default 0: the spread)\n"
          "  --net SPEC             policy network (nn/ spec: mlp:W1,W2[:ACT] or linear; default mlp:64,64)\n"
          "  --init WEIGHTS.npz     start from these weights (shape must match)\n"
          "  --iters N              iterations (default 200)\n"
          "  --budget STEPS         stop once this many steps were simulated (default: none)\n"
          "  --batch B              rollouts per iteration (default apg 4, others 16: exact\n"
          "                         gradients need few rollouts, and more updates learn faster)\n"
          "  --seconds S            rollout length (default: the task's duration, else 1 s)\n"
          "  --lr LR                Adam's rate (default apg 1e-3; shac 3e-3; es 1e-2; ppo 3e-4); apg\n"
          "                         and es decay it to LR/10 over --iters (cosine) unless only\n"
          "                         --budget bounds the run; ppo over --iters or over --budget's\n"
          "                         iterations\n"
          "  --clip C               gradient-norm clipping (default 1; 0: off)\n"
          "  --goal T:X0,X1:Y0,Y1:Z0,Z1  randomise the fixed target point of task term T in this box\n"
          "  --skip-failed          leave rollouts whose smooth step diverges out of the batch (counted)\n"
          "  --randomize NAME=LO,HI domain randomisation (repeatable, at most 16): each training\n"
          "                         rollout scales parameter NAME (<mjdiff/params.h>, e.g.\n"
          "                         body:puck:mass) by a factor drawn from U(LO, HI)\n"
          "  --no-relative          observe the goal only, not also goal - object position\n"
          "  --trig                 observe each hinge without a range as (cos q, sin q)\n"
          "  --hide-joints J1,J2    joints whose position the policy does not see (a walker's\n"
          "                         forward slide; a free joint's x, y, z)\n"
          "  --key N                start keyframe, -1 qpos0 (default 0; qpos0 without keys)\n"
          "  --start-noise A        hinge/slide qpos noise U(-A, A) (default 0.05)\n"
          "  --vel-noise A          hinge/slide qvel noise (default 0)\n"
          "  --noise-joints J1,J2   the joints those noises move (default: every hinge and slide)\n"
          "  --reach A[:R[:DECAY]]  apg: long-range contact term, annealed per iteration\n"
          "  --es-dirs N            es: antithetic directions per iteration (default 8)\n"
          "  --ppo-epochs E         ppo: epochs per iteration (default 10)\n"
          "  --ppo-minibatch M      ppo: samples per minibatch (default 64)\n"
          "  --es-sigma S           es: perturbation size (default 0.02)\n");
  fprintf(f,  // (a second string: C99 compilers need support only 4095 characters)
          "  --threads N            threads (default 2)\n"
          "  --seed S               seed (default 1)\n"
          "  --eval-batch N         evaluation rollouts (default 32)\n"
          "  --eval-every K         evaluate every K iterations (default 10)\n"
          "  --out PREFIX           PREFIX.npz, PREFIX.csv, PREFIX.png (default learn)\n"
          "  --tag NAME             method name in the CSV (default: the method)\n"
          "  --plant FILE           eval: also run the closed loop on this plant file (native step,\n"
          "                         hidden offsets, sensor noise, delay; one rollout at a time)\n"
          "  --record PREFIX        eval with --plant: write the first --record-n plant rollouts as\n"
          "                         recordings PREFIX-K.csv (mjdiff-sysid format)\n"
          "  --record-n N           rollouts recorded (default 4)\n"
          "exit: 0 ok, 1 runtime error, 2 usage, 130 interrupted (weights saved)\n");
}

enum { M_APG = 0, M_ES, M_PPO, M_SHAC };

typedef struct args_ {
  int eval_only;
  const char* model;
  const char* task;
  const char* weights;         // eval, --init
  int method;
  const char* net;
  long iters, batch, threads, eval_batch, eval_every, es_dirs, short_steps, ppo_epochs, ppo_mb;
  double budget, seconds, lr, clip, es_sigma, gamma, critic_lr, action_noise, grad_decay,
      pos_scale;
  unsigned long long seed;
  toolPolicyArgs pol;          // --goal, --no-relative, --key, --start-noise, --vel-noise
  int skip_failed;
  int nrandom;                 // --randomize NAME=LO,HI (repeated)
  const char* random_names[MAXRANDOM];
  char random_name_buf[MAXRANDOM][256];
  double random_lo[MAXRANDOM], random_hi[MAXRANDOM];
  int reach;
  mjdiffReachSchedule reach_sched;
  const char* out;
  const char* tag;
  int lr_set;
  const char* plant;           // eval: plant file
  const char* record;          // eval: recording prefix
  long record_n;
} args;

static void parseArgs(int argc, char** argv, args* a) {
  memset(a, 0, sizeof(*a));
  a->net = "mlp:64,64";
  a->iters = 200;
  a->batch = 0;                // by method, below
  a->threads = 2;
  a->eval_batch = 32;
  a->eval_every = 10;
  a->es_dirs = 8;
  a->ppo_epochs = 10;
  a->ppo_mb = 64;
  a->clip = 1;
  a->es_sigma = 0.02;
  a->short_steps = 32;
  a->gamma = 0.99;
  a->critic_lr = 1e-3;
  a->seed = 1;
  a->out = "learn";
  a->record_n = 4;
  tool_defaultPolicyArgs(&a->pol);
  if (argc < 2 || tool_isHelp(argv[1])) {
    usage(argc < 2 ? stderr : stdout);
    exit(argc < 2 ? TOOL_EXIT_USAGE : TOOL_EXIT_OK);
  }
  if (!strcmp(argv[1], "eval")) {
    a->eval_only = 1;
  } else if (strcmp(argv[1], "policy")) {
    tool_usageError(TOOL, "unknown command '%s' (policy or eval)", argv[1]);
  }
  int npos = 0, need = a->eval_only ? 3 : 2;
  for (int i = 2; i < argc; i++) {
    const char* o = argv[i];
    if (tool_isHelp(o)) {
      usage(stdout);
      exit(TOOL_EXIT_OK);
    } else if (o[0] != '-' || !o[1]) {
      if (npos == 0) a->model = o;
      else if (npos == 1) a->task = o;
      else if (npos == 2 && a->eval_only) a->weights = o;
      else tool_usageError(TOOL, "unexpected argument '%s'", o);
      npos++;
    } else if (!strcmp(o, "--method")) {
      const char* v = tool_optionValue(TOOL, argc, argv, &i);
      if (!strcmp(v, "apg")) a->method = M_APG;
      else if (!strcmp(v, "es")) a->method = M_ES;
      else if (!strcmp(v, "ppo")) a->method = M_PPO;
      else if (!strcmp(v, "shac")) a->method = M_SHAC;
      else tool_usageError(TOOL, "--method must be apg, es, ppo or shac, got '%s'", v);
    } else if (!strcmp(o, "--short")) {
      a->short_steps = tool_intOption(TOOL, argc, argv, &i, 1, 100000, "an integer in 1..100000");
    } else if (!strcmp(o, "--gamma")) {
      a->gamma = tool_doubleOption(TOOL, argc, argv, &i, 0, 1, TOOL_OPEN_LO | TOOL_OPEN_HI, "in (0, 1)");
    } else if (!strcmp(o, "--action-noise")) {
      a->action_noise = tool_doubleOption(TOOL, argc, argv, &i, 0, 100, 0, "in [0, 100]");
    } else if (!strcmp(o, "--grad-decay")) {
      a->grad_decay = tool_doubleOption(TOOL, argc, argv, &i, 0, 1, TOOL_OPEN_LO, "in (0, 1]");
    } else if (!strcmp(o, "--pos-scale")) {
      a->pos_scale = tool_doubleOption(TOOL, argc, argv, &i, 0, 1e3, 0, "in [0, 1000]");
    } else if (!strcmp(o, "--critic-lr")) {
      a->critic_lr = tool_doubleOption(TOOL, argc, argv, &i, 0, 10, TOOL_OPEN_LO, "in (0, 10]");
    } else if (!strcmp(o, "--net")) {
      a->net = tool_optionValue(TOOL, argc, argv, &i);
    } else if (!strcmp(o, "--init")) {
      a->weights = tool_optionValue(TOOL, argc, argv, &i);
    } else if (!strcmp(o, "--iters")) {
      a->iters = tool_intOption(TOOL, argc, argv, &i, 0, 100000000, "an integer >= 0");
    } else if (!strcmp(o, "--budget")) {
      a->budget = tool_doubleOption(TOOL, argc, argv, &i, 0, INFINITY, TOOL_OPEN_LO, "> 0");
    } else if (!strcmp(o, "--batch")) {
      a->batch = tool_intOption(TOOL, argc, argv, &i, 1, 100000, "an integer in 1..100000");
    } else if (!strcmp(o, "--seconds")) {
      a->seconds = tool_doubleOption(TOOL, argc, argv, &i, 0, 1e4, TOOL_OPEN_LO, "in (0, 1e4]");
    } else if (!strcmp(o, "--lr")) {
      a->lr = tool_doubleOption(TOOL, argc, argv, &i, 0, 10, TOOL_OPEN_LO, "in (0, 10]");
      a->lr_set = 1;
    } else if (!strcmp(o, "--clip")) {
      a->clip = tool_doubleOption(TOOL, argc, argv, &i, 0, INFINITY, 0, ">= 0");
    } else if (tool_policyOption(TOOL, argc, argv, &i, &a->pol)) {
      // --goal, --no-relative, --key, --start-noise, --vel-noise (policyargs.h)
    } else if (!strcmp(o, "--skip-failed")) {
      a->skip_failed = 1;
    } else if (!strcmp(o, "--randomize")) {
      const char* v = tool_optionValue(TOOL, argc, argv, &i);
      const char* eq = strrchr(v, '=');
      char* end = NULL;
      double lo = eq ? strtod(eq + 1, &end) : NAN, hi = NAN;
      if (end && *end == ',') hi = strtod(end + 1, &end);
      if (!eq || eq == v || eq - v >= 256 || !end || *end || !(lo > 0) || !(lo <= hi) ||
          !isfinite(hi)) {
        tool_usageError(TOOL, "--randomize '%s': expected NAME=LO,HI with 0 < LO <= HI", v);
      }
      if (a->nrandom >= MAXRANDOM) {
        tool_usageError(TOOL, "--randomize: at most %d parameters", MAXRANDOM);
      }
      char* name = a->random_name_buf[a->nrandom];
      memcpy(name, v, (size_t)(eq - v));
      name[eq - v] = 0;
      a->random_names[a->nrandom] = name;
      a->random_lo[a->nrandom] = lo;
      a->random_hi[a->nrandom] = hi;
      a->nrandom++;
    } else if (!strcmp(o, "--reach")) {
      const char* v = tool_optionValue(TOOL, argc, argv, &i);
      char why[300];
      mjdiff_defaultReachSchedule(&a->reach_sched);
      a->reach_sched.decay = 0.98;
      if (mjdiff_parseReach(v, &a->reach_sched, why, sizeof(why)) != MJDIFF_OK) {
        tool_usageError(TOOL, "--reach: %s", why);
      }
      a->reach = 1;
    } else if (!strcmp(o, "--ppo-epochs")) {
      a->ppo_epochs = tool_intOption(TOOL, argc, argv, &i, 1, 1000, "an integer in 1..1000");
    } else if (!strcmp(o, "--ppo-minibatch")) {
      a->ppo_mb = tool_intOption(TOOL, argc, argv, &i, 1, 1000000, "an integer in 1..1000000");
    } else if (!strcmp(o, "--es-dirs")) {
      a->es_dirs = tool_intOption(TOOL, argc, argv, &i, 1, 10000, "an integer in 1..10000");
    } else if (!strcmp(o, "--es-sigma")) {
      a->es_sigma = tool_doubleOption(TOOL, argc, argv, &i, 0, 10, TOOL_OPEN_LO, "in (0, 10]");
    } else if (!strcmp(o, "--threads")) {
      a->threads = tool_intOption(TOOL, argc, argv, &i, 1, 256, "an integer in 1..256");
    } else if (!strcmp(o, "--seed")) {
      a->seed = (unsigned long long)tool_intOption(TOOL, argc, argv, &i, 0, 2147483647L, "an integer >= 0");
    } else if (!strcmp(o, "--eval-batch")) {
      a->eval_batch = tool_intOption(TOOL, argc, argv, &i, 1, 100000, "an integer in 1..100000");
    } else if (!strcmp(o, "--eval-every")) {
      a->eval_every = tool_intOption(TOOL, argc, argv, &i, 1, 100000000, "an integer >= 1");
    } else if (!strcmp(o, "--out")) {
      a->out = tool_optionValue(TOOL, argc, argv, &i);
    } else if (!strcmp(o, "--tag")) {
      a->tag = tool_optionValue(TOOL, argc, argv, &i);
    } else if (!strcmp(o, "--plant")) {
      a->plant = tool_optionValue(TOOL, argc, argv, &i);
    } else if (!strcmp(o, "--record")) {
      a->record = tool_optionValue(TOOL, argc, argv, &i);
    } else if (!strcmp(o, "--record-n")) {
      a->record_n = tool_intOption(TOOL, argc, argv, &i, 1, 100000, "an integer in 1..100000");
    } else {
      tool_usageError(TOOL, "unknown option '%s'", o);
    }
  }
  if (npos < need) tool_usageError(TOOL, "expected %s", a->eval_only ? "MODEL TASK WEIGHTS" : "MODEL TASK");
  if (a->reach && a->method != M_APG) tool_usageError(TOOL, "--reach needs --method apg");
  if ((a->plant || a->record) && !a->eval_only) tool_usageError(TOOL, "--plant and --record need eval");
  if (a->record && !a->plant) tool_usageError(TOOL, "--record needs --plant FILE");
  if (a->pos_scale > 0 && a->weights) {
    tool_usageError(TOOL, "--pos-scale sets the input normalisation of new weights; %s carries its own",
                    a->weights);
  }
  // APG: few rollouts per iteration and a moderate rate (README, "Small batches": on the pusher,
  // the arm push and the reacher batch 4 at 1e-3 learned in 3-6x fewer simulated steps than batch
  // 16 or 32 at 3e-3)
  if (!a->batch) a->batch = a->method == M_APG ? 4 : 16;
  if (!a->lr_set) {
    a->lr = a->method == M_ES ? 1e-2 : a->method == M_PPO ? 3e-4 : a->method == M_APG ? 1e-3 : 3e-3;
  }
  if (!a->tag) {
    a->tag = a->method == M_APG ? "apg" : a->method == M_ES ? "es" : a->method == M_PPO ? "ppo" : "shac";
  }
}

//---------------------------------- setup ---------------------------------------------------------

typedef struct problem_ {
  mjModel* native;             // the model as loaded (the native plant)
  mjModel* m;                  // training model (the task's timestep)
  mjdiffModel* s;
  mjdiffTask* task;
  mjdiffMLP* net;
  mjdiffLearner* L;
  mjdiffLearnOptions opt;
  double seconds;
  int episode;                 // steps of an episode (the rollout length; shac's episodes)
} problem;

static void freeProblem(problem* p) {
  mjdiff_freeLearner(p->L);
  mjdiff_freeMLP(p->net);
  mjdiff_freeTask(p->task);
  mjdiff_freeModel(p->s);
  if (p->m) mj_deleteModel(p->m);
  if (p->native) mj_deleteModel(p->native);
}

static int setupProblem(const args* a, problem* p) {
  char err[1200], msg[1000];
  memset(p, 0, sizeof(*p));
  p->native = tool_loadModel(a->model, err, sizeof(err));
  if (!p->native) {
    fprintf(stderr, TOOL ": error: %s\n", err);
    return 0;
  }
  p->task = mjdiff_readTask(p->native, a->task, msg, sizeof(msg));
  if (!p->task) {
    fprintf(stderr, TOOL ": error: %s\n", msg);
    return 0;
  }
  p->m = mj_copyModel(NULL, p->native);
  if (!p->m) tool_outOfMemory(TOOL);
  if (mjdiff_taskTimestep(p->task) > 0) p->m->opt.timestep = mjdiff_taskTimestep(p->task);
  if (mjdiff_makeModel(p->m, NULL, &p->s, msg, sizeof(msg)) != MJDIFF_OK) {
    fprintf(stderr, TOOL ": error: %s: %s\n", a->model, msg);
    return 0;
  }
  p->seconds = a->seconds > 0 ? a->seconds : mjdiff_taskDuration(p->task) > 0 ? mjdiff_taskDuration(p->task) : 1;
  tool_policyLearnOptions(&a->pol, p->native, &p->opt);
  p->opt.horizon = (int)lround(p->seconds / p->m->opt.timestep);
  if (p->opt.horizon < 1) p->opt.horizon = 1;
  // shac: short rollouts; the rollout length above is the episode's (and the evaluation's)
  p->episode = p->opt.horizon;
  if (a->method == M_SHAC) p->opt.horizon = (int)a->short_steps;
  p->opt.skip_failed = a->skip_failed;
  p->opt.action_noise = a->action_noise;
  p->opt.grad_decay = a->grad_decay;
  p->opt.nrandom = a->nrandom;
  p->opt.random_names = a->random_names;
  p->opt.random_lo = a->random_lo;
  p->opt.random_hi = a->random_hi;
  mjdiffMLPDef def;
  mjdiff_defaultMLPDef(&def);
  def.nin = mjdiff_learnObsSize(p->m, &p->opt);
  def.nout = (int)p->m->nu;
  if (a->weights) {
    p->net = tool_loadPolicyWeights(TOOL, a->weights, def.nin, def.nout);
    if (!p->net) return 0;
  } else {
    if (mjdiff_parseMLPSpec(a->net, &def, msg, sizeof(msg)) != MJDIFF_OK) {
      fprintf(stderr, TOOL ": usage error: --net: %s (see --help)\n", msg);
      exit(TOOL_EXIT_USAGE);
    }
    if (mjdiff_makeMLP(&def, &p->net, msg, sizeof(msg)) != MJDIFF_OK ||
        mjdiff_initMLP(p->net, MJDIFF_INIT_XAVIER_UNIFORM, a->seed, 0.1, msg, sizeof(msg)) != MJDIFF_OK) {
      fprintf(stderr, TOOL ": error: --net: %s\n", msg);
      return 0;
    }
  }
  if (mjdiff_makeLearner(p->m, p->s, p->native, p->task, &p->opt, p->net, (int)a->threads, &p->L,
                         msg, sizeof(msg)) != MJDIFF_OK) {
    fprintf(stderr, TOOL ": error: %s\n", msg);
    return 0;
  }
  if (!a->weights) {
    // input normalisation from the start states and goals (constant features: centred only)
    int n = 256, nobs = def.nin;
    double* data = (double*)malloc(sizeof(double) * (size_t)n * (size_t)nobs);
    double* x0 = (double*)malloc(sizeof(double) * (size_t)(p->m->nq + p->m->nv + p->m->na + 1));
    mjData* d = mj_makeData(p->m);
    if (!data || !x0 || !d) tool_outOfMemory(TOOL);
    for (int b = 0; b < n; b++) {
      double g[3];
      mjdiff_learnSample(p->L, a->seed ^ 0x5eedULL, b, x0, g);
      mjdiff_setState(p->m, d, x0);
      mjdiff_learnObservation(p->L, d, g, data + (size_t)b * nobs);
    }
    mjdiff_fitMLPNormalization(p->net, data, n, 1e-3, NULL, 0);
    // velocities start near zero: scale them by 1 / (a typical speed) rather than by their spread;
    // positions by their spread, or by --pos-scale where a motion travels far beyond it (a pole
    // swung up from a start 0.05 rad wide reaches the network at 35 scaled by its spread)
    double* sd = (double*)malloc(sizeof(double) * (size_t)nobs);
    if (!sd) tool_outOfMemory(TOOL);
    memcpy(sd, mjdiff_mlpStd(p->net), sizeof(double) * (size_t)nobs);
    int q0 = nobs - (int)(p->m->nv + p->m->na) -
             (p->opt.goal_term >= 0 ? 3 + 3 * (p->opt.goal_relative != 0) : 0);  // qvel's start
    for (int i = q0; i < q0 + (int)p->m->nv; i++) sd[i] = sd[i] > 1 ? sd[i] : 1;
    for (int i = 0; i < q0; i++) sd[i] = sd[i] > a->pos_scale ? sd[i] : a->pos_scale;
    mjdiff_setMLPNormalization(p->net, mjdiff_mlpMean(p->net), sd, NULL, 0);
    free(sd);
    mj_deleteData(d);
    free(x0);
    free(data);
  }
  return 1;
}

//---------------------------------- curves --------------------------------------------------------

static FILE* g_csv;

static void curveRow(const args* a, long iter, long steps, double wall, double cost, double succ,
                     double gnorm, double ecost, double esucc) {
  if (!g_csv) return;
  // a non-finite value (a NaN gradient norm, an infinite cost of failed rollouts) is an empty
  // field, as where no evaluation ran
  fprintf(g_csv, "%s,%ld,%ld,%.3f,", a->tag, iter, steps, wall);
  tool_csvNumber(g_csv, 6, cost);
  fprintf(g_csv, ",%.4f,", succ);  // a share of rollouts: always finite
  tool_csvNumber(g_csv, 6, gnorm);
  fputc(',', g_csv);
  if (!isnan(ecost)) {
    tool_csvNumber(g_csv, 6, ecost);
    fprintf(g_csv, ",%.4f", esucc);
  } else {
    fputc(',', g_csv);
  }
  fputc('\n', g_csv);
  fflush(g_csv);
}

static void plotCurves(const char* prefix) {
  if (system("command -v gnuplot > /dev/null 2>&1") != 0) return;
  char cmd[4096];
  snprintf(cmd, sizeof(cmd),
           "gnuplot -e \"set terminal png size 1200,450; set output '%s.png'; set datafile separator ',';"
           " set multiplot layout 1,2; set logscale x; set xlabel 'simulated steps'; set ylabel 'eval cost';"
           " plot '%s.csv' every ::1 using 3:(\\$8) with linespoints title 'cost';"
           " unset logscale x; set xlabel 'wall time (s)'; set ylabel 'eval success';"
           " plot '%s.csv' every ::1 using 4:(\\$9) with linespoints title 'success'; unset multiplot\" 2> /dev/null",
           prefix, prefix, prefix);
  if (system(cmd) != 0) fprintf(stderr, TOOL ": warning: gnuplot failed; %s.png not written\n", prefix);
}

static int saveWeights(const problem* p, const char* prefix) {
  char path[1024], msg[600];
  snprintf(path, sizeof(path), "%s.npz", prefix);
  if (mjdiff_saveMLP(p->net, path, msg, sizeof(msg)) != MJDIFF_OK) {
    fprintf(stderr, TOOL ": error: %s\n", msg);
    return 0;
  }
  fprintf(stderr, TOOL ": weights saved to %s\n", path);
  return 1;
}

//---------------------------------- training ------------------------------------------------------

static int evaluate(problem* p, const args* a, int plant, mjdiffLearnStats* st) {
  char msg[1000];
  if (mjdiff_learnEvaluate(p->L, p->net, plant, a->seed + 1, (int)a->eval_batch, p->seconds, st, msg,
                           sizeof(msg)) != MJDIFF_OK) {
    fprintf(stderr, TOOL ": error: evaluation: %s\n", msg);
    return 0;
  }
  return 1;
}

// the evaluation of the curve: training model, reach off
static int curveEval(problem* p, const args* a, double* cost, double* succ) {
  mjdiffLearnStats st;
  mjtNum saved = mjdiff_getOptions(p->s)->reach_strength;
  if (saved != 0) mjdiff_setParam(p->s, "mjdiff:reach_strength", 0, NULL, 0);
  int ok = evaluate(p, a, MJDIFF_PLANT_SMOOTH, &st);
  if (saved != 0) mjdiff_setParam(p->s, "mjdiff:reach_strength", saved, NULL, 0);
  *cost = st.cost;
  *succ = ok ? (double)st.success / st.n : NAN;
  return ok;
}


static int train(problem* p, const args* a) {
  char msg[1000];
  int n = mjdiff_mlpParamCount(p->net);
  double* theta = mjdiff_mlpParams(p->net);
  mjdiffAdamOptions ao;
  mjdiff_defaultAdamOptions(&ao);
  ao.lr = a->lr;
  ao.clip_norm = a->clip;
  // cosine decay to lr / 10 over the iterations (or over the budget's worth of them, unknown
  // ahead: then constant)
  if (a->iters > 0 && a->iters < 100000000 && a->method != M_PPO) {
    ao.schedule = MJDIFF_LR_COSINE;
    ao.decay_steps = (int)a->iters;
    ao.lr_min = 0.1 * a->lr;
  }
  mjdiffAdam* adam = NULL;
  if (mjdiff_makeAdam(n, &ao, &adam, msg, sizeof(msg)) != MJDIFF_OK) {
    fprintf(stderr, TOOL ": error: %s\n", msg);
    return TOOL_EXIT_RUNTIME;
  }
  double* grad = (double*)calloc((size_t)n, sizeof(double));
  int ndir = (int)a->es_dirs;
  mjdiffMLP** pert = NULL;
  double* eps = NULL;
  double* Jk = NULL;
  if (a->method == M_ES) {
    pert = (mjdiffMLP**)calloc((size_t)(2 * ndir), sizeof(mjdiffMLP*));
    eps = (double*)malloc(sizeof(double) * (size_t)ndir * (size_t)n);
    Jk = (double*)malloc(sizeof(double) * (size_t)(2 * ndir));
    if (!pert || !eps || !Jk) tool_outOfMemory(TOOL);
    for (int k = 0; k < 2 * ndir; k++) {
      pert[k] = mjdiff_copyMLP(p->net);
      if (!pert[k]) tool_outOfMemory(TOOL);
    }
  }
  ppoState* ppo = NULL;
  if (a->method == M_PPO) {
    // the run's iterations, for the rate's annealing: --iters, or the budget's worth of them
    long steps_per_iter = a->batch * (long)p->opt.horizon, run_iters = 0;
    if (a->iters > 0 && a->iters < 100000000) run_iters = a->iters;
    if (a->budget > 0 && steps_per_iter > 0) {
      long by_budget = (long)ceil(a->budget / (double)steps_per_iter);
      if (run_iters == 0 || by_budget < run_iters) run_iters = by_budget;
    }
    ppo = ppo_make(p->L, p->m, p->net, (int)a->batch, p->opt.horizon, a->lr, a->clip,
                   (int)a->ppo_epochs, (int)a->ppo_mb, run_iters, a->seed, msg, sizeof(msg));
    if (!ppo) {
      fprintf(stderr, TOOL ": error: ppo: %s\n", msg);
      return TOOL_EXIT_RUNTIME;
    }
  }
  shacState* shac = NULL;
  if (a->method == M_SHAC) {
    shacOptions so;
    shac_defaultOptions(&so);
    so.batch = (int)a->batch;
    so.horizon = p->opt.horizon;
    so.episode = p->episode;
    so.gamma = a->gamma;
    so.critic_lr = a->critic_lr;
    so.seed = a->seed;
    shac = shac_make(p->L, p->m, p->net, &so, msg, sizeof(msg));
    if (!shac) {
      fprintf(stderr, TOOL ": error: shac: %s\n", msg);
      return TOOL_EXIT_RUNTIME;
    }
  }
  if (!grad) tool_outOfMemory(TOOL);

  char path[1024];
  snprintf(path, sizeof(path), "%s.csv", a->out);
  g_csv = fopen(path, "w");
  if (!g_csv) {
    fprintf(stderr, TOOL ": error: cannot write %s\n", path);
    return TOOL_EXIT_RUNTIME;
  }
  fprintf(g_csv, "method,iter,sim_steps,wall_s,cost,success,grad_norm,eval_cost,eval_success\n");
  fprintf(stderr,
          TOOL ": %s on %s (nq=%d nv=%d nu=%d, dt %g s), %d steps per rollout, batch %ld, "
          "network %d -> %d (%d weights), %ld threads\n",
          a->tag, a->model, (int)p->m->nq, (int)p->m->nv, (int)p->m->nu, p->m->opt.timestep,
          p->opt.horizon, a->batch, mjdiff_mlpDef(p->net)->nin, mjdiff_mlpDef(p->net)->nout, n,
          a->threads);

  tool_catchInterrupt();
  double t0 = tool_now();
  long steps = 0;
  int code = TOOL_EXIT_OK;
  double ecost, esucc;
  if (!curveEval(p, a, &ecost, &esucc)) code = TOOL_EXIT_RUNTIME;
  if (code == TOOL_EXIT_OK) curveRow(a, 0, 0, 0, NAN, NAN, NAN, ecost, esucc);
  fprintf(stderr, "iter 0: eval cost %.4g success %.2f\n", ecost, esucc);
  for (long it = 1; it <= a->iters && code == TOOL_EXIT_OK; it++) {
    if (tool_interrupted()) {
      code = TOOL_EXIT_INTERRUPTED;
      break;
    }
    if (a->budget > 0 && steps >= a->budget) break;
    uint64_t seed = mjdiff_learnItemSeed(a->seed, (int)it) ^ 0xA5A5ULL;
    mjdiffLearnStats st;
    memset(&st, 0, sizeof(st));
    double J = NAN, gnorm = NAN;
    mjdiffStatus rc = MJDIFF_OK;
    double vloss = NAN;
    if (a->method == M_APG) {
      if (a->reach) mjdiff_reachApply(p->s, &a->reach_sched, (int)it - 1, NULL, 0);
      rc = mjdiff_learnObjective(p->L, p->net, seed, (int)a->batch, &J, grad, NULL, &st, msg,
                                 sizeof(msg));
      if (rc == MJDIFF_OK) {
        mjdiffAdamInfo info;
        rc = mjdiff_adamStep(adam, theta, grad, &info);
        gnorm = info.grad_norm;
        if (rc != MJDIFF_OK) snprintf(msg, sizeof(msg), "non-finite gradient");
      }
    } else if (a->method == M_ES) {
      mjdiffRng rng;
      mjdiff_rngSeed(&rng, seed ^ 0xE5E5ULL);
      for (int k = 0; k < ndir; k++) {
        double* e = eps + (size_t)k * n;
        for (int i = 0; i < n; i++) e[i] = mjdiff_rngNormal(&rng);
        double* wp = mjdiff_mlpParams(pert[2 * k]);
        double* wm = mjdiff_mlpParams(pert[2 * k + 1]);
        for (int i = 0; i < n; i++) {
          wp[i] = theta[i] + a->es_sigma * e[i];
          wm[i] = theta[i] - a->es_sigma * e[i];
        }
      }
      rc = mjdiff_learnObjectiveMany(p->L, (const mjdiffMLP* const*)pert, 2 * ndir, seed,
                                     (int)a->batch, Jk, &st, msg, sizeof(msg));
      // ARS: the differences scaled by the spread of the 2N costs; a pair with a non-finite cost
      // (every rollout of one perturbation failed, --skip-failed) is left out
      int npair = 0;
      double mean = 0, var = 0;
      for (int k = 0; rc == MJDIFF_OK && k < ndir; k++) {
        if (isfinite(Jk[2 * k]) && isfinite(Jk[2 * k + 1])) {
          mean += Jk[2 * k] + Jk[2 * k + 1];
          npair++;
        }
      }
      if (rc == MJDIFF_OK && !npair) {
        rc = MJDIFF_ERR_NONFINITE;
        snprintf(msg, sizeof(msg), "every perturbation's rollouts failed (%d pairs)", ndir);
      }
      if (rc == MJDIFF_OK) {
        mean /= 2 * npair;
        for (int k = 0; k < ndir; k++) {
          if (!isfinite(Jk[2 * k]) || !isfinite(Jk[2 * k + 1])) continue;
          for (int j = 0; j < 2; j++) var += (Jk[2 * k + j] - mean) * (Jk[2 * k + j] - mean);
        }
        var /= 2 * npair;
        double sdv = var > 0 ? sqrt(var) : 1;
        memset(grad, 0, sizeof(double) * (size_t)n);
        for (int k = 0; k < ndir; k++) {
          if (!isfinite(Jk[2 * k]) || !isfinite(Jk[2 * k + 1])) continue;
          double c = (Jk[2 * k] - Jk[2 * k + 1]) / (2 * npair * sdv);
          mju_addToScl(grad, eps + (size_t)k * n, c, n);
        }
        J = mean;
        st.cost = mean;
        mjdiffAdamInfo info;
        rc = mjdiff_adamStep(adam, theta, grad, &info);
        gnorm = info.grad_norm;
        if (rc != MJDIFF_OK) snprintf(msg, sizeof(msg), "non-finite search direction");
      }
    } else if (a->method == M_SHAC) {
      rc = shac_iteration(shac, p->net, seed, grad, &J, &vloss, &st, msg, sizeof(msg));
      if (rc == MJDIFF_OK) {
        mjdiffAdamInfo info;
        rc = mjdiff_adamStep(adam, theta, grad, &info);
        gnorm = info.grad_norm;
        if (rc != MJDIFF_OK) snprintf(msg, sizeof(msg), "non-finite gradient");
      }
    } else {
      rc = ppo_iteration(ppo, seed, &st, &gnorm, msg, sizeof(msg));
      J = st.cost;
    }
    if (rc != MJDIFF_OK) {
      fprintf(stderr, TOOL ": error: iteration %ld: %s\n", it, msg);
      code = TOOL_EXIT_RUNTIME;
      break;
    }
    steps += st.steps;
    double wall = tool_now() - t0;
    double succ = (double)st.success / (st.n - st.failed > 0 ? st.n - st.failed : 1);
    ecost = esucc = NAN;
    if (it % a->eval_every == 0 || it == a->iters) {
      if (!curveEval(p, a, &ecost, &esucc)) {
        code = TOOL_EXIT_RUNTIME;
        break;
      }
    }
    curveRow(a, it, steps, wall, J, succ, gnorm, ecost, esucc);
    if (st.failed > 0) fprintf(stderr, "iter %ld: %d rollouts diverged, left out\n", it, st.failed);
    if (!isnan(vloss)) fprintf(stderr, "iter %ld: critic loss %.3g\n", it, vloss);
    if (isnan(ecost)) {
      fprintf(stderr, "iter %ld: cost %.4g success %.2f grad %.3g steps %ld wall %.1f s\n", it, J,
              succ, gnorm, steps, wall);
    } else {
      fprintf(stderr, "iter %ld: cost %.4g success %.2f grad %.3g steps %ld wall %.1f s | eval cost %.4g success %.2f\n",
              it, J, succ, gnorm, steps, wall, ecost, esucc);
    }
  }
  if (tool_interrupted() && code == TOOL_EXIT_OK) code = TOOL_EXIT_INTERRUPTED;
  fclose(g_csv);
  g_csv = NULL;
  if (code != TOOL_EXIT_RUNTIME) plotCurves(a->out);
  if (!saveWeights(p, a->out) && code == TOOL_EXIT_OK) code = TOOL_EXIT_RUNTIME;
  for (int k = 0; pert && k < 2 * ndir; k++) mjdiff_freeMLP(pert[k]);
  free(pert);
  free(eps);
  free(Jk);
  free(grad);
  ppo_free(ppo);
  shac_free(shac);
  mjdiff_freeAdam(adam);
  return code;
}

static int evalBoth(problem* p, const args* a) {
  mjdiffLearnStats s1, s2;
  mjdiff_setParam(p->s, "mjdiff:reach_strength", 0, NULL, 0);
  if (!evaluate(p, a, MJDIFF_PLANT_SMOOTH, &s1) || !evaluate(p, a, MJDIFF_PLANT_NATIVE, &s2)) {
    return TOOL_EXIT_RUNTIME;
  }
  printf("plant smooth (dt %g s): cost %.4g success %d/%d (%.2f)%s\n", p->m->opt.timestep, s1.cost,
         s1.success, s1.n, (double)s1.success / s1.n, s1.failed ? " (some diverged)" : "");
  printf("plant native (dt %g s): cost %.4g success %d/%d (%.2f)\n", p->native->opt.timestep,
         s2.cost, s2.success, s2.n, (double)s2.success / s2.n);
  return TOOL_EXIT_OK;
}


// closed loop on a plant file (tools/common/plant.h): the evaluation set's starts and goals
// (seed + 1), one rollout at a time; the policy observes the plant's state (qpos, qvel) through
// the training model's kinematics, the cost and success are the task's on the plant's model.
// With --record, rollout b < --record-n is written as PREFIX-b.csv: the commanded controls, the
// plant's qpos and qvel and its sensor readings (with the plant file's noise and bias).
static int evalPlant(problem* p, const args* a) {
  char err[1200], msg[1000];
  toolPlant* pl = tool_readPlant(p->native, a->plant, err, sizeof(err));
  if (!pl) {
    fprintf(stderr, TOOL ": error: %s\n", err);
    return TOOL_EXIT_RUNTIME;
  }
  if (!tool_plantCheck(pl, p->seconds, err, sizeof(err))) {
    fprintf(stderr, TOOL ": error: %s\n", err);
    tool_freePlant(pl);
    return TOOL_EXIT_RUNTIME;
  }
  const mjModel* nm = p->native;
  const mjModel* pm = tool_plantModel(pl);
  int nq = (int)nm->nq, nv = (int)nm->nv, nu = (int)nm->nu, ns = (int)nm->nsensordata;
  int T = (int)lround(p->seconds / nm->opt.timestep);
  if (T < 1) T = 1;
  int nobs = mjdiff_mlpDef(p->net)->nin;
  mjdiffTask* task = mjdiff_copyTask(p->task);
  mjdiffMLPWork* work = NULL;
  if (!task || mjdiff_makeMLPWork(p->net, 1, &work, msg, sizeof(msg)) != MJDIFF_OK) tool_outOfMemory(TOOL);
  mjData* d0 = mj_makeData(nm);
  double* x0 = (double*)malloc(sizeof(double) * (size_t)(nq + nv + nm->na + 1));
  double* obs = (double*)malloc(sizeof(double) * (size_t)nobs);
  double* y = (double*)malloc(sizeof(double) * (size_t)(nu + 1));
  double* u = (double*)malloc(sizeof(double) * (size_t)(nu + 1));
  double* rc = (double*)malloc(sizeof(double) * (size_t)T * (size_t)(nu + 1));
  double* rq = (double*)malloc(sizeof(double) * (size_t)(T + 1) * (size_t)(nq + 1));
  double* rv = (double*)malloc(sizeof(double) * (size_t)(T + 1) * (size_t)(nv + 1));
  double* rs = (double*)malloc(sizeof(double) * (size_t)(T + 1) * (size_t)(ns + 1));
  if (!d0 || !x0 || !obs || !y || !u || !rc || !rq || !rv || !rs) tool_outOfMemory(TOOL);
  int n = (int)a->eval_batch, nsucc = 0, nfin = 0, code = TOOL_EXIT_OK;
  double sum = 0;
  for (int b = 0; b < n && code == TOOL_EXIT_OK; b++) {
    double g[3] = {0, 0, 0};
    mjdiff_learnSample(p->L, a->seed + 1, b, x0, g);
    if (p->opt.goal_term >= 0) mjdiff_taskSetPoint(task, p->opt.goal_term, g);
    mj_resetData(nm, d0);
    mjdiff_setState(nm, d0, x0);
    d0->time = 0;
    tool_plantReset(pl, d0);
    double cost = 0;
    int ok = 1;
    for (int t = 0; t <= T && ok; t++) {
      mjData* dp = tool_plantData(pl);
      mj_kinematics(pm, dp);
      mj_comPos(pm, dp);
      mj_comVel(pm, dp);
      mju_copy(rq + (size_t)t * nq, dp->qpos, nq);
      mju_copy(rv + (size_t)t * nv, dp->qvel, nv);
      if (ns) tool_plantSense(pl, rs + (size_t)t * ns);
      if (t == T) {
        cost += mjdiff_taskCost(task, pm, dp, 1, NULL, NULL);
        nsucc += mjdiff_taskSuccess(task, pm, dp);
        break;
      }
      mjdiff_learnObservation(p->L, dp, g, obs);
      if (mjdiff_mlpForward(p->net, work, obs, 1, y, msg, sizeof(msg)) != MJDIFF_OK) {
        fprintf(stderr, TOOL ": error: plant rollout %d: %s\n", b, msg);
        code = TOOL_EXIT_RUNTIME;
        ok = 0;
        break;
      }
      mjdiff_learnControls(p->L, y, u);
      mju_copy(rc + (size_t)t * nu, u, nu);
      cost += mjdiff_taskCost(task, pm, dp, 0, NULL, NULL) / T;
      if (!tool_plantStep(pl, u, err, sizeof(err))) {
        fprintf(stderr, TOOL ": warning: plant rollout %d: %s (counted as a failure)\n", b, err);
        ok = 0;
      }
    }
    if (code != TOOL_EXIT_OK) break;
    if (ok && isfinite(cost)) {
      sum += cost;
      nfin++;
    }
    if (ok && a->record && b < a->record_n) {
      char path[1100];
      snprintf(path, sizeof(path), "%s-%d.csv", a->record, b);
      if (sysid_writeRecording(nm, path, T, 0, rc, rq, rv, ns ? rs : NULL, err, sizeof(err)) != 0) {
        fprintf(stderr, TOOL ": error: %s\n", err);
        code = TOOL_EXIT_RUNTIME;
      }
    }
  }
  if (code == TOOL_EXIT_OK) {
    printf("plant %s (dt %g s): cost %.4g success %d/%d (%.2f)%s\n", a->plant, nm->opt.timestep,
           nfin ? sum / nfin : INFINITY, nsucc, n, (double)nsucc / n,
           nfin < n ? " (some failed)" : "");
  }
  free(rs);
  free(rv);
  free(rq);
  free(rc);
  free(u);
  free(y);
  free(obs);
  free(x0);
  mj_deleteData(d0);
  mjdiff_freeMLPWork(work);
  mjdiff_freeTask(task);
  tool_freePlant(pl);
  return code;
}

int main(int argc, char** argv) {
  args a;
  parseArgs(argc, argv, &a);
  tool_catchWarnings(TOOL);
  problem p;
  if (!setupProblem(&a, &p)) {
    freeProblem(&p);
    return TOOL_EXIT_RUNTIME;
  }
  int code = a.eval_only ? evalBoth(&p, &a) : train(&p, &a);
  if (a.eval_only && a.plant && code == TOOL_EXIT_OK) code = evalPlant(&p, &a);
  if (!a.eval_only && code == TOOL_EXIT_OK) {
    int c2 = evalBoth(&p, &a);
    if (code == TOOL_EXIT_OK) code = c2;
  }
  freeProblem(&p);
  return code;
}
