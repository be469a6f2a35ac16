/* db: opening, schema and migration, workloads, records, models.
 *
 * Every connection uses WAL (readers never block the writer), a busy
 * timeout (two tuners can share one file) and synchronous=NORMAL, which in
 * WAL mode loses nothing on a process kill: a batch is either committed
 * whole or absent.
 */
#include "db/db_internal.h"
#include "schedule/schedule.h"
#include "targets/targets.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- SQLite's memory ------------------------------------------------------ */

/* SQLite allocates through the one hook too (SQLITE_CONFIG_MALLOC), so that
 * a test failing the Nth allocation reaches SQLite's, which it reports as
 * SQLITE_NOMEM ("out of memory") and so as an error of the db function.
 * Each block carries its size in front (xSize), 16 bytes to keep SQLite's
 * 8-byte alignment and ours. */
enum { SQ_HEAD = 16 };

static void *sq_malloc(int n) {
  if (n <= 0) return NULL;
  unsigned char *p = mlc_malloc((size_t)n + SQ_HEAD);
  if (!p) return NULL;
  memcpy(p, &n, sizeof n);
  return p + SQ_HEAD;
}

static void sq_free(void *p) {
  if (p) mlc_free((unsigned char *)p - SQ_HEAD);
}

static void *sq_realloc(void *p, int n) {
  if (!p) return sq_malloc(n);
  if (n <= 0) return NULL; /* SQLite never asks for this */
  unsigned char *q = mlc_realloc((unsigned char *)p - SQ_HEAD, (size_t)n + SQ_HEAD);
  if (!q) return NULL;
  memcpy(q, &n, sizeof n);
  return q + SQ_HEAD;
}

static int sq_size(void *p) {
  int n = 0;
  if (p) memcpy(&n, (unsigned char *)p - SQ_HEAD, sizeof n);
  return n;
}

static int sq_roundup(int n) { return (n + 7) & ~7; }
static int sq_init(void *ud) { return MLC_UNUSED(ud), SQLITE_OK; }
static void sq_shutdown(void *ud) { MLC_UNUSED(ud); }

static void route_sqlite_memory(void) {
  static const sqlite3_mem_methods methods = {sq_malloc, sq_free,    sq_realloc, sq_size,
                                              sq_roundup, sq_init, sq_shutdown, NULL};
  /* SQLITE_MISUSE when SQLite was started before (by a program calling it
   * directly): it then keeps its own allocator, which is harmless. */
  sqlite3_config(SQLITE_CONFIG_MALLOC, &methods);
}

static pthread_once_t sqlite_memory_once = PTHREAD_ONCE_INIT;

/* ---- helpers ----------------------------------------------------------- */

bool db_fail(mlc_db *db, mlc_error *err, const char *what) {
  return mlc_error_set(err, "%s: %s: %s", db->path, what, sqlite3_errmsg(db->h));
}

sqlite3_stmt *db_prepare(mlc_db *db, const char *sql, mlc_error *err) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) {
    db_fail(db, err, "query");
    sqlite3_finalize(st);
    return NULL;
  }
  return st;
}

bool db_exec(mlc_db *db, const char *sql, mlc_error *err) {
  if (sqlite3_exec(db->h, sql, NULL, NULL, NULL) == SQLITE_OK) return true;
  return db_fail(db, err, "statement");
}

bool db_bind_text(sqlite3_stmt *st, int i, const char *s) {
  if (s) return sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT) == SQLITE_OK;
  return sqlite3_bind_null(st, i) == SQLITE_OK;
}

const char *db_column_text(sqlite3_stmt *st, int i, mlc_arena *a) {
  const unsigned char *t = sqlite3_column_text(st, i);
  return t ? mlc_arena_strdup(a, (const char *)t) : NULL;
}

const char *mlc_db_path(const mlc_db *db) { return db->path; }
int mlc_db_opened_version(const mlc_db *db) { return db->opened_version; }

/* ---- schema -------------------------------------------------------------- */

static const char *schema_v4 =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE workloads(id INTEGER PRIMARY KEY, hash TEXT UNIQUE, task TEXT, shape TEXT,"
    " ir TEXT, created_at TEXT);"
    "CREATE TABLE records(id INTEGER PRIMARY KEY, workload_id INTEGER REFERENCES workloads(id),"
    " target TEXT, trace TEXT, trace_hash TEXT, run_secs TEXT, mean_sec REAL, error TEXT,"
    " round INTEGER, host TEXT, mlc_version TEXT, created_at TEXT, sched_hash TEXT,"
    " disturbed INTEGER, UNIQUE(workload_id, target, trace_hash));"
    "CREATE INDEX records_best ON records(workload_id, target, mean_sec);"
    "CREATE TABLE models(id INTEGER PRIMARY KEY, target TEXT, feature_version INTEGER,"
    " created_at TEXT, n_samples INTEGER, checksum TEXT, blob BLOB);";

/* Version 1 -> 2: provenance columns and the models table. */
static const char *migrate_v1 =
    "ALTER TABLE records ADD COLUMN host TEXT;"
    "ALTER TABLE records ADD COLUMN mlc_version TEXT;"
    "CREATE TABLE models(id INTEGER PRIMARY KEY, target TEXT, feature_version INTEGER,"
    " created_at TEXT, n_samples INTEGER, checksum TEXT, blob BLOB);";

/* Version 2 -> 3: the structural hash of each record's scheduled function
 * (NULL for the rows already there). */
static const char *migrate_v2 = "ALTER TABLE records ADD COLUMN sched_hash TEXT;";

/* Version 3 -> 4: whether the runner saw interference while it timed the
 * record (NULL for the rows already there: not watched). */
static const char *migrate_v3 = "ALTER TABLE records ADD COLUMN disturbed INTEGER;";

static bool set_meta(mlc_db *db, const char *key, const char *value, mlc_error *err) {
  sqlite3_stmt *st = db_prepare(db, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", err);
  if (!st) return false;
  db_bind_text(st, 1, key);
  db_bind_text(st, 2, value);
  bool ok = sqlite3_step(st) == SQLITE_DONE || db_fail(db, err, "writing meta");
  sqlite3_finalize(st);
  return ok;
}

/* Number of rows a single-integer query returns as its value; -1 on error. */
static int64_t query_int(mlc_db *db, const char *sql, mlc_error *err) {
  sqlite3_stmt *st = db_prepare(db, sql, err);
  if (!st) return -1;
  int64_t v = -1;
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  else db_fail(db, err, "reading the schema");
  sqlite3_finalize(st);
  return v;
}

static bool create_schema(mlc_db *db, mlc_error *err) {
  char by[64];
  snprintf(by, sizeof by, "mlc-tune %s", MLC_VERSION);
  return db_exec(db, schema_v4, err) && set_meta(db, "schema_version", "4", err) &&
         set_meta(db, "created_by", by, err);
}

/* Read schema_version; 0 with an error when absent or not a number. */
static int read_version(mlc_db *db, mlc_error *err) {
  sqlite3_stmt *st = db_prepare(db, "SELECT value FROM meta WHERE key = 'schema_version'", err);
  if (!st) return 0;
  int v = 0;
  if (sqlite3_step(st) == SQLITE_ROW) {
    const char *t = (const char *)sqlite3_column_text(st, 0);
    char *end;
    long x = t ? strtol(t, &end, 10) : 0;
    if (t && *t && !*end && x > 0 && x < 1000000) v = (int)x;
  }
  if (!v) mlc_error_set(err, "%s: meta has no valid schema_version", db->path);
  sqlite3_finalize(st);
  return v;
}

static bool check_schema(mlc_db *db, mlc_error *err) {
  int64_t has_meta = query_int(
      db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'", err);
  if (has_meta < 0) return false;
  if (has_meta == 0) {
    int64_t n = query_int(db, "SELECT count(*) FROM sqlite_master", err);
    if (n < 0) return false;
    if (n > 0)
      return mlc_error_set(err, "%s: an SQLite database, but not an mlc-tune one (no meta table); "
                                "refusing to touch it", db->path);
    db->opened_version = MLC_DB_SCHEMA_VERSION;
    return create_schema(db, err);
  }
  int v = read_version(db, err);
  if (!v) return false;
  db->opened_version = v;
  if (v > MLC_DB_SCHEMA_VERSION)
    return mlc_error_set(err, "%s: schema version %d is newer than this mlc-tune (%s) supports "
                              "(%d); use a newer mlc-tune", db->path, v, MLC_VERSION,
                         MLC_DB_SCHEMA_VERSION);
  if (v == 1 && !(db_exec(db, migrate_v1, err) && set_meta(db, "schema_version", "2", err)))
    return mlc_error_prefix(err, "migrating schema version 1 to 2");
  if (v <= 2 && !(db_exec(db, migrate_v2, err) && set_meta(db, "schema_version", "3", err)))
    return mlc_error_prefix(err, "migrating schema version 2 to 3");
  if (v <= 3 && !(db_exec(db, migrate_v3, err) && set_meta(db, "schema_version", "4", err)))
    return mlc_error_prefix(err, "migrating schema version 3 to 4");
  return true;
}

/* The first 16 bytes of an SQLite file; anything else is refused before
 * SQLite sees it. An empty file is an empty database. */
static bool looks_like_sqlite(const char *path, mlc_error *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return mlc_error_set(err, "%s: cannot open: %s", path, strerror(errno));
  char head[16];
  size_t n = fread(head, 1, sizeof head, f);
  fclose(f);
  if (n == 0) return true;
  if (n < 16 || memcmp(head, "SQLite format 3", 16) != 0)
    return mlc_error_set(err, "%s: not an SQLite database (refusing to overwrite it)", path);
  return true;
}

mlc_db *mlc_db_open(const char *path, mlc_db_mode mode, mlc_error *err) {
  struct stat sb;
  bool exists = stat(path, &sb) == 0;
  if (!exists && mode == MLC_DB_EXISTING)
    return mlc_error_set(err, "%s: no such database", path), NULL;
  if (exists && !S_ISREG(sb.st_mode))
    return mlc_error_set(err, "%s: not a regular file", path), NULL;
  if (exists && !looks_like_sqlite(path, err)) return NULL;
  pthread_once(&sqlite_memory_once, route_sqlite_memory);
  mlc_db *db = mlc_malloc(sizeof *db);
  char *copy = mlc_malloc(strlen(path) + 1);
  if (!db || !copy) {
    mlc_free(db);
    mlc_free(copy);
    return mlc_error_set(err, "%s: out of memory opening the database", path), NULL;
  }
  memset(db, 0, sizeof *db);
  db->path = strcpy(copy, path);
  int flags = SQLITE_OPEN_READWRITE | (mode == MLC_DB_CREATE ? SQLITE_OPEN_CREATE : 0);
  if (sqlite3_open_v2(path, &db->h, flags, NULL) != SQLITE_OK) {
    db_fail(db, err, "cannot open");
    mlc_db_close(db);
    return NULL;
  }
  sqlite3_busy_timeout(db->h, MLC_DB_BUSY_TIMEOUT_MS);
  /* WAL only once the file is known to be ours: switching writes the
   * header, and a refused file must stay byte for byte as it was. */
  bool ok = db_exec(db, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON", err) &&
            db_exec(db, "BEGIN IMMEDIATE", err);
  if (ok) {
    ok = check_schema(db, err);
    if (ok) ok = db_exec(db, "COMMIT", err);
    else sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
  }
  ok = ok && db_exec(db, "PRAGMA journal_mode=WAL", err);
  if (!ok) {
    mlc_db_close(db);
    return NULL;
  }
  return db;
}

void mlc_db_close(mlc_db *db) {
  if (!db) return;
  sqlite3_close_v2(db->h);
  mlc_free(db->path);
  mlc_free(db);
}

/* ---- keys ------------------------------------------------------------------ */

void mlc_db_normalize_target(const char *target, char *out, size_t n) {
  mlc_target t;
  mlc_error err;
  if (target && mlc_target_parse(target, &t, &err)) {
    snprintf(out, n, "%s", t.str);
    return;
  }
  size_t k = 0;
  bool space = false;
  for (const char *p = target ? target : ""; *p && k + 1 < n; p++) {
    if (isspace((unsigned char)*p)) {
      space = k > 0;
      continue;
    }
    if (space && k + 2 < n) out[k++] = ' ';
    space = false;
    out[k++] = *p;
  }
  out[k] = 0;
}

/* A trace's canonical text and its hash (that of mlc_trace_hash, which
 * hashes the same text), in scratch arena a: the text grows with the trace,
 * so running out of memory is an error (the arena keeps what it took). */
static bool trace_text(mlc_arena *a, const char *trace_json, char hash[17],
                       const char **canonical, mlc_error *err) {
  jmp_buf jb;
  if (setjmp(jb)) {
    mlc_arena_set_oom_jump(a, NULL);
    return mlc_error_set(err, "out of memory writing a trace");
  }
  mlc_arena_set_oom_jump(a, &jb);
  mlc_trace *t = mlc_trace_from_json(a, trace_json, strlen(trace_json), err);
  if (t) {
    mlc_str text = {.arena = a};
    mlc_trace_to_json(&text, t);
    *canonical = mlc_str_cstr(&text);
    snprintf(hash, 17, "%016llx", (unsigned long long)mlc_hash_str(*canonical, 0));
  }
  mlc_arena_set_oom_jump(a, NULL);
  return t != NULL;
}

bool mlc_db_trace_hash(const char *trace_json, char hash[17], mlc_str *canonical,
                       mlc_error *err) {
  mlc_arena *a = mlc_arena_try_new();
  if (!a) return mlc_error_set(err, "out of memory reading a trace");
  const char *text;
  bool ok = trace_text(a, trace_json, hash, &text, err);
  if (ok && canonical) mlc_str_puts(canonical, text);
  mlc_arena_free(a);
  return ok;
}

/* ---- workloads ----------------------------------------------------------------- */

static void read_workload(sqlite3_stmt *st, mlc_arena *a, mlc_db_workload *w) {
  w->id = sqlite3_column_int64(st, 0);
  w->hash = db_column_text(st, 1, a);
  w->task = db_column_text(st, 2, a);
  w->shape = db_column_text(st, 3, a);
  w->ir = db_column_text(st, 4, a);
  w->created_at = db_column_text(st, 5, a);
}

/* Does the stored IR text describe the same function as f? */
static bool same_workload(const char *ir, const mlc_prim_func *f) {
  mlc_arena *a = mlc_arena_new();
  mlc_error e;
  mlc_module *m = ir ? mlc_parse_module(a, "stored.py", ir, &e) : NULL;
  bool same = m && m->n_funcs == 1 && mlc_func_struct_equal(m->funcs[0], f);
  mlc_arena_free(a);
  return same;
}

static int find_by_hash(mlc_db *db, const mlc_prim_func *f, const char *hash, int64_t *id,
                        mlc_error *err) {
  sqlite3_stmt *st = db_prepare(db, "SELECT id, ir FROM workloads WHERE hash = ?", err);
  if (!st) return -1;
  db_bind_text(st, 1, hash);
  int rc = sqlite3_step(st), found = 0;
  if (rc == SQLITE_ROW) {
    *id = sqlite3_column_int64(st, 0);
    found = 1;
    if (!same_workload((const char *)sqlite3_column_text(st, 1), f))
      found = -1, mlc_error_set(err, "%s: workload hash %s collides with a different workload",
                                db->path, hash);
  } else if (rc != SQLITE_DONE) {
    found = -1, db_fail(db, err, "finding a workload");
  }
  sqlite3_finalize(st);
  return found;
}

/* f's workload key (16 hex digits of its structural hash) and, with ir
 * given, its printed text, both in scratch arena a: they grow with f, so
 * running out of memory is an error (the arena keeps what they took). */
static bool workload_key(mlc_db *db, mlc_arena *a, const mlc_prim_func *f, char hash[17],
                         const char **ir, mlc_error *err) {
  jmp_buf jb;
  if (setjmp(jb)) {
    mlc_arena_set_oom_jump(a, NULL);
    return mlc_error_set(err, "%s: out of memory reading workload %s", db->path, f->name);
  }
  mlc_arena_set_oom_jump(a, &jb);
  snprintf(hash, 17, "%016" PRIx64, mlc_func_struct_hash_in(a, f));
  if (ir) {
    mlc_str text = {.arena = a};
    mlc_print_func(&text, f);
    *ir = mlc_str_cstr(&text);
  }
  mlc_arena_set_oom_jump(a, NULL);
  return true;
}

int mlc_db_find_workload(mlc_db *db, const mlc_prim_func *f, int64_t *id, mlc_error *err) {
  char hash[17];
  mlc_arena *a = mlc_arena_try_new();
  if (!a) return mlc_error_set(err, "%s: finding a workload: out of memory", db->path), -1;
  int found = workload_key(db, a, f, hash, NULL, err) ? find_by_hash(db, f, hash, id, err) : -1;
  mlc_arena_free(a);
  return found;
}

static int64_t add_workload(mlc_db *db, mlc_arena *a, const char *task, const char *shape,
                            const mlc_prim_func *f, mlc_error *err) {
  char hash[17];
  const char *ir;
  if (!workload_key(db, a, f, hash, &ir, err)) return -1;
  int64_t id;
  int found = find_by_hash(db, f, hash, &id, err);
  if (found) return found > 0 ? id : -1;
  sqlite3_stmt *st = db_prepare(db,
                                "INSERT INTO workloads(hash, task, shape, ir, created_at) "
                                "VALUES(?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))",
                                err);
  if (!st) return -1;
  bool bound = db_bind_text(st, 1, hash) && db_bind_text(st, 2, task) &&
               db_bind_text(st, 3, shape) && db_bind_text(st, 4, ir);
  if (!bound) id = -1, mlc_error_set(err, "%s: adding a workload: out of memory", db->path);
  else if ((id = sqlite3_step(st) == SQLITE_DONE ? sqlite3_last_insert_rowid(db->h) : -1) < 0)
    db_fail(db, err, "adding a workload");
  sqlite3_finalize(st);
  return id;
}

int64_t db_add_workload(mlc_db *db, const char *task, const char *shape, const mlc_prim_func *f,
                        mlc_error *err) {
  mlc_arena *a = mlc_arena_try_new();
  if (!a) return mlc_error_set(err, "%s: adding a workload: out of memory", db->path), -1;
  int64_t id = add_workload(db, a, task, shape, f, err);
  mlc_arena_free(a);
  return id;
}

int64_t mlc_db_add_workload(mlc_db *db, const char *task, const char *shape,
                            const mlc_prim_func *f, mlc_error *err) {
  if (!db_exec(db, "BEGIN IMMEDIATE", err)) return -1;
  int64_t id = db_add_workload(db, task, shape, f, err);
  if (id >= 0 && db_exec(db, "COMMIT", err)) return id;
  sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
  return -1;
}

int mlc_db_list_workloads(mlc_db *db, const char *task, const char *shape, mlc_arena *a,
                          mlc_db_workload **out, mlc_error *err) {
  sqlite3_stmt *st = db_prepare(
      db,
      "SELECT w.id, w.hash, w.task, w.shape, w.ir, w.created_at, count(r.id),"
      " count(r.error) FROM workloads w LEFT JOIN records r ON r.workload_id = w.id"
      " WHERE (?1 IS NULL OR w.task = ?1) AND (?2 IS NULL OR w.shape = ?2)"
      " GROUP BY w.id ORDER BY w.id",
      err);
  if (!st) return -1;
  db_bind_text(st, 1, task);
  db_bind_text(st, 2, shape);
  MLC_VEC(mlc_db_workload) v = {0};
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    mlc_db_workload w;
    read_workload(st, a, &w);
    w.n_records = sqlite3_column_int(st, 6);
    w.n_errors = sqlite3_column_int(st, 7);
    MLC_VEC_APUSH(a, v, w);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return db_fail(db, err, "listing workloads"), -1;
  *out = v.data;
  return v.len;
}

bool mlc_db_get_workload(mlc_db *db, int64_t id, mlc_arena *a, mlc_db_workload *out,
                         mlc_error *err) {
  sqlite3_stmt *st = db_prepare(
      db, "SELECT id, hash, task, shape, ir, created_at FROM workloads WHERE id = ?", err);
  if (!st) return false;
  sqlite3_bind_int64(st, 1, id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) read_workload(st, a, out);
  sqlite3_finalize(st);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return mlc_error_set(err, "%s: no workload %lld", db->path, (long long)id);
  return db_fail(db, err, "reading a workload");
}

/* ---- records ---------------------------------------------------------------------- */

#define RECORD_COLUMNS \
  "id, workload_id, target, trace, trace_hash, run_secs, mean_sec, error, round, host," \
  " mlc_version, created_at, sched_hash, disturbed"

/* Out of memory jumps to jb, whether the JSON reader's (which returns it
 * as an error) or the arena's. */
static void read_secs(const char *text, mlc_arena *a, jmp_buf *jb, mlc_db_record *r) {
  mlc_error e = {{0}};
  mlc_json *j = text ? mlc_json_parse(a, text, strlen(text), &e) : NULL;
  if (text && !j && strstr(e.msg, "out of memory")) longjmp(*jb, 1);
  int n = j && j->kind == MLC_JSON_ARRAY ? j->len : 0;
  double *secs = MLC_NEW_ARRAY(a, double, n + 1);
  r->n_secs = 0;
  for (int i = 0; i < n; i++)
    if (j->items[i]->kind == MLC_JSON_NUMBER) secs[r->n_secs++] = j->items[i]->number;
  r->secs = secs;
}

static void read_record(sqlite3_stmt *st, mlc_arena *a, jmp_buf *jb, mlc_db_record *r) {
  r->id = sqlite3_column_int64(st, 0);
  r->workload_id = sqlite3_column_int64(st, 1);
  r->target = db_column_text(st, 2, a);
  r->trace = db_column_text(st, 3, a);
  r->trace_hash = db_column_text(st, 4, a);
  read_secs((const char *)sqlite3_column_text(st, 5), a, jb, r);
  r->mean_sec = sqlite3_column_double(st, 6);
  r->error = db_column_text(st, 7, a);
  r->round = sqlite3_column_int64(st, 8);
  r->host = db_column_text(st, 9, a);
  r->mlc_version = db_column_text(st, 10, a);
  r->created_at = db_column_text(st, 11, a);
  r->sched_hash = db_column_text(st, 12, a);
  r->disturbed = sqlite3_column_int(st, 13) != 0; /* NULL reads 0 */
}

/* Into the caller's arena a, under an escape point of our own (the
 * caller's is put back): the records grow with the database, so running out
 * of memory is an error, and what was read stays owned by a. */
static int read_records(mlc_db *db, sqlite3_stmt *st, mlc_arena *a, mlc_db_record **out,
                        mlc_error *err) {
  jmp_buf jb, *prev = mlc_arena_oom_jump(a);
  if (setjmp(jb)) {
    mlc_arena_set_oom_jump(a, prev);
    sqlite3_finalize(st);
    return mlc_error_set(err, "%s: reading records: out of memory", db->path), -1;
  }
  mlc_arena_set_oom_jump(a, &jb);
  MLC_VEC(mlc_db_record) v = {0};
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    mlc_db_record r;
    read_record(st, a, &jb, &r);
    MLC_VEC_APUSH(a, v, r);
  }
  mlc_arena_set_oom_jump(a, prev);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return db_fail(db, err, "reading records"), -1;
  *out = v.data;
  return v.len;
}

static void put_secs(mlc_str *s, int n, const double *secs) {
  mlc_str_putc(s, '[');
  for (int i = 0; i < n; i++) {
    if (i) mlc_str_putc(s, ',');
    mlc_json_write_number(s, secs[i]);
  }
  mlc_str_putc(s, ']');
}

static bool check_record(const mlc_db_record *r, mlc_error *err) {
  if (!r->target || !*r->target) return mlc_error_set(err, "record without a target");
  if (!r->trace) return mlc_error_set(err, "record without a trace");
  if (!r->error && r->n_secs <= 0) return mlc_error_set(err, "record without run times or error");
  for (int i = 0; !r->error && i < r->n_secs; i++)
    if (!(r->secs[i] > 0) || r->secs[i] > 1e9) /* NaN fails the first test */
      return mlc_error_set(err, "record with run time %g (run times are finite positive "
                                "seconds, at most 1e9)", r->secs[i]);
  return true;
}

/* A record's run times as JSON text, in scratch arena a (NULL: out of
 * memory, which the arena keeps). */
static const char *secs_text(mlc_arena *a, int n, const double *secs) {
  jmp_buf jb;
  if (setjmp(jb)) {
    mlc_arena_set_oom_jump(a, NULL);
    return NULL;
  }
  mlc_arena_set_oom_jump(a, &jb);
  mlc_str s = {.arena = a};
  put_secs(&s, n, secs);
  const char *text = mlc_str_cstr(&s);
  mlc_arena_set_oom_jump(a, NULL);
  return text;
}

/* The record's texts (canonical trace, run times) live in scratch arena a:
 * they grow with the record, so running out of memory is an error. */
static bool insert_record(mlc_db *db, mlc_arena *a, const mlc_db_record *r, bool *added,
                          mlc_error *err) {
  char hash[17], target[512];
  const char *canon, *secs;
  if (!trace_text(a, r->trace, hash, &canon, err)) return false;
  int n = r->error ? 0 : r->n_secs;
  if (!(secs = secs_text(a, n, r->secs)))
    return mlc_error_set(err, "%s: adding a record: out of memory", db->path);
  mlc_db_normalize_target(r->target, target, sizeof target);
  sqlite3_stmt *st = db_prepare(db,
                                "INSERT OR IGNORE INTO records(" RECORD_COLUMNS ") VALUES(NULL,"
                                " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                                " strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), ?, ?)",
                                err);
  bool ok = st != NULL;
  if (ok) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += r->secs[i];
    sqlite3_bind_int64(st, 1, r->workload_id);
    bool bound = db_bind_text(st, 2, target) && db_bind_text(st, 3, canon) &&
                 db_bind_text(st, 4, hash) && db_bind_text(st, 5, secs) &&
                 db_bind_text(st, 7, r->error) && db_bind_text(st, 9, mlc_target_host_cpu()) &&
                 db_bind_text(st, 10, MLC_VERSION) && db_bind_text(st, 11, r->sched_hash);
    if (n) sqlite3_bind_double(st, 6, sum / n);
    else sqlite3_bind_null(st, 6);
    sqlite3_bind_int64(st, 8, r->round);
    sqlite3_bind_int(st, 12, r->disturbed ? 1 : 0);
    if (!bound) ok = mlc_error_set(err, "%s: adding a record: out of memory", db->path);
    else ok = sqlite3_step(st) == SQLITE_DONE || db_fail(db, err, "adding a record");
    if (ok && added) *added = sqlite3_changes(db->h) > 0;
  }
  sqlite3_finalize(st);
  return ok;
}

bool db_insert_record(mlc_db *db, const mlc_db_record *r, bool *added, mlc_error *err) {
  if (!check_record(r, err)) return false;
  mlc_arena *a = mlc_arena_try_new();
  if (!a) return mlc_error_set(err, "%s: adding a record: out of memory", db->path);
  bool ok = insert_record(db, a, r, added, err);
  mlc_arena_free(a);
  return ok;
}

bool mlc_db_commit(mlc_db *db, int n, const mlc_db_record *recs, int *n_added, mlc_error *err) {
  if (!db_exec(db, "BEGIN IMMEDIATE", err)) return false;
  int added = 0;
  for (int i = 0; i < n; i++) {
    bool a = false;
    if (!db_insert_record(db, &recs[i], &a, err)) {
      sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
      return mlc_error_prefix(err, "record %d of the batch", i);
    }
    added += a;
  }
  if (!db_exec(db, "COMMIT", err)) {
    sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
    return false;
  }
  if (n_added) *n_added = added;
  return true;
}

/* Appends to record r's run times inside the caller's transaction. */
static bool append_secs(mlc_db *db, const mlc_db_record *r, int n, const double *secs,
                        mlc_error *err) {
  int total = r->n_secs + n;
  double *all = mlc_xmalloc(sizeof *all * (size_t)total), sum = 0;
  memcpy(all, r->secs, sizeof *all * (size_t)r->n_secs);
  memcpy(all + r->n_secs, secs, sizeof *all * (size_t)n);
  for (int i = 0; i < total; i++) sum += all[i];
  mlc_str text = {0};
  put_secs(&text, total, all);
  sqlite3_stmt *st =
      db_prepare(db, "UPDATE records SET run_secs = ?, mean_sec = ? WHERE id = ?", err);
  bool ok = st != NULL;
  if (ok) {
    db_bind_text(st, 1, mlc_str_cstr(&text));
    sqlite3_bind_double(st, 2, sum / total);
    sqlite3_bind_int64(st, 3, r->id);
    ok = sqlite3_step(st) == SQLITE_DONE || db_fail(db, err, "adding run times");
    sqlite3_finalize(st);
  }
  mlc_str_free(&text);
  mlc_free(all);
  return ok;
}

bool mlc_db_add_run_secs(mlc_db *db, int64_t id, int n, const double *secs, mlc_error *err) {
  for (int i = 0; i < n; i++)
    if (!(secs[i] > 0) || secs[i] > 1e9)
      return mlc_error_set(err, "record %lld: run time %g", (long long)id, secs[i]);
  if (n <= 0) return mlc_error_set(err, "record %lld: no run times to add", (long long)id);
  if (!db_exec(db, "BEGIN IMMEDIATE", err)) return false;
  mlc_arena *a = mlc_arena_new();
  mlc_db_record r;
  int found = mlc_db_get_record(db, id, a, &r, err);
  bool ok = found > 0 && !r.error;
  if (found == 0) mlc_error_set(err, "no record %lld", (long long)id);
  if (found > 0 && r.error) mlc_error_set(err, "record %lld failed (%s): it has no run times", (long long)id, r.error);
  ok = ok && append_secs(db, &r, n, secs, err) && db_exec(db, "COMMIT", err);
  if (!ok) sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
  mlc_arena_free(a);
  return ok;
}

int mlc_db_top_k(mlc_db *db, int64_t workload_id, const char *target, int k, mlc_arena *a,
                 mlc_db_record **out, mlc_error *err) {
  char t[512];
  mlc_db_normalize_target(target, t, sizeof t);
  sqlite3_stmt *st = db_prepare(db,
                                "SELECT " RECORD_COLUMNS " FROM records WHERE workload_id = ?"
                                " AND target = ? AND error IS NULL AND mean_sec > 0"
                                " ORDER BY mean_sec, id LIMIT ?",
                                err);
  if (!st) return -1;
  sqlite3_bind_int64(st, 1, workload_id);
  sqlite3_bind_int(st, 3, k);
  if (!db_bind_text(st, 2, t)) {
    sqlite3_finalize(st);
    return mlc_error_set(err, "%s: reading records: out of memory", db->path), -1;
  }
  return read_records(db, st, a, out, err);
}

int mlc_db_records(mlc_db *db, int64_t workload_id, const char *target, mlc_arena *a,
                   mlc_db_record **out, mlc_error *err) {
  char t[512];
  if (target) mlc_db_normalize_target(target, t, sizeof t);
  sqlite3_stmt *st = db_prepare(db,
                                "SELECT " RECORD_COLUMNS " FROM records WHERE workload_id = ?"
                                " AND (?2 IS NULL OR target = ?2) ORDER BY id",
                                err);
  if (!st) return -1;
  sqlite3_bind_int64(st, 1, workload_id);
  db_bind_text(st, 2, target ? t : NULL);
  return read_records(db, st, a, out, err);
}

int mlc_db_get_record(mlc_db *db, int64_t id, mlc_arena *a, mlc_db_record *out, mlc_error *err) {
  sqlite3_stmt *st = db_prepare(db, "SELECT " RECORD_COLUMNS " FROM records WHERE id = ?", err);
  if (!st) return -1;
  sqlite3_bind_int64(st, 1, id);
  mlc_db_record *rs;
  int n = read_records(db, st, a, &rs, err);
  if (n > 0) *out = rs[0];
  return n < 0 ? -1 : n > 0;
}

int mlc_db_has_trace(mlc_db *db, int64_t workload_id, const char *target,
                     const char *trace_hash, mlc_error *err) {
  char t[512];
  mlc_db_normalize_target(target, t, sizeof t);
  sqlite3_stmt *st = db_prepare(
      db, "SELECT 1 FROM records WHERE workload_id = ? AND target = ? AND trace_hash = ?", err);
  if (!st) return -1;
  sqlite3_bind_int64(st, 1, workload_id);
  db_bind_text(st, 2, t);
  db_bind_text(st, 3, trace_hash);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc == SQLITE_ROW) return 1;
  if (rc == SQLITE_DONE) return 0;
  return db_fail(db, err, "looking up a trace"), -1;
}

static int read_strings(mlc_db *db, sqlite3_stmt *st, mlc_arena *a, const char ***out,
                        mlc_error *err) {
  MLC_VEC(const char *) v = {0};
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) MLC_VEC_APUSH(a, v, db_column_text(st, 0, a));
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return db_fail(db, err, "query"), -1;
  *out = v.data;
  return v.len;
}

int mlc_db_targets(mlc_db *db, int64_t workload_id, mlc_arena *a, const char ***out,
                   mlc_error *err) {
  sqlite3_stmt *st = db_prepare(
      db, "SELECT DISTINCT target FROM records WHERE workload_id = ? ORDER BY target", err);
  if (!st) return -1;
  sqlite3_bind_int64(st, 1, workload_id);
  return read_strings(db, st, a, out, err);
}

static int read_counts(mlc_db *db, const char *sql, mlc_arena *a, mlc_db_count **out,
                       mlc_error *err) {
  sqlite3_stmt *st = db_prepare(db, sql, err);
  if (!st) return -1;
  MLC_VEC(mlc_db_count) v = {0};
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    mlc_db_count c = {db_column_text(st, 0, a), sqlite3_column_int64(st, 1)};
    if (!c.key) c.key = "";
    MLC_VEC_APUSH(a, v, c);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return db_fail(db, err, "counting records"), -1;
  *out = v.data;
  return v.len;
}

int mlc_db_count_by_target(mlc_db *db, mlc_arena *a, mlc_db_count **out, mlc_error *err) {
  return read_counts(db, "SELECT target, count(*) FROM records GROUP BY target ORDER BY target",
                     a, out, err);
}

/* The class is the error text before its first ':'. */
int mlc_db_count_by_error(mlc_db *db, mlc_arena *a, mlc_db_count **out, mlc_error *err) {
  return read_counts(db,
                     "SELECT CASE WHEN error IS NULL THEN 'ok' WHEN instr(error, ':') > 0"
                     " THEN substr(error, 1, instr(error, ':') - 1) ELSE error END AS cls,"
                     " count(*) FROM records GROUP BY cls ORDER BY cls",
                     a, out, err);
}

/* ---- models ---------------------------------------------------------------------------- */

static void checksum_hex(const void *blob, size_t len, char out[17]) {
  snprintf(out, 17, "%016llx", (unsigned long long)mlc_hash_bytes(blob, len, 0x6d6f64656cULL));
}

int64_t mlc_db_save_model(mlc_db *db, const char *target, int feature_version, int64_t n_samples,
                          const void *blob, size_t len, mlc_error *err) {
  char t[512], sum[17];
  mlc_db_normalize_target(target, t, sizeof t);
  checksum_hex(blob, len, sum);
  sqlite3_stmt *st = db_prepare(db,
                                "INSERT INTO models(target, feature_version, created_at,"
                                " n_samples, checksum, blob) VALUES(?, ?,"
                                " strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), ?, ?, ?)",
                                err);
  if (!st) return -1;
  db_bind_text(st, 1, t);
  sqlite3_bind_int(st, 2, feature_version);
  sqlite3_bind_int64(st, 3, n_samples);
  db_bind_text(st, 4, sum);
  sqlite3_bind_blob64(st, 5, blob, len, SQLITE_TRANSIENT);
  int64_t id = sqlite3_step(st) == SQLITE_DONE ? sqlite3_last_insert_rowid(db->h) : -1;
  if (id < 0) db_fail(db, err, "saving a model");
  sqlite3_finalize(st);
  return id;
}

int mlc_db_load_model(mlc_db *db, const char *target, int feature_version, void **blob,
                      size_t *len, int64_t *n_samples, mlc_error *err) {
  char t[512];
  mlc_db_normalize_target(target, t, sizeof t);
  sqlite3_stmt *st = db_prepare(db,
                                "SELECT id, n_samples, checksum, blob FROM models WHERE target = ?"
                                " AND feature_version = ? ORDER BY id DESC LIMIT 1",
                                err);
  if (!st) return -1;
  db_bind_text(st, 1, t);
  sqlite3_bind_int(st, 2, feature_version);
  int rc = sqlite3_step(st), found = 0;
  if (rc == SQLITE_ROW) {
    size_t n = (size_t)sqlite3_column_bytes(st, 3);
    const void *p = sqlite3_column_blob(st, 3);
    const char *want = (const char *)sqlite3_column_text(st, 2);
    char got[17];
    checksum_hex(p ? p : "", n, got);
    if (!want || strcmp(want, got) != 0) {
      found = -1;
      mlc_error_set(err, "%s: model %lld is damaged (checksum %s, expected %s)", db->path,
                    (long long)sqlite3_column_int64(st, 0), got, want ? want : "none");
    } else {
      *blob = mlc_xmalloc(n + 1);
      if (n) memcpy(*blob, p, n);
      *len = n;
      if (n_samples) *n_samples = sqlite3_column_int64(st, 1);
      found = 1;
    }
  } else if (rc != SQLITE_DONE) {
    found = -1;
    db_fail(db, err, "loading a model");
  }
  sqlite3_finalize(st);
  return found;
}
