/* db: schema, keys, queries, models, migration and refusal, durability
 * under SIGKILL, a reader beside a writer, JSON lines round trip, records
 * as untrusted input (replay hash, tampered rows skipped by the tuner's
 * resume and by mlc-compile's kernel choice, the --verify check). */
#include "db/db.h"
#include "graph/graph.h"
#include "measure/measure.h"
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "tasks/tasks.h"
#include "tests/test.h"
#include "tuner/tuner.h"

#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];

static const char *tmp(const char *name) {
  static char buf[8][512];
  static int k;
  char *p = buf[k++ % 8];
  snprintf(p, 512, "%s/%s", tmpdir, name);
  return p;
}

static void rm_db(const char *path) {
  char b[600];
  unlink(path);
  snprintf(b, sizeof b, "%s-wal", path);
  unlink(b);
  snprintf(b, sizeof b, "%s-shm", path);
  unlink(b);
}

static mlc_prim_func *matmul(mlc_arena *a, int64_t n) {
  int64_t shape[3] = {n, n, n};
  return mlc_task_build(a, mlc_task_find("matmul"), shape);
}

/* A trace splitting matmul's j loop by the literal factor f: distinct f,
 * distinct trace hash. */
static char *trace_json(int f) {
  mlc_str s = {0};
  mlc_str_printf(&s,
                 "{\"insts\":[[\"GetBlock\",[],{\"name\":\"C\",\"func_name\":\"main\"},[\"b0\"]],"
                 "[\"GetLoops\",[\"b0\"],{},[\"l1\",\"l2\",\"l3\"]],"
                 "[\"Split\",[\"l2\",null,%d],{\"preserve_unit_iters\":true},[\"l4\",\"l5\"]]],"
                 "\"decisions\":{},\"version\":1}",
                 f);
  return mlc_str_take(&s);
}

static int64_t raw_int(const char *path, const char *sql) {
  sqlite3 *h;
  int64_t v = -1;
  if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
    sqlite3_busy_timeout(h, 5000);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  }
  sqlite3_close(h);
  return v;
}

static char *raw_text(const char *path, const char *sql) {
  sqlite3 *h;
  char *v = NULL;
  if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_text(st, 0))
      v = mlc_xstrdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
  }
  sqlite3_close(h);
  return v;
}

static bool raw_exec(const char *path, const char *sql) {
  sqlite3 *h;
  bool ok = sqlite3_open(path, &h) == SQLITE_OK &&
            sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK;
  sqlite3_close(h);
  return ok;
}

/* ---- schema ------------------------------------------------------------ */

static void test_create(void) {
  const char *p = tmp("create.db");
  rm_db(p);
  mlc_error err = {{0}};
  mlc_db *db = mlc_db_open(p, MLC_DB_CREATE, &err);
  CHECK_MSG(db, "%s", err.msg);
  if (!db) return;
  CHECK(mlc_db_opened_version(db) == MLC_DB_SCHEMA_VERSION);
  mlc_db_close(db);
  char *v = raw_text(p, "SELECT value FROM meta WHERE key = 'schema_version'");
  CHECK_STREQ(v, "4");
  mlc_free(v);
  v = raw_text(p, "SELECT value FROM meta WHERE key = 'created_by'");
  CHECK(v && strncmp(v, "mlc-tune ", 9) == 0);
  mlc_free(v);
  v = raw_text(p, "PRAGMA journal_mode");
  CHECK_STREQ(v, "wal");
  mlc_free(v);
  /* Exactly the columns of DESIGN section 4. */
  v = raw_text(p, "SELECT group_concat(name, ',') FROM pragma_table_info('records')");
  CHECK_STREQ(v, "id,workload_id,target,trace,trace_hash,run_secs,mean_sec,error,round,host,"
                 "mlc_version,created_at,sched_hash,disturbed");
  mlc_free(v);
  v = raw_text(p, "SELECT group_concat(name, ',') FROM pragma_table_info('workloads')");
  CHECK_STREQ(v, "id,hash,task,shape,ir,created_at");
  mlc_free(v);
  v = raw_text(p, "SELECT group_concat(name, ',') FROM pragma_table_info('models')");
  CHECK_STREQ(v, "id,target,feature_version,created_at,n_samples,checksum,blob");
  mlc_free(v);
  CHECK(raw_int(p, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                   "sql LIKE '%(workload_id, target, mean_sec)%'") == 1);
  /* A missing file with MLC_DB_EXISTING is an error and is not created. */
  CHECK(mlc_db_open(tmp("missing.db"), MLC_DB_EXISTING, &err) == NULL);
  CHECK(strstr(err.msg, "no such database") != NULL);
  CHECK(access(tmp("missing.db"), F_OK) != 0);
}

/* ---- workloads and records ---------------------------------------------- */

static void test_workloads(void) {
  const char *p = tmp("wl.db");
  rm_db(p);
  mlc_error err = {{0}};
  mlc_db *db = mlc_db_open(p, MLC_DB_CREATE, &err);
  if (!db) return (void)CHECK_MSG(0, "%s", err.msg);
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = matmul(a, 16);
  int64_t id1 = mlc_db_add_workload(db, "matmul", "16,16,16", f, &err);
  CHECK_MSG(id1 > 0, "%s", err.msg);
  /* The same function renamed is the same workload (structural hash). */
  mlc_prim_func *g = mlc_func_copy(a, f);
  g->name = "other";
  g->params[0]->name = "X";
  CHECK(mlc_db_add_workload(db, "matmul", "16,16,16", g, &err) == id1);
  int64_t id2 = mlc_db_add_workload(db, "matmul", "32,32,32", matmul(a, 32), &err);
  CHECK(id2 > 0 && id2 != id1);
  int64_t found = 0;
  CHECK(mlc_db_find_workload(db, f, &found, &err) == 1 && found == id1);
  CHECK(mlc_db_find_workload(db, matmul(a, 8), &found, &err) == 0);
  mlc_db_workload *ws;
  CHECK(mlc_db_list_workloads(db, "matmul", NULL, a, &ws, &err) == 2);
  CHECK(mlc_db_list_workloads(db, "matmul", "32,32,32", a, &ws, &err) == 1 && ws[0].id == id2);
  CHECK(mlc_db_list_workloads(db, "conv2d_nchw", NULL, a, &ws, &err) == 0);
  mlc_db_workload w;
  CHECK(mlc_db_get_workload(db, id1, a, &w, &err) && strlen(w.hash) == 16);
  CHECK(strstr(w.ir, "T.prim_func") != NULL);
  CHECK(!mlc_db_get_workload(db, 999, a, &w, &err));
  mlc_arena_free(a);
  mlc_db_close(db);
}

static void test_records(void) {
  const char *p = tmp("rec.db");
  rm_db(p);
  mlc_error err = {{0}};
  mlc_db *db = mlc_db_open(p, MLC_DB_CREATE, &err);
  if (!db) return (void)CHECK_MSG(0, "%s", err.msg);
  mlc_arena *a = mlc_arena_new();
  int64_t wid = mlc_db_add_workload(db, "matmul", "16,16,16", matmul(a, 16), &err);
  char *t[4] = {trace_json(2), trace_json(4), trace_json(8), trace_json(16)};
  double s0[3] = {3e-6, 3e-6, 3e-6}, s1[2] = {1e-6, 2e-6}, s3[1] = {5e-6};
  mlc_db_record recs[4] = {
      {.workload_id = wid, .target = "llvm", .trace = t[0], .n_secs = 3, .secs = s0, .round = 1},
      {.workload_id = wid, .target = "llvm", .trace = t[1], .n_secs = 2, .secs = s1, .round = 1},
      {.workload_id = wid, .target = "llvm", .trace = t[2], .error = "crash: signal 11"},
      {.workload_id = wid, .target = "llvm -mcpu=generic -num-cores=1", .trace = t[3],
       .n_secs = 1, .secs = s3},
  };
  int added = -1;
  CHECK_MSG(mlc_db_commit(db, 4, recs, &added, &err), "%s", err.msg);
  CHECK(added == 4);
  CHECK(mlc_db_commit(db, 4, recs, &added, &err) && added == 0); /* dedup */
  mlc_db_record *top;
  int n = mlc_db_top_k(db, wid, "llvm", 5, a, &top, &err);
  CHECK_MSG(n == 2, "top-k gave %d", n);
  if (n == 2) {
    CHECK(fabs(top[0].mean_sec - 1.5e-6) < 1e-15 && fabs(top[1].mean_sec - 3e-6) < 1e-15);
    CHECK(top[0].n_secs == 2 && top[0].secs[1] == 2e-6);
    CHECK(top[0].host && *top[0].host && strcmp(top[0].mlc_version, MLC_VERSION) == 0);
    char want[17];
    CHECK(mlc_db_trace_hash(t[1], want, NULL, &err) && strcmp(top[0].trace_hash, want) == 0);
    CHECK(mlc_db_has_trace(db, wid, "llvm", want, &err) == 1);
    CHECK(mlc_db_has_trace(db, wid, "llvm -mcpu=generic -num-cores=1", want, &err) == 0);
    CHECK(strchr(top[0].target, ' ') != NULL); /* normalized: "llvm -mcpu=... -num-cores=..." */
  }
  CHECK(mlc_db_top_k(db, wid, "llvm", 1, a, &top, &err) == 1);
  /* Records of one target are never served for another. */
  n = mlc_db_top_k(db, wid, "llvm -mcpu=generic -num-cores=1", 5, a, &top, &err);
  CHECK(n == 1 && top[0].mean_sec == 5e-6);
  CHECK(mlc_db_top_k(db, wid, "llvm -mcpu=generic -num-cores=3", 5, a, &top, &err) == 0);
  mlc_db_record *all;
  CHECK(mlc_db_records(db, wid, NULL, a, &all, &err) == 4);
  CHECK(mlc_db_records(db, wid, "llvm", a, &all, &err) == 3);
  CHECK(all[2].error && strcmp(all[2].error, "crash: signal 11") == 0 && all[2].n_secs == 0);
  mlc_db_record one;
  CHECK(mlc_db_get_record(db, all[0].id, a, &one, &err) == 1 && one.round == 1);
  CHECK(mlc_db_get_record(db, 12345, a, &one, &err) == 0);
  const char **targets;
  CHECK(mlc_db_targets(db, wid, a, &targets, &err) == 2);
  mlc_db_count *c;
  n = mlc_db_count_by_error(db, a, &c, &err);
  CHECK(n == 2 && strcmp(c[0].key, "crash") == 0 && c[0].n == 1 && strcmp(c[1].key, "ok") == 0 &&
        c[1].n == 3);
  CHECK(mlc_db_count_by_target(db, a, &c, &err) == 2);
  /* The error record stores mean_sec NULL. */
  CHECK(raw_int(p, "SELECT count(*) FROM records WHERE error IS NOT NULL AND mean_sec IS NULL") == 1);
  /* A batch with a bad record changes nothing. */
  char *t5 = trace_json(32);
  double zero[1] = {0};
  mlc_db_record bad[3] = {
      {.workload_id = wid, .target = "llvm", .trace = t5, .n_secs = 1, .secs = s3},
      {.workload_id = wid, .target = "llvm", .trace = "{broken", .n_secs = 1, .secs = s3},
      {.workload_id = wid, .target = "llvm", .trace = t5, .n_secs = 1, .secs = zero},
  };
  CHECK(!mlc_db_commit(db, 2, bad, NULL, &err));
  CHECK(strstr(err.msg, "record 1") != NULL);
  CHECK(!mlc_db_commit(db, 1, bad + 2, NULL, &err)); /* zero time */
  bad[1].workload_id = 999; /* no such workload */
  bad[1].trace = t5;
  CHECK(!mlc_db_commit(db, 1, bad + 1, NULL, &err));
  CHECK(raw_int(p, "SELECT count(*) FROM records") == 4);
  /* Measured again: the times join the record and can change the order. */
  mlc_db_record *llvm;
  CHECK(mlc_db_records(db, wid, "llvm", a, &llvm, &err) == 3);
  double again[2] = {4e-6, 6e-6}, slow0[1] = {9e-6};
  CHECK_MSG(mlc_db_add_run_secs(db, llvm[1].id, 2, again, &err), "%s", err.msg); /* 1,2,4,6 us */
  CHECK(mlc_db_get_record(db, llvm[1].id, a, &one, &err) == 1 && one.n_secs == 4 &&
        one.secs[3] == 6e-6 && fabs(one.mean_sec - 3.25e-6) < 1e-15);
  CHECK(mlc_db_top_k(db, wid, "llvm", 1, a, &top, &err) == 1 && top[0].id == llvm[0].id);
  CHECK(!mlc_db_add_run_secs(db, llvm[2].id, 1, slow0, &err) && strstr(err.msg, "failed"));
  CHECK(!mlc_db_add_run_secs(db, 12345, 1, slow0, &err) && strstr(err.msg, "no record 12345"));
  CHECK(!mlc_db_add_run_secs(db, llvm[0].id, 1, zero, &err) && strstr(err.msg, "run time 0"));
  CHECK(!mlc_db_add_run_secs(db, llvm[0].id, 0, slow0, &err));
  CHECK(mlc_db_get_record(db, llvm[0].id, a, &one, &err) == 1 && one.n_secs == 3);
  for (int i = 0; i < 4; i++) mlc_free(t[i]);
  mlc_free(t5);
  mlc_arena_free(a);
  mlc_db_close(db);
}

static void test_models(void) {
  const char *p = tmp("models.db");
  rm_db(p);
  mlc_error err = {{0}};
  mlc_db *db = mlc_db_open(p, MLC_DB_CREATE, &err);
  if (!db) return (void)CHECK_MSG(0, "%s", err.msg);
  void *blob = NULL;
  size_t len = 0;
  int64_t ns = 0;
  CHECK(mlc_db_load_model(db, "llvm", 1, &blob, &len, &ns, &err) == 0);
  CHECK(mlc_db_save_model(db, "llvm", 1, 10, "first", 5, &err) > 0);
  CHECK(mlc_db_save_model(db, "llvm", 1, 20, "second model", 12, &err) > 0);
  CHECK(mlc_db_save_model(db, "llvm", 2, 30, "v2", 2, &err) > 0);
  CHECK(mlc_db_load_model(db, "llvm", 1, &blob, &len, &ns, &err) == 1);
  CHECK(len == 12 && memcmp(blob, "second model", 12) == 0 && ns == 20);
  mlc_free(blob);
  /* A model is kept per target: another CPU than the host's finds none. */
  const char *other = strcmp(mlc_target_host_cpu(), "skylake") == 0 ? "llvm -mcpu=znver2"
                                                                     : "llvm -mcpu=skylake";
  CHECK(mlc_db_load_model(db, other, 1, &blob, &len, &ns, &err) == 0);
  /* A damaged blob is refused by its checksum, never handed out. */
  CHECK(raw_exec(p, "UPDATE models SET blob = X'00112233' WHERE n_samples = 20"));
  CHECK(mlc_db_load_model(db, "llvm", 1, &blob, &len, &ns, &err) == -1);
  CHECK(strstr(err.msg, "damaged") != NULL);
  mlc_db_close(db);
}

/* ---- migration and refusal -------------------------------------------------- */

static const char *schema_v1 =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE workloads(id INTEGER PRIMARY KEY, hash TEXT UNIQUE, task TEXT, shape TEXT,"
    " ir TEXT, created_at TEXT);"
    "CREATE TABLE records(id INTEGER PRIMARY KEY, workload_id INTEGER REFERENCES workloads(id),"
    " target TEXT, trace TEXT, trace_hash TEXT, run_secs TEXT, mean_sec REAL, error TEXT,"
    " round INTEGER, created_at TEXT, UNIQUE(workload_id, target, trace_hash));"
    "INSERT INTO meta VALUES('schema_version', '1'), ('created_by', 'mlc-tune 0.0.1');"
    "INSERT INTO workloads VALUES(1, 'abc', 'matmul', '4,4,4', '', '2026-01-01');"
    "INSERT INTO records VALUES(1, 1, 'llvm', '{}', 'h1', '[1e-06]', 1e-06, NULL, 0, '2026-01-01');";

static void test_migrate_v1(void) {
  const char *p = tmp("v1.db");
  rm_db(p);
  CHECK(raw_exec(p, schema_v1));
  mlc_error err = {{0}};
  mlc_db *db = mlc_db_open(p, MLC_DB_EXISTING, &err);
  CHECK_MSG(db, "%s", err.msg);
  if (!db) return;
  CHECK(mlc_db_opened_version(db) == 1);
  CHECK(mlc_db_save_model(db, "llvm", 1, 1, "m", 1, &err) > 0);
  mlc_db_close(db);
  char *v = raw_text(p, "SELECT value FROM meta WHERE key = 'schema_version'");
  CHECK_STREQ(v, "4");
  mlc_free(v);
  CHECK(raw_int(p, "SELECT count(*) FROM records WHERE host IS NULL AND mlc_version IS NULL") == 1);
  /* Version 3's column, NULL for the old row (checked by replay alone). */
  CHECK(raw_int(p, "SELECT count(*) FROM records WHERE sched_hash IS NULL") == 1);
  /* Version 4's column, NULL for the old row (not watched). */
  CHECK(raw_int(p, "SELECT count(*) FROM records WHERE disturbed IS NULL") == 1);
  /* Opening again finds the current version. */
  db = mlc_db_open(p, MLC_DB_EXISTING, &err);
  CHECK(db && mlc_db_opened_version(db) == MLC_DB_SCHEMA_VERSION);
  mlc_db_close(db);
}

/* A version 3 file gains records.disturbed: the old row reads undisturbed
 * (NULL), new rows keep the flag they were committed with. */
static const char *schema_v3 =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE workloads(id INTEGER PRIMARY KEY, hash TEXT UNIQUE, task TEXT, shape TEXT,"
    " ir TEXT, created_at TEXT);"
    "CREATE TABLE records(id INTEGER PRIMARY KEY, workload_id INTEGER REFERENCES workloads(id),"
    " target TEXT, trace TEXT, trace_hash TEXT, run_secs TEXT, mean_sec REAL, error TEXT,"
    " round INTEGER, host TEXT, mlc_version TEXT, created_at TEXT, sched_hash TEXT,"
    " UNIQUE(workload_id, target, trace_hash));"
    "CREATE TABLE models(id INTEGER PRIMARY KEY, target TEXT, feature_version INTEGER,"
    " created_at TEXT, n_samples INTEGER, checksum TEXT, blob BLOB);"
    "INSERT INTO meta VALUES('schema_version', '3'), ('created_by', 'mlc-tune 0.0.3');"
    "INSERT INTO workloads VALUES(1, 'abc', 'matmul', '4,4,4', '', '2026-01-01');"
    "INSERT INTO records VALUES(1, 1, 'llvm', '{}', 'h1', '[1e-06]', 1e-06, NULL, 0, 'h', 'v',"
    " '2026-01-01', NULL);";

static void test_migrate_v3(void) {
  const char *p = tmp("v3.db");
  rm_db(p);
  CHECK(raw_exec(p, schema_v3));
  mlc_error err = {{0}};
  mlc_db *db = mlc_db_open(p, MLC_DB_EXISTING, &err);
  CHECK_MSG(db, "%s", err.msg);
  if (!db) return;
  CHECK(mlc_db_opened_version(db) == 3);
  mlc_arena *a = mlc_arena_new();
  mlc_db_record r;
  CHECK(mlc_db_get_record(db, 1, a, &r, &err) == 1 && !r.disturbed);
  double secs[2] = {2e-6, 3e-6};
  char *tj = trace_json(4), *tk = trace_json(5);
  mlc_db_record add[2] = {
      {.workload_id = 1, .target = "llvm", .trace = tj, .n_secs = 2, .secs = secs, .round = 1,
       .disturbed = true},
      {.workload_id = 1, .target = "llvm", .trace = tk, .n_secs = 2, .secs = secs,
       .round = 1}};
  int n_added = 0;
  CHECK_MSG(mlc_db_commit(db, 2, add, &n_added, &err) && n_added == 2, "%d added: %s", n_added,
            err.msg);
  mlc_db_close(db);
  char *v = raw_text(p, "SELECT value FROM meta WHERE key = 'schema_version'");
  CHECK_STREQ(v, "4");
  mlc_free(v);
  CHECK(raw_int(p, "SELECT count(*) FROM records WHERE disturbed IS NULL") == 1);
  CHECK(raw_int(p, "SELECT count(*) FROM records WHERE disturbed = 1") == 1);
  CHECK(raw_int(p, "SELECT count(*) FROM records WHERE disturbed = 0") == 1);
  db = mlc_db_open(p, MLC_DB_EXISTING, &err);
  CHECK(db && mlc_db_opened_version(db) == MLC_DB_SCHEMA_VERSION);
  int64_t id = raw_int(p, "SELECT id FROM records WHERE disturbed = 1");
  CHECK(db && mlc_db_get_record(db, id, a, &r, &err) == 1 && r.disturbed);
  mlc_db_close(db);
  mlc_arena_free(a);
  mlc_free(tj);
  mlc_free(tk);
}

/* A failed migration leaves the old file as it was (one transaction). */
static void test_migrate_atomic(void) {
  const char *p = tmp("v1bad.db");
  rm_db(p);
  /* A v1 file that already has a models table: the migration's CREATE fails. */
  CHECK(raw_exec(p, schema_v1));
  CHECK(raw_exec(p, "CREATE TABLE models(x)"));
  mlc_error err = {{0}};
  CHECK(mlc_db_open(p, MLC_DB_EXISTING, &err) == NULL);
  CHECK(strstr(err.msg, "migrating") != NULL);
  char *v = raw_text(p, "SELECT value FROM meta WHERE key = 'schema_version'");
  CHECK_STREQ(v, "1");
  mlc_free(v);
  CHECK(raw_int(p, "SELECT count(*) FROM pragma_table_info('records') WHERE name = 'host'") == 0);
}

static char *slurp(const char *path, size_t *n) {
  mlc_error e;
  return mlc_read_file(path, n, &e);
}

static void test_refuse(void) {
  mlc_error err = {{0}};
  /* Newer schema. */
  const char *p = tmp("v9.db");
  rm_db(p);
  CHECK(raw_exec(p, "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
                    "INSERT INTO meta VALUES('schema_version', '9')"));
  size_t n0, n1;
  char *before = slurp(p, &n0);
  CHECK(mlc_db_open(p, MLC_DB_CREATE, &err) == NULL);
  CHECK_MSG(strstr(err.msg, "schema version 9 is newer") != NULL, "%s", err.msg);
  char *after = slurp(p, &n1);
  CHECK(before && after && n0 == n1 && memcmp(before, after, n0) == 0);
  mlc_free(before), mlc_free(after);
  /* Not SQLite at all. */
  p = tmp("text.db");
  CHECK(mlc_write_file(p, "hello, I am a text file\n", 24, &err));
  CHECK(mlc_db_open(p, MLC_DB_CREATE, &err) == NULL);
  CHECK(strstr(err.msg, "not an SQLite database") != NULL);
  after = slurp(p, &n1);
  CHECK(after && n1 == 24 && memcmp(after, "hello, I am a text file\n", 24) == 0);
  mlc_free(after);
  /* SQLite, but someone else's. */
  p = tmp("foreign.db");
  rm_db(p);
  CHECK(raw_exec(p, "CREATE TABLE people(name TEXT)"));
  CHECK(mlc_db_open(p, MLC_DB_CREATE, &err) == NULL);
  CHECK(strstr(err.msg, "not an mlc-tune one") != NULL);
  CHECK(raw_int(p, "SELECT count(*) FROM sqlite_master") == 1);
  /* SQLite header, garbage pages: an error, not a crash. */
  p = tmp("corrupt.db");
  char junk[8192];
  memcpy(junk, "SQLite format 3", 16);
  for (size_t i = 16; i < sizeof junk; i++) junk[i] = (char)(i * 7 + 3);
  CHECK(mlc_write_file(p, junk, sizeof junk, &err));
  CHECK(mlc_db_open(p, MLC_DB_CREATE, &err) == NULL);
  CHECK_MSG(strstr(err.msg, "corrupt.db") != NULL, "%s", err.msg);
  after = slurp(p, &n1);
  CHECK(after && n1 == sizeof junk && memcmp(after, junk, n1) == 0);
  mlc_free(after);
  /* A directory. */
  CHECK(mlc_db_open(tmpdir, MLC_DB_CREATE, &err) == NULL);
}

/* ---- durability and concurrency --------------------------------------------------- */

enum { BATCH = 5 };

/* The writer child: commits batches (round = batch number) forever,
 * reporting each committed batch number on fd. Traces differ by `salt`. */
static _Noreturn void writer_child_salted(const char *path, int fd, int max_batches, int salt) {
  mlc_error err;
  mlc_db *db = mlc_db_open(path, MLC_DB_CREATE, &err);
  if (!db) _exit(3);
  mlc_arena *a = mlc_arena_new();
  int64_t wid = mlc_db_add_workload(db, "matmul", "8,8,8", matmul(a, 8), &err);
  if (wid < 0) _exit(4);
  double secs[2] = {1e-6, 2e-6};
  for (int b = 1; b <= max_batches; b++) {
    mlc_db_record r[BATCH];
    char *t[BATCH];
    for (int i = 0; i < BATCH; i++) {
      t[i] = trace_json(salt + b * 100 + i);
      r[i] = (mlc_db_record){.workload_id = wid, .target = "llvm", .trace = t[i], .n_secs = 2,
                             .secs = secs, .round = b};
    }
    if (!mlc_db_commit(db, BATCH, r, NULL, &err)) _exit(5);
    for (int i = 0; i < BATCH; i++) mlc_free(t[i]);
    if (fd >= 0 && write(fd, &b, sizeof b) != (ssize_t)sizeof b) _exit(6);
  }
  mlc_arena_free(a);
  mlc_db_close(db);
  _exit(0);
}

static _Noreturn void writer_child(const char *path, int fd, int max_batches) {
  writer_child_salted(path, fd, max_batches, 0);
}

static void test_sigkill_writer(void) {
  const char *p = tmp("kill.db");
  rm_db(p);
  int fds[2];
  CHECK(pipe(fds) == 0);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    writer_child(p, fds[1], 1000000);
  }
  close(fds[1]);
  int last = 0, b;
  while (last < 40 && read(fds[0], &b, sizeof b) == (ssize_t)sizeof b) last = b;
  kill(pid, SIGKILL); /* somewhere in the middle of the next commits */
  int st;
  waitpid(pid, &st, 0);
  while (read(fds[0], &b, sizeof b) == (ssize_t)sizeof b) last = b; /* reported before death */
  close(fds[0]);
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  CHECK(last >= 40);
  mlc_error err = {{0}};
  mlc_db *db = mlc_db_open(p, MLC_DB_EXISTING, &err);
  CHECK_MSG(db, "%s", err.msg);
  mlc_db_close(db);
  char *ic = raw_text(p, "PRAGMA integrity_check");
  CHECK_STREQ(ic, "ok");
  mlc_free(ic);
  char q[200];
  snprintf(q, sizeof q, "SELECT count(DISTINCT round) FROM records WHERE round <= %d", last);
  CHECK(raw_int(p, q) == last);
  /* Whole batches only: every round holds BATCH records; at most one more
   * batch than reported (committed, killed before reporting). */
  CHECK(raw_int(p, "SELECT count(*) FROM (SELECT round, count(*) c FROM records GROUP BY round"
                   " HAVING c != 5)") == 0);
  int64_t rounds = raw_int(p, "SELECT count(DISTINCT round) FROM records");
  CHECK(rounds == last || rounds == last + 1);
}

/* A second connection reads while a writer commits: it never blocks, and
 * sees whole batches only. */
static void test_concurrent_reader(void) {
  const char *p = tmp("conc.db");
  rm_db(p);
  mlc_error err = {{0}};
  /* In one process: an open write transaction does not block a reader. */
  mlc_db *w = mlc_db_open(p, MLC_DB_CREATE, &err), *r = mlc_db_open(p, MLC_DB_EXISTING, &err);
  CHECK_MSG(w && r, "%s", err.msg);
  if (!w || !r) return;
  mlc_arena *a = mlc_arena_new();
  int64_t wid = mlc_db_add_workload(w, "matmul", "8,8,8", matmul(a, 8), &err);
  CHECK(raw_exec(p, "")); /* a third connection may come and go */
  mlc_db_workload *ws;
  CHECK(mlc_db_list_workloads(r, NULL, NULL, a, &ws, &err) == 1 && ws[0].id == wid);
  mlc_db_close(w);
  /* Across processes: a child commits 30 batches while we read. */
  fflush(stdout);
  int fds[2];
  CHECK(pipe(fds) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    writer_child(p, fds[1], 30);
  }
  close(fds[1]);
  int reads = 0, bad = 0;
  int64_t prev = 0;
  for (;;) {
    mlc_db_record *recs;
    int n = mlc_db_records(r, wid, "llvm", a, &recs, &err);
    if (n < 0 || n % BATCH != 0 || n < prev) {
      bad++;
      CHECK_MSG(0, "read %d: %d records (%s)", reads, n, n < 0 ? err.msg : "");
      break;
    }
    prev = n;
    reads++;
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
      break;
    }
  }
  close(fds[0]);
  mlc_db_record *recs;
  CHECK(mlc_db_records(r, wid, "llvm", a, &recs, &err) == 30 * BATCH);
  CHECK(reads > 1 && bad == 0);
  mlc_arena_free(a);
  mlc_db_close(r);
}

/* Two tuners share one file: the busy timeout serializes their commits,
 * nothing is lost and neither fails. */
static void test_two_writers(void) {
  const char *p = tmp("two.db");
  rm_db(p);
  fflush(stdout);
  pid_t a = fork();
  if (a == 0) writer_child_salted(p, -1, 25, 1000000);
  pid_t b = fork();
  if (b == 0) writer_child_salted(p, -1, 25, 2000000);
  int sa, sb;
  waitpid(a, &sa, 0);
  waitpid(b, &sb, 0);
  CHECK_MSG(WIFEXITED(sa) && WEXITSTATUS(sa) == 0, "writer a: status %d", sa);
  CHECK_MSG(WIFEXITED(sb) && WEXITSTATUS(sb) == 0, "writer b: status %d", sb);
  CHECK(raw_int(p, "SELECT count(*) FROM records") == 2 * 25 * BATCH);
  CHECK(raw_int(p, "SELECT count(*) FROM workloads") == 1);
  char *ic = raw_text(p, "PRAGMA integrity_check");
  CHECK_STREQ(ic, "ok");
  mlc_free(ic);
}

/* ---- JSON lines --------------------------------------------------------------------- */

static void fill(mlc_db *db, mlc_arena *a) {
  mlc_error err;
  int64_t w1 = mlc_db_add_workload(db, "matmul", "16,16,16", matmul(a, 16), &err);
  int64_t w2 = mlc_db_add_workload(db, NULL, NULL, matmul(a, 8), &err);
  double s[3] = {4e-6, 5e-6, 6e-6};
  for (int i = 0; i < 6; i++) {
    char *t = trace_json(1 << i);
    double si[3] = {s[0] * (i + 1), s[1] * (i + 1), s[2]};
    mlc_db_record r = {.workload_id = i < 4 ? w1 : w2, .target = "llvm", .trace = t,
                       .n_secs = 3, .secs = si, .error = i == 2 ? "timeout: killed" : NULL};
    CHECK(mlc_db_commit(db, 1, &r, NULL, &err));
    mlc_free(t);
  }
}

static void test_export_import(void) {
  const char *p = tmp("exp.db"), *q = tmp("imp.db"), *jl = tmp("exp.jsonl");
  rm_db(p), rm_db(q);
  mlc_error err = {{0}};
  mlc_db *db = mlc_db_open(p, MLC_DB_CREATE, &err), *db2 = mlc_db_open(q, MLC_DB_CREATE, &err);
  if (!db || !db2) return (void)CHECK_MSG(0, "%s", err.msg);
  mlc_arena *a = mlc_arena_new();
  fill(db, a);
  FILE *f = fopen(jl, "w");
  CHECK(mlc_db_export(db, NULL, f, &err) == 6);
  fclose(f);
  size_t len;
  char *text = slurp(jl, &len);
  int64_t added = 0, dup = 0;
  CHECK_MSG(mlc_db_import(db2, text, len, &added, &dup, &err), "%s", err.msg);
  CHECK(added == 6 && dup == 0);
  CHECK(mlc_db_import(db2, text, len, &added, &dup, &err) && added == 0 && dup == 6);
  /* Same top-k, workload by workload. */
  mlc_db_workload *w1, *w2;
  int nw = mlc_db_list_workloads(db, NULL, NULL, a, &w1, &err);
  CHECK(nw == 2 && mlc_db_list_workloads(db2, NULL, NULL, a, &w2, &err) == 2);
  for (int i = 0; i < nw && i < 2; i++) {
    CHECK_STREQ(w1[i].hash, w2[i].hash);
    CHECK((w1[i].task == NULL) == (w2[i].task == NULL));
    mlc_db_record *t1, *t2;
    int k1 = mlc_db_top_k(db, w1[i].id, "llvm", 10, a, &t1, &err);
    int k2 = mlc_db_top_k(db2, w2[i].id, "llvm", 10, a, &t2, &err);
    CHECK(k1 == k2 && k1 > 0);
    for (int k = 0; k < k1 && k < k2; k++) {
      CHECK_STREQ(t1[k].trace_hash, t2[k].trace_hash);
      CHECK(t1[k].mean_sec == t2[k].mean_sec);
    }
  }
  CHECK(raw_int(q, "SELECT count(*) FROM records WHERE error = 'timeout: killed'") == 1);
  /* Export by task. */
  f = fopen(jl, "w");
  CHECK(mlc_db_export(db, "matmul", f, &err) == 4);
  fclose(f);
  /* A bad line: named, and nothing changes. */
  const char *q3 = tmp("imp3.db");
  rm_db(q3);
  mlc_db *db3 = mlc_db_open(q3, MLC_DB_CREATE, &err);
  const char *nl = strchr(text, '\n');
  mlc_str bad = {0};
  mlc_str_putn(&bad, text, (size_t)(nl - text) + 1);
  mlc_str_puts(&bad, "\n{\"task\": 3}\n");
  CHECK(!mlc_db_import(db3, bad.data, bad.len, &added, &dup, &err));
  CHECK_MSG(strstr(err.msg, "line 3") != NULL, "%s", err.msg);
  CHECK(raw_int(q3, "SELECT count(*) FROM records") == 0);
  CHECK(raw_int(q3, "SELECT count(*) FROM workloads") == 0);
  mlc_str_clear(&bad);
  mlc_str_puts(&bad, "not json\n");
  CHECK(!mlc_db_import(db3, bad.data, bad.len, &added, &dup, &err));
  CHECK(strstr(err.msg, "line 1") != NULL);
  mlc_str_free(&bad);
  mlc_free(text);
  mlc_arena_free(a);
  mlc_db_close(db3);
  mlc_db_close(db);
  mlc_db_close(db2);
}


/* ---- records as untrusted input ------------------------------------------------- */

/* The replay of a trace is the function a scheduling session builds, by
 * hash; a trace that does not replay, or whose decision no longer fits, is
 * refused. */
static void test_replay_hash(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = matmul(a, 16), *out = NULL;
  mlc_error err = {{0}};
  char *t = trace_json(8), h[17], want[17];
  CHECK_MSG(mlc_db_replay_trace(a, f, t, &out, h, &err), "%s", err.msg);
  mlc_sched *s = mlc_sched_new(f, 0);
  mlc_rv b, *loops, parts[2];
  mlc_operand fs[2] = {MLC_OP_NONE, MLC_OP_INT(8)};
  CHECK(mlc_sched_get_block(s, "C", "main", &b, &err) && mlc_sched_get_loops(s, b, &loops, &err) &&
        mlc_sched_split(s, loops[1], 2, fs, true, parts, &err));
  mlc_func_hash_hex(mlc_sched_func(s), want);
  CHECK_STREQ(h, want);
  CHECK(out && mlc_func_struct_equal(out, mlc_sched_func(s)));
  mlc_sched_free(s);
  char t4h[17], *t4 = trace_json(4);
  CHECK(mlc_db_replay_trace(a, f, t4, NULL, t4h, &err) && strcmp(t4h, h) != 0);
  const char *nob = "{\"insts\":[[\"GetBlock\",[],{\"name\":\"X\",\"func_name\":\"main\"},"
                    "[\"b0\"]]],\"decisions\":{},\"version\":1}";
  CHECK(!mlc_db_replay_trace(a, f, nob, NULL, h, &err));
  CHECK_MSG(strstr(err.msg, "does not replay"), "%s", err.msg);
  /* A stored tile decision of 5 x 4 does not fit a loop of 16. */
  const char *misfit =
      "{\"insts\":[[\"GetBlock\",[],{\"name\":\"C\",\"func_name\":\"main\"},[\"b0\"]],"
      "[\"GetLoops\",[\"b0\"],{},[\"l1\",\"l2\",\"l3\"]],"
      "[\"SamplePerfectTile\",[\"l2\"],{\"n\":2,\"max_innermost_factor\":16},[\"v4\",\"v5\"]],"
      "[\"Split\",[\"l2\",\"v4\",\"v5\"],{\"preserve_unit_iters\":true},[\"l6\",\"l7\"]]],"
      "\"decisions\":{\"2\":[5,4]},\"version\":1}";
  bool ok = mlc_db_replay_trace(a, f, misfit, NULL, h, &err);
  CHECK_MSG(!ok && strstr(err.msg, "does not fit"), "%s", ok ? "replayed" : err.msg);
  mlc_free(t), mlc_free(t4);
  mlc_arena_free(a);
}

/* A fake runner: a time from the trace's hash, never measured twice. */
static bool fake_measure(void *ud, int n, const mlc_measure_cand *c, mlc_measure_result *out,
                         mlc_error *err) {
  MLC_UNUSED(ud), MLC_UNUSED(err);
  for (int i = 0; i < n; i++) {
    memset(&out[i], 0, sizeof out[i]);
    out[i].index = i;
    double sec = 1e-3 * (double)(1 + mlc_hash_str(c[i].trace ? c[i].trace : "", 0) % 997);
    out[i].status = MLC_MEASURE_OK;
    out[i].n_secs = 1;
    out[i].secs[0] = out[i].mean_sec = sec;
  }
  return true;
}

static void tune_opts(mlc_tuner_tune_opts *o, int trials) {
  mlc_tuner_tune_opts_default(o);
  o->task = "matmul";
  o->shape = "16,16,16";
  o->trials = trials;
  o->trials_per_round = 8;
  o->cost_model = "random";
  o->measure = fake_measure;
  o->remeasure_top = 2;
  o->search.seed = 5;
  o->search.num_cores = 2;
  o->search.population = 24;
  o->search.generations = 2;
  o->search.min_parallel_work = 0;
}

/* The tuner stores the hash of the function it measured, which is what
 * the trace replays to. A row tampered afterwards (its trace edited, its
 * time made the best) is skipped by resume and by the kernel choice of
 * mlc-compile, with a note naming it, and the next best is taken. */
static void test_tampered_record(void) {
  const char *p = tmp("tamper.db");
  rm_db(p);
  mlc_error err = {{0}};
  mlc_db *db = mlc_db_open(p, MLC_DB_CREATE, &err);
  if (!db) return (void)CHECK_MSG(0, "%s", err.msg);
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = matmul(a, 16);
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_result r1, r2;
  tune_opts(&o, 8);
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r1, &err), "%s", err.msg);
  mlc_db_record *recs;
  int n = mlc_db_records(db, r1.workload_id, "llvm", a, &recs, &err), same = 0;
  CHECK(n == 8);
  int64_t worst = 0;
  double worst_sec = 0;
  for (int i = 0; i < n; i++) {
    char h[17];
    same += recs[i].sched_hash && mlc_db_replay_trace(a, f, recs[i].trace, NULL, h, &err) &&
            strcmp(h, recs[i].sched_hash) == 0;
    if (!recs[i].error && recs[i].mean_sec > worst_sec) worst = recs[i].id, worst_sec = recs[i].mean_sec;
  }
  CHECK_MSG(same == n, "%d of %d records replay to their stored hash", same, n);
  /* The worst record, edited with SQL: another split, the best time. */
  char *t2 = trace_json(2), sql[1024];
  snprintf(sql, sizeof sql,
           "UPDATE records SET trace = '%s', run_secs = '[1e-09]', mean_sec = 1e-09 WHERE id = %lld",
           t2, (long long)worst);
  CHECK(raw_exec(p, sql));
  mlc_db_record *top;
  CHECK(mlc_db_top_k(db, r1.workload_id, "llvm", 1, a, &top, &err) == 1 && top[0].id == worst);
  /* Resume: the tampered row is neither the best nor measured again. */
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r2, &err), "%s", err.msg);
  char note[64];
  snprintf(note, sizeof note, "record %lld does not replay to its stored hash", (long long)worst);
  CHECK_MSG(r2.nothing_to_do && r2.best_record_id != worst && r2.best_sec > 1e-9,
            "best record %lld (%g s)", (long long)r2.best_record_id, r2.best_sec);
  CHECK_MSG(strstr(r2.message, note), "%s", r2.message);
  /* mlc-compile's choice: the next best, and a note naming the record. */
  mlc_gkernel k;
  CHECK_MSG(mlc_graph_schedule_kernel(a, db, "llvm", f, true, &k, &err), "%s", err.msg);
  snprintf(note, sizeof note, "record %lld skipped: its trace replays", (long long)worst);
  CHECK_MSG(k.record_id > 0 && k.record_id != worst && strstr(k.note, note), "record %lld: %s",
            (long long)k.record_id, k.note);
  CHECK(k.record_id == r2.best_record_id);
  /* A row written with a negative time never ranks. */
  snprintf(sql, sizeof sql, "UPDATE records SET mean_sec = -1 WHERE id = %lld",
           (long long)k.record_id);
  CHECK(raw_exec(p, sql));
  mlc_gkernel k2;
  CHECK(mlc_graph_schedule_kernel(a, db, "llvm", f, true, &k2, &err));
  CHECK(k2.record_id > 0 && k2.record_id != k.record_id && k2.record_id != worst);
  mlc_free(t2);
  mlc_arena_free(a);
  mlc_db_close(db);
}

/* A row without a scheduled-function hash (written around mlc-tune, or
 * migrated from an old schema) claiming the best time, though its trace
 * replays: resume, the task scheduler and mlc-compile's choice all pass it
 * over, and resume and mlc-compile name it. */
static void test_hashless_record(void) {
  const char *p = tmp("hashless.db");
  rm_db(p);
  mlc_error err = {{0}};
  mlc_db *db = mlc_db_open(p, MLC_DB_CREATE, &err);
  if (!db) return (void)CHECK_MSG(0, "%s", err.msg);
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = matmul(a, 16);
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_result r1, r2;
  tune_opts(&o, 8);
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r1, &err), "%s", err.msg);
  char *t2 = trace_json(2), h[17];
  CHECK_MSG(mlc_db_replay_trace(a, f, t2, NULL, h, &err), "%s", err.msg); /* a valid trace */
  double fast[1] = {1e-9};
  mlc_db_record rec = {.workload_id = r1.workload_id, .target = "llvm", .trace = t2, .n_secs = 1,
                       .secs = fast, .round = 9};
  int added = 0;
  CHECK_MSG(mlc_db_commit(db, 1, &rec, &added, &err) && added == 1, "%s", err.msg);
  int64_t id = raw_int(p, "SELECT max(id) FROM records");
  CHECK(raw_int(p, "SELECT count(*) FROM records WHERE sched_hash IS NULL") == 1);
  mlc_db_record *top;
  CHECK(mlc_db_top_k(db, r1.workload_id, "llvm", 1, a, &top, &err) == 1 && top[0].id == id);
  /* Resume: not the best, and named. */
  tune_opts(&o, 9);
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r2, &err), "%s", err.msg);
  char note[96];
  snprintf(note, sizeof note, "record %lld has no scheduled-function hash", (long long)id);
  CHECK_MSG(r2.nothing_to_do && r2.best_record_id > 0 && r2.best_record_id != id &&
                r2.best_sec > 1e-9,
            "best record %lld (%g s)", (long long)r2.best_record_id, r2.best_sec);
  CHECK_MSG(strstr(r2.message, note), "%s", r2.message);
  /* The task scheduler's starting point: the same best. */
  mlc_tuner_task task = {.name = "matmul", .func = f, .weight = 1};
  mlc_tuner_sched_opts so;
  mlc_tuner_sched_opts_default(&so);
  so.trials = 9;
  so.tune = o;
  mlc_tuner_task_state st;
  mlc_tuner_sched_result sr;
  CHECK_MSG(mlc_tuner_schedule_tasks(db, 1, &task, &so, &st, &sr, &err), "%s", err.msg);
  CHECK_MSG(sr.nothing_to_do && st.best_record_id == r2.best_record_id && st.best_sec > 1e-9,
            "scheduler's best: record %lld (%g s)", (long long)st.best_record_id, st.best_sec);
  /* mlc-compile's choice: the next best, and a note naming the record. */
  mlc_gkernel k;
  CHECK_MSG(mlc_graph_schedule_kernel(a, db, "llvm", f, true, &k, &err), "%s", err.msg);
  CHECK_MSG(k.record_id > 0 && k.record_id != id && strstr(k.note, note), "record %lld: %s",
            (long long)k.record_id, k.note);
  mlc_free(t2);
  mlc_arena_free(a);
  mlc_db_close(db);
}

typedef struct jit_one {
  mlc_kernel_fn fn;
} jit_one;

static bool run_jit(void *ud, const mlc_prim_func *f, int n, mlc_array *args, mlc_error *err) {
  MLC_UNUSED(f);
  if (mlc_kernel_call(((jit_one *)ud)->fn, n, args) != 0) return mlc_error_set(err, "kernel failed");
  return true;
}

/* mlc-compile --verify's check: a compiled kernel that computes something
 * else (B transposed) is caught, the right one passes. */
static void test_check_kernel(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = matmul(a, 8);
  mlc_str text = {0};
  mlc_print_func(&text, f);
  char *at = strstr(text.data, "* B[vk, vj]"); /* the body, not T.reads */
  CHECK(at != NULL);
  if (!at) return mlc_str_free(&text), mlc_arena_free(a);
  memcpy(at, "* B[vj, vk]", 11);
  mlc_error err = {{0}};
  mlc_module *m = mlc_parse_module(a, "wrong.py", text.data, &err);
  CHECK_MSG(m != NULL, "%s", err.msg);
  mlc_str_free(&text);
  if (!m) return mlc_arena_free(a);
  mlc_target t;
  mlc_object obj;
  const mlc_prim_func *fs[2] = {f, m->funcs[0]};
  const char *syms[2] = {"right", "wrong"};
  CHECK(mlc_target_parse("llvm", &t, &err));
  bool built = mlc_target_build(&t, 2, fs, syms, NULL, &obj, &err);
  CHECK_MSG(built, "%s", err.msg);
  mlc_jit_lib *lib = built ? mlc_jit_load(&obj, &err) : NULL;
  CHECK_MSG(!built || lib, "%s", err.msg);
  if (lib) {
    jit_one right = {mlc_jit_lookup(lib, "right", &err)}, wrong = {mlc_jit_lookup(lib, "wrong", &err)};
    CHECK(right.fn && wrong.fn);
    CHECK_MSG(mlc_graph_check_kernel(f, run_jit, &right, 1, &err), "%s", err.msg);
    CHECK(!mlc_graph_check_kernel(f, run_jit, &wrong, 1, &err));
    CHECK_MSG(strstr(err.msg, "parameter C differs"), "%s", err.msg);
    mlc_jit_unload(lib);
  }
  if (built) mlc_object_free(&obj);
  mlc_arena_free(a);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/mlc_test_db_XXXXXX");
  if (!mkdtemp(tmpdir)) return 1;
  RUN(test_create);
  RUN(test_workloads);
  RUN(test_records);
  RUN(test_models);
  RUN(test_migrate_v1);
  RUN(test_migrate_atomic);
  RUN(test_migrate_v3);
  RUN(test_refuse);
  RUN(test_sigkill_writer);
  RUN(test_concurrent_reader);
  RUN(test_two_writers);
  RUN(test_export_import);
  RUN(test_replay_hash);
  RUN(test_tampered_record);
  RUN(test_hashless_record);
  RUN(test_check_kernel);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) printf("# could not remove %s\n", tmpdir);
  return test_summary();
}
