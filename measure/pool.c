/* measure: the pool of worker processes on the tuner's side.
 *
 * One event loop (poll) drives every worker; there are no threads. A
 * candidate moves QUEUED -> BUILDING -> BUILT -> RUNNING -> DONE; any fault
 * sends it to DONE with an error. A workload's reference kernel (its
 * unscheduled form, compiled for the host; worker.c hands its matrix
 * products to OpenBLAS) is built once per pool before its candidates run.
 */
#include "measure/runner_internal.h"
#include "targets/targets.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *const status_names[] = {
    "ok",           "build_error",   "crash",    "timeout",        "wrong_result",
    "runtime_error", "alloc_error",  "bad_time", "protocol_error", "spawn_error",
};
_Static_assert(sizeof status_names / sizeof status_names[0] == MLC_MEASURE_STATUS_COUNT,
               "one name per status");

const char *mlc_measure_status_name(mlc_measure_status s) {
  MLC_ASSERT((int)s >= 0 && (int)s < MLC_MEASURE_STATUS_COUNT);
  return status_names[s];
}

bool mlc_measure_status_from_name(const char *name, mlc_measure_status *out) {
  for (int i = 0; i < MLC_MEASURE_STATUS_COUNT; i++)
    if (strcmp(name, status_names[i]) == 0) return (*out = (mlc_measure_status)i), true;
  return false;
}

mlc_measure_opts mlc_measure_defaults(void) {
  return (mlc_measure_opts){
      .build_timeout_s = 30, .run_timeout_s = 20, .number = 1, .repeat = 3,
      .flush_cache = true, .pause_builders = true, .seed = 1, .rtol = 1e-3, .atol = 1e-3,
      .max_arg_bytes = (uint64_t)4 << 30,
  };
}

/* ---- state ------------------------------------------------------------ */

typedef enum { W_BUILD, W_RUN } worker_kind;

typedef struct worker {
  worker_kind kind;
  pid_t pid;       /* 0: not running */
  int fd;          /* our end of its stdin/stdout socket */
  int job;         /* candidate index, or -1 - workload index for a reference; NO_JOB */
  double start, deadline;
  bool stopped;    /* SIGSTOPped while the runner works */
  uint8_t *buf;    /* bytes received, not yet a whole frame */
  size_t len, cap;
} worker;
#define NO_JOB INT32_MIN

typedef enum { WL_NONE, WL_BUILDING, WL_READY, WL_FAILED } wl_state;

typedef struct workload {
  uint64_t key; /* hash of the TVMScript text */
  char *text;
  wl_state state;
  mlc_measure_status ref_status; /* why the reference failed (WL_FAILED) */
  mlc_object ref;
  char ref_error[400];
  int n_args;
  frame_arg args[MLC_MEASURE_MAX_ARGS];
  bool in_runner; /* the live runner has computed its reference (tuner's limits) */
  double atol;    /* the check's, from the function's MLC_ATTR_CHECK_ATOL (0: the pool's) */
} workload;

typedef enum { C_QUEUED, C_BUILDING, C_BUILT, C_RUNNING, C_DONE } cand_state;

typedef struct cand {
  char *trace, *target;
  mlc_measure_fault fault;
  double max_call_sec, run_timeout_s; /* 0: none (see mlc_measure_cand) */
  uint32_t threads; /* the built kernel's threads (BUILD_OK), for the runner's watch */
  int wl;
  cand_state state;
  mlc_object obj;
  mlc_measure_result res;
} cand;

struct mlc_measure {
  mlc_measure_opts o;
  char *path;
  int n_workers; /* builders first, then the runner */
  worker *w;
  MLC_VEC(workload) wls;
  cand *c;
  int n, n_done, n_returned;
  MLC_VEC(int) ready; /* finished candidates not yet returned */
  int ready_head;
  double pause_start; /* > 0 while builders are stopped */
  int spawns;
  int runner_refs; /* workloads whose reference the live runner computed */
  mlc_str out;        /* request being written */
  double sleep_s;     /* bench only (MLC_BENCH_SLEEP_MS): see sleep_step */
  int sleeping;       /* the candidate being slept on; -1: none */
  double wake;
};

/* ---- finding and starting workers -------------------------------------- */

static bool executable(const char *p) { return access(p, X_OK) == 0; }

static char *find_worker(const char *given) {
  if (given) return mlc_xstrdup(given);
  const char *env = getenv("MLC_WORKER");
  if (env && *env) return mlc_xstrdup(env);
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return NULL;
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  if (!slash) return NULL;
  *slash = 0;
  mlc_str p = {0};
  mlc_str_printf(&p, "%s/mlc-worker", exe);
  if (executable(p.data)) return mlc_str_take(&p);
  mlc_str_clear(&p);
  mlc_str_printf(&p, "%s/../bin/mlc-worker", exe);
  if (executable(p.data)) return mlc_str_take(&p);
  mlc_str_free(&p);
  return NULL;
}

static bool spawn(mlc_measure *m, worker *w, mlc_error *err) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return mlc_error_set(err, "socketpair: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
  char *argv[5 + 2 * MLC_MEASURE_MAX_INTRIN_FILES] = {m->path, w->kind == W_BUILD ? "build" : "run"};
  int argc = 2;
  for (int i = 0; i < m->o.n_intrin_files; i++) {
    argv[argc++] = "--intrin";
    argv[argc++] = (char *)m->o.intrin_files[i];
  }
  if (w->kind != W_BUILD && m->o.ref_cache_dir && m->o.ref_cache_dir[0]) {
    argv[argc++] = "--ref-cache";
    argv[argc++] = (char *)m->o.ref_cache_dir;
  }
  pid_t pid;
  int rc = posix_spawn(&pid, m->path, &fa, NULL, argv, environ);
  /* A worker binary being relinked right now is busy for a moment. */
  for (int tries = 0; (rc == ETXTBSY || rc == EAGAIN) && tries < 20; tries++) {
    usleep(50000);
    rc = posix_spawn(&pid, m->path, &fa, NULL, argv, environ);
  }
  posix_spawn_file_actions_destroy(&fa);
  close(sv[1]);
  if (rc != 0) {
    close(sv[0]);
    return mlc_error_set(err, "cannot start %s: %s", m->path, strerror(rc));
  }
  fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
  w->pid = pid;
  w->fd = sv[0];
  w->len = 0;
  w->stopped = false;
  m->spawns++;
  if (w->kind == W_RUN) { /* a fresh runner has no reference cached */
    for (int i = 0; i < m->wls.len; i++) m->wls.data[i].in_runner = false;
    m->runner_refs = 0;
  }
  return true;
}

/* Kill (if asked) and reap; describe how it ended into why. */
static void reap(worker *w, bool kill_it, char *why, size_t n) {
  if (w->pid <= 0) return;
  close(w->fd);
  int st = 0;
  /* A worker whose input ended exits on its own; give it 2 s. */
  for (int i = 0; !kill_it && i < 2000; i++) {
    pid_t r = waitpid(w->pid, &st, WNOHANG);
    if (r == w->pid) goto reaped;
    if (r < 0 && errno != EINTR) goto reaped;
    usleep(1000);
  }
  kill(w->pid, SIGKILL);
  while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR) {
  }
reaped:
  if (why && WIFSIGNALED(st))
    snprintf(why, n, "worker killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
  else if (why && WIFEXITED(st))
    snprintf(why, n, "worker exited with status %d", WEXITSTATUS(st));
  w->pid = 0;
  w->fd = -1;
  w->len = 0;
  w->stopped = false;
}

/* Copy with truncation (snprintf into a fixed buffer warns on purpose). */
static void set_text(char *dst, size_t n, const char *prefix, const char *text) {
  size_t a = strlen(prefix), b = strlen(text);
  if (a > n - 1) a = n - 1;
  if (b > n - 1 - a) b = n - 1 - a;
  memcpy(dst, prefix, a);
  memcpy(dst + a, text, b);
  dst[a + b] = 0;
}

/* ---- candidates ------------------------------------------------------------ */

static void finish(mlc_measure *m, int ci, mlc_measure_status st, const char *msg) {
  cand *c = &m->c[ci];
  MLC_ASSERT(c->state != C_DONE);
  c->res.status = st;
  if (st != MLC_MEASURE_OK) {
    snprintf(c->res.error, sizeof c->res.error, "%s: %s", mlc_measure_status_name(st), msg);
    c->res.n_secs = 0;
    c->res.mean_sec = 0;
    c->res.disturbed = false;
    c->res.retimes = 0;
    c->res.disturb_why[0] = 0;
  }
  c->state = C_DONE;
  mlc_object_free(&c->obj);
  m->n_done++;
  MLC_VEC_PUSH(m->ready, ci);
}

/* A workload's reference failed: its candidates cannot be checked. */
static void fail_workload(mlc_measure *m, int wi, mlc_measure_status st, const char *msg) {
  workload *wl = &m->wls.data[wi];
  wl->state = WL_FAILED;
  wl->ref_status = st;
  set_text(wl->ref_error, sizeof wl->ref_error, "", msg);
}

static const char *job_what(const worker *w) {
  return w->kind == W_RUN ? "running" : w->job < 0 ? "building the reference" : "building";
}

/* The worker's current job failed with st/msg; the worker is gone. */
static void job_failed(mlc_measure *m, worker *w, mlc_measure_status st, const char *msg) {
  int job = w->job;
  w->job = NO_JOB;
  if (job == NO_JOB) return;
  if (job < 0) {
    char buf[600];
    set_text(buf, sizeof buf, "reference kernel: ", msg);
    fail_workload(m, -1 - job, st, buf);
    return;
  }
  if (w->kind == W_BUILD) m->c[job].res.build_sec = mlc_now_sec() - w->start;
  else m->c[job].res.run_sec = mlc_now_sec() - w->start;
  finish(m, job, st, msg);
}

static void resume_builders(mlc_measure *m);

/* The worker misbehaved: kill it, charge its job. */
static void worker_fault(mlc_measure *m, worker *w, mlc_measure_status st, const char *what) {
  char msg[512];
  reap(w, true, NULL, 0);
  snprintf(msg, sizeof msg, "%s while %s", what, job_what(w));
  if (w->kind == W_RUN) resume_builders(m);
  job_failed(m, w, st, msg);
}

/* The worker's input ended (it died): reap it and say how. */
static void worker_died(mlc_measure *m, worker *w) {
  char why[256] = "worker died", msg[512];
  const char *what = job_what(w);
  reap(w, false, why, sizeof why);
  snprintf(msg, sizeof msg, "%s while %s", why, what);
  if (w->kind == W_RUN) resume_builders(m);
  job_failed(m, w, MLC_MEASURE_CRASH, msg);
}

/* ---- pausing builders ---------------------------------------------------- */

static void pause_builders(mlc_measure *m) {
  if (!m->o.pause_builders) return;
  m->pause_start = mlc_now_sec();
  for (int i = 0; i < m->n_workers; i++) {
    worker *w = &m->w[i];
    if (w->kind == W_BUILD && w->pid > 0 && w->job != NO_JOB && !w->stopped) {
      kill(w->pid, SIGSTOP);
      w->stopped = true;
    }
  }
}

static void resume_builders(mlc_measure *m) {
  if (m->pause_start <= 0) return;
  double paused = mlc_now_sec() - m->pause_start;
  m->pause_start = 0;
  for (int i = 0; i < m->n_workers; i++) {
    worker *w = &m->w[i];
    if (w->stopped && w->pid > 0) {
      kill(w->pid, SIGCONT);
      w->deadline += paused;
      w->start += paused;
    }
    w->stopped = false;
  }
}

/* ---- sending requests ------------------------------------------------------- */

/* Blocking send on the non-blocking socket, bounded by the timeout. */
static bool send_frame(worker *w, const mlc_str *s, double timeout) {
  size_t off = 0;
  double end = mlc_now_sec() + timeout;
  while (off < s->len) {
    ssize_t k = send(w->fd, s->data + off, s->len - off, MSG_NOSIGNAL);
    if (k > 0) {
      off += (size_t)k;
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    double left = end - mlc_now_sec();
    if (left <= 0) return false;
    struct pollfd p = {w->fd, POLLOUT, 0};
    poll(&p, 1, (int)(left * 1000) + 1);
  }
  return true;
}

static bool start_worker(mlc_measure *m, worker *w, int job, const char **why) {
  static mlc_error err;
  w->start = mlc_now_sec();
  int st;
  if (w->pid > 0 && waitpid(w->pid, &st, WNOHANG) == w->pid) {
    /* It died while idle (e.g. the OOM killer): not this job's fault. */
    close(w->fd);
    w->pid = 0;
    w->fd = -1;
    w->len = 0;
  }
  if (w->pid > 0 && w->len > 0) reap(w, true, NULL, 0); /* stray bytes after its last reply */
  if (w->pid <= 0 && !spawn(m, w, &err)) {
    *why = err.msg;
    return false;
  }
  w->job = job;
  w->start = mlc_now_sec();
  w->deadline = w->start + (w->kind == W_BUILD ? m->o.build_timeout_s : m->o.run_timeout_s);
  if (!send_frame(w, &m->out, 10.0)) {
    *why = NULL;
    return false;
  }
  return true;
}

/* Send a build request; a failure to start or write costs the job. */
static void send_build(mlc_measure *m, worker *w, int job) {
  const char *text, *trace = "", *target = "llvm", *symbol = MLC_MEASURE_REF_SYMBOL;
  uint32_t fault = 0;
  if (job < 0) {
    text = m->wls.data[-1 - job].text;
  } else {
    cand *c = &m->c[job];
    text = m->wls.data[c->wl].text;
    trace = c->trace;
    target = c->target;
    symbol = MLC_MEASURE_CAND_SYMBOL;
    fault = (uint32_t)c->fault;
    c->state = C_BUILDING;
  }
  frame_begin(&m->out, MLC_FRAME_BUILD_REQ);
  frame_str(&m->out, text);
  frame_str(&m->out, trace);
  frame_str(&m->out, target);
  frame_str(&m->out, symbol);
  frame_u32(&m->out, fault);
  frame_end(&m->out);
  const char *why;
  if (start_worker(m, w, job, &why)) return;
  if (why) {
    w->job = job;
    job_failed(m, w, MLC_MEASURE_SPAWN_ERROR, why);
  } else {
    worker_died(m, w);
  }
}

static void send_run(mlc_measure *m, worker *w, int ci) {
  cand *c = &m->c[ci];
  workload *wl = &m->wls.data[c->wl];
  const mlc_measure_opts *o = &m->o;
  mlc_str *s = &m->out;
  frame_begin(s, MLC_FRAME_RUN_REQ);
  frame_u64(s, wl->key);
  frame_str(s, MLC_MEASURE_CAND_SYMBOL);
  frame_bytes(s, c->obj.data, c->obj.len);
  frame_str(s, MLC_MEASURE_REF_SYMBOL);
  /* Not again while the runner surely holds the reference's outputs: it
   * is alive (start_worker below starts a fresh one otherwise), computed
   * them, and has computed no more workloads than it keeps. */
  bool held = w->pid > 0 && wl->in_runner && m->runner_refs <= MLC_RUNNER_REF_CACHE;
  frame_bytes(s, held ? NULL : wl->ref.data, held ? 0 : wl->ref.len);
  frame_args(s, wl->n_args, wl->args);
  frame_u32(s, (uint32_t)o->number);
  frame_u32(s, (uint32_t)o->repeat);
  frame_f64(s, o->min_repeat_ms);
  frame_u32(s, o->flush_cache);
  frame_u64(s, o->seed);
  frame_f64(s, o->rtol);
  frame_f64(s, wl->atol > 0 ? wl->atol : o->atol);
  frame_u64(s, o->max_arg_bytes);
  frame_u32(s, (uint32_t)c->fault);
  frame_f64(s, c->max_call_sec);
  frame_u32(s, c->threads);
  /* Re-timing a disturbed candidate may use half its run timeout, so that
   * a kernel near its early-abort limit is not killed for being re-timed. */
  double timeout = c->run_timeout_s > 0 && c->run_timeout_s < o->run_timeout_s && wl->in_runner
                       ? c->run_timeout_s : o->run_timeout_s;
  frame_f64(s, 0.5 * timeout);
  frame_end(s);
  c->state = C_RUNNING;
  pause_builders(m);
  const char *why;
  if (start_worker(m, w, ci, &why)) {
    /* the candidate's own timeout once no reference is to be computed */
    if (c->run_timeout_s > 0 && c->run_timeout_s < o->run_timeout_s && wl->in_runner)
      w->deadline = w->start + c->run_timeout_s;
    return;
  }
  if (why) {
    w->job = ci;
    resume_builders(m);
    job_failed(m, w, MLC_MEASURE_SPAWN_ERROR, why);
  } else {
    worker_died(m, w);
  }
}

/* ---- handling replies --------------------------------------------------------- */

static bool read_error(frame_reader *r, mlc_measure_status *st, char *msg, size_t n) {
  char *cls = frame_get_str(r), *text = frame_get_str(r);
  bool ok = !r->bad && mlc_measure_status_from_name(cls, st) && *st != MLC_MEASURE_OK;
  snprintf(msg, n, "%s", text);
  mlc_free(cls);
  mlc_free(text);
  return ok;
}

/* Object bytes and argument list of a BUILD_OK. */
static bool read_build_ok(frame_reader *r, mlc_object *obj, int *n_args, frame_arg *args,
                          uint32_t *threads) {
  size_t len;
  const void *p = frame_get_bytes(r, &len);
  *n_args = frame_get_args(r, MLC_MEASURE_MAX_ARGS, args);
  *threads = frame_get_u32(r);
  if (r->bad || len == 0 || r->pos != r->n || *threads < 1) return false;
  obj->data = mlc_xmalloc(len);
  memcpy(obj->data, p, len);
  obj->len = len;
  return true;
}

static void build_reply(mlc_measure *m, worker *w, uint32_t type, frame_reader *r) {
  int job = w->job;
  mlc_measure_status st;
  char msg[512];
  if (type == MLC_FRAME_ERROR) {
    if (!read_error(r, &st, msg, sizeof msg))
      return worker_fault(m, w, MLC_MEASURE_PROTOCOL_ERROR, "malformed error frame");
    w->job = NO_JOB;
    if (job < 0) {
      char buf[600];
      set_text(buf, sizeof buf, "reference kernel: ", msg);
      return fail_workload(m, -1 - job, st, buf);
    }
    m->c[job].res.build_sec = mlc_now_sec() - w->start;
    return finish(m, job, st, msg);
  }
  mlc_object obj = {0};
  int n_args;
  frame_arg args[MLC_MEASURE_MAX_ARGS];
  uint32_t threads;
  if (type != MLC_FRAME_BUILD_OK || !read_build_ok(r, &obj, &n_args, args, &threads))
    return worker_fault(m, w, MLC_MEASURE_PROTOCOL_ERROR, "malformed build reply");
  w->job = NO_JOB;
  if (job < 0) {
    workload *wl = &m->wls.data[-1 - job];
    wl->ref = obj;
    wl->n_args = n_args;
    memcpy(wl->args, args, sizeof args);
    wl->state = WL_READY;
    return;
  }
  cand *c = &m->c[job];
  c->res.build_sec = mlc_now_sec() - w->start;
  c->obj = obj;
  c->threads = threads;
  c->state = C_BUILT;
  if (m->o.build_only) finish(m, job, MLC_MEASURE_OK, "");
}

/* The runner's answer to a request without the reference object when it
 * holds no reference (worker.c). */
#define NO_REFERENCE "no reference object sent and none cached"

/* The runner answered a request of workload wl: it computed (or still
 * held) that workload's reference. */
static void runner_holds(mlc_measure *m, int wl) {
  if (!m->wls.data[wl].in_runner) m->runner_refs++;
  m->wls.data[wl].in_runner = true;
}

static void run_ok(mlc_measure *m, int ci, frame_reader *r, worker *w) {
  cand *c = &m->c[ci];
  double max_err = frame_get_f64(r);
  uint32_t n = frame_get_u32(r);
  if (n != (uint32_t)m->o.repeat || n > MLC_MEASURE_MAX_REPEAT)
    return worker_fault(m, w, MLC_MEASURE_PROTOCOL_ERROR, "wrong number of repeats");
  double sum = 0;
  for (uint32_t i = 0; i < n; i++) sum += c->res.secs[i] = frame_get_f64(r);
  uint32_t disturbed = frame_get_u32(r), retimes = frame_get_u32(r);
  uint64_t ivcsw = frame_get_u64(r);
  double cpu_ratio = frame_get_f64(r);
  char *why = frame_get_str(r);
  snprintf(c->res.disturb_why, sizeof c->res.disturb_why, "%s", why);
  mlc_free(why);
  uint32_t ref = frame_get_u32(r);
  if (r->bad || r->pos != r->n || disturbed > 1 || ref > MLC_MEASURE_REF_RECOMPUTED)
    return worker_fault(m, w, MLC_MEASURE_PROTOCOL_ERROR, "malformed run reply");
  w->job = NO_JOB;
  runner_holds(m, c->wl);
  c->res.run_sec = mlc_now_sec() - w->start;
  c->res.max_error = max_err;
  for (uint32_t i = 0; i < n; i++)
    if (!(c->res.secs[i] > 0) || !isfinite(c->res.secs[i])) {
      char msg[128];
      snprintf(msg, sizeof msg, "repeat %u took %g seconds per call", i, c->res.secs[i]);
      return finish(m, ci, MLC_MEASURE_BAD_TIME, msg);
    }
  c->res.n_secs = (int)n;
  c->res.mean_sec = sum / n;
  c->res.disturbed = disturbed;
  c->res.retimes = (int)retimes;
  c->res.ivcsw = (long)ivcsw;
  c->res.cpu_ratio = cpu_ratio;
  c->res.ref = (mlc_measure_ref)ref;
  finish(m, ci, MLC_MEASURE_OK, "");
}

static void run_reply(mlc_measure *m, worker *w, uint32_t type, frame_reader *r) {
  int ci = w->job;
  resume_builders(m);
  if (type == MLC_FRAME_RUN_OK) return run_ok(m, ci, r, w);
  mlc_measure_status st;
  char msg[512];
  if (type != MLC_FRAME_ERROR || !read_error(r, &st, msg, sizeof msg))
    return worker_fault(m, w, MLC_MEASURE_PROTOCOL_ERROR, "unexpected frame");
  w->job = NO_JOB;
  m->c[ci].res.run_sec = mlc_now_sec() - w->start;
  if (st == MLC_MEASURE_PROTOCOL_ERROR && strncmp(msg, NO_REFERENCE, strlen(NO_REFERENCE)) == 0) {
    /* A runner that replaced a dead one between the request and its
     * sending holds no reference: run the candidate again, with it. */
    m->wls.data[m->c[ci].wl].in_runner = false;
    m->c[ci].state = C_BUILT;
    return;
  }
  if (strncmp(msg, "reference kernel", 16) == 0) fail_workload(m, m->c[ci].wl, st, msg);
  else runner_holds(m, m->c[ci].wl);
  finish(m, ci, st, msg);
}

/* Consume a whole frame if the buffer holds one. */
static void parse_frames(mlc_measure *m, worker *w) {
  while (w->pid > 0 && w->len >= MLC_FRAME_HEADER) {
    uint32_t type, len;
    const char *bad = frame_check_header(w->buf, &type, &len);
    if (bad || w->job == NO_JOB)
      return worker_fault(m, w, MLC_MEASURE_PROTOCOL_ERROR, bad ? bad : "unrequested frame");
    if (w->len < MLC_FRAME_HEADER + (size_t)len) return;
    frame_reader r = {w->buf + MLC_FRAME_HEADER, len, 0, false};
    if (w->kind == W_BUILD) build_reply(m, w, type, &r);
    else run_reply(m, w, type, &r);
    if (w->pid <= 0) return;
    size_t used = MLC_FRAME_HEADER + (size_t)len;
    memmove(w->buf, w->buf + used, w->len - used);
    w->len -= used;
  }
}

static void drain(mlc_measure *m, worker *w) {
  for (;;) {
    if (w->cap - w->len < 65536) {
      w->cap = w->cap * 2 + 65536;
      w->buf = mlc_xrealloc(w->buf, w->cap);
    }
    ssize_t k = read(w->fd, w->buf + w->len, w->cap - w->len);
    if (k > 0) {
      w->len += (size_t)k;
      parse_frames(m, w); /* garbage is refused after its first 12 bytes */
      if (w->pid <= 0 || w->job == NO_JOB) return;
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    worker_died(m, w); /* end of input (or an error) before a whole frame */
    return;
  }
}

/* ---- the event loop ------------------------------------------------------------- */

static bool runner_busy(const mlc_measure *m) {
  const worker *r = &m->w[m->n_workers - 1];
  return r->job != NO_JOB;
}

static int next_build_job(mlc_measure *m) {
  for (int i = 0; i < m->wls.len && !m->o.build_only; i++)
    if (m->wls.data[i].state == WL_NONE) {
      m->wls.data[i].state = WL_BUILDING;
      return -1 - i;
    }
  for (int i = 0; i < m->n; i++)
    if (m->c[i].state == C_QUEUED) return i;
  return NO_JOB;
}

static void dispatch(mlc_measure *m) {
  worker *rw = &m->w[m->n_workers - 1];
  for (int i = 0; i < m->n && rw->job == NO_JOB; i++) {
    cand *c = &m->c[i];
    if (c->state != C_BUILT) continue;
    workload *wl = &m->wls.data[c->wl];
    if (wl->state == WL_FAILED) finish(m, i, wl->ref_status, wl->ref_error);
    else if (wl->state == WL_READY) send_run(m, rw, i);
  }
  if (m->o.pause_builders && runner_busy(m)) return;
  for (int i = 0; i < m->n_workers - 1; i++) {
    worker *w = &m->w[i];
    if (w->job != NO_JOB) continue;
    int job = next_build_job(m);
    if (job == NO_JOB) break;
    send_build(m, w, job);
  }
}

static void check_timeouts(mlc_measure *m) {
  double now = mlc_now_sec();
  for (int i = 0; i < m->n_workers; i++) {
    worker *w = &m->w[i];
    if (w->pid > 0 && w->job != NO_JOB && !w->stopped && now >= w->deadline) {
      char what[64];
      snprintf(what, sizeof what, "no answer after %.3g s (killed)", w->deadline - w->start);
      worker_fault(m, w, MLC_MEASURE_TIMEOUT, what);
    }
  }
}

/* Waits at most until `limit` (monotonic seconds), or a second. */
static void wait_events(mlc_measure *m, double limit) {
  struct pollfd *pf = mlc_xmalloc(sizeof(struct pollfd) * (size_t)m->n_workers);
  int *who = mlc_xmalloc(sizeof(int) * (size_t)m->n_workers), np = 0;
  double now = mlc_now_sec(), next = now + 1.0 < limit ? now + 1.0 : limit;
  for (int i = 0; i < m->n_workers; i++) {
    worker *w = &m->w[i];
    if (w->pid <= 0 || w->job == NO_JOB) continue;
    pf[np] = (struct pollfd){w->fd, POLLIN, 0};
    who[np++] = i;
    if (!w->stopped && w->deadline < next) next = w->deadline;
  }
  int ms = next > now ? (int)ceil((next - now) * 1000) : 0;
  int k = poll(pf, (nfds_t)np, ms);
  for (int i = 0; k > 0 && i < np; i++)
    if (pf[i].revents && m->w[who[i]].pid > 0 && m->w[who[i]].fd == pf[i].fd)
      drain(m, &m->w[who[i]]);
  check_timeouts(m);
  mlc_free(pf);
  mlc_free(who);
}

/* Bench only (MLC_BENCH_SLEEP_MS): each candidate costs that much wall
 * time and no CPU, one after another as on the runner; nothing is built or
 * run, and its times follow from its trace's hash. Scaling over many
 * measurement hosts can so be simulated on a small machine. */
static void sleep_step(mlc_measure *m, double end) {
  double t = mlc_now_sec();
  for (int i = 0; i < m->n && m->sleeping < 0; i++)
    if (m->c[i].state == C_QUEUED) {
      m->sleeping = i;
      m->wake = t + m->sleep_s;
      m->c[i].state = C_RUNNING;
    }
  if (m->sleeping < 0) return;
  double until = m->wake < end ? m->wake : end;
  if (until > t) {
    struct timespec ts = {(time_t)(until - t), (long)((until - t - (double)(time_t)(until - t)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
  }
  if (mlc_now_sec() < m->wake) return;
  int ci = m->sleeping;
  cand *c = &m->c[ci];
  m->sleeping = -1;
  double sec = 1e-6 * (double)(1 + mlc_hash_str(c->trace, 0) % 997);
  c->res.n_secs = m->o.repeat;
  for (int k = 0; k < m->o.repeat; k++) c->res.secs[k] = sec;
  c->res.mean_sec = sec;
  c->res.run_sec = m->sleep_s;
  finish(m, ci, MLC_MEASURE_OK, "");
}

int mlc_measure_next_wait(mlc_measure *m, mlc_measure_result *out, double timeout_s) {
  double end = mlc_now_sec() + timeout_s;
  while (m->ready_head == m->ready.len) {
    if (m->n_done == m->n) return 0;
    if (m->sleep_s > 0) sleep_step(m, end);
    else dispatch(m);
    if (m->ready_head < m->ready.len) break;
    if (mlc_now_sec() >= end) return -1;
    if (m->sleep_s <= 0) wait_events(m, end);
  }
  int ci = m->ready.data[m->ready_head++];
  *out = m->c[ci].res;
  m->n_returned++;
  return 1;
}

int mlc_measure_next(mlc_measure *m, mlc_measure_result *out) {
  return mlc_measure_next_wait(m, out, INFINITY);
}

/* ---- public life cycle ---------------------------------------------------------------- */

/* The runner of each device kind's objects (a worker picks the same one
 * by the object's format: runner_internal.h). */
static const runner_impl *const device_runners[] = {
    [MLC_DEVICE_CPU] = &runner_cpu,
    [MLC_DEVICE_CUDA] = &runner_cuda,
};
_Static_assert(MLC_COUNTOF(device_runners) == MLC_DEVICE_KIND_COUNT, "a runner per device kind");

mlc_measure_opts mlc_measure_defaults_for(const char *target) {
  mlc_measure_opts o = mlc_measure_defaults();
  mlc_target t;
  if (!mlc_target_parse(target ? target : "llvm", &t, NULL)) return o;
  const runner_impl *rn = device_runners[mlc_target_device(&t)];
  if (rn->measure_defaults) rn->measure_defaults(&o);
  return o;
}

bool mlc_measure_runner_check(const char *target, mlc_error *err) {
  mlc_target t;
  if (!mlc_target_parse(target ? target : "llvm", &t, err)) return false;
  return device_runners[mlc_target_device(&t)]->available(err);
}

mlc_measure *mlc_measure_new(const mlc_measure_opts *o, mlc_error *err) {
  mlc_measure_opts opts = o ? *o : mlc_measure_defaults();
  if (opts.repeat < 1 || opts.repeat > MLC_MEASURE_MAX_REPEAT || opts.number < 1)
    return mlc_error_set(err, "measure: repeat must be 1..%d and number >= 1",
                         MLC_MEASURE_MAX_REPEAT),
           NULL;
  if (opts.n_intrin_files < 0 || opts.n_intrin_files > MLC_MEASURE_MAX_INTRIN_FILES)
    return mlc_error_set(err, "measure: at most %d intrinsic files", MLC_MEASURE_MAX_INTRIN_FILES), NULL;
  char *path = find_worker(opts.worker_path);
  if (!path || !executable(path)) {
    mlc_error_set(err, "measure: worker program %s not found (set MLC_WORKER)",
                  path ? path : "mlc-worker");
    mlc_free(path);
    return NULL;
  }
  mlc_measure *m = mlc_xmalloc(sizeof *m);
  m->o = opts;
  m->path = path;
  int nb = opts.n_builders > 0 ? opts.n_builders : mlc_target_host_cores();
  m->n_workers = (nb < 1 ? 1 : nb) + 1;
  m->w = mlc_xmalloc(sizeof(worker) * (size_t)m->n_workers);
  for (int i = 0; i < m->n_workers; i++)
    m->w[i] = (worker){.kind = i == m->n_workers - 1 ? W_RUN : W_BUILD, .fd = -1, .job = NO_JOB};
  const char *sleep_ms = getenv("MLC_BENCH_SLEEP_MS");
  m->sleep_s = sleep_ms && atof(sleep_ms) > 0 ? atof(sleep_ms) * 1e-3 : 0;
  m->sleeping = -1;
  return m;
}

static void clear_batch(mlc_measure *m) {
  for (int i = 0; i < m->n; i++) {
    mlc_free(m->c[i].trace);
    mlc_free(m->c[i].target);
    mlc_object_free(&m->c[i].obj);
  }
  mlc_free(m->c);
  m->c = NULL;
  m->n = m->n_done = m->n_returned = 0;
  m->ready.len = m->ready_head = 0;
}

void mlc_measure_free(mlc_measure *m) {
  if (!m) return;
  resume_builders(m);
  for (int i = 0; i < m->n_workers; i++) {
    worker *w = &m->w[i];
    if (w->pid <= 0) continue;
    bool idle = w->job == NO_JOB;
    if (idle) shutdown(w->fd, SHUT_WR); /* end of input: it exits 0 */
    reap(w, !idle, NULL, 0);
  }
  for (int i = 0; i < m->n_workers; i++) mlc_free(m->w[i].buf);
  clear_batch(m);
  for (int i = 0; i < m->wls.len; i++) {
    mlc_free(m->wls.data[i].text);
    mlc_object_free(&m->wls.data[i].ref);
  }
  MLC_VEC_FREE(m->wls);
  MLC_VEC_FREE(m->ready);
  mlc_str_free(&m->out);
  mlc_free(m->w);
  mlc_free(m->path);
  mlc_free(m);
}

/* The MLC_ATTR_CHECK_ATOL of the workload's function, 0 where it has none
 * (or the text does not parse: the builder then says why). */
static double text_check_atol(const char *text) {
  if (!strstr(text, MLC_ATTR_CHECK_ATOL)) return 0;
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_module *mod = mlc_parse_module(a, "workload", text, &err);
  double atol = mod && mod->n_funcs ? mlc_func_check_atol(mod->funcs[0], 0) : 0;
  mlc_arena_free(a);
  return atol;
}

static int workload_index(mlc_measure *m, const char *text) {
  uint64_t key = mlc_hash_str(text, 0x6d6c63);
  for (int i = 0; i < m->wls.len; i++)
    if (m->wls.data[i].key == key && strcmp(m->wls.data[i].text, text) == 0) return i;
  workload wl = {.key = key, .text = mlc_xstrdup(text), .state = WL_NONE, .atol = text_check_atol(text)};
  MLC_VEC_PUSH(m->wls, wl);
  return m->wls.len - 1;
}

/* Candidates n0.. of the batch from c[0..n). */
static void add_cands(mlc_measure *m, int n0, int n, const mlc_measure_cand *c) {
  for (int i = 0; i < n; i++) {
    cand *x = &m->c[n0 + i];
    *x = (cand){0};
    x->trace = mlc_xstrdup(c[i].trace ? c[i].trace : "");
    x->target = mlc_xstrdup(c[i].target ? c[i].target : "llvm");
    x->fault = c[i].fault;
    x->max_call_sec = c[i].max_call_sec > 0 ? c[i].max_call_sec : 0;
    x->run_timeout_s = c[i].run_timeout_s > 0 ? c[i].run_timeout_s : 0;
    x->wl = workload_index(m, c[i].workload);
    x->state = C_QUEUED;
    x->res.index = n0 + i;
  }
}

static bool check_cands(int n, const mlc_measure_cand *c, mlc_error *err) {
  for (int i = 0; i < n; i++)
    if (!c[i].workload) return mlc_error_set(err, "measure: candidate %d has no workload", i);
  return true;
}

bool mlc_measure_submit(mlc_measure *m, int n, const mlc_measure_cand *c, mlc_error *err) {
  if (m->n_returned < m->n) return mlc_error_set(err, "measure: the previous batch is not collected");
  if (!check_cands(n, c, err)) return false;
  clear_batch(m);
  m->c = mlc_xmalloc(sizeof(cand) * (size_t)(n + 1));
  m->n = n;
  add_cands(m, 0, n, c);
  /* A workload whose reference failed in an earlier batch gets another try. */
  for (int i = 0; i < m->wls.len; i++)
    if (m->wls.data[i].state == WL_FAILED) m->wls.data[i].state = WL_NONE;
  return true;
}

bool mlc_measure_append(mlc_measure *m, int n, const mlc_measure_cand *c, mlc_error *err) {
  if (m->n_returned == m->n) return mlc_measure_submit(m, n, c, err);
  if (!check_cands(n, c, err)) return false;
  m->c = mlc_xrealloc(m->c, sizeof(cand) * (size_t)(m->n + n + 1));
  add_cands(m, m->n, n, c);
  m->n += n;
  return true;
}

bool mlc_measure_run_batch(mlc_measure *m, int n, const mlc_measure_cand *c,
                           mlc_measure_result *results, mlc_measure_progress_fn progress,
                           void *ud, mlc_error *err) {
  if (!mlc_measure_submit(m, n, c, err)) return false;
  mlc_measure_result r;
  int done = 0;
  while (mlc_measure_next(m, &r) > 0) {
    mlc_measure_result_publish(&results[r.index], &r, r.index);
    done++;
    if (progress) progress(ud, done, n, &r);
  }
  return true;
}

int mlc_measure_spawn_count(const mlc_measure *m) { return m->spawns; }
const char *mlc_measure_worker_path(const mlc_measure *m) { return m->path; }
