/* report: the page of a database (curves with a dot or cross per record,
 * the best schedule, share of peak), the pages of bad input (an empty
 * database, a task nobody tuned, a workload whose records all failed),
 * 100,000 records downsampled (the time printed, not asserted), one
 * standalone figure (SVG and PNG). */
#include "db/db.h"
#include "report/report.h"
#include "tasks/tasks.h"
#include "tests/test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];

static const char *tmp(const char *name) {
  static char buf[4][512];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 512, "%s/%s", tmpdir, name);
  return p;
}

/* Split matmul's j loop by 4: a trace that replays on matmul 16,16,16. */
static const char *split_trace =
    "{\"insts\":[[\"GetBlock\",[],{\"name\":\"C\",\"func_name\":\"main\"},[\"b0\"]],"
    "[\"GetLoops\",[\"b0\"],{},[\"l1\",\"l2\",\"l3\"]],[\"Split\",[\"l2\",null,4],"
    "{\"preserve_unit_iters\":true},[\"l4\",\"l5\"]]],\"decisions\":{},\"version\":1}";

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

static int64_t add_matmul(mlc_db *db, mlc_arena *a, const char *task) {
  int64_t shape[3] = {16, 16, 16};
  mlc_prim_func *f = mlc_task_build(a, mlc_task_find("matmul"), shape);
  mlc_error err;
  return mlc_db_add_workload(db, task, "16,16,16", f, &err);
}

/* n records of workload wid, every k-th failed (k 0: none), faster with i;
 * trace hashes given (the split trace's text for all of them). */
static bool add_records(mlc_db *db, int64_t wid, int n, int k) {
  mlc_db_record *rs = calloc((size_t)n, sizeof *rs);
  double *secs = calloc((size_t)n, sizeof *secs);
  char (*hashes)[17] = calloc((size_t)n, 17);
  for (int i = 0; i < n; i++) {
    snprintf(hashes[i], 17, "%016x", (unsigned)(i + 1));
    secs[i] = 1e-5 / (1 + (i % 97) + i * 1e-4);
    bool failed = k && i % k == k - 1;
    rs[i] = (mlc_db_record){.workload_id = wid, .target = "llvm -num-cores=1", .trace = split_trace,
                            .trace_hash = hashes[i], .n_secs = failed ? 0 : 1, .secs = &secs[i],
                            .error = failed ? "crash: worker killed by signal 11" : NULL,
                            .round = i / 16, .sched_hash = "0000000000000000"};
  }
  mlc_error err;
  bool ok = mlc_db_commit(db, n, rs, NULL, &err);
  if (!ok) fprintf(stderr, "add_records: %s\n", err.msg);
  free(rs), free(secs), free(hashes);
  return ok;
}

static char *page(mlc_db *db, const mlc_report_options *o, mlc_report_summary *sum) {
  mlc_str s = {0};
  mlc_error err;
  if (!mlc_report_html(db, o, &s, sum, &err)) {
    fprintf(stderr, "report: %s\n", err.msg);
    mlc_str_free(&s);
    return NULL;
  }
  return mlc_str_take(&s);
}

static void test_curves(void) {
  mlc_error err;
  mlc_db *db = mlc_db_open(tmp("curves.db"), MLC_DB_CREATE, &err);
  mlc_arena *a = mlc_arena_new();
  int64_t wid = add_matmul(db, a, "matmul");
  CHECK(wid > 0 && add_records(db, wid, 10, 4)); /* records 4 and 8 failed */
  mlc_report_summary sum;
  char *html = page(db, &(mlc_report_options){0}, &sum);
  CHECK(html && sum.workloads == 1 && sum.records == 10 && sum.dots == 10 && !sum.note);
  if (html) {
    CHECK(strstr(html, "<h2>matmul 16,16,16 <small>"));
    CHECK(count(html, "class=\"curve trials\" data-records=\"10\" data-dots=\"10\"") == 1);
    CHECK(count(html, "class=\"curve wall\"") == 1);
    CHECK_MSG(count(html, "<circle class=\"pt\"") == 2 * 8, "%d dots", count(html, "<circle class=\"pt\""));
    CHECK(count(html, "<polyline class=\"err\"") == 2 * 2);
    CHECK(strstr(html, "class=\"histogram\""));
    CHECK(strstr(html, "sch.split(loop=l2, factors=[None, 4]"));
    CHECK(strstr(html, "@T.prim_func"));
    CHECK(strstr(html, "crash</td><td>2<"));
    CHECK(!strstr(html, "Downsampled"));
  }
  free(html);
  mlc_arena_free(a);
  mlc_db_close(db);
}

static void test_empty_db(void) {
  mlc_error err;
  mlc_db *db = mlc_db_open(tmp("empty.db"), MLC_DB_CREATE, &err);
  mlc_report_summary sum;
  char *html = page(db, &(mlc_report_options){0}, &sum);
  CHECK(html && sum.workloads == 0 && sum.note);
  CHECK(html && strstr(html, "holds no workloads and no records") && strstr(html, "</html>"));
  free(html);
  mlc_str svg = {0};
  CHECK(!mlc_report_plot(db, &(mlc_report_options){0}, MLC_REPORT_PLOT_CURVE, MLC_REPORT_SVG, &svg, &err));
  CHECK(strstr(err.msg, "no workloads"));
  mlc_str_free(&svg);
  mlc_db_close(db);
}

static void test_unknown_task(void) {
  mlc_error err;
  mlc_db *db = mlc_db_open(tmp("curves.db"), MLC_DB_EXISTING, &err);
  mlc_report_summary sum;
  char *html = page(db, &(mlc_report_options){.task = "nosuch"}, &sum);
  CHECK(html && sum.workloads == 0);
  CHECK(html && strstr(html, "No workload of this task"));
  CHECK(html && strstr(html, "<li>matmul 16,16,16: 10 records, 2 failed</li>")); /* what there is */
  free(html);
  mlc_db_close(db);
}

static void test_only_failed(void) {
  mlc_error err;
  mlc_db *db = mlc_db_open(tmp("failed.db"), MLC_DB_CREATE, &err);
  mlc_arena *a = mlc_arena_new();
  int64_t wid = add_matmul(db, a, "matmul");
  CHECK(wid > 0 && add_records(db, wid, 5, 1)); /* every one failed */
  mlc_report_summary sum;
  char *html = page(db, &(mlc_report_options){.task = "matmul"}, &sum);
  CHECK(html && sum.workloads == 1 && sum.records == 5);
  if (html) {
    CHECK(strstr(html, "No successful record: all 5 candidates failed"));
    CHECK(count(html, "<polyline class=\"err\"") == 2 * 5);
    CHECK(count(html, "<circle class=\"pt\"") == 0);
    CHECK(!strstr(html, "class=\"histogram\""));
    CHECK(strstr(html, "crash</td><td>5<"));
  }
  free(html);
  mlc_arena_free(a);
  mlc_db_close(db);
}

static void test_many_records(void) {
  enum { N = 100000 };
  mlc_error err;
  mlc_db *db = mlc_db_open(tmp("many.db"), MLC_DB_CREATE, &err);
  mlc_arena *a = mlc_arena_new();
  int64_t wid = add_matmul(db, a, "matmul");
  CHECK(wid > 0 && add_records(db, wid, N, 50));
  double t0 = mlc_now_sec();
  mlc_report_summary sum;
  char *html = page(db, &(mlc_report_options){0}, &sum);
  double secs = mlc_now_sec() - t0;
  printf("# test_many_records: report of %d records in %.2f s, %zu bytes, %lld dots\n", N, secs,
         html ? strlen(html) : 0, (long long)sum.dots);
  CHECK(html && sum.records == N && sum.downsampled == 1);
  CHECK_MSG(sum.dots > 1000 && sum.dots < 3 * MLC_REPORT_MAX_DOTS, "%lld dots", (long long)sum.dots);
  CHECK(html && strstr(html, "Downsampled: "));
  CHECK(html && count(html, "data-records=\"100000\"") == 2);
  free(html);
  mlc_arena_free(a);
  mlc_db_close(db);
}

static void test_plot_svg(void) {
  mlc_error err;
  mlc_db *db = mlc_db_open(tmp("curves.db"), MLC_DB_EXISTING, &err);
  mlc_str svg = {0};
  CHECK(mlc_report_plot(db, &(mlc_report_options){.task = "matmul"}, MLC_REPORT_PLOT_CURVE, MLC_REPORT_SVG, &svg, &err));
  const char *s = mlc_str_cstr(&svg);
  CHECK(strncmp(s, "<?xml", 5) == 0 && strstr(s, "xmlns=\"http://www.w3.org/2000/svg\""));
  CHECK(count(s, "<circle class=\"pt\"") == 8 && strstr(s, "</svg>"));
  mlc_str_free(&svg);
  CHECK(mlc_report_plot(db, &(mlc_report_options){0}, MLC_REPORT_PLOT_HISTOGRAM, MLC_REPORT_SVG, &svg, &err));
  CHECK(strstr(mlc_str_cstr(&svg), "<rect class=\"bar\""));
  mlc_str_free(&svg);
  /* the same figure as pixels: a PNG twice the SVG's 576x316 */
  mlc_str png = {0};
  CHECK(mlc_report_plot(db, &(mlc_report_options){.task = "matmul"}, MLC_REPORT_PLOT_CURVE, MLC_REPORT_PNG, &png, &err));
  const unsigned char *b = (const unsigned char *)png.data;
  CHECK(png.len > 33 && memcmp(b, "\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16) == 0);
  CHECK(png.len > 33 && b[18] * 256 + b[19] == 1152 && b[22] * 256 + b[23] == 632);
  mlc_str_free(&png);
  mlc_db_close(db);
}

static void test_peak(void) {
  mlc_str how = {0};
  double one = mlc_report_peak_gflops("llvm -num-cores=1", &how);
  double two = mlc_report_peak_gflops("llvm -num-cores=2", NULL);
  if (one > 0) CHECK(two > 1.99 * one && two < 2.01 * one && strstr(mlc_str_cstr(&how), "1 cores x"));
  else printf("# test_peak: no clock in /proc/cpuinfo, no peak\n");
  CHECK(mlc_report_peak_gflops("cuda -arch=sm_80", NULL) == 0);
  CHECK(mlc_report_peak_gflops("nonsense", NULL) == 0);
  mlc_str_free(&how);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/test_report_XXXXXX");
  if (!mkdtemp(tmpdir)) return perror("mkdtemp"), 1;
  RUN(test_curves);
  RUN(test_empty_db);
  RUN(test_unknown_task);
  RUN(test_only_failed);
  RUN(test_many_records);
  RUN(test_plot_svg);
  RUN(test_peak);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) printf("# could not remove %s\n", tmpdir);
  return test_summary();
}
