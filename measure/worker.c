/* measure: the worker processes (`mlc-worker build`, `mlc-worker run`).
 *
 * A worker reads one request frame, answers with one frame, and repeats
 * until end of input. The protocol descriptors are moved off fds 0 and 1
 * first, so that nothing a library prints can corrupt a frame. Workers
 * never dump core (a crash is an expected outcome of search).
 */
#include "measure/refcache.h"
#include "measure/runner_internal.h"
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "targets/runtime/mlcrt.h"

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

static bool faults_enabled;
static int proto_out = 1;

/* ---- replies ---------------------------------------------------------- */

static void reply_error(mlc_str *s, mlc_measure_status st, const char *msg) {
  frame_begin(s, MLC_FRAME_ERROR);
  frame_str(s, mlc_measure_status_name(st));
  frame_str(s, msg);
  frame_end(s);
}

/* Test-only misbehaviour shared by both kinds of worker. */
static void hang_forever(void) {
  for (;;) sleep(1);
}

static void write_garbage(void) {
  static const char junk[] = "this is not a frame\n\x01\x02\x03\xff\xfe garbage garbage";
  frame_write_all(proto_out, junk, sizeof junk);
  hang_forever();
}

static void crash_segv(void) {
  signal(SIGSEGV, SIG_DFL); /* a sanitizer's handler would exit instead */
  raise(SIGSEGV);
}

static void crash_fpe(void) {
  signal(SIGFPE, SIG_DFL);
#ifndef __SANITIZE_ADDRESS__
  volatile int zero = 0, one = 1;
  volatile int q = one / zero; /* the real trap, as a kernel would hit it */
  (void)q;
#endif
  raise(SIGFPE);
}

/* ---- builder ------------------------------------------------------------ */

static mlc_prim_func *pick_main(mlc_module *m) {
  mlc_prim_func *f = mlc_module_find(m, "main");
  return f ? f : (m->n_funcs == 1 ? m->funcs[0] : NULL);
}

static void args_of(const mlc_prim_func *f, int *n, frame_arg *args) {
  *n = f->n_params;
  for (int i = 0; i < f->n_params; i++) {
    const mlc_buffer *b = f->params[i];
    args[i].dtype = (uint32_t)b->dtype;
    args[i].ndim = (uint32_t)b->ndim;
    for (int d = 0; d < b->ndim; d++) args[i].shape[d] = b->shape[d];
  }
}

/* Whether the function runs any loop on the thread team. */
static bool is_parallel_loop(const mlc_stmt *s, void *ud) {
  MLC_UNUSED(ud);
  return s->kind == MLC_STMT_FOR && s->loop.kind == MLC_FOR_PARALLEL;
}

static bool has_parallel(const mlc_stmt *s) { return mlc_stmt_any(s, is_parallel_loop, NULL); }

/* A workload's reference with its float32 matrix products handed to
 * OpenBLAS, where the builder finds it (NULL otherwise, or when no block
 * is one): the unscheduled form of a 1024^3 product takes seconds a call,
 * the library milliseconds. The library call is checked against the
 * interpreter in its tests (test_schedule_library); references cached on
 * disk are keyed by the reference object, so the two kinds never mix. */
static mlc_sched *library_reference(const mlc_prim_func *f) {
  if (mlc_rt_blas_error()[0]) return NULL;
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv root, *blocks;
  mlc_error e;
  int n = 0, handed = 0;
  if (mlc_sched_get_block(s, "root", NULL, &root, &e)) n = mlc_sched_get_child_blocks(s, root, &blocks, &e);
  for (int i = 0; i < n; i++) handed += mlc_sched_library_call(s, blocks[i], "openblas", &e);
  if (handed) return s;
  mlc_sched_free(s);
  return NULL;
}

/* Replay (when a trace is given), verify, lower and compile. *threads: the
 * threads the kernel's parallel loops will use (1: none), which the
 * runner needs to tell a kernel starved of cores from a serial one. */
static bool build_one(mlc_arena *a, const char *workload, const char *trace,
                      const char *target, const char *symbol, mlc_object *obj, int *n_args,
                      frame_arg *args, uint32_t *threads, mlc_error *err) {
  mlc_module *m = mlc_parse_module(a, "workload.py", workload, err);
  if (!m) return false;
  mlc_prim_func *f = pick_main(m);
  if (!f) return mlc_error_set(err, "workload has no prim_func \"main\"");
  if (f->n_params > MLC_MEASURE_MAX_ARGS) return mlc_error_set(err, "too many parameters");
  for (int i = 0; i < f->n_params; i++)
    if (f->params[i]->ndim > 8) return mlc_error_set(err, "parameter of rank > 8");
  mlc_target t;
  if (!mlc_target_parse(target, &t, err)) return false;
  args_of(f, n_args, args);
  const mlc_prim_func *built = f;
  mlc_sched *s = NULL;
  if (trace && *trace) {
    mlc_trace *tr = mlc_trace_from_json(a, trace, strlen(trace), err);
    if (!tr) return mlc_error_prefix(err, "trace");
    s = mlc_sched_new(f, 1);
    if (!mlc_sched_replay(s, tr, NULL, NULL, err)) {
      mlc_sched_free(s);
      return mlc_error_prefix(err, "replay");
    }
    built = mlc_sched_func(s);
  } else if (strcmp(symbol, MLC_MEASURE_REF_SYMBOL) == 0 && (s = library_reference(f)) != NULL) {
    built = mlc_sched_func(s);
  }
  if (built->n_sizes > 0) {
    if (s) mlc_sched_free(s);
    return mlc_error_set(err, "%s has size vars: measure it at given sizes (mlc_func_specialize)",
                         built->name);
  }
  const char *syms[1] = {symbol};
  *threads = has_parallel(built->body) ? (uint32_t)mlc_rt_num_threads(t.num_cores) : 1;
  bool ok = mlc_verify_func(built, err) && mlc_target_build(&t, 1, &built, syms, NULL, obj, err);
  if (s) mlc_sched_free(s);
  return ok;
}

static void serve_build(frame_reader *r, mlc_str *reply) {
  char *workload = frame_get_str(r), *trace = frame_get_str(r);
  char *target = frame_get_str(r), *symbol = frame_get_str(r);
  uint32_t fault = frame_get_u32(r);
  if (r->bad) {
    reply_error(reply, MLC_MEASURE_PROTOCOL_ERROR, "malformed build request");
  } else {
    if (faults_enabled && fault == MLC_FAULT_BUILD_CRASH) crash_segv();
    if (faults_enabled && fault == MLC_FAULT_BUILD_HANG) hang_forever();
    if (faults_enabled && fault == MLC_FAULT_BUILD_GARBAGE) write_garbage();
    mlc_arena *a = mlc_arena_new();
    mlc_object obj = {0};
    frame_arg args[MLC_MEASURE_MAX_ARGS];
    int n_args = 0;
    uint32_t threads = 1;
    mlc_error err = {{0}};
    if (build_one(a, workload, trace, *target ? target : "llvm", symbol, &obj, &n_args, args,
                  &threads, &err)) {
      frame_begin(reply, MLC_FRAME_BUILD_OK);
      frame_bytes(reply, obj.data, obj.len);
      frame_args(reply, n_args, args);
      frame_u32(reply, threads);
      frame_end(reply);
    } else {
      reply_error(reply, MLC_MEASURE_BUILD_ERROR, err.msg);
    }
    mlc_object_free(&obj);
    mlc_arena_free(a);
  }
  mlc_free(workload), mlc_free(trace), mlc_free(target), mlc_free(symbol);
}

/* ---- runner ---------------------------------------------------------------- */

/* Reference outputs (every parameter after the unscheduled kernel ran),
 * kept for a few workloads. */
typedef struct ref_entry {
  uint64_t key; /* workload key mixed with the seed; 0: empty */
  int n;
  mlc_array *arrays;
} ref_entry;

#define REF_CACHE MLC_RUNNER_REF_CACHE
static ref_entry ref_cache[REF_CACHE];
static int ref_next;

static void free_arrays(int n, mlc_array *xs) {
  for (int i = 0; xs && i < n; i++) mlc_free(xs[i].data);
  mlc_free(xs);
}

static bool read_run_req(frame_reader *r, run_req *q) {
  q->key = frame_get_u64(r);
  q->symbol = frame_get_str(r);
  q->obj = frame_get_bytes(r, &q->obj_len);
  q->ref_symbol = frame_get_str(r);
  q->ref_obj = frame_get_bytes(r, &q->ref_len);
  q->n_args = frame_get_args(r, MLC_MEASURE_MAX_ARGS, q->args);
  q->number = frame_get_u32(r);
  q->repeat = frame_get_u32(r);
  q->min_repeat_ms = frame_get_f64(r);
  q->flush = frame_get_u32(r);
  q->seed = frame_get_u64(r);
  q->rtol = frame_get_f64(r);
  q->atol = frame_get_f64(r);
  q->max_bytes = frame_get_u64(r);
  q->fault = frame_get_u32(r);
  if (!faults_enabled) q->fault = MLC_FAULT_NONE; /* the runners act on any they see */
  q->max_call_sec = frame_get_f64(r);
  q->threads = frame_get_u32(r);
  q->retime_budget_s = frame_get_f64(r);
  return !r->bad && q->threads >= 1 && q->repeat >= 1 && q->repeat <= MLC_MEASURE_MAX_REPEAT &&
         q->number >= 1;
}

/* Bytes the arguments need; false when the count overflows. */
static bool args_bytes(const run_req *q, uint64_t *total) {
  uint64_t sum = 0;
  for (int i = 0; i < q->n_args; i++) {
    uint64_t n = (uint64_t)mlc_dtype_bytes((mlc_dtype)q->args[i].dtype);
    for (uint32_t d = 0; d < q->args[i].ndim; d++)
      if (__builtin_mul_overflow(n, (uint64_t)q->args[i].shape[d], &n)) return false;
    if (__builtin_add_overflow(sum, n, &sum)) return false;
  }
  *total = sum;
  return true;
}

/* Fresh arguments from the seeded stream: the same values every time. */
static mlc_array *make_args(const run_req *q) {
  mlc_array *xs = mlc_xmalloc(sizeof(mlc_array) * (size_t)(q->n_args + 1));
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, q->seed, 0x5eed);
  for (int i = 0; i < q->n_args; i++) {
    mlc_array *x = mlc_array_new((mlc_dtype)q->args[i].dtype, (int)q->args[i].ndim,
                                 q->args[i].shape);
    mlc_array_fill_random(x, &rng);
    xs[i] = *x;
    mlc_free(x);
  }
  return xs;
}

/* The runner of an object: by its format (runner_internal.h). */
static const runner_impl *runner_for(const void *obj, size_t len) {
  return runner_cuda.owns(obj, len) ? &runner_cuda : &runner_cpu;
}

/* Load obj with its runner, look up symbol, call it once on fresh
 * arguments; *k_out: the loaded kernel. */
static mlc_array *load_and_call(const run_req *q, const runner_impl *rn, const void *obj,
                                size_t len, const char *symbol, void **k_out, double *call_sec,
                                mlc_measure_status *st, mlc_error *err) {
  void *k = rn->load(obj, len, symbol, err);
  if (!k) {
    *st = MLC_MEASURE_RUNTIME_ERROR;
    return NULL;
  }
  mlc_array *xs = make_args(q);
  int32_t rc = 0;
  double t0 = mlc_now_sec();
  bool ran = rn->call(k, q->n_args, xs, &rc, err);
  *call_sec = mlc_now_sec() - t0;
  if (!ran || rc != 0) {
    if (ran) mlc_error_set(err, "kernel returned %d (an allocation inside it failed)", (int)rc);
    *st = ran ? MLC_MEASURE_ALLOC_ERROR : MLC_MEASURE_RUNTIME_ERROR;
    free_arrays(q->n_args, xs);
    rn->unload(k);
    return NULL;
  }
  *k_out = k;
  return xs;
}

/* The reference cache's directory (`mlc-worker run --ref-cache DIR`), or
 * NULL; a store that failed is reported once. */
static const char *ref_dir;
static bool ref_store_failed;

/* Where the reference of q stands in the cache on disk: read into
 * `seeded` (q's fresh arguments, untouched unless it was found), or
 * missing, or refused (said on stderr). */
static mlc_measure_ref cached_reference(const run_req *q, const refcache_key *rk, mlc_array *seeded) {
  mlc_error why = {{0}};
  switch (refcache_load(ref_dir, rk, q->n_args, seeded, q->max_bytes, &why)) {
  case REFCACHE_LOADED: return MLC_MEASURE_REF_CACHED;
  case REFCACHE_REFUSED:
    fprintf(stderr, "mlc-worker: reference cache %s: an entry for this workload was refused (%s); "
            "its reference is computed again\n", ref_dir, why.msg);
    return MLC_MEASURE_REF_RECOMPUTED;
  case REFCACHE_MISSING: break;
  }
  return MLC_MEASURE_REF_COMPUTED;
}

static void store_reference(const run_req *q, const refcache_key *rk, const mlc_array *seeded,
                            const mlc_array *ref) {
  mlc_error e = {{0}};
  if (!refcache_store(ref_dir, rk, q->n_args, seeded, ref, &e) && !ref_store_failed) {
    fprintf(stderr, "mlc-worker: reference cache: %s (references are computed, not kept)\n", e.msg);
    ref_store_failed = true;
  }
}

static ref_entry *reference(const run_req *q, mlc_measure_ref *src, mlc_measure_status *st,
                            mlc_error *err) {
  uint64_t key = mlc_hash_combine(q->key, q->seed) | 1;
  *src = MLC_MEASURE_REF_HELD;
  for (int i = 0; i < REF_CACHE; i++)
    if (ref_cache[i].key == key && ref_cache[i].n == q->n_args) return &ref_cache[i];
  if (q->ref_len == 0) { /* the pool asks again with the object (pool.c) */
    *st = MLC_MEASURE_PROTOCOL_ERROR;
    return mlc_error_set(err, "no reference object sent and none cached"), NULL;
  }
  refcache_key rk = {q->key, q->seed, q->ref_obj, q->ref_len, q->ref_symbol};
  mlc_array *seeded = ref_dir ? make_args(q) : NULL, *xs = NULL;
  *src = seeded ? cached_reference(q, &rk, seeded) : MLC_MEASURE_REF_COMPUTED;
  if (*src == MLC_MEASURE_REF_CACHED) {
    xs = seeded;
  } else {
    const runner_impl *rn = runner_for(q->ref_obj, q->ref_len);
    void *k = NULL;
    double call_sec;
    xs = load_and_call(q, rn, q->ref_obj, q->ref_len, q->ref_symbol, &k, &call_sec, st, err);
    if (xs) rn->unload(k);
    if (xs && seeded) store_reference(q, &rk, seeded, xs);
    free_arrays(q->n_args, seeded);
    if (!xs) return (void)mlc_error_prefix(err, "reference kernel"), NULL;
  }
  ref_entry *e = &ref_cache[ref_next];
  ref_next = (ref_next + 1) % REF_CACHE;
  free_arrays(e->n, e->arrays);
  *e = (ref_entry){key, q->n_args, xs};
  return e;
}

static double max_abs(const mlc_array *x) {
  double m = 0;
  int64_t n = mlc_array_numel(x);
  for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(mlc_array_get(x, i)));
  return m;
}

/* Every parameter must match: the kernel may change only its outputs. */
static bool compare(const run_req *q, const mlc_array *got, const ref_entry *ref, double *max_err,
                    mlc_error *err) {
  bool ok = true;
  *max_err = 0;
  for (int i = 0; i < q->n_args; i++) {
    double me = 0;
    if (!mlc_check_close(&got[i], &ref->arrays[i], q->rtol, q->atol, &me) && ok) {
      mlc_error_set(err, "parameter %d differs from the reference: max error %g", i, me);
      ok = false;
    }
    *max_err = fmax(*max_err, me);
  }
  return ok;
}

static void run_faults_before(run_req *q) {
  switch ((mlc_measure_fault)q->fault) {
  case MLC_FAULT_RUN_SEGV: crash_segv(); break;
  case MLC_FAULT_RUN_FPE: crash_fpe(); break;
  case MLC_FAULT_RUN_ABORT: signal(SIGABRT, SIG_DFL); abort();
  case MLC_FAULT_RUN_HANG: hang_forever(); break;
  case MLC_FAULT_RUN_GARBAGE: write_garbage(); break;
  case MLC_FAULT_RUN_ALLOC:
    if (q->n_args > 0) q->args[0].shape[0] *= (int64_t)1 << 50;
    break;
  case MLC_FAULT_NONE:
  case MLC_FAULT_BUILD_CRASH:
  case MLC_FAULT_BUILD_HANG:
  case MLC_FAULT_BUILD_GARBAGE:
  case MLC_FAULT_RUN_WRONG:
  case MLC_FAULT_RUN_ZERO_TIME:
  case MLC_FAULT_RUN_DISTURB:
    break;
  }
}

static void run_checked(run_req *q, mlc_str *reply) {
  mlc_error err = {{0}};
  mlc_measure_status st = MLC_MEASURE_RUNTIME_ERROR;
  uint64_t bytes;
  run_faults_before(q);
  if (!args_bytes(q, &bytes) || bytes > q->max_bytes) {
    mlc_error_set(&err, "arguments need %s%llu bytes, over the limit of %llu",
                  args_bytes(q, &bytes) ? "" : "more than ", (unsigned long long)bytes,
                  (unsigned long long)q->max_bytes);
    return reply_error(reply, MLC_MEASURE_ALLOC_ERROR, err.msg);
  }
  mlc_measure_ref ref_src;
  ref_entry *ref = reference(q, &ref_src, &st, &err);
  if (!ref) return reply_error(reply, st, err.msg);
  const runner_impl *rn = runner_for(q->obj, q->obj_len);
  void *k = NULL;
  double call_sec;
  mlc_array *xs = load_and_call(q, rn, q->obj, q->obj_len, q->symbol, &k, &call_sec, &st, &err);
  if (!xs) return reply_error(reply, st, err.msg);
  if (q->fault == MLC_FAULT_RUN_WRONG && q->n_args > 0) {
    mlc_array *out = &xs[q->n_args - 1];
    mlc_array_set(out, 0, mlc_array_get(out, 0) + 1.0 + 2 * max_abs(out));
  }
  double max_err, secs[MLC_MEASURE_MAX_REPEAT];
  /* A target asking for more threads than this machine's usable CPUs gets
   * only those cores' worth of CPU, disturbed or not. */
  int cpus = mlc_rt_num_threads(0);
  if (q->threads > (uint32_t)cpus) q->threads = (uint32_t)cpus;
  timing_watch w;
  int retimes = 0;
  if (!compare(q, xs, ref, &max_err, &err)) {
    reply_error(reply, MLC_MEASURE_WRONG_RESULT, err.msg);
  } else if (q->max_call_sec > 0 && call_sec > q->max_call_sec) {
    /* hopeless next to the best so far: not worth its timing runs */
    mlc_error_set(&err, "too slow: the checked call took %.3g s, over the limit of %.3g s "
                  "(stopped early)", call_sec, q->max_call_sec);
    reply_error(reply, MLC_MEASURE_TIMEOUT, err.msg);
  } else if (!rn->time(k, q, xs, secs, &w, &retimes, &err)) {
    reply_error(reply, MLC_MEASURE_RUNTIME_ERROR, err.msg);
  } else {
    if (q->fault == MLC_FAULT_RUN_ZERO_TIME) secs[0] = 0;
    frame_begin(reply, MLC_FRAME_RUN_OK);
    frame_f64(reply, max_err);
    frame_u32(reply, q->repeat);
    for (uint32_t r = 0; r < q->repeat; r++) frame_f64(reply, secs[r]);
    frame_u32(reply, w.disturbed);
    frame_u32(reply, (uint32_t)retimes);
    frame_u64(reply, (uint64_t)w.ivcsw);
    frame_f64(reply, w.cpu_ratio);
    frame_str(reply, w.disturbed ? w.why : "");
    frame_u32(reply, ref_src);
    frame_end(reply);
  }
  free_arrays(q->n_args, xs);
  rn->unload(k);
}

static void serve_run(frame_reader *r, mlc_str *reply) {
  run_req q = {.start = mlc_now_sec()};
  if (!read_run_req(r, &q)) reply_error(reply, MLC_MEASURE_PROTOCOL_ERROR, "malformed run request");
  else run_checked(&q, reply);
  mlc_free(q.symbol);
  mlc_free(q.ref_symbol);
}

/* ---- main loop ---------------------------------------------------------------- */

/* Keep the protocol on private descriptors; fd 0 reads /dev/null and fd 1
 * goes to stderr. */
static int take_protocol_fds(int *in) {
  *in = dup(0);
  int out = dup(1);
  int null = open("/dev/null", O_RDONLY);
  if (*in < 0 || out < 0 || null < 0) return -1;
  dup2(null, 0);
  dup2(2, 1);
  close(null);
  return out;
}

int mlc_measure_worker_serve(const char *mode, const mlc_measure_worker_opts *o, mlc_error *err) {
  int n_files = o->n_intrin_files;
  const char *const *files = o->intrin_files;
  ref_dir = o->ref_cache_dir && o->ref_cache_dir[0] ? o->ref_cache_dir : NULL;
  bool build = strcmp(mode, "build") == 0;
  if (!build && strcmp(mode, "run") != 0) return 2;
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  /* A tuner killed with SIGKILL takes its workers along, even one that
   * hangs or is stopped (a stopped builder would never see end of input). */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return 1;
  const char *f = getenv("MLC_WORKER_FAULTS");
  faults_enabled = f && strcmp(f, "1") == 0;
  /* A runner's faults are its kernels': let them kill it by their signal,
   * which the pool reports, even where a sanitizer installed handlers
   * (AddressSanitizer's reports a SEGV in JIT code, then exits 1). */
  if (!build) {
    const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (int i = 0; i < MLC_COUNTOF(sigs); i++) signal(sigs[i], SIG_DFL);
    /* Kernel threads each on a CPU of their own, as in a model that runs
     * kernels back to back (targets/runtime/parallel.c: without it a
     * thread woken after the cache flush may share the caller's CPU).
     * MLC_BIND_THREADS=0 in the tuner's environment turns it off. */
    setenv("MLC_BIND_THREADS", "1", 0);
  }
  /* Candidates tensorized with the host CPU's intrinsics replay here. */
  mlc_error ierr;
  if (!mlc_tensor_intrin_register_cpu(mlc_target_host_features(), NULL, &ierr)) return 1;
  for (int i = 0; i < n_files; i++)
    if (!mlc_tensor_intrin_register_file(files[i], NULL, err)) {
      mlc_error_prefix(err, "--intrin %s", files[i]);
      return 1;
    }
  int in;
  proto_out = take_protocol_fds(&in);
  if (proto_out < 0) return 1;
  mlc_str reply = {0};
  int status = 0;
  for (;;) {
    uint8_t hdr[MLC_FRAME_HEADER];
    int got = frame_read_all(in, hdr, sizeof hdr);
    if (got <= 0) {
      status = got == 0 ? 0 : 1;
      break;
    }
    uint32_t type, len;
    if (frame_check_header(hdr, &type, &len) ||
        type != (build ? MLC_FRAME_BUILD_REQ : MLC_FRAME_RUN_REQ)) {
      status = 1;
      break;
    }
    uint8_t *payload = mlc_xmalloc(len + 1);
    if (frame_read_all(in, payload, len) != 1 && len > 0) {
      mlc_free(payload);
      status = 1;
      break;
    }
    frame_reader r = {payload, len, 0, false};
    if (build) serve_build(&r, &reply);
    else serve_run(&r, &reply);
    mlc_free(payload);
    if (!frame_write_all(proto_out, reply.data, reply.len)) {
      status = 1;
      break;
    }
  }
  mlc_str_free(&reply);
  for (int i = 0; i < REF_CACHE; i++) free_arrays(ref_cache[i].n, ref_cache[i].arrays);
  return status;
}
