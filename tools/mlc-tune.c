/* mlc-tune: tune one kernel and store the measured candidates.
 *
 *   mlc-tune --task matmul --trials 64            records go to ./mlc.db
 *   mlc-tune --task-file kernel.py --trials 32 --db my.db
 *   mlc-tune --model examples/mlp.json --trials 200   every kernel of a model
 *
 * A thin main: tuner/ runs the search and the loop (mlc_tuner_tune),
 * measure/ the workers, db/ the records, costmodel/ the ranking.
 */
#include "db/db.h"
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "measure/measure.h"
#include "schedule/schedule.h"
#include "targets/runtime/mlcrt.h"
#include "targets/targets.h"
#include "tasks/tasks.h"
#include "tuner/tuner.h"

#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *usage_text =
    "usage: mlc-tune --task NAME [--shape S] | --task-file FILE.py\n"
    "                | --model FILE.json|FILE.onnx\n"
    "                [options]\n"
    "\n"
    "Search schedules of one kernel: sample the design space, evolve candidates\n"
    "with the cost model, build and time them in worker processes, store every\n"
    "measurement in the database. --trials is the total the workload should\n"
    "have for the target: a rerun continues (resume) and, with nothing left to\n"
    "do, says so and exits 0.\n"
    "\n"
    "Options:\n"
    "  -t, --task NAME            built-in workload (mlc-ir --list-tasks)\n"
    "  -s, --shape S              its shape, e.g. 512,512,512\n"
    "  -f, --task-file FILE.py    a TVMScript prim_func named main (or the only one)\n"
    "      --name NAME            the task name it is stored under (default: the\n"
    "                             file name without directory and .py)\n"
    "      --size N=V[,V...]      a --task-file function of size vars (n = T.int64())\n"
    "                             is tuned at these sizes, one run per value (repeat\n"
    "                             per size var; lists go in step); one size var with a\n"
    "                             declared max is tuned by default at 1, 16, 128 and\n"
    "                             its max (within its bounds); mlc-compile then builds\n"
    "                             it for every size from these records\n"
    "  -m, --model FILE.json|FILE.onnx\n"
    "                             every distinct kernel of a model (as mlc-compile\n"
    "                             --model compiles it); --trials is the budget over\n"
    "                             all of them, a round of --trials-per-round (16) at a time\n"
    "      --weights DIR          the model's .npy weights (default: FILE without .json)\n"
    "      --input-shape NAME=D1,D2,...\n"
    "                             the shape of an ONNX input with symbolic dimensions\n"
    "                             (repeatable; as mlc-compile takes it)\n"
    "      --dim NAME=LO..HI      the model built once for every value of NAME (an\n"
    "                             extent of --input-shape: ids=1,seq), as mlc-compile\n"
    "                             --dim builds it: each kernel that takes the size is\n"
    "                             tuned at 1, 16, 128 and HI (within the bounds; stored\n"
    "                             with shape seq=16), from which mlc-compile --dim\n"
    "                             builds it for every size (repeatable)\n"
    "      --task-scheduler S     which kernel gets the next round: gradient (default:\n"
    "                             calls x time and improvement) or round-robin\n"
    "  -n, --trials N             measured candidates wanted in total (default 64)\n"
    "      --trials-per-round N   batch size (default 16 below 128 trials, then 64)\n"
    "      --time SECONDS         stop after this much wall time as well\n"
    "      --target T             target string (default llvm: the host CPU)\n"
    "      --db PATH              database (default $MLC_DB or ./mlc.db), or a\n"
    "                             PostgreSQL URL (postgresql://user@host/dbname)\n"
    "                             that several tuning jobs can share\n"
    "  -j, --builders N           parallel builder processes (default: one per core)\n"
    "      --seed S               search seed (default 1)\n"
    "      --timeout SEC          per-candidate build/run timeout (default 30/20)\n"
    "      --cost-model M         xgb-rank (default), xgb-reg, xgb-sum or random\n"
    "      --no-baseline          no comparison at the end (the default schedule, or\n"
    "                             the unscheduled kernel, timed next to the best);\n"
    "                             with it the unscheduled kernel is timed only when\n"
    "                             cheap (under 1e8 flops a call)\n"
    "      --no-default           search alone: do not measure the default schedule\n"
    "                             (what mlc-compile builds without a record) first as\n"
    "                             a candidate; with it (the default), the best record\n"
    "                             is never slower than an untuned build\n"
    "      --no-overlap           under mpirun: search each batch after the one before\n"
    "                             is measured (as one process does), not while it is;\n"
    "                             the ranks then wait for every search\n"
    "      --ref-cache DIR        keep each workload's reference outputs (what the\n"
    "                             unscheduled kernel computes, that every candidate\n"
    "                             is checked against) in DIR, for later runs, pools\n"
    "                             and MPI ranks (default $XDG_CACHE_HOME/mlc-tune/refs\n"
    "                             or ~/.cache/mlc-tune/refs; 'off': compute them in\n"
    "                             each run); an entry is checked before it is used,\n"
    "                             and a stale or damaged one is computed again\n"
    "      --cold-start           the cost model learns from this workload's records\n"
    "                             only; by default the records of the target's other\n"
    "                             workloads in the database train it first (up to 32\n"
    "                             a workload, 512 in all)\n"
    "      --cache auto|warm|cold how kernels are timed: cold writes over the last-level\n"
    "                             cache before each repeat, warm leaves it as the calls\n"
    "                             before left it; auto (default): warm for a --model whose\n"
    "                             weights, inputs, outputs and workspace fit in that cache\n"
    "                             (its kernels find their data there when the model runs),\n"
    "                             else cold\n"
    "      --remeasure K          time the best K again at the end (default 3; 0: no);\n"
    "                             with --model, of each kernel tuned, beside its\n"
    "                             default schedule\n"
    "      --library openblas     also measure each matmul/dense kernel handed to the\n"
    "                             library (cblas_sgemm, on the target's core count of\n"
    "                             threads) as one candidate, recorded like any other;\n"
    "                             mlc-compile calls the library where that record is\n"
    "                             the best\n"
    "      --intrin FILE.py       register the tensor intrinsics (NAME_desc/NAME_impl\n"
    "                             pairs, as mlc-ir apply --intrin takes them) here and\n"
    "                             in every worker (repeatable, up to 8): the design\n"
    "                             space tiles around those whose description is one\n"
    "                             spatial loop over one reduce loop (a dot-product\n"
    "                             tile) where one fits. The file does not go into the\n"
    "                             database: mlc-compile and mlc-db top/import/show --ir\n"
    "                             replay such records only given the same --intrin\n"
    "                             (else they are skipped as not replaying); names must\n"
    "                             differ from the built-in intrinsics'\n"
    "  -v, --verbose              progress lines even when stderr is not a terminal\n"
    "      --json                 print the summary as one JSON object\n"
    "  -h, --help                 show this help\n"
    "\n"
    "Exit status: 0 done (or nothing to do), 1 failure, 2 bad usage, 130 interrupted.\n";

static volatile int g_stop;
/* --ref-cache's directory, for the summary (NULL: off). */
static const char *g_ref_cache;
/* Rank 0 of an MPI job: the other ranks measure (measure/mpi.c). */
static mlc_measure_mpi *g_mpi;

static void on_sigint(int sig) {
  MLC_UNUSED(sig);
  g_stop = 1;
}

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "mlc-tune: error: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\nTry 'mlc-tune --help'.\n");
  return 2;
}

static int fail(const char *msg) {
  fprintf(stderr, "mlc-tune: error: %s\n", msg);
  return 1;
}

/* What mpi_ended printed already (the dead rank, named before the commit). */
static char g_mpi_said[1024];

/* The tuner's error; after mpi_ended, only what it adds (what was stored). */
static int fail_tune(const char *msg) {
  size_t n = strlen(g_mpi_said);
  if (!n || strncmp(msg, g_mpi_said, n) != 0) return fail(msg);
  msg += n;
  msg += strspn(msg, "; ");
  if (*msg) fprintf(stderr, "mlc-tune: %s\n", msg);
  return 1;
}

static bool parse_int(const char *s, long lo, long hi, long *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

static bool parse_num(const char *s, double *out) {
  char *end;
  double v = strtod(s, &end);
  if (!*s || *end || !(v > 0) || !isfinite(v)) return false;
  *out = v;
  return true;
}

/* Most --input-shape options. */
#define MAX_SHAPES 64

typedef struct cli {
  const char *task, *shape, *task_file, *target, *db, *cost_model;
  const char *name; /* --name: the task name of a --task-file */
  const char *library; /* --library */
  const char *ref_cache; /* --ref-cache: a directory; NULL: off */
  const char *cache;     /* --cache: "auto" (NULL), "warm" or "cold" */
  long trials, per_round, builders, remeasure;
  double time_s, timeout_s;
  uint64_t seed;
  bool verbose, json, no_baseline, no_default, cold_start, no_overlap;
  const char *model, *weights, *task_sched;
  /* --input-shape "name=1,3,224,224", NULL-terminated */
  const char *input_shapes[MAX_SHAPES + 1];
  int n_input_shapes;
  const char *intrins[8]; /* --intrin files (MLC_MEASURE_MAX_INTRIN_FILES) */
  int n_intrins;
  const char *sizes[MLC_MAX_SIZES]; /* --size "n=128" */
  int n_sizes;
  const char *dims[MLC_GRAPH_MAX_SIZES]; /* --dim "seq=1..2048" */
  int n_dims;
} cli;

_Static_assert(sizeof(((cli *)0)->intrins) / sizeof(const char *) == MLC_MEASURE_MAX_INTRIN_FILES,
               "one --intrin slot per file the workers take");

enum { O_PER_ROUND = 256, O_TIME, O_TARGET, O_DB, O_SEED, O_TIMEOUT, O_COST, O_NO_BASE, O_JSON,
       O_WEIGHTS, O_TASK_SCHED, O_INPUT_SHAPE, O_NAME, O_REMEASURE, O_LIBRARY, O_INTRIN,
       O_NO_DEFAULT, O_COLD_START, O_SIZE, O_DIM, O_NO_OVERLAP, O_REF_CACHE, O_CACHE };

static int parse_args(int argc, char **argv, cli *c) {
  static const struct option longs[] = {
      {"task", required_argument, 0, 't'},       {"shape", required_argument, 0, 's'},
      {"task-file", required_argument, 0, 'f'},  {"trials", required_argument, 0, 'n'},
      {"trials-per-round", required_argument, 0, O_PER_ROUND},
      {"time", required_argument, 0, O_TIME},    {"target", required_argument, 0, O_TARGET},
      {"db", required_argument, 0, O_DB},        {"builders", required_argument, 0, 'j'},
      {"seed", required_argument, 0, O_SEED},    {"timeout", required_argument, 0, O_TIMEOUT},
      {"cost-model", required_argument, 0, O_COST},
      {"no-baseline", no_argument, 0, O_NO_BASE}, {"verbose", no_argument, 0, 'v'},
      {"no-default", no_argument, 0, O_NO_DEFAULT},
      {"cold-start", no_argument, 0, O_COLD_START},
      {"no-overlap", no_argument, 0, O_NO_OVERLAP},
      {"ref-cache", required_argument, 0, O_REF_CACHE},
      {"cache", required_argument, 0, O_CACHE},
      {"json", no_argument, 0, O_JSON},          {"help", no_argument, 0, 'h'},
      {"model", required_argument, 0, 'm'},      {"weights", required_argument, 0, O_WEIGHTS},
      {"task-scheduler", required_argument, 0, O_TASK_SCHED},
      {"input-shape", required_argument, 0, O_INPUT_SHAPE},
      {"name", required_argument, 0, O_NAME},
      {"remeasure", required_argument, 0, O_REMEASURE},
      {"library", required_argument, 0, O_LIBRARY},
      {"intrin", required_argument, 0, O_INTRIN},
      {"size", required_argument, 0, O_SIZE},
      {"dim", required_argument, 0, O_DIM},
      {0, 0, 0, 0}};
  int ch;
  long v;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, ":t:s:f:m:n:j:vh", longs, NULL)) != -1) {
    switch (ch) {
    case 't': c->task = optarg; break;
    case 's': c->shape = optarg; break;
    case 'f': c->task_file = optarg; break;
    case 'm': c->model = optarg; break;
    case O_WEIGHTS: c->weights = optarg; break;
    case O_TASK_SCHED: c->task_sched = optarg; break;
    case O_SIZE:
      if (c->n_sizes == MLC_COUNTOF(c->sizes)) return usage_error("%s", "too many --size options");
      if (!strchr(optarg, '=')) return usage_error("--size wants NAME=V, got '%s'", optarg);
      c->sizes[c->n_sizes++] = optarg;
      break;
    case O_DIM: {
      mlc_error err;
      mlc_gsize gs;
      mlc_arena *a = mlc_arena_new();
      bool ok = mlc_gsize_parse(a, optarg, &gs, &err);
      mlc_arena_free(a);
      if (!ok) return usage_error("--dim: %s", err.msg);
      if (c->n_dims == MLC_COUNTOF(c->dims)) return usage_error("%s", "at most 4 --dim options");
      c->dims[c->n_dims++] = optarg;
      break;
    }
    case O_INTRIN:
      if (c->n_intrins == MLC_COUNTOF(c->intrins))
        return usage_error("%s", "at most 8 --intrin files");
      c->intrins[c->n_intrins++] = optarg;
      break;
    case O_NAME:
      if (!*optarg) return usage_error("%s", "--name wants a non-empty name");
      c->name = optarg;
      break;
    case O_INPUT_SHAPE:
      if (c->n_input_shapes >= MAX_SHAPES) return usage_error("%s", "too many --input-shape options");
      c->input_shapes[c->n_input_shapes++] = optarg;
      break;
    case 'n':
      if (!parse_int(optarg, 1, 1000000, &c->trials))
        return usage_error("--trials wants a positive integer, got '%s'", optarg);
      break;
    case O_PER_ROUND:
      if (!parse_int(optarg, 1, 4096, &c->per_round))
        return usage_error("--trials-per-round wants 1 to 4096, got '%s'", optarg);
      break;
    case 'j':
      if (!parse_int(optarg, 1, 1024, &c->builders))
        return usage_error("--builders wants 1 to 1024, got '%s'", optarg);
      break;
    case O_REMEASURE:
      if (!parse_int(optarg, 0, 64, &c->remeasure))
        return usage_error("--remeasure wants 0 to 64, got '%s'", optarg);
      break;
    case O_TIME:
      if (!parse_num(optarg, &c->time_s)) return usage_error("--time wants seconds > 0, got '%s'", optarg);
      break;
    case O_TIMEOUT:
      if (!parse_num(optarg, &c->timeout_s))
        return usage_error("--timeout wants seconds > 0, got '%s'", optarg);
      break;
    case O_SEED:
      if (!parse_int(optarg, 0, 2147483647L, &v)) return usage_error("--seed wants an integer >= 0, got '%s'", optarg);
      c->seed = (uint64_t)v;
      break;
    case O_TARGET: c->target = optarg; break;
    case O_LIBRARY:
      if (!mlc_sched_library_known(optarg))
        return usage_error("--library wants openblas, got '%s'", optarg);
      c->library = optarg;
      break;
    case O_DB: c->db = optarg; break;
    case O_COST: c->cost_model = optarg; break;
    case O_NO_BASE: c->no_baseline = true; break;
    case O_NO_DEFAULT: c->no_default = true; break;
    case O_NO_OVERLAP: c->no_overlap = true; break;
    case O_REF_CACHE:
      if (!optarg[0]) return usage_error("%s", "--ref-cache wants a directory or 'off'");
      c->ref_cache = strcmp(optarg, "off") == 0 ? NULL : optarg;
      break;
    case O_CACHE:
      if (strcmp(optarg, "auto") != 0 && strcmp(optarg, "warm") != 0 && strcmp(optarg, "cold") != 0)
        return usage_error("--cache wants auto, warm or cold, got '%s'", optarg);
      c->cache = strcmp(optarg, "auto") == 0 ? NULL : optarg;
      break;
    case O_COLD_START: c->cold_start = true; break;
    case 'v': c->verbose = true; break;
    case O_JSON: c->json = true; break;
    case 'h': fputs(usage_text, stdout); exit(0);
    case ':': return usage_error("option '%s' needs a value", argv[optind - 1]);
    default: return usage_error("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
  if (!c->task + !c->task_file + !c->model != 2)
    return usage_error("%s", "give exactly one of --task, --task-file or --model");
  if ((c->weights || c->task_sched || c->n_input_shapes || c->n_dims) && !c->model)
    return usage_error("%s", "--weights, --input-shape, --dim and --task-scheduler go with --model");
  size_t ml = c->model ? strlen(c->model) : 0;
  bool onnx = ml > 5 && strcmp(c->model + ml - 5, ".onnx") == 0;
  if (onnx && c->weights) return usage_error("%s", "--weights goes with a JSON model (ONNX carries its weights)");
  if (c->model && !onnx && c->n_input_shapes)
    return usage_error("%s", "--input-shape goes with an ONNX model");
  mlc_tuner_task_sched ts;
  if (c->task_sched && !mlc_tuner_task_sched_from_name(c->task_sched, &ts))
    return usage_error("--task-scheduler wants gradient or round-robin, got '%s'", c->task_sched);
  if (c->model && c->json) return usage_error("%s", "--json goes with --task or --task-file");
  if (c->shape && !c->task) return usage_error("%s", "--shape goes with --task");
  if (c->name && !c->task_file) return usage_error("%s", "--name goes with --task-file");
  if (c->n_sizes && !c->task_file) return usage_error("%s", "--size goes with --task-file");
  return 0;
}

/* ---- the workload ------------------------------------------------------------ */

typedef struct workload {
  mlc_arena *arena;
  mlc_prim_func *f;
  char name[256], shape[256];
  double flops;
} workload;

static int load_task(const cli *c, workload *w) {
  mlc_error err;
  const mlc_task_def *d = mlc_task_find(c->task);
  if (!d) {
    fprintf(stderr, "mlc-tune: error: unknown task '%s' (known: %s)\n", c->task, mlc_task_names());
    return 2;
  }
  int64_t shape[MLC_TASK_MAX_DIMS];
  if (!mlc_task_parse_shape(d, c->shape, shape, &err)) return usage_error("%s", err.msg);
  w->f = mlc_task_build(w->arena, d, shape);
  w->flops = mlc_task_flops(d, shape);
  snprintf(w->name, sizeof w->name, "%s", d->name);
  mlc_task_shape_str(d, shape, w->shape, sizeof w->shape);
  return 0;
}

/* "dir/kernel.py" -> "kernel"; a name that would be empty keeps the path. */
static void file_stem(const char *path, char *out, size_t size) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t len = strlen(base);
  if (len > 3 && strcmp(base + len - 3, ".py") == 0) len -= 3;
  if (len == 0) snprintf(out, size, "%s", path);
  else snprintf(out, size, "%.*s", (int)len, base);
}

/* A function of size vars is tuned at the sizes --size gives: the static
 * function of those sizes, stored with "n=128;m=4" as its shape (what
 * mlc-compile looks for to build the function of size vars). */
enum { MAX_SIZE_RUNS = 16 };

static mlc_prim_func *specialize(const cli *c, workload *w, const mlc_prim_func *f, int run,
                                 int *n_runs) {
  mlc_error err;
  int64_t sizes[MLC_MAX_SIZES], vals[MAX_SIZE_RUNS];
  int off = 0;
  *n_runs = 1;
  for (int k = 0; k < f->n_sizes; k++) {
    const mlc_size_var *sv = &f->sizes[k];
    int n = mlc_size_values(c->n_sizes, c->sizes, sv->var->name, vals, MAX_SIZE_RUNS, &err);
    if (n < 0) return fprintf(stderr, "mlc-tune: error: %s\n", err.msg), NULL;
    if (n > 1 && *n_runs > 1 && n != *n_runs) {
      fprintf(stderr, "mlc-tune: error: --size lists of different lengths (%d and %d)\n", *n_runs, n);
      return NULL;
    }
    if (n == 0 && f->n_sizes == 1) n = mlc_size_samples(sv, vals);
    if (n == 0) {
      fprintf(stderr, "mlc-tune: error: %s: %s takes its size %s at run time%s: tune it at given "
                      "sizes with --size %s=V[,V...]\n",
              c->task_file, f->name, sv->var->name,
              f->n_sizes == 1 ? " and declares no max" : "", sv->var->name);
      return NULL;
    }
    if (n > *n_runs) *n_runs = n;
    sizes[k] = vals[n > 1 ? (run < n ? run : n - 1) : 0];
    if (sizes[k] < sv->lo || sizes[k] > sv->hi) {
      fprintf(stderr, "mlc-tune: error: --size %s=%lld is outside its bounds [%lld, %lld]\n",
              sv->var->name, (long long)sizes[k], (long long)sv->lo, (long long)sv->hi);
      return NULL;
    }
    off += snprintf(w->shape + off, sizeof w->shape - (size_t)off, "%s%s=%lld", k ? ";" : "",
                    sv->var->name, (long long)sizes[k]);
    if (off >= (int)sizeof w->shape) off = (int)sizeof w->shape - 1;
  }
  mlc_prim_func *g = mlc_func_specialize(w->arena, f, sizes, &err);
  if (g && mlc_verify_func(g, &err)) return g;
  fprintf(stderr, "mlc-tune: error: %s at %s: %s\n", c->task_file, w->shape, err.msg);
  return NULL;
}

static int load_file(const cli *c, workload *w, int run, int *n_runs) {
  mlc_error err;
  size_t len;
  char *text = mlc_read_file(c->task_file, &len, &err);
  if (!text) return fail(err.msg);
  mlc_module *m = mlc_parse_module(w->arena, c->task_file, text, &err);
  mlc_free(text);
  if (!m) return fail(err.msg);
  mlc_prim_func *f = mlc_module_find(m, "main");
  if (!f && m->n_funcs == 1) f = m->funcs[0];
  if (!f) {
    fprintf(stderr, "mlc-tune: error: %s: no prim_func named main (and %d functions)\n",
            c->task_file, m->n_funcs);
    return 1;
  }
  if (!mlc_verify_func(f, &err)) {
    fprintf(stderr, "mlc-tune: error: %s: %s\n", c->task_file, err.msg);
    return 1;
  }
  if (f->n_sizes == 0 && c->n_sizes) {
    fprintf(stderr, "mlc-tune: error: %s: --size given, but the function has no size vars\n",
            c->task_file);
    return 2;
  }
  if (f->n_sizes > 0 && !(f = specialize(c, w, f, run, n_runs))) return 1;
  w->f = f;
  /* The database lists tasks by name: the file's stem, not a path that
   * only means something on this machine. */
  if (c->name) snprintf(w->name, sizeof w->name, "%s", c->name);
  else file_stem(c->task_file, w->name, sizeof w->name);
  w->flops = mlc_func_flops(f);
  return 0;
}

/* ---- output ------------------------------------------------------------------- */

static void progress(void *ud, const mlc_tuner_progress *p) {
  MLC_UNUSED(ud);
  fprintf(stderr, "round %d: %d/%d trials (%d errors), best ", p->round, p->trials_done,
          p->trials_total, p->errors);
  if (p->best_gflops > 0) fprintf(stderr, "%.2f GFLOP/s (%.4g ms)", p->best_gflops, p->best_sec * 1e3);
  else if (p->best_sec > 0) fprintf(stderr, "%.4g ms", p->best_sec * 1e3);
  else fprintf(stderr, "-");
  fprintf(stderr, ", elapsed %.0f s, ETA %.0f s", p->elapsed_s, p->eta_s);
  if (p->retimed > 0)
    fprintf(stderr, "; interference: %d re-timed, %d disturbed", p->retimed, p->disturbed);
  if (p->batch_disturbed > 0)
    fprintf(stderr, " [round disturbed: %d of %d timed under interference]", p->batch_disturbed,
            p->batch);
  fputc('\n', stderr);
}

static void print_summary(const workload *w, const char *target, const mlc_tuner_tune_result *r) {
  printf("%s%s%s on %s: ", w->name, w->shape[0] ? " " : "", w->shape, target);
  if (r->best_sec <= 0) {
    printf("no successful candidate\n");
    return;
  }
  printf("best %.4g ms", r->best_sec * 1e3);
  if (r->best_gflops > 0) printf(", %.2f GFLOP/s", r->best_gflops);
  printf(" (record %lld; see it with `mlc-db show %lld`)\n", (long long)r->best_record_id,
         (long long)r->best_record_id);
  const char *base = r->check_base_default ? "the default schedule (what an untuned build runs)"
                                            : "the unscheduled kernel";
  if (r->not_faster)
    printf("no speed-up: %s took %.4g ms next to the best's %.4g ms\n", base,
           r->check_base_sec * 1e3, r->check_best_sec * 1e3);
  else if (r->check_base_sec > 0)
    printf("speed-up over %s, timed side by side (%.4g ms vs %.4g ms): %.2fx\n", base,
           r->check_base_sec * 1e3, r->check_best_sec * 1e3, r->check_base_sec / r->check_best_sec);
  if (r->baseline_sec > 0 && r->check_base_default)
    printf("the unscheduled kernel: %.4g ms (%.1fx the best's time)\n", r->baseline_sec * 1e3,
           r->baseline_sec / r->best_sec);
  else if (r->baseline_sec > 0 && r->check_base_sec <= 0)
    printf("speed-up over the unscheduled kernel (%.4g ms): %.1fx\n", r->baseline_sec * 1e3,
           r->baseline_sec / r->best_sec);
  else if (r->baseline_skipped)
    printf("the unscheduled kernel was not timed (%.3g GFLOP a call: seconds)\n",
           mlc_func_flops(w->f) * 1e-9);
  if (r->default_sec > 0 && !r->check_base_default)
    printf("default schedule (what an untuned build runs): %.4g ms, %.2fx the best's time\n",
           r->default_sec * 1e3, r->default_sec / r->best_sec);
  else if (r->default_error[0])
    printf("default schedule failed: %s\n", r->default_error);
  printf("trials: %d before, %d measured now (%d errors) in %d rounds\n", r->measured_before,
         r->measured, r->errors, r->rounds);
  if (r->transfer_records > 0)
    printf("cost model: first trained on %d records of %d other workloads in the database\n",
           r->transfer_records, r->transfer_workloads);
  if (r->retimed > 0)
    printf("interference: %d candidates re-timed; %d stayed disturbed (marked in their "
           "records) in %d rounds\n", r->retimed, r->disturbed, r->disturbed_rounds);
  if (r->too_slow > 0)
    printf("stopped early: %d candidates far slower than the best (recorded as too slow)\n",
           r->too_slow);
  if (r->refs_computed + r->refs_cached > 0 && g_ref_cache)
    printf("reference outputs: %d computed, %d read from %s%s\n", r->refs_computed,
           r->refs_cached, g_ref_cache,
           r->refs_refused ? " (stale or damaged entries were refused and computed again)" : "");
  if (g_mpi && mlc_measure_mpi_lost(g_mpi) > 0)
    printf("measurement ranks lost: %d (their candidates were measured by the others)\n",
           mlc_measure_mpi_lost(g_mpi));
  printf("time: %.1f s total; search %.1f s (%.0f ms per round), build %.1f s (worker time), "
         "run %.1f s\n",
         r->total_sec, r->search_sec, r->rounds ? 1e3 * r->search_sec / r->rounds : 0.0,
         r->build_sec, r->run_sec);
}

static void print_json(const workload *w, const char *target, const mlc_tuner_tune_result *r) {
  mlc_str s = {0};
  mlc_str_puts(&s, "{\"task\":");
  mlc_json_write_string(&s, w->name);
  mlc_str_puts(&s, ",\"shape\":");
  mlc_json_write_string(&s, w->shape);
  mlc_str_puts(&s, ",\"target\":");
  mlc_json_write_string(&s, target);
  mlc_str_printf(&s,
                 ",\"workload_id\":%lld,\"trials_before\":%d,\"measured\":%d,\"errors\":%d,"
                 "\"too_slow\":%d,\"rounds\":%d,\"transfer_records\":%d,\"best_record_id\":%lld,"
                 "\"best_sec\":",
                 (long long)r->workload_id, r->measured_before, r->measured, r->errors,
                 r->too_slow, r->rounds, r->transfer_records,
                 (long long)r->best_record_id);
  mlc_json_write_number(&s, r->best_sec);
  mlc_str_puts(&s, ",\"best_gflops\":");
  mlc_json_write_number(&s, r->best_gflops);
  mlc_str_puts(&s, ",\"baseline_sec\":");
  mlc_json_write_number(&s, r->baseline_sec);
  mlc_str_puts(&s, ",\"default_sec\":");
  mlc_json_write_number(&s, r->default_sec);
  mlc_str_puts(&s, ",\"default_error\":");
  mlc_json_write_string(&s, r->default_error);
  mlc_str_printf(&s,
                 ",\"search_sec\":%.3f,\"serial_sec\":%.3f,\"build_sec\":%.3f,\"run_sec\":%.3f,"
                 "\"total_sec\":%.3f,\"learned_early\":%d",
                 r->search_sec, r->serial_sec, r->build_sec, r->run_sec, r->total_sec,
                 r->learned_early);
  mlc_str_printf(&s,
                 ",\"stored\":%d,\"commits\":%d,\"commit_ms_p50\":%.3f,\"commit_ms_p95\":%.3f,"
                 "\"commit_ms_max\":%.3f",
                 r->stored, r->commits, r->commit_ms_p50, r->commit_ms_p95, r->commit_ms_max);
  if (g_mpi) mlc_str_printf(&s, ",\"ranks_lost\":%d", mlc_measure_mpi_lost(g_mpi));
  mlc_str_printf(&s, ",\"refs_computed\":%d,\"refs_cached\":%d,\"refs_refused\":%d",
                 r->refs_computed, r->refs_cached, r->refs_refused);
  mlc_str_printf(&s, ",\"nothing_to_do\":%s,\"stopped\":%s,\"exhausted\":%s,\"message\":",
                 r->nothing_to_do ? "true" : "false", r->stopped ? "true" : "false",
                 r->exhausted ? "true" : "false");
  mlc_json_write_string(&s, r->message);
  mlc_str_printf(&s, ",\"retimed\":%d,\"disturbed\":%d,\"disturbed_rounds\":%d,"
                 "\"check_base_sec\":", r->retimed, r->disturbed, r->disturbed_rounds);
  mlc_json_write_number(&s, r->check_base_sec);
  mlc_str_puts(&s, ",\"check_best_sec\":");
  mlc_json_write_number(&s, r->check_best_sec);
  mlc_str_printf(&s, ",\"not_faster\":%s,\"warning\":", r->not_faster ? "true" : "false");
  mlc_json_write_string(&s, r->warning);
  mlc_str_printf(&s, ",\"check_base_default\":%s,\"baseline_skipped\":%s",
                 r->check_base_default ? "true" : "false", r->baseline_skipped ? "true" : "false");
  /* --library: this run's library candidate (0: none), or why none */
  mlc_str_puts(&s, ",\"library_sec\":");
  mlc_json_write_number(&s, r->library_sec);
  mlc_str_puts(&s, ",\"library_error\":");
  mlc_json_write_string(&s, r->library_error);
  mlc_str_puts(&s, ",\"library_note\":");
  mlc_json_write_string(&s, r->library_note);
  mlc_str_puts(&s, "}\n");
  fputs(mlc_str_cstr(&s), stdout);
  mlc_str_free(&s);
}

/* ---- --library ------------------------------------------------------------------ */

/* The library must load here (the workers find it the same way), and it
 * runs on as many threads as the target's kernels: MLC_NUM_THREADS, which
 * the workers inherit, is set to the target's core count unless the user
 * set it (then both follow it). */
static int library_check(const cli *c, const mlc_target *tgt) {
  if (mlc_target_device(tgt) != MLC_DEVICE_CPU) {
    fprintf(stderr, "mlc-tune: error: --library %s goes with CPU (llvm) targets\n", c->library);
    return 2;
  }
  /* the kernels for this CPU, in this process and the workers (set
   * before OpenBLAS loads: it reads the variable once) */
  const char *ct = mlc_rt_blas_coretype(), *env_ct = getenv("OPENBLAS_CORETYPE");
  if (ct && (!env_ct || !*env_ct)) setenv("OPENBLAS_CORETYPE", ct, 1);
  const char *why = mlc_rt_blas_error();
  if (why[0]) {
    fprintf(stderr, "mlc-tune: error: --library %s: %s\n", c->library, why);
    return 1;
  }
  const char *env = getenv("MLC_NUM_THREADS");
  if (!env || !*env) {
    char n[32];
    snprintf(n, sizeof n, "%d", tgt->num_cores > 0 ? tgt->num_cores : mlc_rt_num_threads(0));
    setenv("MLC_NUM_THREADS", n, 1);
  }
  fprintf(stderr, "mlc-tune: library %s: cblas_sgemm runs on %d threads, as the tuned kernels "
          "(MLC_NUM_THREADS=%s), with its %s kernels (OPENBLAS_CORETYPE)\n", c->library,
          mlc_rt_num_threads(0), getenv("MLC_NUM_THREADS"), mlc_rt_blas_corename());
  return 0;
}

/* "library openblas 0.52 ms (record 3) vs tuned 0.91 ms (record 7): the
 * library is faster" for one workload; nothing when it has no library
 * record. */
static void print_library_choice(FILE *out, mlc_db *db, int64_t wid, const char *target,
                                 const char *indent) {
  mlc_tuner_library_cmp cmp;
  mlc_error err;
  int k = mlc_tuner_library_compare(db, wid, target, &cmp, &err);
  if (k < 0) fprintf(out, "%s(cannot compare: %s)\n", indent, err.msg);
  if (k <= 0) return;
  fprintf(out, "%slibrary %s %.4g ms (record %lld) vs tuned ", indent, cmp.library,
          cmp.library_sec * 1e3, (long long)cmp.library_id);
  if (cmp.tuned_id == 0) {
    fprintf(out, "- (none measured): the library is chosen\n");
    return;
  }
  bool lib = cmp.library_sec < cmp.tuned_sec;
  fprintf(out, "%.4g ms (record %lld): %s is faster (%.2fx), mlc-compile %s\n",
          cmp.tuned_sec * 1e3, (long long)cmp.tuned_id, lib ? "the library" : "the tuned kernel",
          lib ? cmp.tuned_sec / cmp.library_sec : cmp.library_sec / cmp.tuned_sec,
          lib ? "calls the library" : "compiles the tuned kernel");
}

/* ---- main ---------------------------------------------------------------------- */

/* The target to tune for. Every kind goes through the same loop (the
 * design space and the runner follow the target's kind); one whose
 * kernels cannot run here (cuda without a driver or device) stops before
 * the database is opened: "no CUDA device: <reason>". Returns 0, or the
 * exit status to give. */
static int tune_target(const cli *c, mlc_target *tgt) {
  mlc_error err;
  if (!mlc_target_parse(c->target ? c->target : "llvm", tgt, &err)) return usage_error("%s", err.msg);
  if (!mlc_measure_runner_check(tgt->str, &err)) {
    fprintf(stderr, "mlc-tune: error: %s\n", err.msg);
    return 1;
  }
  return c->library ? library_check(c, tgt) : 0;
}

static int run(const cli *c, workload *w) {
  mlc_error err;
  const char *db_path = c->db ? c->db : getenv("MLC_DB") ? getenv("MLC_DB") : "mlc.db";
  mlc_target tgt;
  int bad_target = tune_target(c, &tgt);
  if (bad_target) return bad_target;
  mlc_db *db = mlc_db_open(db_path, MLC_DB_CREATE, &err);
  if (!db) {
    fprintf(stderr, "mlc-tune: error: %s\n", err.msg);
    return 1;
  }
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_opts_default(&o);
  o.task = w->name;
  o.shape = w->shape;
  o.target = tgt.str;
  o.flops = w->flops;
  o.trials = (int)c->trials;
  o.trials_per_round = (int)c->per_round;
  o.time_budget_s = c->time_s;
  o.n_builders = (int)c->builders;
  o.timeout_s = c->timeout_s;
  o.measure_baseline = !c->no_baseline;
  o.no_default_candidate = c->no_default;
  o.cold_start = c->cold_start;
  o.remeasure_top = (int)c->remeasure;
  o.warm_cache = c->cache && strcmp(c->cache, "warm") == 0;
  if (c->cost_model) o.cost_model = c->cost_model;
  o.stop = &g_stop;
  if (g_mpi) o.measure = mlc_measure_mpi_batch, o.measure_ud = g_mpi, o.overlap = !c->no_overlap;
  if (c->verbose || isatty(2)) o.progress = progress;
  o.search.seed = c->seed;
  o.search.num_cores = tgt.num_cores;
  o.library = c->library;
  o.n_intrin_files = c->n_intrins;
  o.intrin_files = c->intrins;
  o.ref_cache_dir = c->ref_cache;
  mlc_tuner_tune_result r;
  signal(SIGINT, on_sigint);
  bool ok = mlc_tuner_tune(db, w->f, &o, &r, &err);
  signal(SIGINT, SIG_DFL);
  if (!ok) {
    mlc_db_close(db);
    return fail_tune(err.msg);
  }
  if (r.message[0] && !c->json) fprintf(stderr, "mlc-tune: %s\n", r.message);
  if (r.warning[0]) fprintf(stderr, "mlc-tune: %s\n", r.warning);
  if (c->json) print_json(w, tgt.str, &r);
  else print_summary(w, tgt.str, &r);
  if (c->library && !c->json) {
    if (r.library_error[0]) printf("library %s candidate failed: %s\n", c->library, r.library_error);
    else if (r.library_note[0] && r.library_sec <= 0)
      printf("library %s: %s\n", c->library, r.library_note);
    print_library_choice(stdout, db, r.workload_id, tgt.str, "");
  }
  mlc_db_close(db);
  fflush(stdout);
  if (r.stopped) {
    fprintf(stderr,
            "mlc-tune: interrupted; the database %s holds the finished rounds. Run the same "
            "command again to resume.\n",
            db_path);
    return 130;
  }
  if (r.measured > 0 && r.errors == r.measured && r.best_sec <= 0) {
    fprintf(stderr, "mlc-tune: error: all %d candidates failed; the first: %s\n", r.measured,
            r.first_error);
    return 1;
  }
  return 0;
}

/* ---- --model ----------------------------------------------------------------------- */

/* A task as the summary names it: its kernel, and the sizes a kernel of
 * size vars is tuned at ("gpt2_softmax@seq=16"). */
static const char *task_label(const mlc_tuner_task *t, char *buf, size_t n) {
  if (!t->shape) return t->name;
  snprintf(buf, n, "%s@%s", t->name, t->shape);
  return buf;
}

static void model_progress(void *ud, const mlc_tuner_sched_progress *p) {
  MLC_UNUSED(ud);
  const mlc_tuner_task *t = &p->tasks[p->task];
  const mlc_tuner_task_state *s = &p->state[p->task];
  char label[256];
  fprintf(stderr, "round %d: task %d/%d %s (calls %d): %d trials, best ", p->round, p->task + 1,
          p->n_tasks, task_label(t, label, sizeof label), t->weight, s->trials);
  if (s->best_sec > 0) fprintf(stderr, "%.4g us", s->best_sec * 1e6);
  else fprintf(stderr, "-");
  fprintf(stderr, "; model %d/%d trials, est. latency ", p->trials_done, p->trials_total);
  if (p->est_sec > 0) fprintf(stderr, "%.4g us", p->est_sec * 1e6);
  else fprintf(stderr, "-");
  fprintf(stderr, ", elapsed %.0f s\n", p->elapsed_s);
}

static void print_model_summary(const char *model, const char *target, const char *kind, int n,
                                const mlc_tuner_task *tasks, const mlc_tuner_task_state *st,
                                const mlc_tuner_sched_result *r) {
  int total = 0;
  for (int i = 0; i < n; i++) total += st[i].trials;
  printf("%s on %s: %d tasks, %s task scheduler\n", model, target, n, kind);
  printf("  %-36s %5s %7s %12s %12s  %s\n", "task", "calls", "trials", "default/call",
         "best/call", "record");
  bool sized = false;
  for (int i = 0; i < n; i++) {
    char label[256];
    sized = sized || tasks[i].shape;
    printf("  %-36s %5d %7d ", task_label(&tasks[i], label, sizeof label), tasks[i].weight,
           st[i].trials);
    if (st[i].default_sec > 0) printf("%9.3f us ", st[i].default_sec * 1e6);
    else printf("%12s ", "-");
    if (st[i].best_sec > 0)
      printf("%9.3f us  %lld\n", st[i].best_sec * 1e6, (long long)st[i].best_record_id);
    else printf("%12s  -\n", "-");
  }
  if (r->est_sec > 0)
    printf("estimated model latency (sum of calls x best%s): %.3f us\n",
           sized ? "; a kernel of sizes counts its time at the bounds" : "", r->est_sec * 1e6);
  if (r->est_sec > 0 && r->est_default_sec > 0)
    printf("the same with every kernel's default schedule (an untuned build): %.3f us (%.2fx)\n",
           r->est_default_sec * 1e6, r->est_default_sec / r->est_sec);
  printf("trials: %d before, %d measured now (%d errors) in %d rounds; %.1f s\n",
         total - r->measured, r->measured, r->errors, r->rounds, r->total_sec);
}

/* Per task with a library record: the library's time against the best
 * tuned one. */
static void print_model_library(mlc_db *db, const char *target, int n, const mlc_tuner_task *tasks) {
  printf("library offload (each kernel goes where its best record is):\n");
  int none = 0;
  for (int i = 0; i < n; i++) {
    int64_t wid;
    mlc_error err;
    mlc_tuner_library_cmp cmp;
    if (mlc_db_find_workload(db, tasks[i].func, &wid, &err) != 1 ||
        mlc_tuner_library_compare(db, wid, target, &cmp, &err) != 1) {
      none++;
      continue;
    }
    printf("  %-36s ", tasks[i].name);
    print_library_choice(stdout, db, wid, target, "");
  }
  printf("  (%d other kernels: no library record: not a float32 matmul/dense over a plain [K, N] or [N, K] weight (a weight packed by the layout pass has none), or not measured "
         "yet)\n", none);
}

/* Every distinct kernel of the model under one budget. */
/* The model through the passes, as mlc-compile builds it: with --dim, one
 * module for every size (its kernels of size vars tuned as their
 * specializations, mlc_graph_tuner_tasks). */
static mlc_gmodule *load_lowered(const cli *c, mlc_error *err) {
  if (c->n_dims) {
    mlc_arena *a = mlc_arena_new();
    mlc_gsize sizes[MLC_GRAPH_MAX_SIZES];
    for (int k = 0; k < c->n_dims; k++) {
      bool parsed = mlc_gsize_parse(a, c->dims[k], &sizes[k], err);
      MLC_ASSERT(parsed); /* parse_args read each one */
    }
    mlc_gmodule *m = mlc_graph_load_sized(c->model, c->input_shapes, c->n_dims, sizes, 0, err);
    mlc_arena_free(a);
    return m;
  }
  mlc_gmodule *m = mlc_graph_load_any(c->model, c->weights, c->input_shapes, err);
  if (m && !mlc_graph_run_pipeline(m, NULL, NULL, NULL, err)) {
    mlc_graph_free(m);
    return NULL;
  }
  return m;
}

/* --cache for model m: warm or cold as asked; auto: warm when one run
 * touches no more than the last-level cache (said on stderr). */
static bool model_warm_cache(const cli *c, const mlc_gmodule *m) {
  if (c->cache) return strcmp(c->cache, "warm") == 0;
  int64_t bytes = mlc_graph_run_bytes(m);
  double llc = (double)mlc_measure_llc_bytes();
  bool warm = bytes >= 0 && (double)bytes <= llc;
  if (bytes >= 0)
    fprintf(stderr, "mlc-tune: %s touches %.1f MiB a run (weights, inputs, outputs, workspace), %s "
                    "the %.0f MiB last-level cache: kernels timed with %s caches (--cache)\n",
            m->name, (double)bytes / 1048576, warm ? "within" : "over", llc / 1048576,
            warm ? "warm" : "cold");
  return warm;
}

static int tune_model(const cli *c) {
  mlc_error err;
  mlc_gmodule *m = load_lowered(c, &err);
  if (!m) return fail(err.msg);
  const char **externs;
  int n_ext = mlc_graph_extern_names(m, &externs);
  for (int i = 0; i < n_ext; i++) /* the program's own code: nothing to tune */
    fprintf(stderr, "mlc-tune: %s: call_extern \"%s\" is not tuned (the program's own function)\n",
            m->name, externs[i]);
  mlc_arena *a = mlc_arena_new();
  mlc_tuner_task *tasks;
  int n = mlc_graph_tuner_tasks(a, m, &tasks);
  mlc_tuner_task_state *st = MLC_NEW_ARRAY(a, mlc_tuner_task_state, n + 1);
  const char *db_path = c->db ? c->db : getenv("MLC_DB") ? getenv("MLC_DB") : "mlc.db";
  mlc_target tgt;
  mlc_db *db = NULL;
  int rc = tune_target(c, &tgt);
  if (!rc && !(db = mlc_db_open(db_path, MLC_DB_CREATE, &err))) rc = fail(err.msg);
  mlc_tuner_sched_opts o;
  mlc_tuner_sched_opts_default(&o);
  if (c->task_sched) mlc_tuner_task_sched_from_name(c->task_sched, &o.kind);
  o.trials = (int)c->trials;
  if (c->per_round) o.trials_per_round = (int)c->per_round;
  if (c->verbose || isatty(2)) o.progress = model_progress;
  o.tune.target = tgt.str;
  o.tune.time_budget_s = c->time_s;
  o.tune.n_builders = (int)c->builders;
  o.tune.timeout_s = c->timeout_s;
  if (c->cost_model) o.tune.cost_model = c->cost_model;
  o.tune.stop = &g_stop;
  if (g_mpi)
    o.tune.measure = mlc_measure_mpi_batch, o.tune.measure_ud = g_mpi, o.tune.overlap = !c->no_overlap;
  o.tune.search.seed = c->seed;
  o.tune.n_intrin_files = c->n_intrins;
  o.tune.intrin_files = c->intrins;
  o.tune.ref_cache_dir = c->ref_cache;
  o.tune.search.num_cores = tgt.num_cores;
  o.tune.library = c->library;
  o.tune.no_default_candidate = c->no_default;
  o.tune.cold_start = c->cold_start;
  o.tune.remeasure_top = (int)c->remeasure;
  /* under mpirun the ranks' pools got it (start_mpi) */
  o.tune.warm_cache = !g_mpi && model_warm_cache(c, m);
  mlc_tuner_sched_result r;
  if (!rc) {
    signal(SIGINT, on_sigint);
    bool ok = mlc_tuner_schedule_tasks(db, n, tasks, &o, st, &r, &err);
    signal(SIGINT, SIG_DFL);
    if (!ok) rc = fail_tune(err.msg);
  }
  if (!rc) {
    if (r.message[0]) fprintf(stderr, "mlc-tune: %s\n", r.message);
    print_model_summary(m->name, tgt.str, mlc_tuner_task_sched_name(o.kind), n, tasks, st, &r);
    if (c->library) print_model_library(db, tgt.str, n, tasks);
    fflush(stdout);
    if (r.stopped) {
      fprintf(stderr, "mlc-tune: interrupted; the database %s holds the finished rounds. Run "
                      "the same command again to resume.\n", db_path);
      rc = 130;
    } else if (r.measured > 0 && r.errors == r.measured) {
      fprintf(stderr, "mlc-tune: error: all %d candidates failed\n", r.measured);
      rc = 1;
    }
  }
  if (db) mlc_db_close(db);
  mlc_arena_free(a);
  mlc_graph_free(m);
  return rc;
}

/* ---- MPI ----------------------------------------------------------------------------- */

/* mpirun ends the job (a measurement rank died): say which at once, its
 * SIGKILL follows within a second. What rank 0 received is stored (the
 * tuner's error says so when the batch was being measured). */
static void mpi_ended(void *ud, const char *msg) {
  MLC_UNUSED(ud);
  fprintf(stderr, "mlc-tune: error: %s\n", msg);
  snprintf(g_mpi_said, sizeof g_mpi_said, "%s", msg);
}

/* A measurement rank is lost, or joins late, and the job goes on. */
static void mpi_ranks(void *ud, const char *msg) {
  MLC_UNUSED(ud);
  fprintf(stderr, "mlc-tune: %s\n", msg);
}

/* Under mpirun with several ranks, rank 0 tunes and measures through the
 * others, which serve here until rank 0 ends the job. Returns -1 to go on
 * tuning (rank 0, or no mpirun), else the exit status. */
static int start_mpi(const cli *c, int *argc, char ***argv) {
  int n = mlc_measure_mpi_env_size();
  if (n <= 1) return -1;
  if (c->n_intrins > 0) {
    /* the measurement ranks' pools take their options from rank 0's
     * wire message, which carries no files */
    fprintf(stderr, "mlc-tune: error: --intrin does not work under mpirun yet (the measurement "
                    "ranks would not register the intrinsics)\n");
    return 2;
  }
  if (!mlc_measure_mpi_built()) {
    fprintf(stderr, "mlc-tune: error: started by mpirun with %d ranks, but this mlc-tune was "
                    "built without MPI support (install libopenmpi-dev and rebuild)\n", n);
    return 1;
  }
  mlc_error err;
  mlc_measure_mpi *p = mlc_measure_mpi_init(argc, argv, c->target, &err);
  if (!p) return fail(err.msg);
  if (mlc_measure_mpi_rank(p) > 0) {
    int rc = mlc_measure_mpi_serve(p, &err) ? 0 : fail(err.msg);
    mlc_measure_mpi_end(p, rc);
    return rc;
  }
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_opts_default(&o);
  o.target = c->target;
  o.n_builders = (int)c->builders;
  o.timeout_s = c->timeout_s;
  o.ref_cache_dir = c->ref_cache;
  o.warm_cache = c->cache && strcmp(c->cache, "warm") == 0;
  if (c->model && !c->cache) { /* auto: as the model's own run decides */
    mlc_gmodule *m = load_lowered(c, &err);
    if (!m) return mlc_measure_mpi_end(p, 1), fail(err.msg);
    o.warm_cache = model_warm_cache(c, m);
    mlc_graph_free(m);
  }
  mlc_measure_opts mo;
  mlc_tuner_pool_opts(&o, &mo);
  if (!mlc_measure_mpi_check(p, &mo, &err)) {
    int rc = fail(err.msg);
    mlc_measure_mpi_end(p, rc);
    return rc;
  }
  if (c->verbose) {
    mlc_str s = {0};
    mlc_measure_mpi_describe(p, &s);
    fprintf(stderr, "%s", mlc_str_cstr(&s));
    mlc_str_free(&s);
  }
  mlc_measure_mpi_on_end(p, mpi_ended, NULL);
  mlc_measure_mpi_on_ranks(p, mpi_ranks, NULL);
  g_mpi = p;
  return -1;
}

/* $XDG_CACHE_HOME/mlc-tune/refs, else ~/.cache/mlc-tune/refs; NULL
 * without either. */
static const char *default_ref_cache(mlc_str *buf) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (xdg && xdg[0] == '/') mlc_str_printf(buf, "%s/mlc-tune/refs", xdg);
  else if (home && home[0] == '/') mlc_str_printf(buf, "%s/.cache/mlc-tune/refs", home);
  else return NULL;
  return mlc_str_cstr(buf);
}

int main(int argc, char **argv) {
  static mlc_str ref_dir;
  cli c = {.trials = 64, .seed = 1, .remeasure = 3, .ref_cache = default_ref_cache(&ref_dir)};
  int rc = parse_args(argc, argv, &c);
  if (rc) return rc;
  g_ref_cache = c.ref_cache;
  if ((rc = start_mpi(&c, &argc, &argv)) >= 0) return rc;
  if (c.model) {
    rc = tune_model(&c);
  } else {
    /* A kernel of size vars is tuned at each of the sizes --size lists. */
    rc = 0;
    for (int r = 0, n_runs = 1; r < n_runs && rc == 0; r++) {
      workload w = {.arena = mlc_arena_new()};
      rc = c.task ? load_task(&c, &w) : load_file(&c, &w, r, &n_runs);
      if (rc == 0) rc = run(&c, &w);
      mlc_arena_free(w.arena);
    }
  }
  mlc_measure_mpi_end(g_mpi, rc);
  return rc;
}
