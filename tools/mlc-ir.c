/* mlc-ir: look at, check, schedule, compile and run tensor programs.
 *
 *   mlc-ir print --task matmul [--shape 128,128,128]   unscheduled TensorIR
 *   mlc-ir check FILE.py                               parse, verify, reprint
 *   mlc-ir eval  FILE.py | --task NAME                 interpret on seeded inputs
 *   mlc-ir run   FILE.py | --task NAME [--trace T]     compile (LLVM), check, time
 *   mlc-ir build FILE.py | --task NAME -o out.o        object file (+ C header)
 *   mlc-ir build FILE.py --target cuda -o out.ptx      PTX for a GPU-scheduled function
 *   mlc-ir apply FILE.py | --task NAME --trace T       replay a trace, print the IR
 *
 * A thin main: the work is done by ir/ (parse, verify, interpreter),
 * schedule/ (trace replay) and targets/ (lowering, LLVM, JIT).
 */
#include "ir/ir.h"
#include "measure/measure.h"
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "tasks/tasks.h"

#include <ctype.h>
#include <dlfcn.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- commands and options ------------------------------------------------ */

enum {
  OPT_SEED = 256,
  OPT_LIST_TASKS,
  OPT_TARGET,
  OPT_TRACE,
  OPT_HEADER,
  OPT_NAME,
  OPT_PRINT_TRACE,
  OPT_RUN,
  OPT_REPEAT,
  OPT_MIN_MS,
  OPT_INTRIN,
  OPT_EXTERN,
  OPT_SIZE,
};

typedef struct options {
  const char *command;
  const char *file;
  const char *task;
  const char *shape;
  const char *target;
  const char *trace;
  const char *output;
  const char *header;
  const char *name;
  bool print_trace;
  bool run;
  int repeat;     /* timing repeats (median reported) */
  double min_ms;  /* each repeat runs the kernel at least this long */
  uint64_t seed;
  const char *intrins[8]; /* --intrin files, registered before the trace replays */
  int n_intrins;
  const char *externs[8]; /* --extern shared objects for T.call_extern (run) */
  int n_externs;
  const char *sizes[MLC_MAX_SIZES]; /* --size NAME=V[,V...] */
  int n_sizes;
  const char *given[32]; /* options seen, by long name, to refuse misplaced ones */
  int n_given;
} options;

typedef struct command {
  const char *name;
  const char *allowed; /* long option names the command takes, space separated */
  const char *help;
} command;

static const command commands[] = {
    {"print", "task shape",
     "usage: mlc-ir print --task NAME [--shape S]\n"
     "       mlc-ir print FILE.py\n"
     "\n"
     "Print a built-in task's unscheduled TensorIR (or a file's functions) as\n"
     "canonical TVMScript on stdout.\n"},
    {"check", "",
     "usage: mlc-ir check FILE.py\n"
     "\n"
     "Parse and verify a TVMScript file and print it canonically on stdout.\n"},
    {"eval", "task shape seed size",
     "usage: mlc-ir eval FILE.py | --task NAME [--shape S] [--seed N] [--size N=V[,V...]]\n"
     "\n"
     "Run every function in the reference interpreter on seeded random inputs\n"
     "and print a checksum of each output.\n"
     "\n"
     "  --size N=V,...  values of the function's size var N (a function of\n"
     "                  `N = T.int64(max=...)`): it runs once per value, inputs\n"
     "                  shaped accordingly; several vars' lists go in step. A\n"
     "                  size not given runs at its declared max\n"},
    {"run", "task shape seed target trace repeat min-ms intrin extern size",
     "usage: mlc-ir run FILE.py | --task NAME [--shape S] [--target T] [--trace TRACE.json]\n"
     "                  [--repeat N] [--min-ms MS] [--seed N] [--size N=V[,V...]]\n"
     "\n"
     "Compile every function with the LLVM backend (after replaying TRACE.json\n"
     "when given), run it on seeded random inputs and compare every buffer with\n"
     "the reference: the interpreter running the unscheduled function when the\n"
     "work is small, else the unscheduled function compiled with every loop\n"
     "serial. Prints per function the max error, the time per call (median of\n"
     "the repeats) and GFLOP/s:\n"
     "  main: max error 1.9e-06 vs interpreter, 0.412 ms, 5.09 GFLOP/s\n"
     "Exits 1 when a result does not match (|out - ref| > 1e-3 + 1e-3 * |ref|\n"
     "scaled by max |ref|; integers exactly).\n"
     "\n"
     "  --target T      target string (default \"llvm\": the host CPU); \"cuda\"\n"
     "                  runs the PTX on CUDA device 0 (timed with CUDA events; the\n"
     "                  reference then runs on the host CPU)\n"
     "  --trace FILE    a schedule trace (JSON) to apply first\n"
     "  --intrin FILE   tensor intrinsics (NAME_desc/NAME_impl pairs) the trace's\n"
     "                  Tensorize may name, besides the built-in ones\n"
     "  --extern LIB.so a shared object defining the functions the kernels call\n"
     "                  with T.call_extern (may be repeated)\n"
     "  --repeat N      timing repeats (default 5)\n"
     "  --min-ms MS     minimum duration of one repeat (default 50)\n"
     "  --seed N        input seed (default 1)\n"
     "  --size N=V,...  values of size var N: the function is compiled once and\n"
     "                  run and checked at each (as eval takes them)\n"},
    {"build", "task shape target trace output header name intrin",
     "usage: mlc-ir build FILE.py | --task NAME -o OUT.o [--header OUT.h] [--target T]\n"
     "                    [--name SYM] [--trace TRACE.json]\n"
     "\n"
     "Compile every function into one object file, each under its own symbol:\n"
     "a file's functions keep their names (a function named main takes the\n"
     "file's name), a task's is named after the task. --name renames a single\n"
     "function. --header writes a C header with `int32_t SYM(void **args)` and\n"
     "a typed wrapper `SYM_call(float *A, ...)`. Link with build/libmlcrt.a\n"
     "and -lpthread. With --target \"cuda -arch=sm_80\" the output is PTX text\n"
     "(one .entry per function; no --header), for functions whose loops are\n"
     "bound to blockIdx/threadIdx. --intrin FILE.py registers tensor intrinsics\n"
     "(NAME_desc/NAME_impl pairs) for the trace's Tensorize; functions they call\n"
     "with T.call_extern are left for the final link.\n"},
    {"apply", "task shape trace print-trace run target repeat min-ms seed intrin extern size",
     "usage: mlc-ir apply FILE.py | --task NAME --trace TRACE.json [--print-trace] [--run]\n"
     "\n"
     "Replay a schedule trace (JSON, as stored in the database) on the function\n"
     "and print the scheduled TensorIR on stdout. The trace is replayed on the\n"
     "function its GetBlock instructions name (the only one of a task).\n"
     "\n"
     "  --print-trace   print the replayed trace in Python-like form on stderr\n"
     "  --intrin FILE   register the tensor intrinsics of FILE.py (pairs\n"
     "                  NAME_desc / NAME_impl) for Tensorize; may be repeated\n"
     "  --run           also compile the result and check it against the\n"
     "                  unscheduled function, as `run` does (takes --target,\n"
     "                  --repeat, --min-ms, --extern, --size)\n"
     "  --seed N        seed for decisions that no longer fit and are drawn\n"
     "                  again, and for --run's inputs (default 1)\n"},
};

static const char *usage_text =
    "usage: mlc-ir COMMAND [options]\n"
    "\n"
    "Commands:\n"
    "  print --task NAME [--shape S]     print a built-in task's unscheduled TensorIR\n"
    "  check FILE.py                     parse and verify a TVMScript file, print it canonically\n"
    "  eval  FILE.py | --task NAME       run every function in the reference interpreter on\n"
    "                                    seeded random inputs; print a checksum of each output\n"
    "  run   FILE.py | --task NAME       compile with LLVM, check against the reference, time\n"
    "  build FILE.py | --task NAME -o F  write an object file (and a C header with --header)\n"
    "  apply FILE.py | --task NAME --trace TRACE.json\n"
    "                                    replay a schedule trace, print the scheduled TensorIR\n"
    "\n"
    "Options (see `mlc-ir COMMAND --help` for what each command takes):\n"
    "  -t, --task NAME      built-in workload (see --list-tasks)\n"
    "  -s, --shape S        comma-separated shape for --task, e.g. 128,128,128\n"
    "      --target T       target string, e.g. \"llvm -num-cores=2\" (default llvm)\n"
    "      --trace FILE     schedule trace JSON (run, build, apply)\n"
    "      --intrin FILE    tensor intrinsics (NAME_desc/NAME_impl) for Tensorize (run, build, apply)\n"
    "      --extern LIB.so  shared object with the functions T.call_extern calls (run, apply --run)\n"
    "  -o, --output FILE    object file to write (build)\n"
    "      --header FILE    C header to write (build)\n"
    "      --name SYM       symbol of the single function (build)\n"
    "      --print-trace    print the replayed trace on stderr (apply)\n"
    "      --run            compile and check the scheduled function (apply)\n"
    "      --repeat N       timing repeats (run; default 5)\n"
    "      --min-ms MS      minimum time of one timing repeat (run; default 50)\n"
    "      --seed N         random seed for inputs (default 1)\n"
    "      --list-tasks     list built-in tasks with their shapes\n"
    "  -h, --help           show this help\n"
    "\n"
    "Exit status: 0 success, 1 failure (bad program, failed check), 2 bad usage.\n";

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "mlc-ir: error: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\nTry 'mlc-ir --help'.\n");
  return 2;
}

static int fail(const char *msg) {
  fprintf(stderr, "mlc-ir: error: %s\n", msg);
  return 1;
}

static const command *find_command(const char *name) {
  for (int i = 0; i < MLC_COUNTOF(commands); i++)
    if (strcmp(commands[i].name, name) == 0) return &commands[i];
  return NULL;
}

/* Whether the space-separated list holds word. */
static bool list_has(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; (p = strstr(p, word)); p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return true;
  return false;
}

static void list_tasks(void) {
  for (int i = 0; i < mlc_task_count(); i++) {
    const mlc_task_def *d = mlc_task_at(i);
    char shape[128];
    mlc_task_shape_str(d, d->defaults, shape, sizeof shape);
    printf("%-18s %-22s default %-22s %s\n", d->name, d->shape_doc, shape, d->description);
  }
}

/* ---- loading --------------------------------------------------------------- */

/* The program to work on: a file's module, or a built-in task wrapped in a
 * module. Returns NULL after printing the error; *task is the task's
 * definition (NULL for a file) and shape its dimensions. */
static mlc_module *load_program(mlc_arena *a, const options *o, const mlc_task_def **task,
                                int64_t *shape) {
  mlc_error err;
  *task = NULL;
  if (o->task) {
    const mlc_task_def *d = mlc_task_find(o->task);
    if (!d) {
      fprintf(stderr, "mlc-ir: error: unknown task '%s' (tasks: %s)\n", o->task, mlc_task_names());
      return NULL;
    }
    if (!mlc_task_parse_shape(d, o->shape, shape, &err)) {
      fail(err.msg);
      return NULL;
    }
    mlc_module *m = mlc_module_new(a, NULL);
    mlc_module_add(a, m, mlc_task_build(a, d, shape));
    *task = d;
    return m;
  }
  char *text = mlc_read_file(o->file, NULL, &err);
  if (!text) {
    fail(err.msg);
    return NULL;
  }
  mlc_module *m = mlc_parse_module(a, o->file, text, &err);
  mlc_free(text);
  if (!m) fail(err.msg);
  return m;
}

/* Each --size names a size var of some function (a misspelt one would
 * silently leave the size at its max). */
static bool sizes_named(const options *o, const mlc_module *m) {
  for (int i = 0; i < o->n_sizes; i++) {
    size_t len = strcspn(o->sizes[i], "=");
    bool found = false;
    for (int f = 0; f < m->n_funcs && !found; f++)
      for (int k = 0; k < m->funcs[f]->n_sizes && !found; k++) {
        const char *name = m->funcs[f]->sizes[k].var->name;
        found = strlen(name) == len && strncmp(name, o->sizes[i], len) == 0;
      }
    if (!found) {
      fprintf(stderr, "mlc-ir: error: --size %s: no function has a size var named %.*s\n",
              o->sizes[i], (int)len, o->sizes[i]);
      return false;
    }
  }
  return true;
}

static mlc_module *load_verified(mlc_arena *a, const options *o, const mlc_task_def **task,
                                 int64_t *shape) {
  mlc_module *m = load_program(a, o, task, shape);
  mlc_error err;
  if (m && !mlc_verify_module(m, &err)) {
    fail(err.msg);
    return NULL;
  }
  return m && sizes_named(o, m) ? m : NULL;
}

static void print_funcs(int n, mlc_prim_func *const *funcs, const char *module_name) {
  mlc_str out = {0};
  if (module_name) {
    mlc_module m = {module_name, n, (mlc_prim_func **)funcs};
    mlc_print_module(&out, &m);
  } else {
    for (int i = 0; i < n; i++) {
      if (i) mlc_str_putc(&out, '\n');
      mlc_print_func(&out, funcs[i]);
    }
  }
  fputs(mlc_str_cstr(&out), stdout);
  mlc_str_free(&out);
}

static int cmd_print_or_check(mlc_arena *a, const options *o) {
  const mlc_task_def *task;
  int64_t shape[MLC_TASK_MAX_DIMS];
  mlc_module *m = load_verified(a, o, &task, shape);
  if (!m) return 1;
  print_funcs(m->n_funcs, m->funcs, m->name);
  return 0;
}

/* ---- eval -------------------------------------------------------------------- */

static bool writes_buffer(const mlc_stmt *s, void *b) {
  if (s->kind == MLC_STMT_STORE) return s->store.buf == b;
  if (s->kind != MLC_STMT_BLOCK_REALIZE) return false;
  const mlc_block *blk = s->realize.block;
  for (int i = 0; i < blk->n_writes; i++)
    if (blk->writes[i].buf == b) return true;
  return false;
}

/* A parameter is an output when some block writes it. */
static bool block_writes(const mlc_stmt *s, const mlc_buffer *b) {
  return mlc_stmt_any(s, writes_buffer, (void *)b);
}

static void print_checksum(const mlc_buffer *b, const mlc_array *x) {
  double sum = 0, abs_sum = 0;
  int64_t n = mlc_array_numel(x);
  for (int64_t i = 0; i < n; i++) {
    double v = mlc_array_get(x, i);
    sum += v;
    abs_sum += v < 0 ? -v : v;
  }
  uint64_t h = mlc_hash_bytes(x->data, (size_t)n * (size_t)mlc_dtype_bytes(x->dtype), 0);
  printf("  %s: %s[", b->name, mlc_dtype_name(b->dtype));
  for (int d = 0; d < x->ndim; d++) printf(d ? ", %lld" : "%lld", (long long)x->shape[d]);
  printf("] sum=%.9g abs_sum=%.9g hash=%016llx\n", sum, abs_sum, (unsigned long long)h);
}

/* ---- sizes ---------------------------------------------------------------------- */

enum { MAX_SIZE_SETS = 64 };

/* One run's values of f's size vars (none for a static function). */
typedef struct size_set {
  int64_t v[MLC_MAX_SIZES];
} size_set;

/* The runs of f: the --size lists in step, a size not listed at its max. */
static int size_sets(const options *o, const mlc_prim_func *f, size_set *sets, mlc_error *err) {
  int n = 1;
  int64_t vals[MLC_MAX_SIZES][MAX_SIZE_SETS];
  int counts[MLC_MAX_SIZES];
  for (int k = 0; k < f->n_sizes; k++) {
    const mlc_size_var *sv = &f->sizes[k];
    counts[k] = mlc_size_values(o->n_sizes, o->sizes, sv->var->name, vals[k], MAX_SIZE_SETS, err);
    if (counts[k] < 0) return -1;
    if (counts[k] == 0) {
      int64_t lo, hi;
      mlc_size_default_bounds(sv->var->dtype, &lo, &hi);
      if (sv->hi == hi)
        return mlc_error_set(err, "%s: size %s has no declared max: give its values with --size %s=V",
                             f->name, sv->var->name, sv->var->name), -1;
      vals[k][0] = sv->hi;
      counts[k] = 1;
    }
    if (counts[k] > 1 && n > 1 && counts[k] != n)
      return mlc_error_set(err, "%s: --size lists of different lengths (%d and %d)", f->name, n,
                           counts[k]), -1;
    if (counts[k] > n) n = counts[k];
  }
  for (int r = 0; r < n; r++)
    for (int k = 0; k < f->n_sizes; k++) sets[r].v[k] = vals[k][counts[k] > 1 ? r : 0];
  return n;
}

/* "main" or "main [n=7, m=3]". */
static const char *run_label(mlc_arena *a, const mlc_prim_func *f, const size_set *s) {
  if (f->n_sizes == 0) return f->name;
  mlc_str out = {.arena = a};
  mlc_str_printf(&out, "%s [", f->name);
  for (int k = 0; k < f->n_sizes; k++)
    mlc_str_printf(&out, "%s%s=%lld", k ? ", " : "", f->sizes[k].var->name, (long long)s->v[k]);
  mlc_str_puts(&out, "]");
  return out.data;
}

static void free_args(mlc_array *args, int n) {
  if (!args) return;
  for (int i = 0; i < n; i++) mlc_free(args[i].data);
  mlc_free(args);
}

/* Arrays for f's parameters at the sizes (heap; NULL with err when a size
 * gives a negative extent), filled from a PCG32 seeded with seed. */
static mlc_array *new_args(const mlc_prim_func *f, const size_set *sizes, uint64_t seed,
                           mlc_error *err) {
  mlc_array *args = mlc_xmalloc(sizeof(mlc_array) * (size_t)(f->n_params + 1));
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, seed, 0);
  for (int i = 0; i < f->n_params; i++) {
    const mlc_buffer *b = f->params[i];
    int64_t shape[8];
    if (!mlc_buffer_extents(f, b, sizes->v, shape)) {
      mlc_error_set(err, "%s: the extents of %s are not valid at these sizes", f->name, b->name);
      free_args(args, i);
      return NULL;
    }
    mlc_array *x = mlc_array_new(b->dtype, b->ndim, shape);
    mlc_array_fill_random(x, &rng);
    args[i] = *x;
    mlc_free(x);
  }
  return args;
}

static mlc_array *copy_args(const mlc_array *src, int n) {
  mlc_array *out = mlc_xmalloc(sizeof(mlc_array) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) {
    size_t bytes = (size_t)mlc_array_numel(&src[i]) * (size_t)mlc_dtype_bytes(src[i].dtype);
    out[i] = src[i];
    out[i].data = mlc_xmalloc(bytes ? bytes : 1);
    memcpy(out[i].data, src[i].data, bytes);
  }
  return out;
}

static bool eval_sized(mlc_arena *a, const mlc_prim_func *f, const size_set *sizes,
                       uint64_t seed) {
  mlc_error err;
  const char *label = run_label(a, f, sizes);
  mlc_array *args = new_args(f, sizes, seed, &err);
  if (!args) return fprintf(stderr, "mlc-ir: error: %s\n", err.msg), false;
  bool ok = mlc_interp_run(f, args, &err);
  printf("%s:\n", label);
  if (!ok) fprintf(stderr, "mlc-ir: error: %s: %s\n", label, err.msg);
  for (int i = 0; ok && i < f->n_params; i++)
    if (block_writes(f->body, f->params[i])) print_checksum(f->params[i], &args[i]);
  free_args(args, f->n_params);
  return ok;
}

static bool eval_func(mlc_arena *a, const mlc_prim_func *f, const options *o) {
  mlc_error err;
  size_set sets[MAX_SIZE_SETS];
  int n = size_sets(o, f, sets, &err);
  if (n < 0 || !mlc_func_check_sizes(f, &err))
    return fprintf(stderr, "mlc-ir: error: %s\n", err.msg), false;
  bool ok = true;
  for (int r = 0; r < n; r++) ok = eval_sized(a, f, &sets[r], o->seed) && ok;
  return ok;
}

static int cmd_eval(mlc_arena *a, const options *o) {
  const mlc_task_def *task;
  int64_t shape[MLC_TASK_MAX_DIMS];
  mlc_module *m = load_verified(a, o, &task, shape);
  if (!m) return 1;
  bool ok = true;
  for (int i = 0; i < m->n_funcs; i++) ok = eval_func(a, m->funcs[i], o) && ok;
  return ok ? 0 : 1;
}

/* ---- traces -------------------------------------------------------------------- */

/* The function name the trace's first GetBlock names; NULL if none. */
static const char *trace_func_name(const mlc_trace *t) {
  for (int i = 0; i < t->insts.len; i++) {
    const mlc_inst *in = &t->insts.data[i];
    if (in->kind != MLC_INST_GET_BLOCK) continue;
    for (int k = 0; k < in->n_attrs; k++)
      if (strcmp(in->attrs[k].key, "func_name") == 0 && in->attrs[k].kind == MLC_ATTR_STR)
        return in->attrs[k].s;
  }
  return NULL;
}

static mlc_trace *read_trace(mlc_arena *a, const char *path, mlc_error *err) {
  size_t len;
  char *text = mlc_read_file(path, &len, err);
  if (!text) return NULL;
  mlc_trace *t = mlc_trace_from_json(a, text, len, err);
  mlc_free(text);
  if (!t) mlc_error_prefix(err, "%s", path);
  return t;
}

/* Which function of m the trace schedules: the only one, or the one its
 * GetBlock instructions name. -1 with err set. */
static int trace_target_func(const mlc_module *m, const mlc_trace *t, mlc_error *err) {
  const char *fn = trace_func_name(t);
  for (int i = 0; fn && i < m->n_funcs; i++)
    if (strcmp(m->funcs[i]->name, fn) == 0) return i;
  if (m->n_funcs == 1) return 0;
  mlc_error_set(err, "the trace names function '%s', which the module does not define",
                fn ? fn : "(none)");
  return -1;
}

/* Replay t on f; the scheduled function (named as f) in arena a, or NULL
 * with err set. The trace's GetBlock names the workload's function ("main"
 * for a task), so the replay runs on a copy renamed to that name. */
static mlc_prim_func *apply_trace(mlc_arena *a, const mlc_prim_func *f, const mlc_trace *t,
                                  uint64_t seed, mlc_str *printed, mlc_error *err) {
  mlc_prim_func named = *f;
  const char *fn = trace_func_name(t);
  if (fn) named.name = fn;
  mlc_sched *s = mlc_sched_new(&named, seed);
  mlc_replay_report rep;
  mlc_prim_func *out = NULL;
  if (mlc_sched_replay(s, t, NULL, &rep, err)) {
    out = mlc_func_copy(a, mlc_sched_func(s));
    out->name = f->name;
    for (int i = 0; i < rep.n_resampled; i++)
      fprintf(stderr, "mlc-ir: note: instruction %d: the stored decision no longer fits; resampled\n",
              rep.resampled[i]);
    if (printed) mlc_trace_print(printed, mlc_sched_trace(s));
  }
  mlc_sched_free(s);
  return out;
}

/* ---- run ------------------------------------------------------------------------ */

/* Above this many statement executions the reference is the compiled
 * unscheduled function instead of the interpreter (which runs a few tens
 * of millions of statements per second). */
#define INTERP_MAX_WORK 4e7


/* Work estimate of a statement: executions of each store (work) and the
 * arithmetic in stored values (flops), loop extents multiplied in. */
typedef struct work_count {
  double work, flops;
} work_count;

static double value_ops(const mlc_expr *e) {
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
  case MLC_EXPR_VAR:
  case MLC_EXPR_LOAD: return 0; /* index arithmetic is not counted */
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
  case MLC_EXPR_MUL:
  case MLC_EXPR_DIV:
  case MLC_EXPR_FLOORDIV:
  case MLC_EXPR_FLOORMOD:
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX: return 1 + value_ops(e->bin.a) + value_ops(e->bin.b);
  case MLC_EXPR_EQ:
  case MLC_EXPR_NE:
  case MLC_EXPR_LT:
  case MLC_EXPR_LE:
  case MLC_EXPR_GT:
  case MLC_EXPR_GE:
  case MLC_EXPR_AND:
  case MLC_EXPR_OR: return value_ops(e->bin.a) + value_ops(e->bin.b);
  case MLC_EXPR_NOT: return value_ops(e->bin.a);
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE: return value_ops(e->sel.t) + value_ops(e->sel.f);
  case MLC_EXPR_CAST: return value_ops(e->cast.value);
  case MLC_EXPR_CALL: {
    double n = 1;
    for (int i = 0; i < mlc_intrin_nargs(e->call.op); i++) n += value_ops(e->call.args[i]);
    return n;
  }
  case MLC_EXPR_CALL_EXTERN: {
    double n = 1;
    for (int i = 0; i < e->ext.n_kids; i++) n += value_ops(e->ext.kids[i]);
    return n;
  }
  }
  mlc_unreachable();
}

static void count_work(const mlc_stmt *s, double times, work_count *wc) {
  if (!s) return;
  switch (s->kind) {
  case MLC_STMT_FOR: {
    int64_t ext = 1;
    mlc_expr_is_const_int(s->loop.extent, &ext);
    count_work(s->loop.body, times * (double)(ext > 0 ? ext : 0), wc);
    return;
  }
  case MLC_STMT_BLOCK_REALIZE:
    count_work(s->realize.block->body, times, wc);
    /* An init runs once per output element, far fewer times than the
     * body: its work is small next to the body's and is left out. */
    return;
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) count_work(s->seq.stmts[i], times, wc);
    return;
  case MLC_STMT_STORE:
    wc->work += times;
    wc->flops += times * value_ops(s->store.value);
    return;
  case MLC_STMT_IF:
    count_work(s->if_.then_s, times, wc);
    count_work(s->if_.else_s, times, wc);
    return;
  case MLC_STMT_ALLOCATE: count_work(s->alloc.body, times, wc); return;
  case MLC_STMT_EVALUATE: wc->work += times; return;
  }
  mlc_unreachable();
}

/* Every loop made serial: the reference build for large workloads (it
 * shares lowering with the kernel under test but none of the vector,
 * parallel or unroll code generation). Loops bound to GPU threads become
 * serial too (the sequential meaning the interpreter gives them), so a
 * GPU-scheduled function has a CPU reference. */
static void serialize_loops(mlc_stmt *s) {
  if (!s) return;
  switch (s->kind) {
  case MLC_STMT_FOR:
    s->loop.kind = MLC_FOR_SERIAL;
    s->loop.thread = NULL;
    serialize_loops(s->loop.body);
    return;
  case MLC_STMT_BLOCK_REALIZE:
    serialize_loops(s->realize.block->init);
    serialize_loops(s->realize.block->body);
    return;
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) serialize_loops(s->seq.stmts[i]);
    return;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return;
  case MLC_STMT_IF:
    serialize_loops(s->if_.then_s);
    serialize_loops(s->if_.else_s);
    return;
  case MLC_STMT_ALLOCATE: serialize_loops(s->alloc.body); return;
  }
  mlc_unreachable();
}

/* A compiled, loaded kernel. */
typedef struct kernel {
  mlc_object obj;
  mlc_jit_lib *lib;
  mlc_kernel_fn fn;
} kernel;

static bool kernel_build(kernel *k, const mlc_target *t, const mlc_prim_func *f, const char *sym,
                         mlc_error *err) {
  *k = (kernel){0};
  const char *syms[1] = {sym};
  if (!mlc_target_build(t, 1, &f, syms, NULL, &k->obj, err)) return false;
  k->lib = mlc_jit_load(&k->obj, err);
  k->fn = k->lib ? mlc_jit_lookup(k->lib, sym, err) : NULL;
  return k->fn != NULL;
}

static void kernel_free(kernel *k) {
  mlc_jit_unload(k->lib);
  mlc_object_free(&k->obj);
  *k = (kernel){0};
}

/* The reference result of f0 (the unscheduled function) on args, in place:
 * the interpreter, or f0 with serial loops compiled. *how names it. */
static bool run_reference(mlc_arena *a, const mlc_target *t, const mlc_prim_func *f0,
                          mlc_array *args, const size_set *sizes, const char **how, mlc_error *err) {
  work_count wc = {0, 0};
  count_work(f0->body, 1, &wc);
  if (wc.work <= INTERP_MAX_WORK) {
    *how = "interpreter";
    return mlc_interp_run(f0, args, err);
  }
  *how = "serial build";
  mlc_prim_func *ser = mlc_func_copy(a, f0);
  serialize_loops(ser->body);
  kernel k;
  bool ok = kernel_build(&k, t, ser, "mlc_reference", err);
  if (ok) {
    int32_t rc = mlc_kernel_call_sized(k.fn, f0->n_params, args, f0->n_sizes, sizes->v);
    if (rc != 0) ok = mlc_error_set(err, "reference kernel returned %d", rc);
  } else {
    mlc_error_prefix(err, "reference build");
  }
  kernel_free(&k);
  return ok;
}

/* Compare every parameter (measure's rule, MLC_CHECK_RTOL/ATOL): outputs
 * must match, inputs come back as they were. */
static bool compare_args(const mlc_prim_func *f, const mlc_array *got, const mlc_array *want,
                         double *max_err, const char **bad) {
  bool ok = true;
  *max_err = 0;
  *bad = NULL;
  for (int i = 0; i < f->n_params; i++) {
    double me = 0;
    bool close = mlc_check_close(&got[i], &want[i], MLC_CHECK_RTOL, MLC_CHECK_ATOL, &me);
    if (me > *max_err || isnan(me)) *max_err = me;
    if (!close && ok) *bad = f->params[i]->name;
    ok = ok && close;
  }
  return ok;
}

typedef struct timed_kernel {
  const kernel *k;
  int n;
  const mlc_array *args;
  int n_sizes;
  const int64_t *sizes;
} timed_kernel;

static bool call_timed(void *ctx) {
  timed_kernel *t = ctx;
  return mlc_kernel_call_sized(t->k->fn, t->n, t->args, t->n_sizes, t->sizes) == 0;
}

/* Median milliseconds per call over `repeat` repeats of at least min_ms;
 * slow kernels (an unscheduled 1024^3 matmul takes seconds) get fewer
 * repeats, keeping the whole measurement near 10 s. -1 if a call failed. */
static double time_kernel(const kernel *k, int n, const mlc_array *args, int n_sizes,
                          const int64_t *sizes, int repeat, double min_ms) {
  timed_kernel t = {k, n, args, n_sizes, sizes};
  mlc_timing_opts o = {.repeat = repeat, .number = 1, .min_repeat_sec = min_ms * 1e-3,
                       .max_total_sec = 10};
  double *secs = mlc_xmalloc(sizeof(double) * (size_t)(repeat > 0 ? repeat : 1));
  mlc_error err;
  int got = mlc_time_calls(call_timed, &t, &o, secs, NULL, NULL, &err);
  double ms = got > 0 ? mlc_median(secs, got) * 1e3 : -1;
  mlc_free(secs);
  return ms;
}

static void print_rate(double flops, double ms) {
  if (flops > 0 && ms > 0) printf(", %.2f GFLOP/s", flops / (ms * 1e6));
  printf("\n");
}

/* Check the compiled f at one set of sizes against the reference of f0
 * (its unscheduled form), time it and print one line. */
static bool run_sized(mlc_arena *a, const mlc_target *t, const options *o, const kernel *k,
                      const mlc_prim_func *f, const mlc_prim_func *f0, const size_set *sizes,
                      double flops) {
  mlc_error err;
  const char *label = run_label(a, f, sizes);
  int n = f->n_params;
  mlc_array *got = new_args(f, sizes, o->seed, &err);
  if (!got) return fprintf(stderr, "mlc-ir: error: %s\n", err.msg), false;
  mlc_array *want = copy_args(got, n);
  const char *how = "";
  bool ok = run_reference(a, t, f0, want, sizes, &how, &err);
  if (!ok) fprintf(stderr, "mlc-ir: error: %s: reference (%s): %s\n", label, how, err.msg);
  int32_t rc = ok ? mlc_kernel_call_sized(k->fn, n, got, f->n_sizes, sizes->v) : 0;
  if (ok && rc != 0) {
    fprintf(stderr, "mlc-ir: error: %s: kernel returned %d (%s)\n", label, rc,
            rc == MLC_KERNEL_BAD_SIZE ? "a size outside its bounds" : "out of memory");
    ok = false;
  }
  double max_err = 0;
  const char *bad = NULL;
  if (ok && !compare_args(f, got, want, &max_err, &bad)) {
    printf("%s: max error %.3g vs %s: MISMATCH in %s\n", label, max_err, how, bad);
    fprintf(stderr, "mlc-ir: error: %s: result differs from the reference (%s) in buffer %s\n",
            label, how, bad);
    ok = false;
  } else if (ok) {
    if (flops < 0 || f->n_sizes > 0) {
      mlc_prim_func *g = f->n_sizes ? mlc_func_specialize(a, f0, sizes->v, &err) : NULL;
      work_count wc = {0, 0};
      count_work((g ? g : f0)->body, 1, &wc);
      flops = wc.flops;
    }
    double ms = time_kernel(k, n, got, f->n_sizes, sizes->v, o->repeat, o->min_ms);
    if (ms < 0) {
      fprintf(stderr, "mlc-ir: error: %s: a timed call failed (out of memory)\n", label);
      ok = false;
    } else {
      printf("%s: max error %.3g vs %s, %.4g ms", label, max_err, how, ms);
      print_rate(flops, ms);
    }
  }
  fflush(stdout);
  free_args(got, n);
  free_args(want, n);
  return ok;
}

/* Compile f once and check it at each run of sizes (one for a static
 * function). flops < 0: estimate from f0. */
static bool run_func(mlc_arena *a, const mlc_target *t, const options *o, const mlc_prim_func *f,
                     const mlc_prim_func *f0, double flops) {
  mlc_error err;
  kernel k;
  size_set sets[MAX_SIZE_SETS];
  int n = size_sets(o, f, sets, &err);
  if (n < 0 || !mlc_func_check_sizes(f, &err))
    return fprintf(stderr, "mlc-ir: error: %s\n", err.msg), false;
  if (!kernel_build(&k, t, f, f->name, &err)) {
    fprintf(stderr, "mlc-ir: error: %s: %s\n", f->name, err.msg);
    kernel_free(&k);
    return false;
  }
  bool ok = true;
  for (int r = 0; r < n; r++) ok = run_sized(a, t, o, &k, f, f0, &sets[r], flops) && ok;
  kernel_free(&k);
  return ok;
}

/* run_func for cuda: the PTX on device 0, timed with CUDA events (the
 * median of o->repeat launches after 3 warm-up ones), the reference on
 * the host CPU. run_all checked the device with measure's runner check. */
static bool run_func_cuda(mlc_arena *a, const mlc_target *t, const options *o,
                          const mlc_prim_func *f, const mlc_prim_func *f0, double flops) {
  mlc_error err;
  mlc_object obj = {0};
  mlc_gpu_launch l;
  if (!mlc_target_build(t, 1, &f, NULL, NULL, &obj, &err) ||
      !mlc_cuda_launch_info(t, f, &l, &err)) {
    fprintf(stderr, "mlc-ir: error: %s: %s\n", f->name, err.msg);
    mlc_object_free(&obj);
    return false;
  }
  mlc_target host;
  mlc_target_host(&host);
  int n = f->n_params;
  size_set none = {{0}}; /* the cuda backend takes no size vars */
  mlc_array *got = new_args(f, &none, o->seed, &err), *want = copy_args(got, n);
  const char *how = "";
  double ms = 0, max_err = 0;
  const char *bad = NULL;
  bool ok = run_reference(a, &host, f0, want, &none, &how, &err);
  if (!ok) fprintf(stderr, "mlc-ir: error: %s: reference (%s): %s\n", f->name, how, err.msg);
  if (ok && !(ok = mlc_cuda_run(&obj, f->name, &l, n, got, 3, o->repeat, &ms, &err)))
    fprintf(stderr, "mlc-ir: error: %s: %s\n", f->name, err.msg);
  if (ok && !compare_args(f, got, want, &max_err, &bad)) {
    printf("%s: max error %.3g vs %s: MISMATCH in %s\n", f->name, max_err, how, bad);
    fprintf(stderr, "mlc-ir: error: %s: result differs from the reference (%s) in buffer %s\n",
            f->name, how, bad);
    ok = false;
  } else if (ok) {
    if (flops < 0) {
      work_count wc = {0, 0};
      count_work(f0->body, 1, &wc);
      flops = wc.flops;
    }
    printf("%s: max error %.3g vs %s, %.4g ms on the GPU", f->name, max_err, how, ms);
    print_rate(flops, ms);
  }
  fflush(stdout);
  free_args(got, n);
  free_args(want, n);
  mlc_object_free(&obj);
  return ok;
}

static bool parse_target(const options *o, mlc_target *t) {
  mlc_error err;
  if (mlc_target_parse(o->target ? o->target : "llvm", t, &err)) return true;
  fail(err.msg);
  return false;
}

/* Functions after the trace (if any) replaced the one it schedules:
 * sched[i] for funcs[i]. */
static mlc_prim_func **scheduled_funcs(mlc_arena *a, const options *o, const mlc_module *m,
                                       mlc_str *printed) {
  mlc_prim_func **out = MLC_NEW_ARRAY(a, mlc_prim_func *, m->n_funcs + 1);
  for (int i = 0; i < m->n_funcs; i++) out[i] = m->funcs[i];
  if (!o->trace) return out;
  mlc_error err;
  mlc_trace *t = read_trace(a, o->trace, &err);
  int which = t ? trace_target_func(m, t, &err) : -1;
  mlc_prim_func *f = which >= 0 ? apply_trace(a, m->funcs[which], t, o->seed, printed, &err) : NULL;
  if (!f) {
    fail(err.msg);
    return NULL;
  }
  if (!mlc_verify_func(f, &err)) {
    fprintf(stderr, "mlc-ir: error: the scheduled function does not verify: %s\n", err.msg);
    return NULL;
  }
  out[which] = f;
  return out;
}

/* ---- external functions ----------------------------------------------------------- */

typedef struct extern_names {
  mlc_arena *a;
  MLC_VEC(const char *) v;
} extern_names;

static void note_extern(const mlc_expr *e, void *ud) {
  extern_names *x = ud;
  if (e->kind != MLC_EXPR_CALL_EXTERN || mlc_target_is_builtin(e->ext.name)) return;
  for (int i = 0; i < x->v.len; i++)
    if (strcmp(x->v.data[i], e->ext.name) == 0) return;
  MLC_VEC_APUSH(x->a, x->v, e->ext.name);
}

/* The T.call_extern names of a statement tree. */
static void node_externs(const mlc_stmt *s, void *x) {
  if (s->kind == MLC_STMT_STORE) mlc_expr_visit(s->store.value, note_extern, x);
  if (s->kind == MLC_STMT_EVALUATE) mlc_expr_visit(s->eval.value, note_extern, x);
}

static void stmt_externs(const mlc_stmt *s, extern_names *x) { mlc_stmt_visit(s, node_externs, x); }

/* Each function the kernels call, looked up in the --extern shared
 * objects (kept open) and defined for the JIT. */
static bool define_externs(mlc_arena *a, const options *o, int n, mlc_prim_func **funcs) {
  extern_names x = {.a = a};
  for (int i = 0; i < n; i++) stmt_externs(funcs[i]->body, &x);
  void *libs[MLC_COUNTOF(o->externs)];
  for (int i = 0; i < o->n_externs; i++) {
    libs[i] = dlopen(o->externs[i], RTLD_NOW | RTLD_LOCAL);
    if (!libs[i]) return fprintf(stderr, "mlc-ir: error: --extern %s: %s\n", o->externs[i], dlerror()), false;
  }
  for (int k = 0; k < x.v.len; k++) {
    void *p = NULL;
    for (int i = 0; i < o->n_externs && !p; i++) p = dlsym(libs[i], x.v.data[k]);
    mlc_error err;
    if (!p)
      return fprintf(stderr, "mlc-ir: error: T.call_extern \"%s\": no --extern shared object defines it\n",
                     x.v.data[k]), false;
    if (!mlc_jit_define_symbol(x.v.data[k], p, &err)) return fail(err.msg), false;
  }
  return true;
}

static bool run_all(mlc_arena *a, const options *o, const mlc_module *m, mlc_prim_func **sched,
                    const mlc_task_def *task, const int64_t *shape) {
  mlc_target t;
  mlc_error err;
  if (!parse_target(o, &t)) return false;
  bool gpu = mlc_target_device(&t) == MLC_DEVICE_CUDA;
  if (!gpu && !define_externs(a, o, m->n_funcs, sched)) return false;
  /* the tuner's check: "no CUDA device: <reason>" before any work */
  if (!mlc_measure_runner_check(t.str, &err)) return fail(err.msg), false;
  bool ok = true;
  for (int i = 0; i < m->n_funcs; i++) {
    double flops = task ? mlc_task_flops(task, shape) : -1;
    if (gpu) ok = run_func_cuda(a, &t, o, sched[i], m->funcs[i], flops) && ok;
    else ok = run_func(a, &t, o, sched[i], m->funcs[i], flops) && ok;
  }
  return ok;
}

static int cmd_run(mlc_arena *a, const options *o) {
  const mlc_task_def *task;
  int64_t shape[MLC_TASK_MAX_DIMS];
  mlc_module *m = load_verified(a, o, &task, shape);
  if (!m) return 1;
  mlc_prim_func **sched = scheduled_funcs(a, o, m, NULL);
  if (!sched) return 1;
  return run_all(a, o, m, sched, task, shape) ? 0 : 1;
}

/* ---- apply ------------------------------------------------------------------------ */

static int cmd_apply(mlc_arena *a, const options *o) {
  const mlc_task_def *task;
  int64_t shape[MLC_TASK_MAX_DIMS];
  mlc_module *m = load_verified(a, o, &task, shape);
  if (!m) return 1;
  mlc_str printed = {0};
  mlc_prim_func **sched = scheduled_funcs(a, o, m, &printed);
  if (sched) {
    print_funcs(m->n_funcs, sched, m->name);
    fflush(stdout);
    if (o->print_trace) fputs(mlc_str_cstr(&printed), stderr);
  }
  mlc_str_free(&printed);
  if (!sched) return 1;
  if (o->run && !run_all(a, o, m, sched, task, shape)) return 1;
  return 0;
}

/* ---- build ------------------------------------------------------------------------- */

/* A C identifier from a file name's stem ("mm-tiled.py" -> "mm_tiled"). */
static const char *stem_symbol(mlc_arena *a, const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strcspn(base, ".");
  char *s = mlc_arena_printf(a, "%s%.*s", isdigit((unsigned char)base[0]) ? "_" : "", (int)n, base);
  for (char *p = s; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_') *p = '_';
  return *s ? s : "kernel";
}

static int cmd_build(mlc_arena *a, const options *o) {
  const mlc_task_def *task;
  int64_t shape[MLC_TASK_MAX_DIMS];
  mlc_module *m = load_verified(a, o, &task, shape);
  if (!m) return 1;
  if (o->name && m->n_funcs != 1)
    return fail("--name renames a single function; the file defines several");
  mlc_target t;
  if (!parse_target(o, &t)) return 1;
  if (o->header && mlc_target_device(&t) == MLC_DEVICE_CUDA)
    return fail("--header declares CPU entry points; target cuda writes PTX (no header)");
  mlc_prim_func **sched = scheduled_funcs(a, o, m, NULL);
  if (!sched) return 1;
  const char **syms = MLC_NEW_ARRAY(a, const char *, m->n_funcs + 1);
  for (int i = 0; i < m->n_funcs; i++) {
    syms[i] = m->funcs[i]->name;
    if (task) syms[i] = task->name;
    else if (strcmp(syms[i], "main") == 0) syms[i] = stem_symbol(a, o->file);
  }
  if (o->name) syms[0] = o->name;
  mlc_error err;
  mlc_str header = {0};
  const mlc_prim_func *const *funcs = (const mlc_prim_func *const *)sched;
  if (o->header && !mlc_target_write_header(&header, m->n_funcs, funcs, syms, NULL, &err)) {
    mlc_str_free(&header);
    return fail(err.msg);
  }
  mlc_object obj;
  bool ok = mlc_target_build(&t, m->n_funcs, funcs, syms, NULL, &obj, &err) &&
            mlc_object_write(&obj, o->output, &err) &&
            (!o->header || mlc_write_file(o->header, header.data, header.len, &err));
  mlc_object_free(&obj);
  mlc_str_free(&header);
  if (!ok) return fail(err.msg);
  for (int i = 0; i < m->n_funcs; i++)
    fprintf(stderr, "mlc-ir: %s -> %s (%s)\n", m->funcs[i]->name, syms[i], o->output);
  return 0;
}

/* ---- arguments ---------------------------------------------------------------------- */

static int parse_number(const char *opt, const char *arg, double lo, double hi, double *out) {
  char *end;
  double v = strtod(arg, &end);
  if (!*arg || *end || !(v >= lo && v <= hi)) {
    fprintf(stderr, "mlc-ir: error: --%s expects a number from %g to %g, got '%s'\n", opt, lo, hi,
            arg);
    fprintf(stderr, "Try 'mlc-ir --help'.\n");
    return 2;
  }
  *out = v;
  return 0;
}

static int parse_args(int argc, char **argv, options *o, bool *help, bool *list) {
  static const struct option longopts[] = {
      {"task", required_argument, 0, 't'},         {"shape", required_argument, 0, 's'},
      {"seed", required_argument, 0, OPT_SEED},    {"list-tasks", no_argument, 0, OPT_LIST_TASKS},
      {"target", required_argument, 0, OPT_TARGET}, {"trace", required_argument, 0, OPT_TRACE},
      {"output", required_argument, 0, 'o'},       {"header", required_argument, 0, OPT_HEADER},
      {"name", required_argument, 0, OPT_NAME},    {"print-trace", no_argument, 0, OPT_PRINT_TRACE},
      {"run", no_argument, 0, OPT_RUN},            {"repeat", required_argument, 0, OPT_REPEAT},
      {"min-ms", required_argument, 0, OPT_MIN_MS}, {"help", no_argument, 0, 'h'},
      {"intrin", required_argument, 0, OPT_INTRIN}, {"extern", required_argument, 0, OPT_EXTERN},
      {"size", required_argument, 0, OPT_SIZE},
      {0, 0, 0, 0},
  };
  int c, idx = -1;
  double v;
  while ((c = getopt_long(argc, argv, "t:s:o:h", longopts, &idx)) != -1) {
    const char *name = NULL;
    for (int i = 0; longopts[i].name; i++)
      if (longopts[i].val == c) name = longopts[i].name;
    if (name && o->n_given < MLC_COUNTOF(o->given)) o->given[o->n_given++] = name;
    switch (c) {
    case 't': o->task = optarg; break;
    case 's': o->shape = optarg; break;
    case 'o': o->output = optarg; break;
    case OPT_TARGET: o->target = optarg; break;
    case OPT_TRACE: o->trace = optarg; break;
    case OPT_HEADER: o->header = optarg; break;
    case OPT_NAME: o->name = optarg; break;
    case OPT_PRINT_TRACE: o->print_trace = true; break;
    case OPT_INTRIN:
      if (o->n_intrins == MLC_COUNTOF(o->intrins)) return usage_error("%s", "too many --intrin files");
      o->intrins[o->n_intrins++] = optarg;
      break;
    case OPT_EXTERN:
      if (o->n_externs == MLC_COUNTOF(o->externs)) return usage_error("%s", "too many --extern files");
      o->externs[o->n_externs++] = optarg;
      break;
    case OPT_SIZE:
      if (o->n_sizes == MLC_COUNTOF(o->sizes)) return usage_error("%s", "too many --size options");
      if (!strchr(optarg, '=')) return usage_error("--size expects NAME=V[,V...], got '%s'", optarg);
      o->sizes[o->n_sizes++] = optarg;
      break;
    case OPT_RUN: o->run = true; break;
    case OPT_SEED: {
      char *end;
      o->seed = strtoull(optarg, &end, 10);
      if (*end || !*optarg) return usage_error("--seed expects a number, got '%s'", optarg);
      break;
    }
    case OPT_REPEAT:
      if (parse_number("repeat", optarg, 1, 1000, &v)) return 2;
      o->repeat = (int)v;
      break;
    case OPT_MIN_MS:
      if (parse_number("min-ms", optarg, 0, 1e6, &v)) return 2;
      o->min_ms = v;
      break;
    case OPT_LIST_TASKS: *list = true; break;
    case 'h': *help = true; break;
    default: return usage_error("%s", "bad option");
    }
  }
  if (optind < argc) o->command = argv[optind++];
  if (optind < argc) o->file = argv[optind++];
  if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
  return 0;
}

/* Usage errors that depend on the command. */
static int check_usage(const command *cmd, const options *o) {
  for (int i = 0; i < o->n_given; i++)
    if (!list_has(cmd->allowed, o->given[i])) {
      fprintf(stderr, "mlc-ir: error: option --%s does not apply to '%s'\n", o->given[i], cmd->name);
      fprintf(stderr, "Try 'mlc-ir %s --help'.\n", cmd->name);
      return 2;
    }
  const char *name = cmd->name;
  if (o->shape && !o->task) return usage_error("%s", "--shape needs --task");
  if (strcmp(name, "check") == 0) {
    if (!o->file) return usage_error("%s", "check needs exactly one FILE.py");
    return 0;
  }
  if (!!o->file == !!o->task)
    return usage_error("%s needs FILE.py or --task NAME (one of them)", name);
  if (strcmp(name, "build") == 0 && !o->output) return usage_error("%s", "build needs -o OUT.o");
  if (strcmp(name, "apply") == 0 && !o->trace) return usage_error("%s", "apply needs --trace TRACE.json");
  if (o->run && strcmp(name, "apply") == 0) return 0;
  for (int i = 0; i < o->n_given; i++)
    if (strcmp(name, "apply") == 0 && list_has("target repeat min-ms extern size", o->given[i]))
      return usage_error("--%s needs --run", o->given[i]);
  return 0;
}

static bool register_intrins(const char *path) {
  mlc_error err;
  char *text = mlc_read_file(path, NULL, &err);
  bool ok = text && mlc_tensor_intrin_register_text(path, text, NULL, &err);
  mlc_free(text);
  if (!ok) fprintf(stderr, "mlc-ir: error: --intrin %s: %s\n", path, err.msg);
  return ok;
}

int main(int argc, char **argv) {
  options o = {.seed = 1, .repeat = 5, .min_ms = 50};
  bool help = false, list = false;
  int rc = parse_args(argc, argv, &o, &help, &list);
  if (rc) return rc;
  const command *cmd = o.command ? find_command(o.command) : NULL;
  if (help) {
    fputs(cmd ? cmd->help : usage_text, stdout);
    return 0;
  }
  if (list) {
    list_tasks();
    return 0;
  }
  if (!o.command) return usage_error("%s", "missing command (print, check, eval, run, build, apply)");
  if (!cmd) return usage_error("unknown command '%s'", o.command);
  rc = check_usage(cmd, &o);
  if (rc) return rc;
  /* the host CPU's dot-product intrinsics (traces mlc-tune tensorized), then --intrin files */
  mlc_error ierr;
  if (!mlc_tensor_intrin_register_cpu(mlc_target_host_features(), NULL, &ierr)) {
    fprintf(stderr, "mlc-ir: error: %s\n", ierr.msg);
    return 1;
  }
  for (int i = 0; i < o.n_intrins; i++)
    if (!register_intrins(o.intrins[i])) return 1;
  mlc_arena *a = mlc_arena_new();
  if (strcmp(cmd->name, "eval") == 0) rc = cmd_eval(a, &o);
  else if (strcmp(cmd->name, "run") == 0) rc = cmd_run(a, &o);
  else if (strcmp(cmd->name, "build") == 0) rc = cmd_build(a, &o);
  else if (strcmp(cmd->name, "apply") == 0) rc = cmd_apply(a, &o);
  else rc = cmd_print_or_check(a, &o);
  mlc_arena_free(a);
  mlc_jit_shutdown(); /* so leak checkers see nothing left */
  return rc;
}
