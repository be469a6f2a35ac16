/* measure/timing.c: the one tolerance rule of result checks and the timing
 * loop (warm-up, repeats, minimum repeat time, the cap for slow
 * functions, failures), and base's clock and median. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity */
#endif
#include "measure/measure.h"
#include "measure/runner_internal.h"
#include "tests/test.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static mlc_array *floats(int n, const double *v) {
  int64_t shape[1] = {n};
  mlc_array *x = mlc_array_new(MLC_FLOAT32, 1, shape);
  for (int i = 0; i < n; i++) mlc_array_set(x, i, v[i]);
  return x;
}

static bool close3(const double *got, const double *want, double *e) {
  mlc_array *g = floats(3, got), *w = floats(3, want);
  bool ok = mlc_check_close(g, w, MLC_CHECK_RTOL, MLC_CHECK_ATOL, e);
  mlc_array_free(g);
  mlc_array_free(w);
  return ok;
}

/* rtol * |want| + atol * max |want|: with want up to 100, an element of
 * 1 may be off by 1e-3 * 1 + 1e-3 * 100 = 0.101, not by 0.11. */
static void test_tolerance_rule(void) {
  double e;
  CHECK(close3((double[]){1.1, 100, 0}, (double[]){1, 100, 0}, &e));
  CHECK(fabs(e - 0.1) < 1e-6);
  CHECK(!close3((double[]){1.11, 100, 0}, (double[]){1, 100, 0}, &e));
  /* the scale is the largest |want|, negative values included */
  CHECK(close3((double[]){1.05, -50, 0}, (double[]){1, -50, 0}, &e));
  CHECK(!close3((double[]){1.06, -50, 0}, (double[]){1, -50, 0}, &e));
  /* tiny outputs (MobileNet's are ~1e-9) are judged at their own scale */
  CHECK(close3((double[]){1e-9, 2e-9, 0}, (double[]){1e-9, 2.001e-9, 0}, &e));
  CHECK(!close3((double[]){1e-9, 3e-9, 0}, (double[]){1e-9, 2e-9, 0}, &e));
  /* an all-zero reference wants exact zeros (a contracted a*a - a*a
   * leaves the rounding error of a*a: a wrong result there) */
  CHECK(close3((double[]){0, 0, 0}, (double[]){0, 0, 0}, &e));
  CHECK(!close3((double[]){1e-9, 0, 0}, (double[]){0, 0, 0}, &e));
  /* infinities do not widen the scale; NaN matches NaN only */
  CHECK(!close3((double[]){INFINITY, 5, 0}, (double[]){INFINITY, 1, 0}, &e));
  CHECK(close3((double[]){INFINITY, 1, NAN}, (double[]){INFINITY, 1, NAN}, &e));
  CHECK(!close3((double[]){1, 1, 0}, (double[]){1, 1, NAN}, &e));
}

static void test_integers_exact(void) {
  int64_t shape[1] = {2};
  mlc_array *a = mlc_array_new(MLC_INT32, 1, shape), *b = mlc_array_new(MLC_INT32, 1, shape);
  mlc_array_set(a, 0, 1000000), mlc_array_set(b, 0, 1000000);
  mlc_array_set(a, 1, 7), mlc_array_set(b, 1, 7);
  double e;
  CHECK(mlc_check_close(a, b, MLC_CHECK_RTOL, MLC_CHECK_ATOL, &e) && e == 0);
  mlc_array_set(a, 0, 1000001);
  CHECK(!mlc_check_close(a, b, MLC_CHECK_RTOL, MLC_CHECK_ATOL, &e) && e == 1);
  mlc_array_free(a);
  mlc_array_free(b);
}

typedef struct counter {
  int calls, fail_at; /* fail_at: the call (1-based) that fails; 0 never */
  double sleep_sec;
  int hooks;
  uint64_t hook_calls;
} counter;

static bool count_call(void *p) {
  counter *c = p;
  c->calls++;
  if (c->sleep_sec > 0) {
    struct timespec ts = {0, (long)(c->sleep_sec * 1e9)};
    nanosleep(&ts, NULL);
  }
  return c->fail_at == 0 || c->calls != c->fail_at;
}

static void count_hook(void *ud, int r, const mlc_timing_repeat *rep) {
  counter *c = ud;
  CHECK(r == c->hooks);
  c->hooks++;
  c->hook_calls += rep->calls;
  CHECK(rep->wall >= 0 && rep->cpu >= 0 && rep->caller >= 0 && rep->ivcsw >= 0);
}

static void test_timing_loop(void) {
  mlc_error err = {{0}};
  double secs[8];
  counter c = {0};
  mlc_timing_opts o = {.repeat = 3, .number = 2};
  CHECK(mlc_time_calls(count_call, &c, &o, secs, count_hook, &c, &err) == 3);
  CHECK_MSG(c.calls == 1 + 3 * 2, "%d calls", c.calls); /* warm-up, then 3 x 2 */
  CHECK(c.hooks == 3 && c.hook_calls == 6);
  for (int i = 0; i < 3; i++) CHECK(secs[i] >= 0);

  /* a repeat lasts at least min_repeat_sec: 1 ms calls, 5 ms repeats */
  c = (counter){.sleep_sec = 1e-3};
  o = (mlc_timing_opts){.repeat = 2, .number = 1, .min_repeat_sec = 5e-3};
  CHECK(mlc_time_calls(count_call, &c, &o, secs, count_hook, &c, &err) == 2);
  CHECK_MSG(c.hook_calls >= 2 * 5, "%llu calls in 2 repeats", (unsigned long long)c.hook_calls);
  CHECK(secs[0] >= 1e-3 && secs[1] >= 1e-3);

  /* slow functions get fewer repeats: 20 ms a call, at most ~50 ms */
  c = (counter){.sleep_sec = 20e-3};
  o = (mlc_timing_opts){.repeat = 8, .number = 1, .max_total_sec = 0.05};
  int n = mlc_time_calls(count_call, &c, &o, secs, NULL, NULL, &err);
  CHECK_MSG(n >= 1 && n <= 2, "%d repeats", n);
  CHECK(c.calls == 1 + n);
}

/* The probe runs once before each repeat's calls; its value is the
 * repeat's. */
typedef struct probed {
  counter c;
  int probes;
  int calls_at_probe[8];
} probed;

static double count_probe(void *ud) {
  probed *p = ud;
  p->calls_at_probe[p->probes] = p->c.calls;
  return 0.25 * ++p->probes;
}

static void probe_hook(void *ud, int r, const mlc_timing_repeat *rep) {
  probed *p = ud;
  CHECK_MSG(rep->probe == 0.25 * (r + 1), "repeat %d: probe %g", r, rep->probe);
  CHECK(p->probes == r + 1);
}

static void test_timing_probe(void) {
  mlc_error err = {{0}};
  double secs[4];
  probed p = {0};
  mlc_timing_opts o = {.repeat = 3, .number = 2, .probe = count_probe, .probe_ud = &p};
  CHECK(mlc_time_calls(count_call, &p.c, &o, secs, probe_hook, &p, &err) == 3);
  CHECK(p.probes == 3);
  /* after the warm-up call, then after each repeat's two calls */
  for (int r = 0; r < 3; r++) CHECK_MSG(p.calls_at_probe[r] == 1 + 2 * r, "%d", p.calls_at_probe[r]);
  o.probe = NULL;
  counter c = {0};
  CHECK(mlc_time_calls(count_call, &c, &o, secs, count_hook, &c, &err) == 3);
}

/* The runner's judgement of a probe: the fastest kept, 1.3x it slow. */
static void test_probe_slow(void) {
  double best = 0;
  CHECK(!mlc_runner_probe_slow(&best, 0) && best == 0); /* no probe */
  CHECK(!mlc_runner_probe_slow(&best, 2e-4) && best == 2e-4);
  CHECK(!mlc_runner_probe_slow(&best, 2.5e-4) && best == 2e-4);
  CHECK(mlc_runner_probe_slow(&best, 2.7e-4) && best == 2e-4);
  CHECK(!mlc_runner_probe_slow(&best, 1e-4) && best == 1e-4);
  CHECK(mlc_runner_probe_slow(&best, 2e-4));
}

static void test_timing_failures(void) {
  mlc_error err = {{0}};
  double secs[4];
  counter c = {.fail_at = 1};
  mlc_timing_opts o = {.repeat = 2, .number = 1};
  CHECK(mlc_time_calls(count_call, &c, &o, secs, NULL, NULL, &err) == -1);
  CHECK_STREQ(err.msg, "warm-up call failed");
  c = (counter){.fail_at = 3};
  CHECK(mlc_time_calls(count_call, &c, &o, secs, NULL, NULL, &err) == -1);
  CHECK_STREQ(err.msg, "timed call failed");
  CHECK(c.calls == 3);
}

static void test_clock_and_median(void) {
  double t0 = mlc_now_sec();
  struct timespec ts = {0, 2000000};
  nanosleep(&ts, NULL);
  CHECK(mlc_now_sec() - t0 >= 2e-3);
  double odd[3] = {3, 1, 2}, even[4] = {4, 1, 3, 2};
  CHECK(mlc_median(odd, 3) == 2);
  CHECK(mlc_median(even, 4) == 2.5);
  CHECK(odd[0] == 1 && odd[2] == 3); /* sorted in place */
}

/* A thread of the process spinning on the caller's one CPU: the timed
 * calls wait for it and it for them, and each repeat says so in `wait`
 * (run-queue delay) although nothing else runs on the machine's other CPUs. */
static volatile int spin_stop;

static void *spinner(void *arg) {
  (void)arg;
  while (!spin_stop) {}
  return NULL;
}

static bool spin_2ms(void *ctx) {
  (void)ctx;
  double t = mlc_now_sec();
  while (mlc_now_sec() - t < 2e-3) {}
  return true;
}

static void max_wait_share(void *ud, int r, const mlc_timing_repeat *rep) {
  (void)r;
  double *share = ud;
  if (rep->wall > 0 && rep->wait / rep->wall > *share) *share = rep->wait / rep->wall;
}

static int wait_child(void) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) return 2;
  pthread_t t;
  if (pthread_create(&t, NULL, spinner, NULL) != 0) return 3; /* inherits the one CPU */
  double secs[5], share = 0;
  mlc_timing_opts o = {.repeat = 5, .number = 5};
  int got = mlc_time_calls(spin_2ms, NULL, &o, secs, max_wait_share, &share, NULL);
  spin_stop = 1;
  pthread_join(t, NULL);
  printf("    two threads on one CPU: up to %.0f%% of a repeat's wall time spent waiting\n",
         share * 100);
  fflush(stdout);
  return got == 5 && share > 0.25 ? 0 : 4;
}

static void test_wait_for_cpu(void) {
  FILE *f = fopen("/proc/self/schedstat", "r");
  if (!f) {
    printf("# test_wait_for_cpu: SKIP: no /proc/self/schedstat\n");
    return;
  }
  fclose(f);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) _exit(wait_child());
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "child: status %d (4: no run-queue wait seen)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

int main(void) {
  RUN(test_tolerance_rule);
  RUN(test_integers_exact);
  RUN(test_timing_loop);
  RUN(test_timing_failures);
  RUN(test_timing_probe);
  RUN(test_probe_slow);
  RUN(test_clock_and_median);
  RUN(test_wait_for_cpu);
  return test_summary();
}
