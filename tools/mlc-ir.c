/* mlc-ir: look at, check and run tensor programs.
 *
 *   mlc-ir print --task matmul [--shape 128,128,128]   unscheduled TensorIR
 *   mlc-ir check FILE.py                               parse, verify, reprint
 *   mlc-ir eval FILE.py | --task NAME [--shape S]      interpret on seeded inputs
 */
#include "ir/ir.h"
#include "tasks/tasks.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *usage_text =
    "usage: mlc-ir COMMAND [options]\n"
    "\n"
    "Commands:\n"
    "  print --task NAME [--shape S]     print a built-in task's unscheduled TensorIR\n"
    "  check FILE.py                     parse and verify a TVMScript file, print it canonically\n"
    "  eval  FILE.py | --task NAME       run every function in the reference interpreter on\n"
    "                                    seeded random inputs; print a checksum of each output\n"
    "\n"
    "Options:\n"
    "  -t, --task NAME      built-in workload (see --list-tasks)\n"
    "  -s, --shape S        comma-separated shape for --task, e.g. 128,128,128\n"
    "      --seed N         random seed for eval inputs (default 1)\n"
    "      --list-tasks     list built-in tasks with their shapes\n"
    "  -h, --help           show this help\n"
    "\n"
    "Exit status: 0 success, 1 failure (bad program, failed check), 2 bad usage.\n";

typedef struct options {
  const char *command;
  const char *file;
  const char *task;
  const char *shape;
  uint64_t seed;
} options;

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

static void list_tasks(void) {
  for (int i = 0; i < mlc_task_count(); i++) {
    const mlc_task_def *d = mlc_task_at(i);
    char shape[128];
    mlc_task_shape_str(d, d->defaults, shape, sizeof shape);
    printf("%-18s %-22s default %-22s %s\n", d->name, d->shape_doc, shape, d->description);
  }
}

/* The program to work on: a file's module, or a built-in task wrapped in a
 * module. Returns NULL after printing the error. */
static mlc_module *load_program(mlc_arena *a, const options *o, bool *is_task) {
  mlc_error err;
  *is_task = o->task != NULL;
  if (o->task) {
    const mlc_task_def *d = mlc_task_find(o->task);
    if (!d) {
      fprintf(stderr, "mlc-ir: error: unknown task '%s' (tasks: %s)\n", o->task, mlc_task_names());
      return NULL;
    }
    int64_t shape[MLC_TASK_MAX_DIMS];
    if (!mlc_task_parse_shape(d, o->shape, shape, &err)) {
      fail(err.msg);
      return NULL;
    }
    mlc_module *m = mlc_module_new(a, NULL);
    mlc_module_add(a, m, mlc_task_build(a, d, shape));
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

static void print_program(const mlc_module *m) {
  mlc_str out = {0};
  if (m->name) mlc_print_module(&out, m);
  else
    for (int i = 0; i < m->n_funcs; i++) {
      if (i) mlc_str_putc(&out, '\n');
      mlc_print_func(&out, m->funcs[i]);
    }
  fputs(mlc_str_cstr(&out), stdout);
  mlc_str_free(&out);
}

static int cmd_print_or_check(mlc_arena *a, const options *o) {
  bool is_task;
  mlc_module *m = load_program(a, o, &is_task);
  if (!m) return 1;
  mlc_error err;
  if (!mlc_verify_module(m, &err)) return fail(err.msg);
  print_program(m);
  return 0;
}

/* A parameter is an output when some block writes it. */
static bool block_writes(const mlc_stmt *s, const mlc_buffer *b);

static bool block_writes_in_block(const mlc_block *blk, const mlc_buffer *b) {
  for (int i = 0; i < blk->n_writes; i++)
    if (blk->writes[i].buf == b) return true;
  return (blk->init && block_writes(blk->init, b)) || block_writes(blk->body, b);
}

static bool block_writes(const mlc_stmt *s, const mlc_buffer *b) {
  switch (s->kind) {
  case MLC_STMT_FOR:
    return block_writes(s->loop.body, b);
  case MLC_STMT_BLOCK_REALIZE:
    return block_writes_in_block(s->realize.block, b);
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++)
      if (block_writes(s->seq.stmts[i], b)) return true;
    return false;
  case MLC_STMT_STORE:
    return s->store.buf == b;
  case MLC_STMT_IF:
    return block_writes(s->if_.then_s, b) || (s->if_.else_s && block_writes(s->if_.else_s, b));
  case MLC_STMT_ALLOCATE:
    return block_writes(s->alloc.body, b);
  case MLC_STMT_EVALUATE:
    return false;
  }
  mlc_unreachable();
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
  for (int d = 0; d < b->ndim; d++) printf(d ? ", %lld" : "%lld", (long long)b->shape[d]);
  printf("] sum=%.9g abs_sum=%.9g hash=%016llx\n", sum, abs_sum, (unsigned long long)h);
}

static bool eval_func(const mlc_prim_func *f, uint64_t seed) {
  mlc_array **args = mlc_xmalloc(sizeof(mlc_array *) * (size_t)(f->n_params + 1));
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, seed, 0);
  for (int i = 0; i < f->n_params; i++) {
    args[i] = mlc_array_for_buffer(f->params[i]);
    mlc_array_fill_random(args[i], &rng);
  }
  mlc_array *flat = mlc_xmalloc(sizeof(mlc_array) * (size_t)(f->n_params + 1));
  for (int i = 0; i < f->n_params; i++) flat[i] = *args[i];
  mlc_error err;
  bool ok = mlc_interp_run(f, flat, &err);
  printf("%s:\n", f->name);
  if (!ok) fprintf(stderr, "mlc-ir: error: %s: %s\n", f->name, err.msg);
  for (int i = 0; ok && i < f->n_params; i++)
    if (block_writes(f->body, f->params[i])) print_checksum(f->params[i], &flat[i]);
  for (int i = 0; i < f->n_params; i++) mlc_array_free(args[i]);
  mlc_free(args);
  mlc_free(flat);
  return ok;
}

static int cmd_eval(mlc_arena *a, const options *o) {
  bool is_task;
  mlc_module *m = load_program(a, o, &is_task);
  if (!m) return 1;
  mlc_error err;
  if (!mlc_verify_module(m, &err)) return fail(err.msg);
  bool ok = true;
  for (int i = 0; i < m->n_funcs; i++) ok = eval_func(m->funcs[i], o->seed) && ok;
  return ok ? 0 : 1;
}

static int parse_args(int argc, char **argv, options *o) {
  static const struct option longopts[] = {
      {"task", required_argument, 0, 't'},  {"shape", required_argument, 0, 's'},
      {"seed", required_argument, 0, 'S'},  {"list-tasks", no_argument, 0, 'L'},
      {"help", no_argument, 0, 'h'},        {0, 0, 0, 0},
  };
  int c;
  while ((c = getopt_long(argc, argv, "t:s:h", longopts, NULL)) != -1) {
    switch (c) {
    case 't': o->task = optarg; break;
    case 's': o->shape = optarg; break;
    case 'S': {
      char *end;
      o->seed = strtoull(optarg, &end, 10);
      if (*end || !*optarg) return usage_error("--seed expects a number, got '%s'", optarg);
      break;
    }
    case 'L': list_tasks(); exit(0);
    case 'h': fputs(usage_text, stdout); exit(0);
    default: return usage_error("%s", "bad option");
    }
  }
  if (optind >= argc) return usage_error("%s", "missing command (print, check, eval)");
  o->command = argv[optind++];
  if (optind < argc) o->file = argv[optind++];
  if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
  return 0;
}

int main(int argc, char **argv) {
  options o = {.seed = 1};
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc;
  bool wants_file = strcmp(o.command, "check") == 0;
  bool takes_either = strcmp(o.command, "eval") == 0 || strcmp(o.command, "print") == 0;
  if (!wants_file && !takes_either) return usage_error("unknown command '%s'", o.command);
  if (o.shape && !o.task) return usage_error("%s", "--shape needs --task");
  if (wants_file && (!o.file || o.task)) return usage_error("%s", "check needs exactly one FILE.py");
  if (takes_either && !!o.file == !!o.task)
    return usage_error("%s needs FILE.py or --task NAME (one of them)", o.command);
  mlc_arena *a = mlc_arena_new();
  rc = strcmp(o.command, "eval") == 0 ? cmd_eval(a, &o) : cmd_print_or_check(a, &o);
  mlc_arena_free(a);
  return rc;
}
