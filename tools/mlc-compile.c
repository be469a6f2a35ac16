/* mlc-compile: compile a model (or one built-in task) into an object file
 * and a C header, or run it in-process.
 *
 *   mlc-compile --model examples/mlp.json [--weights DIR] -o mlp.o --header mlp.h
 *   mlc-compile --model examples/mlp.json --print-after fuse
 *   mlc-compile --model examples/mlp.json --run
 *   mlc-compile --model resnet18.onnx --run x.npy --run-output y.npy
 *   mlc-compile --model m.json --extern libmy.so --run   (call_extern nodes)
 *   mlc-compile --task matmul --shape 128,128,128 -o mm.o [--header mm.h]
 *   mlc-compile --task vecadd --target "cuda -arch=sm_80" -o va.o --header va.h [--ptx va.ptx]
 *
 * A thin main: graph/ loads, transforms and lowers the model and replays
 * each kernel's best record from the tuning database (`mlc-tune --model`
 * fills it); kernels without one get the default schedule and are listed
 * as `untuned`. targets/ compiles and loads the kernels. For a cuda target
 * (one kernel: --task or --task-file) the object is a host object with the
 * PTX and a launcher per kernel (mlc_cuda_host_object), which runs it
 * through libmlcrt's mlc_rt_cuda_launch.
 */
#include "db/db.h"
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "measure/measure.h"
#include "ir/ir.h"
#include "targets/runtime/mlcrt.h"
#include "targets/targets.h"
#include "tasks/tasks.h"
#include "tuner/tuner.h"

#include <ctype.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
  OPT_MODEL = 256,
  OPT_WEIGHTS,
  OPT_PRINT_AFTER,
  OPT_HEADER,
  OPT_RUN,
  OPT_INPUT,
  OPT_TASK,
  OPT_SHAPE,
  OPT_NAME,
  OPT_TARGET,
  OPT_SEED,
  OPT_REPEAT,
  OPT_NO_SCHEDULE,
  OPT_DB,
  OPT_REPORT,
  OPT_DUMP_TASKS,
  OPT_FUSE_MAX_OPS,
  OPT_INPUT_SHAPE,
  OPT_RUN_OUTPUT,
  OPT_VERIFY,
  OPT_TASK_FILE,
  OPT_PTX,
  OPT_EXTERN,
  OPT_INTRIN,
  OPT_DIM,
  OPT_SIZE,
};

/* Most --input, --input-shape and --run-output options. */
#define MAX_LIST 64

typedef struct options {
  const char *model, *weights, *print_after, *output, *header;
  /* --input: "X.npy" (one model input) or "name=X.npy" (X.pb: an ONNX
   * TensorProto); --run-output the
   * same for outputs; --input-shape "name=1,3,224,224". NULL-terminated. */
  const char *inputs[MAX_LIST + 1], *run_outputs[MAX_LIST + 1], *input_shapes[MAX_LIST + 1];
  int n_inputs, n_run_outputs, n_input_shapes;
  const char *task, *shape, *name, *target, *db, *dump_tasks;
  const char *task_file; /* --task-file: a TVMScript prim_func (main, or the only one) */
  const char *ptx;       /* --ptx: the cuda target's PTX, also written here */
  /* --extern: shared objects defining the model's call_extern functions
   * (for --run and --report; the written object leaves them to the linker) */
  const char *externs[8];
  int n_externs;
  bool run, no_schedule, report;
  bool verify; /* check replayed kernels against the unscheduled ones first */
  uint64_t seed;
  int repeat;
  int fuse_max_ops;
  const char *intrins[8]; /* --intrin files */
  int n_intrins;
  /* --dim: sizes the model is built for, once for all of them; --size:
   * the sizes --run runs at ("seq=7"; default: the --input files' shapes,
   * else the bounds) */
  mlc_gsize dims[MLC_GRAPH_MAX_SIZES];
  int n_dims;
  const char *run_sizes[MLC_GRAPH_MAX_SIZES + 1];
  int n_run_sizes;
  mlc_arena *arena; /* what the options hold */
} options;

static void usage(FILE *f) {
  fprintf(f,
          "usage: mlc-compile --model FILE.json|FILE.onnx [--weights DIR] [--print-after PASS]\n"
          "                   [--input-shape NAME=D1,D2,...] [-o OUT.o] [--header OUT.h]\n"
          "                   [--run [X.npy]] [--input [NAME=]X.npy] [--run-output [NAME=]Y.npy]\n"
          "                   [--report] [--extern LIB.so] [--dim NAME=LO..HI [--size NAME=V]]\n"
          "       mlc-compile --task NAME [--shape S] | --task-file F.py [--name SYM]\n"
          "                   [--target T] -o OUT.o [--header OUT.h] [--ptx OUT.ptx]\n"
          "\n"
          "Compile a model described in JSON (weights as .npy files in DIR, by default\n"
          "the model path without .json) through the graph passes, lower every op to\n"
          "TensorIR, compile each kernel (LLVM) and emit one object plus a C header\n"
          "whose <model>_run(input, output) runs the whole model (the weights are\n"
          "read-only data in the object). Kernels without a tuning record get a default\n"
          "schedule (register tiles for GEMM-like blocks; row-wise kernels such as\n"
          "softmax, norms and elementwise chains computed a row at a time, all blocks\n"
          "under one parallel loop, row reductions summed by vector lanes; attention\n"
          "(matmul, softmax, matmul: one kernel) a tile of query rows at a time; else a\n"
          "parallel outer loop and a vectorized inner loop) and are listed on stderr\n"
          "as `untuned`; the others replay their best record from the database.\n"
          "\n"
          "options:\n"
          "  --model FILE         the model: our JSON description, or an ONNX model\n"
          "                       (FILE.onnx; opsets 1-17, float32, QDQ-quantized ones\n"
          "                       too; weights from its initializers)\n"
          "  --input-shape NAME=D1,D2,...\n"
          "                       the shape of an ONNX input with symbolic dimensions\n"
          "                       (repeatable)\n"
          "  --dim NAME=LO..HI    build once for every value of NAME from LO to HI, NAME\n"
          "                       an extent of --input-shape (`--input-shape ids=1,seq\n"
          "                       --dim seq=1..2048`; repeatable, at most 4): kernels take\n"
          "                       the sizes at run time, <model>_run takes them after the\n"
          "                       outputs (the header says the shapes they give), and the\n"
          "                       workspace is sized for the bounds; a model whose graph\n"
          "                       differs between sizes is refused, naming what differs\n"
          "  --size NAME=V        with --dim, --run and --report: run at this size (default: what\n"
          "                       the --input files' shapes give, else the bound)\n"
          "  --weights DIR        directory of <weight>.npy files\n"
          "  --print-after PASS   print the graph (Relax-like text) after PASS (or `load`:\n"
          "                       as read from the model file)\n"
          "  --fuse-max-ops N     at most N ops per fused sub-function (default 16; 2\n"
          "                       gives the notes' matmul + add pairs with relu\n"
          "                       alone; kernels fused otherwise than when tuned\n"
          "                       find no tuning record)\n"
          "  -o, --output FILE    write the object file (the kernels and, for a model,\n"
          "                       its weights as constant arrays)\n"
          "  --header FILE        write the C header (kernels and the model entry; it\n"
          "                       declares the weights the object defines)\n"
          "  --run                run the model in-process on seeded inputs (or --input;\n"
          "                       seeded token ids lie inside the tables they index),\n"
          "                       print the output, its argmax and the max error against\n"
          "                       a plain C reference; on a mismatch, name the first\n"
          "                       kernel that differs from the interpreter and exit 1\n"
          "  --input [NAME=]X.npy the input for --run (NAME= may be left out for a model\n"
          "                       with one input; also given as `--run X.npy`; a .pb\n"
          "                       file is an ONNX TensorProto, as the ONNX backend\n"
          "                       tests' input_0.pb); repeatable, one per model input\n"
          "  --run-output [NAME=]Y.npy\n"
          "                       write an output of --run as .npy (NAME= may be left\n"
          "                       out: outputs in order); repeatable\n"
          "  --extern LIB.so      a shared object defining the C functions of the model's\n"
          "                       call_extern nodes, for --run and --report (repeatable;\n"
          "                       a program using -o and --header links its own; the\n"
          "                       plain C reference calls the same functions)\n"
          "  --seed N             seed of the --run inputs (default 1)\n"
          "  --repeat N           timed runs of the model for --run (default 20)\n"
          "  --task NAME          compile one built-in task instead (%s)\n"
          "  --shape S            the task's shape (e.g. 128,128,128)\n"
          "  --task-file F.py     compile one TVMScript prim_func instead (named main, or\n"
          "                       the file's only function)\n"
          "  --name SYM           the task kernel's symbol (default: the task name, or the\n"
          "                       task file's name without .py)\n"
          "  --target T           target string (default: llvm, the host CPU). With\n"
          "                       \"cuda [-arch=sm_80]\" (--task or --task-file only; models\n"
          "                       are refused) the kernel is compiled to PTX from the\n"
          "                       best record for that target, or, without one, a GPU\n"
          "                       default schedule (leading spatial loops bound to\n"
          "                       blockIdx.x/threadIdx.x, 256 threads; a kernel it cannot\n"
          "                       bind is refused: tune it first); -o writes a host object\n"
          "                       holding the PTX and a launcher with the CPU entry point\n"
          "                       `int32_t SYM(void **args)`, which copies the arguments\n"
          "                       to the GPU, runs the kernel and copies them back (link\n"
          "                       with libmlcrt.a -ldl -lpthread; the CUDA driver is\n"
          "                       opened at run time)\n"
          "  --ptx FILE           with a cuda target, also write the PTX\n"
          "  --db PATH|URL        tuning database (default: $MLC_DB or ./mlc.db; or\n"
          "                       postgresql://user@host/dbname); the best\n"
          "                       record of each kernel is replayed; a missing file means\n"
          "                       every kernel is untuned\n"
          "  --intrin FILE.py     register the tensor intrinsics (NAME_desc/NAME_impl\n"
          "                       pairs) of FILE.py, as mlc-tune --intrin did: records\n"
          "                       tensorized with them replay only so (repeatable)\n"
          "  --dump-tasks DIR     write each distinct kernel as DIR/<model>_<kernel>.py\n"
          "                       (TVMScript, named main) for mlc-tune --task-file;\n"
          "                       alone, nothing is compiled\n"
          "  --report             run the model and list each kernel: record id or\n"
          "                       untuned, calls, time per call\n"
          "  --no-schedule        compile kernels unscheduled\n"
          "  --verify             before writing anything, run each kernel that replays a\n"
          "                       record and the unscheduled kernel (interpreter) on\n"
          "                       inputs seeded by --seed; a mismatch is an error naming\n"
          "                       the kernel and the record\n"
          "  -h, --help           this text\n"
          "\n"
          "passes, in order:\n",
          mlc_task_names());
  for (int i = 0; i < mlc_graph_pass_count(); i++)
    fprintf(f, "  %-10s %s\n", mlc_graph_pass_at(i)->name, mlc_graph_pass_at(i)->help);
  fprintf(f, "\nexit status: 0 success, 1 failure, 2 bad usage\n");
}

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "mlc-compile: error: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(see mlc-compile --help)\n");
  return 2;
}

static int fail(const mlc_error *err) {
  fprintf(stderr, "mlc-compile: error: %s\n", err->msg);
  return 1;
}

static double now_ms(void) { return mlc_now_sec() * 1e3; }

static bool is_onnx(const char *path) {
  size_t n = strlen(path);
  return n > 5 && strcmp(path + n - 5, ".onnx") == 0;
}

/* The model, by its extension: ONNX or our JSON. */
static mlc_gmodule *load_model(const options *o, mlc_error *err) {
  return mlc_graph_load_any(o->model, o->weights, o->input_shapes, err);
}

static int parse_args(int argc, char **argv, options *o) {
  static const struct option longs[] = {
      {"model", required_argument, 0, OPT_MODEL},
      {"weights", required_argument, 0, OPT_WEIGHTS},
      {"print-after", required_argument, 0, OPT_PRINT_AFTER},
      {"output", required_argument, 0, 'o'},
      {"header", required_argument, 0, OPT_HEADER},
      {"run", no_argument, 0, OPT_RUN},
      {"input", required_argument, 0, OPT_INPUT},
      {"task", required_argument, 0, OPT_TASK},
      {"shape", required_argument, 0, OPT_SHAPE},
      {"name", required_argument, 0, OPT_NAME},
      {"target", required_argument, 0, OPT_TARGET},
      {"seed", required_argument, 0, OPT_SEED},
      {"repeat", required_argument, 0, OPT_REPEAT},
      {"no-schedule", no_argument, 0, OPT_NO_SCHEDULE},
      {"db", required_argument, 0, OPT_DB},
      {"report", no_argument, 0, OPT_REPORT},
      {"dump-tasks", required_argument, 0, OPT_DUMP_TASKS},
      {"fuse-max-ops", required_argument, 0, OPT_FUSE_MAX_OPS},
      {"input-shape", required_argument, 0, OPT_INPUT_SHAPE},
      {"run-output", required_argument, 0, OPT_RUN_OUTPUT},
      {"verify", no_argument, 0, OPT_VERIFY},
      {"task-file", required_argument, 0, OPT_TASK_FILE},
      {"intrin", required_argument, 0, OPT_INTRIN},
      {"ptx", required_argument, 0, OPT_PTX},
      {"extern", required_argument, 0, OPT_EXTERN},
      {"dim", required_argument, 0, OPT_DIM},
      {"size", required_argument, 0, OPT_SIZE},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  mlc_arena *arena = o->arena;
  memset(o, 0, sizeof *o);
  o->arena = arena;
  o->seed = 1;
  o->repeat = 20;
  o->target = "llvm";
  opterr = 0;
  int c;
  char *end;
  while ((c = getopt_long(argc, argv, ":o:h", longs, NULL)) != -1) {
    switch (c) {
    case OPT_MODEL: o->model = optarg; break;
    case OPT_WEIGHTS: o->weights = optarg; break;
    case OPT_PRINT_AFTER: o->print_after = optarg; break;
    case 'o': o->output = optarg; break;
    case OPT_HEADER: o->header = optarg; break;
    case OPT_RUN: o->run = true; break;
    case OPT_INPUT:
    case OPT_INPUT_SHAPE:
    case OPT_RUN_OUTPUT: {
      int *n = c == OPT_INPUT ? &o->n_inputs : c == OPT_RUN_OUTPUT ? &o->n_run_outputs : &o->n_input_shapes;
      const char **list = c == OPT_INPUT ? o->inputs : c == OPT_RUN_OUTPUT ? o->run_outputs : o->input_shapes;
      if (*n >= MAX_LIST) return usage_error("too many '%s' options", argv[optind - 2]);
      list[(*n)++] = optarg;
      break;
    }
    case OPT_TASK: o->task = optarg; break;
    case OPT_TASK_FILE: o->task_file = optarg; break;
    case OPT_PTX: o->ptx = optarg; break;
    case OPT_EXTERN:
      if (o->n_externs == MLC_COUNTOF(o->externs)) return usage_error("%s", "too many --extern files");
      o->externs[o->n_externs++] = optarg;
      break;
    case OPT_DIM: {
      mlc_error err;
      if (o->n_dims == MLC_GRAPH_MAX_SIZES) return usage_error("%s", "at most 4 --dim options");
      if (!mlc_gsize_parse(o->arena, optarg, &o->dims[o->n_dims++], &err))
        return usage_error("--dim: %s", err.msg);
      break;
    }
    case OPT_SIZE:
      if (o->n_run_sizes == MLC_GRAPH_MAX_SIZES) return usage_error("%s", "at most 4 --size options");
      o->run_sizes[o->n_run_sizes++] = optarg;
      break;
    case OPT_SHAPE: o->shape = optarg; break;
    case OPT_NAME: o->name = optarg; break;
    case OPT_TARGET: o->target = optarg; break;
    case OPT_NO_SCHEDULE: o->no_schedule = true; break;
    case OPT_DB: o->db = optarg; break;
    case OPT_INTRIN:
      if (o->n_intrins == MLC_COUNTOF(o->intrins)) return usage_error("%s", "at most 8 --intrin files");
      o->intrins[o->n_intrins++] = optarg;
      break;
    case OPT_REPORT: o->report = true; break;
    case OPT_VERIFY: o->verify = true; break;
    case OPT_DUMP_TASKS: o->dump_tasks = optarg; break;
    case OPT_FUSE_MAX_OPS:
      o->fuse_max_ops = (int)strtol(optarg, &end, 10);
      if (*end || o->fuse_max_ops < 1 || o->fuse_max_ops > MLC_GRAPH_FUSE_MAX)
        return usage_error("--fuse-max-ops wants a number from 1 to 16, got '%s'", optarg);
      break;
    case OPT_SEED:
      o->seed = strtoull(optarg, &end, 10);
      if (*end || !*optarg) return usage_error("--seed wants a number, got '%s'", optarg);
      break;
    case OPT_REPEAT:
      o->repeat = (int)strtol(optarg, &end, 10);
      if (*end || o->repeat < 1 || o->repeat > 100000)
        return usage_error("--repeat wants a count in 1..100000, got '%s'", optarg);
      break;
    case 'h': usage(stdout); exit(0);
    case ':': return usage_error("option %s needs a value", argv[optind - 1]);
    default: return usage_error("unknown option '%s'", argv[optind - 1]);
    }
  }
  /* `--run input.npy`, as DESIGN.md writes it, is --run --input input.npy. */
  if (o->run && !o->n_inputs && optind == argc - 1) o->inputs[o->n_inputs++] = argv[optind++];
  if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
  if (!o->model + !o->task + !o->task_file != 2)
    return usage_error("%s", "give exactly one of --model, --task or --task-file");
  if (o->task_file && o->shape) return usage_error("%s", "--shape goes with --task");
  if ((o->task || o->task_file) && (o->print_after || o->fuse_max_ops || o->run || o->weights || o->n_inputs || o->report || o->dump_tasks ||
                  o->n_input_shapes || o->n_run_outputs || o->n_externs))
    return usage_error("%s", "--print-after, --fuse-max-ops, --run, --report, --weights, --input, "
                             "--input-shape, --run-output and --extern go with --model");
  if (!o->db) o->db = getenv("MLC_DB") && *getenv("MLC_DB") ? getenv("MLC_DB") : "mlc.db";
  if ((o->task || o->task_file) && !o->output)
    return usage_error("%s", "--task and --task-file need -o OUT.o");
  if (o->model && (o->shape || o->name))
    return usage_error("%s", "--shape and --name go with --task");
  if ((o->n_inputs || o->n_run_outputs) && !o->run)
    return usage_error("%s", "--input and --run-output go with --run");
  if (o->n_externs && !o->run && !o->report)
    return usage_error("%s", "--extern goes with --run or --report (a program using -o and "
                             "--header links its own functions)");
  if (o->model && is_onnx(o->model) && o->weights)
    return usage_error("%s", "--weights goes with a JSON model (ONNX models hold their weights)");
  if (o->model && !is_onnx(o->model) && o->n_input_shapes)
    return usage_error("%s", "--input-shape goes with an ONNX model");
  if (o->n_dims && (o->print_after || o->n_externs || o->verify))
    return usage_error("%s", "--dim goes without --print-after, --extern and --verify "
                             "(print or verify an instance: --input-shape with numbers)");
  if (o->n_run_sizes && !o->n_dims) return usage_error("%s", "--size goes with --dim");
  if (o->n_dims && !o->model) return usage_error("%s", "--dim goes with --model");
  if (o->print_after && strcmp(o->print_after, "load") != 0 && !mlc_graph_pass_find(o->print_after))
    return usage_error("unknown pass '%s' for --print-after (see --help for the list)",
                       o->print_after);
  return 0;
}

/* ---- compiling kernels --------------------------------------------------------- */

/* What mlc_graph_compile built: per kernel its source, schedule, symbol
 * and record (or untuned), and the object. */
typedef mlc_gcompiled kernels;

static bool verify_kernels(const options *o, const kernels *k, mlc_error *err);

/* A record that was skipped (its replay failed, or is not the function it
 * measured) is never passed over silently; nor is a schedule that did not
 * build. */
static void warn_compile(const kernels *k) {
  for (int i = 0; i < k->n_scheduled; i++)
    if (k->skipped[i])
      fprintf(stderr, "mlc-compile: warning: %s: %s\n", k->symbols[i], k->skipped[i]);
  for (int i = 0; i < k->n_scheduled; i++)
    if (k->fallback[i])
      fprintf(stderr, "mlc-compile: warning: %s: %s; compiling it unscheduled\n", k->symbols[i],
              k->fallback[i]);
}

/* Kernels compiled by mlc_graph_compile[_kernels] (m NULL: the one of
 * --task), warned about, then checked with --verify; *ms the time taken. */
static bool compile(const options *o, const mlc_target *t, const mlc_gmodule *m,
                    const mlc_prim_func *f, const char *sym, kernels *k, double *ms,
                    mlc_error *err) {
  double t0 = now_ms();
  mlc_gcompile_options co = {.db_path = o->db, .no_schedule = o->no_schedule,
                             .with_weights = o->output != NULL};
  bool ok = m ? mlc_graph_compile(m, t, &co, k, err)
              : mlc_graph_compile_kernels(1, &f, &sym, t, &co, k, err);
  warn_compile(k);
  if (ok && o->verify) ok = verify_kernels(o, k, err);
  *ms = now_ms() - t0;
  return ok;
}

/* "library openblas (0.07 ms) vs tuned (0.2 ms)" when the kernel's records
 * include a library one (mlc-tune --library): the chosen side first, with
 * its record's time; "" otherwise. */
static const char *library_choice(const mlc_gkernel *g, char *buf, size_t n) {
  buf[0] = 0;
  if (!g->record_id || !g->offer_library[0]) return buf;
  char other[64];
  if (g->library[0]) {
    if (g->tuned_sec > 0) snprintf(other, sizeof other, "%.4g ms", g->tuned_sec * 1e3);
    else snprintf(other, sizeof other, "none measured");
    snprintf(buf, n, "library %s (%.4g ms) vs tuned (%s)", g->library, g->record_sec * 1e3, other);
  } else {
    snprintf(buf, n, "tuned (%.4g ms) vs library %s (%.4g ms)", g->record_sec * 1e3,
             g->offer_library, g->library_sec * 1e3);
  }
  return buf;
}

static void list_kernels(const kernels *k, const int *calls, bool schedule) {
  for (int i = 0; i < k->n; i++) {
    char hex[17];
    const mlc_gkernel *g = &k->info[i];
    mlc_func_hash_hex(k->src[i], hex);
    fprintf(stderr, "mlc-compile: %-36s %s  calls %d  ", k->symbols[i], hex, calls ? calls[i] : 1);
    char lib[160];
    if (g->record_id)
      fprintf(stderr, "record %lld (%.2f us%s%s)%s%s\n", (long long)g->record_id,
              g->record_sec * 1e6, g->tuned_at[0] ? " at " : "", g->tuned_at,
              g->offer_library[0] ? ": " : "", library_choice(g, lib, sizeof lib));
    else if (g->note[0]) fprintf(stderr, "untuned (default schedule; %s)\n", g->note);
    else fprintf(stderr, "untuned (%s)\n", !schedule ? "unscheduled"
                                             : k->gpu ? "GPU default schedule"
                                                      : "default schedule");
  }
}

/* The object (-o; a cuda target's host object with the launchers, and
 * its PTX with --ptx) and the header (--header); the kernels that call a
 * library named on stderr. */
static bool write_outputs(const options *o, const mlc_target *t, const kernels *k,
                          const mlc_gmodule *m, mlc_error *err) {
  bool gpu = mlc_target_device(t) == MLC_DEVICE_CUDA;
  if (gpu && o->ptx && !mlc_write_file(o->ptx, k->obj->data, k->obj->len, err)) return false;
  if (o->output && !mlc_graph_write_object(o->output, t, k, err)) return false;
  mlc_str names = {0};
  const char *lib = mlc_graph_library_calls(k, &names);
  if (lib && (o->output || o->header))
    fprintf(stderr, "mlc-compile: %s call %s: %s\n", mlc_str_cstr(&names), lib,
            mlc_graph_library_link());
  mlc_str_free(&names);
  if (!o->header) return true;
  mlc_str h = {0};
  bool ok = mlc_graph_write_header(&h, t, k, m, err) && mlc_write_file(o->header, h.data, h.len, err);
  mlc_str_free(&h);
  return ok;
}

/* ---- --task ------------------------------------------------------------------------ */

/* The prim_func of --task-file: main, or the file's only function. */
static mlc_prim_func *load_task_file(mlc_arena *a, const char *path, mlc_error *err) {
  size_t len;
  char *text = mlc_read_file(path, &len, err);
  if (!text) return NULL;
  mlc_module *m = mlc_parse_module(a, path, text, err);
  mlc_free(text);
  if (!m) return NULL;
  mlc_prim_func *f = mlc_module_find(m, "main");
  if (!f && m->n_funcs == 1) f = m->funcs[0];
  if (!f) {
    mlc_error_set(err, "%s: no prim_func named main (and %d functions)", path, m->n_funcs);
    return NULL;
  }
  if (!mlc_verify_func(f, err)) {
    mlc_error_prefix(err, "%s", path);
    return NULL;
  }
  return f;
}

/* The file name without its folder and .py: the kernel's symbol. */
static const char *file_symbol(mlc_arena *a, const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t len = strlen(base);
  if (len > 3 && strcmp(base + len - 3, ".py") == 0) len -= 3;
  return mlc_arena_printf(a, "%.*s", (int)len, base);
}

/* One kernel (--task, --task-file) compiled and written under sym. */
static int compile_one(const options *o, const mlc_target *t, const mlc_prim_func *f,
                       const char *sym) {
  mlc_error err;
  kernels k;
  double ms;
  int rc = 0;
  if (!compile(o, t, NULL, f, sym, &k, &ms, &err) || !write_outputs(o, t, &k, NULL, &err))
    rc = fail(&err);
  else list_kernels(&k, NULL, !o->no_schedule);
  mlc_gcompiled_free(&k);
  return rc;
}

static int compile_task_file(const options *o, const mlc_target *t) {
  mlc_error err;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = load_task_file(a, o->task_file, &err);
  int rc = f ? compile_one(o, t, f, o->name ? o->name : file_symbol(a, o->task_file))
             : fail(&err);
  mlc_arena_free(a);
  return rc;
}

static int compile_task(const options *o, const mlc_target *t) {
  mlc_error err;
  const mlc_task_def *d = mlc_task_find(o->task);
  if (!d) {
    fprintf(stderr, "mlc-compile: error: unknown task '%s' (tasks: %s)\n", o->task,
            mlc_task_names());
    return 2;
  }
  int64_t shape[MLC_TASK_MAX_DIMS];
  if (!mlc_task_parse_shape(d, o->shape, shape, &err)) {
    fprintf(stderr, "mlc-compile: error: %s\n", err.msg);
    return 2;
  }
  mlc_arena *a = mlc_arena_new();
  int rc = compile_one(o, t, mlc_task_build(a, d, shape), o->name ? o->name : d->name);
  mlc_arena_free(a);
  return rc;
}

/* ---- --model ----------------------------------------------------------------------- */

static void show(const mlc_gmodule *m, const char *pass, void *ud) {
  mlc_str s = {0};
  mlc_graph_print(&s, m, MLC_GRAPH_PRINT_TIR);
  printf("# after pass %s\n%s", pass, mlc_str_cstr(&s));
  fflush(stdout);
  mlc_str_free(&s);
}

typedef struct jit_ctx {
  const kernels *k;
  mlc_kernel_fn *fns;
  double *ms; /* per kernel, summed over timed calls (NULL: not timing) */
  int *calls;
} jit_ctx;

static bool jit_kernel(void *ud, const mlc_prim_func *f, int n, mlc_array *args, mlc_error *err) {
  const jit_ctx *J = ud;
  for (int i = 0; i < J->k->n; i++)
    if (J->k->src[i] == f) {
      double t0 = J->ms ? now_ms() : 0;
      if (mlc_kernel_call(J->fns[i], n, args) != 0)
        return mlc_error_set(err, "kernel %s failed (out of memory)", J->k->symbols[i]);
      if (J->ms) {
        J->ms[i] += now_ms() - t0;
        J->calls[i]++;
      }
      return true;
    }
  return mlc_error_set(err, "no compiled kernel for %s", f->name);
}

/* --verify: each kernel that replays a record, compiled, against the
 * interpreter on its unscheduled function. */
static bool verify_kernels(const options *o, const kernels *k, mlc_error *err) {
  int n_replayed = 0;
  for (int i = 0; i < k->n; i++) n_replayed += k->info[i].record_id != 0;
  if (!n_replayed) return true;
  mlc_jit_lib *lib = mlc_jit_load(k->obj, err);
  if (!lib) return false;
  mlc_kernel_fn *fns = mlc_xmalloc(sizeof *fns * (size_t)k->n);
  jit_ctx J = {k, fns, NULL, NULL};
  bool ok = true;
  for (int i = 0; i < k->n && ok; i++) {
    if (!(fns[i] = mlc_jit_lookup(lib, k->symbols[i], err))) ok = false;
    else if (k->info[i].record_id &&
             !mlc_graph_check_kernel(k->src[i], jit_kernel, &J, o->seed, err))
      ok = mlc_error_prefix(err, "--verify: kernel %s (record %lld) does not compute what its "
                                 "unscheduled function does", k->symbols[i],
                            (long long)k->info[i].record_id);
  }
  if (ok)
    fprintf(stderr, "mlc-compile: verified %d replayed kernel%s against the unscheduled ones "
                    "(seed %llu)\n", n_replayed, n_replayed == 1 ? "" : "s",
            (unsigned long long)o->seed);
  mlc_free(fns);
  mlc_jit_unload(lib);
  return ok;
}

/* Whether NAME (len bytes) names var: its name, or the ONNX name it was made
 * from (the importer turns other characters into '_' and drops leading
 * ones). */
static bool names_var(const char *name, size_t len, const char *var) {
  char buf[256];
  size_t k = 0;
  if (len == strlen(var) && strncmp(name, var, len) == 0) return true;
  for (size_t i = 0; i < len && k + 1 < sizeof buf; i++) {
    char c = isalnum((unsigned char)name[i]) ? name[i] : '_';
    if (c == '_' && (k == 0 || buf[k - 1] == '_')) continue;
    buf[k++] = c;
  }
  while (k > 0 && buf[k - 1] == '_') k--;
  buf[k] = 0;
  return strcmp(buf, var) == 0 || (strncmp(var, "v_", 2) == 0 && strcmp(buf, var + 2) == 0);
}

/* The file for var (index i of n) from list: "NAME=FILE" naming it, or
 * the i-th entry without a name. NULL: none. */
static const char *file_for(const char *const *list, const mlc_gvar *v, int i) {
  int pos = 0;
  for (int k = 0; list[k]; k++) {
    const char *eq = strchr(list[k], '=');
    if (eq && names_var(list[k], (size_t)(eq - list[k]), v->name)) return eq + 1;
    if (!eq && pos++ == i) return list[k];
  }
  return NULL;
}

/* Every entry of list names one of vars (what: "input", "output"). */
static bool check_names(const char *opt, const char *const *list, int n_vars, mlc_gvar *const *vars,
                        mlc_error *err) {
  int pos = 0;
  for (int k = 0; list[k]; k++) {
    const char *eq = strchr(list[k], '=');
    bool found = !eq && ++pos <= n_vars;
    for (int i = 0; eq && i < n_vars && !found; i++)
      found = names_var(list[k], (size_t)(eq - list[k]), vars[i]->name);
    if (!found && eq)
      return mlc_error_set(err, "%s %s: the model has no such %s", opt, list[k],
                           strcmp(opt, "--input") == 0 ? "input" : "output");
    if (!found)
      return mlc_error_set(err, "%s %s: more files than the model has %ss (%d)", opt, list[k],
                           strcmp(opt, "--input") == 0 ? "input" : "output", n_vars);
  }
  return true;
}

static void shape_str(const mlc_gtype *t, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "(");
  for (int i = 0; i < t->ndim && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
  if (k < n) snprintf(buf + k, n - k, ")");
}

static mlc_array *make_input(const options *o, const mlc_gmodule *m, int index, mlc_error *err) {
  const mlc_gvar *p = mlc_graph_main(m)->params[index];
  mlc_array *x = mlc_array_new(p->type.dtype, p->type.ndim, p->type.shape);
  if (!o->n_inputs) {
    mlc_graph_seed_input(m, index, x, o->seed);
    return x;
  }
  const char *path = file_for(o->inputs, p, index);
  if (!path) {
    mlc_error_set(err, "no --input for the model input %s", p->name);
    mlc_array_free(x);
    return NULL;
  }
  mlc_gtype t;
  size_t len = strlen(path);
  void *d = len > 3 && strcmp(path + len - 3, ".pb") == 0 ? mlc_onnx_tensor_read(path, &t, err)
                                                          : mlc_npy_read(path, &t, err);
  if (d && !mlc_gtype_equal(&t, &p->type)) {
    char s0[128], s1[128];
    shape_str(&t, s0, sizeof s0);
    shape_str(&p->type, s1, sizeof s1);
    mlc_error_set(err, "%s: %s %s does not match the model input %s: %s %s", path,
                  mlc_dtype_name(t.dtype), s0, p->name, mlc_dtype_name(p->type.dtype), s1);
    mlc_free(d);
    d = NULL;
  }
  if (!d) {
    mlc_array_free(x);
    return NULL;
  }
  memcpy(x->data, d, (size_t)mlc_gtype_bytes(&t));
  mlc_free(d);
  return x;
}

/* All of main's inputs, read (and checked) before anything is compiled or
 * written. */
static mlc_array **make_inputs(const options *o, const mlc_gmodule *m, mlc_error *err) {
  const mlc_gfunc *f = mlc_graph_main(m);
  if (!check_names("--input", o->inputs, f->n_params, f->params, err) ||
      !check_names("--run-output", o->run_outputs, f->n_outputs, f->outputs, err))
    return NULL;
  mlc_array **in = mlc_xmalloc(sizeof *in * (size_t)(f->n_params + 1));
  for (int i = 0; i < f->n_params; i++)
    if (!(in[i] = make_input(o, m, i, err))) {
      for (int j = 0; j < i; j++) mlc_array_free(in[j]);
      mlc_free(in);
      return NULL;
    }
  return in;
}

static bool write_run_outputs(const options *o, const mlc_gfunc *f, mlc_array *const *out,
                              mlc_error *err) {
  for (int i = 0; i < f->n_outputs; i++) {
    const char *path = file_for(o->run_outputs, f->outputs[i], i);
    mlc_gtype t = {.dtype = out[i]->dtype, .ndim = out[i]->ndim};
    memcpy(t.shape, out[i]->shape, sizeof(int64_t) * (size_t)t.ndim);
    if (path && !mlc_npy_write(path, &t, out[i]->data, err)) return false;
    if (path) fprintf(stderr, "mlc-compile: wrote %s (output %s)\n", path, f->outputs[i]->name);
  }
  return true;
}

static void print_output(const mlc_gvar *v, const mlc_array *y) {
  int64_t n = mlc_array_numel(y), best = 0;
  printf("output %s:", v->name);
  for (int64_t i = 0; i < n; i++) {
    if (i < 16) printf(" %.6g", mlc_array_get(y, i));
    if (mlc_array_get(y, i) > mlc_array_get(y, best)) best = i;
  }
  printf("%s\nargmax %s: %lld\n", n > 16 ? " ..." : "", v->name, (long long)best);
}

/* The atol a model's outputs are checked with (mlc_check_close's). */
static double check_atol(const mlc_gmodule *ref) {
  return mlc_graph_is_quantized(ref) ? MLC_GRAPH_QUANT_ATOL : MLC_CHECK_ATOL;
}

static void print_check(const mlc_gvar *out, const mlc_gmodule *ref, double max_err, bool ok) {
  printf("max abs error %s: %.3g (against the plain C reference%s)%s\n", out->name, max_err,
         mlc_graph_is_quantized(ref) ? "; quantized: within 1/16 of the largest |value|" : "",
         ok ? "" : "  MISMATCH");
}

/* After a mismatch: each kernel call also runs in the interpreter on the
 * same inputs; the first whose compiled result differs is named. */
typedef struct blame_ctx {
  jit_ctx *J;
  double atol; /* as the model's outputs are checked */
  bool found;
} blame_ctx;

static bool blame_kernel(void *ud, const mlc_prim_func *f, int n, mlc_array *args,
                         mlc_error *err) {
  blame_ctx *B = ud;
  if (!jit_kernel(B->J, f, n, args, err)) return false;
  if (B->found) return true;
  mlc_array *ref = mlc_array_new(args[n - 1].dtype, args[n - 1].ndim, args[n - 1].shape);
  mlc_array *copy = mlc_xmalloc(sizeof *copy * (size_t)n);
  memcpy(copy, args, sizeof *copy * (size_t)n);
  copy[n - 1] = *ref;
  double e = 0;
  if (mlc_interp_run_n(f, n, copy, err) &&
      !mlc_check_close(&args[n - 1], ref, MLC_CHECK_RTOL, B->atol, &e)) {
    for (int i = 0; i < B->J->k->n; i++)
      if (B->J->k->src[i] == f)
        printf("first differing kernel: %s (%s), max abs error %.3g against the interpreter\n",
               B->J->k->symbols[i],
               B->J->k->info[i].record_id ? "replayed record" : "default schedule", e);
    B->found = true;
  }
  mlc_free(copy);
  mlc_array_free(ref);
  return true;
}

/* --report: each kernel, its record or untuned, and its time; then each
 * call_extern function (m's externs count calls made since the timing
 * started). */
static void report_header(void) {
  printf("%-36s %5s %12s %7s  %s\n", "kernel", "calls", "mean/call", "share", "schedule");
}

/* One kernel's row: ms_per_run of all its calls_per_run calls. */
static void report_kernel(const kernels *k, int i, int calls_per_run, double ms_per_run,
                          double total_ms) {
  char sched[256], lib[160];
  if (k->info[i].record_id)
    snprintf(sched, sizeof sched, "record %lld%s%s", (long long)k->info[i].record_id,
             k->info[i].offer_library[0] ? ": " : "", library_choice(&k->info[i], lib, sizeof lib));
  else snprintf(sched, sizeof sched, "untuned");
  printf("%-36s %5d %9.2f us %6.1f%%  %s\n", k->symbols[i], calls_per_run,
         calls_per_run ? ms_per_run * 1e3 / calls_per_run : 0,
         total_ms > 0 ? 100 * ms_per_run / total_ms : 0, sched);
}

static void print_report(const kernels *k, const jit_ctx *J, const mlc_gmodule *m, int repeat) {
  double total = 0, ext_ms = 0;
  for (int i = 0; i < k->n; i++) total += J->ms[i];
  for (int i = 0; i < m->n_externs; i++) ext_ms += m->externs[i].sec * 1e3;
  report_header();
  for (int i = 0; i < k->n; i++)
    report_kernel(k, i, J->calls[i] / repeat, J->ms[i] / repeat, (total + ext_ms) / repeat);
  for (int i = 0; i < m->n_externs; i++) {
    const mlc_gextern *e = &m->externs[i];
    double ms = e->sec * 1e3;
    printf("%-36s %5d %9.2f us %6.1f%%  %s\n", e->name, (int)(e->calls / repeat),
           e->calls ? ms * 1e3 / (double)e->calls : 0, total + ext_ms > 0 ? 100 * ms / (total + ext_ms) : 0,
           "call_extern");
  }
  printf("kernels total: %.2f us per run\n", total * 1e3 / repeat);
  if (m->n_externs) printf("call_extern total: %.2f us per run\n", ext_ms * 1e3 / repeat);
}

/* One run of the whole model, timed by measure's mlc_time_calls. */
typedef struct model_run {
  const mlc_gmodule *m;
  jit_ctx *J;
  mlc_array **in, **out;
  mlc_error *err;
} model_run;

static bool run_model_once(void *ctx) {
  model_run *r = ctx;
  return mlc_graph_execute(r->m, jit_kernel, r->J, r->in, r->out, r->err);
}

/* Run the compiled model, compare with the plain C reference on `ref`
 * (the graph before the passes), time it. */
static int run_model(const options *o, const mlc_gmodule *m, const mlc_gmodule *ref,
                     const kernels *k, mlc_array **in) {
  mlc_error err;
  const mlc_gfunc *f = mlc_graph_main(m);
  mlc_jit_lib *lib = mlc_jit_load(k->obj, &err);
  if (!lib) return fail(&err);
  mlc_kernel_fn *fns = mlc_xmalloc(sizeof *fns * (size_t)k->n);
  int rc = 0;
  for (int i = 0; i < k->n && !rc; i++)
    if (!(fns[i] = mlc_jit_lookup(lib, k->symbols[i], &err))) rc = fail(&err);
  mlc_array **out = mlc_xmalloc(sizeof *out * (size_t)f->n_outputs);
  mlc_array **want = mlc_xmalloc(sizeof *want * (size_t)f->n_outputs);
  for (int i = 0; i < f->n_outputs; i++) {
    out[i] = mlc_array_new(f->outputs[i]->type.dtype, f->outputs[i]->type.ndim, f->outputs[i]->type.shape);
    want[i] = mlc_array_new(f->outputs[i]->type.dtype, f->outputs[i]->type.ndim, f->outputs[i]->type.shape);
  }
  jit_ctx J = {k, fns, NULL, NULL};
  bool mismatch = false;
  if (!rc && (!mlc_graph_execute(m, jit_kernel, &J, in, out, &err) ||
              !mlc_graph_reference(ref, in, want, &err)))
    rc = fail(&err);
  for (int i = 0; i < f->n_outputs && !rc; i++) {
    double max_err;
    bool ok = mlc_check_close(out[i], want[i], MLC_CHECK_RTOL, check_atol(ref), &max_err);
    if (o->run) print_output(f->outputs[i], out[i]);
    if (o->run || !ok) print_check(f->outputs[i], ref, max_err, ok);
    if (!ok) rc = 1, mismatch = true;
  }
  if (!rc && o->run && !write_run_outputs(o, f, out, &err)) rc = fail(&err);
  if (mismatch) {
    blame_ctx B = {&J, check_atol(ref), false};
    if (!mlc_graph_execute(m, blame_kernel, &B, in, out, &err)) fail(&err);
  }
  if (!rc) {
    double *ts = mlc_xmalloc(sizeof *ts * (size_t)o->repeat);
    J.ms = mlc_xmalloc(sizeof *J.ms * (size_t)k->n);
    J.calls = mlc_xmalloc(sizeof *J.calls * (size_t)k->n);
    model_run mr = {m, &J, in, out, &err};
    for (int i = 0; i < m->n_externs; i++) m->externs[i].calls = 0, m->externs[i].sec = 0;
    mlc_timing_opts to = {.repeat = o->repeat, .number = 1};
    if (mlc_time_calls(run_model_once, &mr, &to, ts, NULL, NULL, &err) < 0) rc = fail(&err);
    if (!rc && o->report) print_report(k, &J, m, o->repeat + 1);
    if (!rc) printf("run: %.1f us (median of %d)\n", mlc_median(ts, o->repeat) * 1e6, o->repeat);
    mlc_free(ts);
    mlc_free(J.ms);
    mlc_free(J.calls);
  }
  for (int i = 0; i < f->n_outputs; i++) {
    mlc_array_free(out[i]);
    mlc_array_free(want[i]);
  }
  mlc_free(out);
  mlc_free(want);
  mlc_free(fns);
  mlc_jit_unload(lib);
  return rc;
}

/* ---- --dim: a model built once for every size ----------------------------------------- */

/* The sizes of a --run: --size, else what the --input files' shapes give
 * (in: those files read at their own shapes), else the bounds. */
static bool run_sizes(const options *o, const mlc_gmodule *m, mlc_array **in, int64_t *sizes,
                      mlc_error *err) {
  for (int i = 0; i < o->n_run_sizes; i++) {
    int k = 0;
    while (k < m->n_sizes && (strncmp(o->run_sizes[i], m->sizes[k].name, strlen(m->sizes[k].name)) ||
                              o->run_sizes[i][strlen(m->sizes[k].name)] != '='))
      k++;
    if (k == m->n_sizes) return mlc_error_set(err, "--size %s names no --dim", o->run_sizes[i]);
  }
  if (in && !mlc_graph_sizes_of(m, in, sizes, err)) return mlc_error_prefix(err, "--input");
  for (int k = 0; k < m->n_sizes; k++) {
    int64_t v;
    int n = mlc_size_values(o->n_run_sizes, o->run_sizes, m->sizes[k].name, &v, 1, err);
    if (n < 0) return false;
    if (n && in && v != sizes[k])
      return mlc_error_set(err, "--size %s=%lld, but the --input files give %lld", m->sizes[k].name,
                           (long long)v, (long long)sizes[k]);
    if (!in) sizes[k] = n ? v : m->sizes[k].hi;
  }
  return mlc_graph_sizes_ok(m, sizes, err);
}

/* --input files at their own shapes (the sizes come from them). */
static mlc_array **read_sized_inputs(const options *o, const mlc_gfunc *f, mlc_error *err) {
  mlc_array **in = mlc_xmalloc(sizeof *in * (size_t)(f->n_params + 1));
  for (int i = 0; i < f->n_params; i++) {
    const mlc_gvar *p = f->params[i];
    const char *path = file_for(o->inputs, p, i);
    mlc_gtype t;
    size_t len = path ? strlen(path) : 0;
    void *d = !path ? (mlc_error_set(err, "no --input for the model input %s", p->name), NULL)
              : len > 3 && strcmp(path + len - 3, ".pb") == 0 ? mlc_onnx_tensor_read(path, &t, err)
                                                               : mlc_npy_read(path, &t, err);
    if (d && t.dtype != p->type.dtype) {
      mlc_error_set(err, "%s: %s does not match the model input %s: %s", path,
                    mlc_dtype_name(t.dtype), p->name, mlc_dtype_name(p->type.dtype));
      mlc_free(d);
      d = NULL;
    }
    if (!d) {
      for (int j = 0; j < i; j++) mlc_array_free(in[j]);
      mlc_free(in);
      return NULL;
    }
    in[i] = mlc_array_new(t.dtype, t.ndim, t.shape);
    memcpy(in[i]->data, d, (size_t)mlc_gtype_bytes(&t));
    mlc_free(d);
  }
  return in;
}

/* The inputs of a --run of a model of sizes and the sizes it runs at. */
static mlc_array **make_sized_inputs(const options *o, const mlc_gmodule *m, int64_t *sizes,
                                     mlc_error *err) {
  const mlc_gfunc *f = mlc_graph_main(m);
  if (!check_names("--input", o->inputs, f->n_params, f->params, err) ||
      !check_names("--run-output", o->run_outputs, f->n_outputs, f->outputs, err))
    return NULL;
  mlc_array **in = o->n_inputs ? read_sized_inputs(o, f, err) : NULL;
  if (o->n_inputs && !in) return NULL;
  bool ok = run_sizes(o, m, in, sizes, err);
  if (ok && !in) {
    in = mlc_xmalloc(sizeof *in * (size_t)(f->n_params + 1));
    for (int i = 0; i < f->n_params; i++) {
      int64_t shape[MLC_GRAPH_MAX_DIMS];
      mlc_gvar_shape_at(m, f->params[i], sizes, shape);
      in[i] = mlc_array_new(f->params[i]->type.dtype, f->params[i]->type.ndim, shape);
      mlc_graph_seed_input(m, i, in[i], o->seed);
    }
  }
  if (!ok && in) {
    for (int i = 0; i < f->n_params; i++) mlc_array_free(in[i]);
    mlc_free(in);
    in = NULL;
  }
  return in;
}

typedef struct sized_run {
  mlc_grunner *r;
  const int64_t *sizes;
  void **in, **out;
  mlc_error *err;
} sized_run;

static bool run_sized_once(void *ctx) {
  sized_run *s = ctx;
  return mlc_graph_runner_run_at(s->r, s->sizes, s->in, s->out, s->err);
}

/* --report of a model of sizes: the runner's profile of the timed runs,
 * kernels in the order of their first call, extern calls as such. */
static void print_sized_report(const kernels *k, const mlc_gmodule *m, const mlc_grunner *r) {
  int max = k->n + m->n_externs + 1;
  mlc_gprofile *p = mlc_xmalloc(sizeof *p * (size_t)max);
  int n = mlc_graph_runner_profile_get(r, p, max);
  double total = 0;
  for (int i = 0; i < n; i++) total += p[i].seconds * 1e3;
  report_header();
  for (int i = 0; i < n; i++) {
    int j = 0;
    while (j < k->n && strcmp(k->symbols[j], p[i].symbol) != 0) j++;
    if (j < k->n) report_kernel(k, j, p[i].calls, p[i].seconds * 1e3, total);
    else
      printf("%-36s %5d %9.2f us %6.1f%%  call_extern\n", p[i].symbol, p[i].calls,
             p[i].calls ? p[i].seconds * 1e6 / p[i].calls : 0,
             total > 0 ? 100 * p[i].seconds * 1e3 / total : 0);
  }
  printf("kernels total: %.2f us per run\n", total * 1e3);
  mlc_free(p);
}

/* Run the model of sizes at `sizes` as its entry runs (the in-process
 * runner), compare with the plain C reference of the model imported at
 * those sizes, time it. */
static int run_sized_model(const options *o, const mlc_gmodule *m, const kernels *k,
                           mlc_array **in, const int64_t *sizes) {
  mlc_error err;
  const mlc_gfunc *f = mlc_graph_main(m);
  mlc_gmodule *ref = mlc_graph_load_at(o->model, o->input_shapes, o->n_dims, o->dims, sizes, &err);
  mlc_grunner *r = ref ? mlc_graph_runner_new(m, k, &err) : NULL;
  if (!r) {
    mlc_graph_free(ref);
    return fail(&err);
  }
  int n = f->n_params + f->n_outputs;
  mlc_array **out = mlc_xmalloc(sizeof *out * (size_t)(2 * f->n_outputs + 1)), **want = out + f->n_outputs;
  void **ptrs = mlc_xmalloc(sizeof *ptrs * (size_t)(n + 1));
  for (int i = 0; i < f->n_outputs; i++) {
    int64_t shape[MLC_GRAPH_MAX_DIMS];
    mlc_gvar_shape_at(m, f->outputs[i], sizes, shape);
    out[i] = mlc_array_new(f->outputs[i]->type.dtype, f->outputs[i]->type.ndim, shape);
    want[i] = mlc_array_new(f->outputs[i]->type.dtype, f->outputs[i]->type.ndim, shape);
    ptrs[f->n_params + i] = out[i]->data;
  }
  for (int i = 0; i < f->n_params; i++) ptrs[i] = in[i]->data;
  printf("sizes:");
  for (int s = 0; s < m->n_sizes; s++) printf(" %s=%lld", m->sizes[s].name, (long long)sizes[s]);
  printf("\n");
  sized_run sr = {r, sizes, ptrs, ptrs + f->n_params, &err};
  int rc = 0;
  if (!run_sized_once(&sr) || !mlc_graph_reference(ref, in, want, &err)) rc = fail(&err);
  for (int i = 0; i < f->n_outputs && !rc; i++) {
    double max_err;
    bool ok = mlc_check_close(out[i], want[i], MLC_CHECK_RTOL, check_atol(ref), &max_err);
    if (o->run) print_output(f->outputs[i], out[i]);
    if (o->run || !ok) print_check(f->outputs[i], ref, max_err, ok);
    if (!ok) rc = 1;
  }
  if (!rc && o->run && !write_run_outputs(o, f, out, &err)) rc = fail(&err);
  if (!rc) {
    double *ts = mlc_xmalloc(sizeof *ts * (size_t)o->repeat);
    mlc_timing_opts to = {.repeat = o->repeat, .number = 1};
    mlc_graph_runner_profile(r, o->report);
    if (mlc_time_calls(run_sized_once, &sr, &to, ts, NULL, NULL, &err) < 0) rc = fail(&err);
    else {
      if (o->report) print_sized_report(k, m, r);
      printf("run: %.1f us (median of %d)\n", mlc_median(ts, o->repeat) * 1e6, o->repeat);
    }
    mlc_free(ts);
  }
  for (int i = 0; i < 2 * f->n_outputs; i++) mlc_array_free(out[i]);
  mlc_free(out);
  mlc_free(ptrs);
  mlc_graph_runner_free(r);
  mlc_graph_free(ref);
  return rc;
}

/* The C functions the model calls (call_extern): nothing to compile or
 * tune, the program links them. */
static void list_externs(const mlc_gmodule *m) {
  const mlc_gfunc *f = mlc_graph_main(m);
  for (int i = 0; i < f->n_bindings; i++) {
    const mlc_gbinding *b = &f->bindings[i];
    int calls = 0;
    bool first = b->kind == MLC_GCALL_EXTERN;
    for (int j = 0; j < f->n_bindings && first; j++) {
      const mlc_gbinding *c = &f->bindings[j];
      if (c->kind != MLC_GCALL_EXTERN || strcmp(c->extern_func, b->extern_func) != 0) continue;
      first = j >= i;
      calls++;
    }
    if (first)
      fprintf(stderr, "mlc-compile: %-36s extern            calls %d  (call_extern: the "
                      "program's own function)\n", b->extern_func, calls);
  }
}

/* Each distinct kernel as a task file: the prim_func renamed main. */
static bool dump_tasks(const char *dir, const mlc_gmodule *m, mlc_error *err) {
  mlc_gtask *ts;
  int n = mlc_graph_extract_tasks(m, &ts);
  mlc_arena *a = mlc_arena_new();
  bool ok = true;
  for (int i = 0; i < n && ok; i++) {
    const char *path = mlc_arena_printf(a, "%s/%s.py", dir, mlc_graph_symbol(a, m, ts[i].func));
    mlc_prim_func *f = mlc_graph_task_func(a, &ts[i]);
    mlc_str s = {0};
    mlc_print_func(&s, f);
    ok = mlc_write_file(path, s.data, s.len, err);
    if (ok) fprintf(stderr, "mlc-compile: wrote %s (called %d times)\n", path, ts[i].calls);
    mlc_str_free(&s);
  }
  mlc_arena_free(a);
  mlc_free(ts);
  return ok;
}

/* The model through the passes: as loaded, or with --dim one module for
 * every size. */
static mlc_gmodule *load_lowered(const options *o, mlc_error *err) {
  if (o->n_dims)
    return mlc_graph_load_sized(o->model, o->input_shapes, o->n_dims, o->dims, o->fuse_max_ops, err);
  mlc_gmodule *m = load_model(o, err);
  if (!m) return NULL;
  m->fuse_max_ops = o->fuse_max_ops;
  bool at_load = o->print_after && strcmp(o->print_after, "load") == 0;
  if (at_load) show(m, "load", NULL);
  if (!mlc_graph_run_pipeline(m, at_load ? NULL : o->print_after, show, NULL, err)) {
    mlc_graph_free(m);
    return NULL;
  }
  return m;
}

static int compile_model(const options *o, const mlc_target *t) {
  mlc_error err;
  double t0 = now_ms();
  mlc_gmodule *m = load_lowered(o, &err);
  if (!m) return fail(&err);
  int rc = 0;
  double t_graph = now_ms() - t0;
  mlc_array **in = NULL;
  const mlc_gfunc *mf = mlc_graph_main(m);
  int64_t sizes[MLC_GRAPH_MAX_SIZES];
  if ((o->run || o->report) &&
      (!(mlc_graph_load_externs(m, o->n_externs, o->externs, &err) ||
         mlc_error_prefix(&err, "%s", o->model)) ||
       !(in = o->n_dims ? make_sized_inputs(o, m, sizes, &err) : make_inputs(o, m, &err)))) {
    mlc_graph_free(m);
    return fail(&err);
  }
  if (o->dump_tasks) { /* alone, it only writes the task files */
    bool ok = dump_tasks(o->dump_tasks, m, &err);
    bool more = o->output || o->header || o->run || o->report || o->print_after;
    if (!ok || !more) {
      for (int i = 0; in && i < mf->n_params; i++) mlc_array_free(in[i]);
      mlc_free(in);
      mlc_graph_free(m);
      return ok ? 0 : fail(&err);
    }
  }
  if (m->tir->n_funcs == 0) { /* an object of no functions cannot be built */
    for (int i = 0; in && i < mf->n_params; i++) mlc_array_free(in[i]);
    mlc_free(in);
    mlc_graph_free(m);
    fprintf(stderr, "mlc-compile: error: %s: no kernels to compile (every node calls an extern "
                    "function)\n", o->model);
    return 1;
  }
  kernels k;
  double ms;
  if (!compile(o, t, m, NULL, NULL, &k, &ms, &err) || !write_outputs(o, t, &k, m, &err)) {
    rc = fail(&err);
  } else {
    list_kernels(&k, k.calls, !o->no_schedule);
    mlc_gtask *tasks;
    int nt = mlc_graph_extract_tasks(m, &tasks);
    fprintf(stderr, "mlc-compile: %s: %d kernels, %d distinct tasks; graph passes %.1f ms, "
                    "codegen %.1f ms\n", m->name, k.n, nt, t_graph, ms);
    mlc_free(tasks);
    list_externs(m);
    if (o->n_dims && (o->run || o->report)) {
      rc = run_sized_model(o, m, &k, in, sizes);
    } else if (o->run || o->report) {
      mlc_gmodule *ref = load_model(o, &err);
      rc = ref && mlc_graph_load_externs(ref, o->n_externs, o->externs, &err)
               ? run_model(o, m, ref, &k, in)
               : fail(&err);
      mlc_graph_free(ref);
    }
  }
  for (int i = 0; in && i < mf->n_params; i++) mlc_array_free(in[i]);
  mlc_free(in);
  mlc_gcompiled_free(&k);
  mlc_graph_free(m);
  return rc;
}

static int compile_main(int argc, char **argv, options *opts) {
  int rc = parse_args(argc, argv, opts);
  if (rc) return rc;
  const options o = *opts;
  /* library kernels run by --run/--report/--verify: OpenBLAS's kernels for
   * this CPU (it reads the variable when it loads, at the first call) */
  const char *ct = mlc_rt_blas_coretype(), *env_ct = getenv("OPENBLAS_CORETYPE");
  if (ct && (!env_ct || !*env_ct)) setenv("OPENBLAS_CORETYPE", ct, 1);
  mlc_target t;
  mlc_error err;
  if (!mlc_target_parse(o.target, &t, &err)) {
    fprintf(stderr, "mlc-compile: error: %s\n", err.msg);
    return 2;
  }
  if (mlc_target_device(&t) == MLC_DEVICE_CUDA) {
    if (o.model)
      return usage_error("%s", "--target cuda compiles one kernel (--task or --task-file); "
                               "models run on the CPU only for now");
    if (o.no_schedule || o.verify)
      return usage_error("%s", "--no-schedule and --verify go with CPU targets (a GPU kernel "
                               "needs its loops bound; --verify runs kernels on the CPU)");
  } else if (o.ptx) {
    return usage_error("%s", "--ptx goes with --target cuda");
  }
  for (int i = 0; i < o.n_intrins; i++)
    if (!mlc_tensor_intrin_register_file(o.intrins[i], NULL, &err)) {
      fprintf(stderr, "mlc-compile: error: --intrin %s: %s\n", o.intrins[i], err.msg);
      return 1;
    }
  if (o.task_file) return compile_task_file(&o, &t);
  return o.task ? compile_task(&o, &t) : compile_model(&o, &t);
}

int main(int argc, char **argv) {
  options o = {.arena = mlc_arena_new()};
  int rc = compile_main(argc, argv, &o);
  mlc_arena_free(o.arena);
  return rc;
}
