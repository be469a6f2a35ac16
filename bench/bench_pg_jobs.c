/* Many tuning jobs against one PostgreSQL server (`make bench
 * BENCH=pg_jobs`). A throwaway server (tests/pg_server.sh: Unix socket
 * only) and --jobs plain mlc-tune processes at once on one database: half
 * of them on one workload (matmul 64,64,64, each with its own seed, so
 * that they sometimes measure the same trace), the others each on a
 * workload of its own (matmul 64,64,N). Every candidate costs
 * MLC_BENCH_SLEEP_MS of wall time and no CPU, so the jobs commit often and
 * together. Checks, for every workload: the records the jobs say they
 * stored add up to the records the database holds (a trace that another
 * job stored first is measured but not stored: the database keeps one
 * record per workload, target and trace); every job ends with status 0.
 * Reports the committed records per second and each job's commit latency
 * (median, 95th percentile, worst) as mlc-tune --json gives them.
 *
 *   bench_pg_jobs [--results FILE] [--jobs N] [--trials T] [--sleep-ms N]
 */
#include "bench/results.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_JOBS = 64 };

static char build_dir[4096];

typedef struct job {
  int n;              /* the workload's last extent */
  char out[64];       /* its files: <out>.json (stdout), .err, .status (exit status) */
  double measured, stored, commits, p50, p95, worst;
} job;

/* The job's shape: the shared workload for even jobs, its own otherwise. */
static int job_extent(int i) { return i % 2 == 0 ? 64 : 40 + 8 * i; }

/* Runs every job at once; false when the shell could not. */
static bool run_jobs(int n, job *jobs, const char *url, int trials, int sleep_ms, double *wall) {
  mlc_str cmd = {0};
  mlc_str_printf(&cmd, "export MLC_BENCH_SLEEP_MS=%d; ", sleep_ms);
  for (int i = 0; i < n; i++) {
    jobs[i].n = job_extent(i);
    snprintf(jobs[i].out, sizeof jobs[i].out, "/tmp/bench_pg_jobs_%d_%d", (int)getpid(), i);
    const char *o = jobs[i].out;
    mlc_str_printf(&cmd,
                   "( %s/bin/mlc-tune --task matmul --shape 64,64,%d --trials %d "
                   "--trials-per-round 8 --cost-model random --no-baseline --no-default "
                   "--remeasure 0 --seed %d --json --db '%s' >%s.json 2>%s.err; "
                   "echo $? >%s.status ) & ",
                   build_dir, jobs[i].n, trials, i + 1, url, o, o, o);
  }
  mlc_str_puts(&cmd, "wait");
  double t0 = bench_now_ms();
  int rc = system(mlc_str_cstr(&cmd));
  *wall = (bench_now_ms() - t0) * 1e-3;
  mlc_str_free(&cmd);
  return rc == 0;
}

/* The job's file of that suffix, read and removed; NULL when missing. */
static char *take_file(const job *j, const char *suffix) {
  char path[96];
  snprintf(path, sizeof path, "%s%s", j->out, suffix);
  mlc_error err;
  size_t len;
  char *text = mlc_read_file(path, &len, &err);
  unlink(path);
  return text;
}

static bool read_job(job *j) {
  char *js = take_file(j, ".json"), *why = take_file(j, ".err"), *st = take_file(j, ".status");
  bool ok = js && st && atoi(st) == 0 && bench_json_number(js, "measured") >= 0;
  if (!ok)
    fprintf(stderr, "bench_pg_jobs: job on 64,64,%d failed (exit %s): %.400s\n", j->n,
            st ? st : "?", why ? why : "");
  j->measured = js ? bench_json_number(js, "measured") : -1;
  j->stored = js ? bench_json_number(js, "stored") : -1;
  j->commits = js ? bench_json_number(js, "commits") : -1;
  j->p50 = js ? bench_json_number(js, "commit_ms_p50") : -1;
  j->p95 = js ? bench_json_number(js, "commit_ms_p95") : -1;
  j->worst = js ? bench_json_number(js, "commit_ms_max") : -1;
  mlc_free(js), mlc_free(why), mlc_free(st);
  return ok;
}

/* The records the database holds for matmul 64,64,n (mlc-db list). */
static int db_records(const char *url, int n) {
  char cmd[8192], line[1024], shape[64];
  snprintf(cmd, sizeof cmd, "%s/bin/mlc-db --db '%s' list 2>/dev/null", build_dir, url);
  snprintf(shape, sizeof shape, "64,64,%d", n);
  FILE *f = popen(cmd, "r");
  if (!f) return -1;
  int count = -1;
  while (fgets(line, sizeof line, f)) {
    char id[32], task[64], sh[64];
    int recs;
    if (sscanf(line, "%31s %63s %63s %d", id, task, sh, &recs) == 4 &&
        strcmp(task, "matmul") == 0 && strcmp(sh, shape) == 0)
      count = recs;
  }
  pclose(f);
  return count;
}

static int usage(void) {
  fprintf(stderr, "usage: bench_pg_jobs [--results FILE] [--jobs N] [--trials T] [--sleep-ms N]\n");
  return 2;
}

int main(int argc, char **argv) {
  const char *results = "bench/results.json";
  int n_jobs = 16, trials = 64, sleep_ms = 10;
  for (int i = 1; i < argc; i++) {
    if (i + 1 < argc && strcmp(argv[i], "--results") == 0) results = argv[++i];
    else if (i + 1 < argc && strcmp(argv[i], "--jobs") == 0) n_jobs = atoi(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--trials") == 0) trials = atoi(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--sleep-ms") == 0) sleep_ms = atoi(argv[++i]);
    else return usage();
  }
  if (n_jobs < 2 || n_jobs > MAX_JOBS || trials < 1 || sleep_ms < 1) return usage();
  if (!bench_build_dir(build_dir, sizeof build_dir)) snprintf(build_dir, sizeof build_dir, "build");
  char cmd[256], dir[1024] = "";
  snprintf(cmd, sizeof cmd, "sh " MLC_SOURCE_DIR "/tests/pg_server.sh start %d jobs", (int)getpid());
  FILE *f = popen(cmd, "r");
  if (!f || !fgets(dir, sizeof dir, f)) dir[0] = 0;
  if (f) pclose(f);
  dir[strcspn(dir, "\n")] = 0;
  if (strncmp(dir, "/", 1) != 0) {
    printf("bench_pg_jobs: SKIP: %s\n", dir[0] ? dir : "tests/pg_server.sh did not start");
    return 0;
  }
  char url[1200];
  snprintf(url, sizeof url, "postgresql:///jobs?host=%s&user=postgres", dir);
  job jobs[MAX_JOBS];
  double wall;
  bool ok = run_jobs(n_jobs, jobs, url, trials, sleep_ms, &wall);
  double measured = 0, stored = 0, worst_p95 = 0, worst = 0;
  printf("# %d jobs at once on one PostgreSQL server, %d trials each in rounds of 8, every "
         "candidate %d ms; even jobs share matmul 64,64,64\n", n_jobs, trials, sleep_ms);
  printf("# %-12s %9s %7s %8s %11s %11s %11s\n", "workload", "measured", "stored", "commits",
         "p50 ms", "p95 ms", "worst ms");
  for (int i = 0; i < n_jobs; i++) {
    ok = read_job(&jobs[i]) && ok;
    job *j = &jobs[i];
    printf("  64,64,%-6d %9.0f %7.0f %8.0f %11.2f %11.2f %11.2f\n", j->n, j->measured, j->stored,
           j->commits, j->p50, j->p95, j->worst);
    measured += j->measured, stored += j->stored;
    if (j->p95 > worst_p95) worst_p95 = j->p95;
    if (j->worst > worst) worst = j->worst;
  }
  /* every workload: the jobs' stored records are the database's */
  int mismatches = 0;
  for (int i = 0; i < n_jobs && ok; i++) {
    if (i > 0 && job_extent(i) == job_extent(0)) continue; /* the shared workload once */
    double said = 0;
    for (int k = 0; k < n_jobs; k++) said += jobs[k].n == job_extent(i) ? jobs[k].stored : 0;
    int held = db_records(url, job_extent(i));
    if (held != (int)said) {
      fprintf(stderr, "bench_pg_jobs: matmul 64,64,%d: the jobs stored %.0f records, the "
              "database holds %d\n", job_extent(i), said, held);
      mismatches++;
    }
  }
  snprintf(cmd, sizeof cmd, "sh " MLC_SOURCE_DIR "/tests/pg_server.sh stop '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "bench_pg_jobs: the server did not stop cleanly\n");
  if (!ok || mismatches) {
    fprintf(stderr, "bench_pg_jobs: %s\n", ok ? "records lost or doubled" : "a job failed");
    return 1;
  }
  printf("# every workload's records in the database = what its jobs stored; %.0f measured, "
         "%.0f stored (%.0f traces another job had stored first)\n", measured, stored,
         measured - stored);
  char note[400];
  snprintf(note, sizeof note,
           "%d mlc-tune jobs at once on one PostgreSQL server (%.0f records stored in %.1f s, %.0f "
           "measured); commit latency per job: worst 95th percentile %.2f ms, worst %.2f ms",
           n_jobs, stored, wall, measured, worst_p95, worst);
  bench_case c = {.name = "pg_jobs_committed", .value = stored / wall, .unit = "records/s",
                  .notes = note};
  bench_print(&c);
  mlc_error err;
  if (!bench_write_results(results, 1, &c, &err)) {
    fprintf(stderr, "bench_pg_jobs: %s\n", err.msg);
    return 1;
  }
  return 0;
}
