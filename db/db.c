/* db: opening, schema and migration, workloads, records, models: every
 * query written once against the backend interface (db_internal.h); the
 * backend is chosen by the --db string (mlc_db_open).
 */
#include "db/db_internal.h"
#include "schedule/schedule.h"
#include "targets/targets.h"

#include <ctype.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- helpers ----------------------------------------------------------- */

bool db_fail(mlc_db *db, mlc_error *err, const char *what) {
  return mlc_error_set(err, "%s: %s: %s", db->path, what, db->be->errmsg(db));
}

/* The backend's word for the dialect word at p (db_internal.h), NULL if p
 * starts none; *skip receives the dialect word's length. */
static const char *dialect_word(const db_dialect *w, const char *p, size_t *skip) {
  static const struct { const char *name; size_t off; } words[] = {
      {"@ID", offsetof(db_dialect, id)},         {"@INT", offsetof(db_dialect, int_)},
      {"@REAL", offsetof(db_dialect, real)},     {"@BLOB", offsetof(db_dialect, blob)},
      {"@STRPOS", offsetof(db_dialect, strpos)},
  };
  if (*p != '@') return NULL;
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
    size_t n = strlen(words[i].name);
    if (!strncmp(p, words[i].name, n) && !isalnum((unsigned char)p[n]) && p[n] != '_') {
      *skip = n;
      return *(const char *const *)((const char *)w + words[i].off);
    }
  }
  return NULL;
}

/* sql with the dialect words replaced by the backend's: sql itself when it
 * has none, else a heap copy (the statement path must not abort when
 * memory runs out); NULL: out of memory. */
static char *db_sql(mlc_db *db, const char *sql) {
  const db_dialect *w = &db->be->words;
  size_t n = 0, skip;
  bool any = false;
  for (const char *p = sql; *p; p++) {
    const char *word = dialect_word(w, p, &skip);
    if (word) any = true, n += strlen(word), p += skip - 1;
    else n++;
  }
  if (!any) return (char *)sql;
  char *out = mlc_malloc(n + 1), *q = out;
  if (!out) return NULL;
  for (const char *p = sql; *p; p++) {
    const char *word = dialect_word(w, p, &skip);
    if (word) q = stpcpy(q, word), p += skip - 1;
    else *q++ = *p;
  }
  *q = 0;
  return out;
}

db_stmt *db_prepare(mlc_db *db, const char *sql, mlc_error *err) {
  char *text = db_sql(db, sql);
  if (!text) return mlc_error_set(err, "%s: query: out of memory", db->path), NULL;
  db_stmt *st = db->be->prepare(db, text);
  if (text != sql) mlc_free(text);
  if (!st) db_fail(db, err, "query");
  return st;
}

bool db_exec(mlc_db *db, const char *sql, mlc_error *err) {
  char *text = db_sql(db, sql);
  if (!text) return mlc_error_set(err, "%s: statement: out of memory", db->path);
  bool ok = db->be->exec(db, text);
  if (text != sql) mlc_free(text);
  return ok || db_fail(db, err, "statement");
}

bool db_begin(mlc_db *db, mlc_error *err) { return db_exec(db, db->be->begin_sql, err); }
bool db_commit(mlc_db *db, mlc_error *err) { return db_exec(db, "COMMIT", err); }
void db_rollback(mlc_db *db) { db->be->exec(db, "ROLLBACK"); }

/* Jobs sharing a server write overlapping rows in their own orders, so two
 * transactions can wait on each other; the server then aborts one (a
 * deadlock), which simply runs again. The retry waits first, a random
 * time that doubles with each try (1-2 ms, then up to 128-256 ms): two
 * jobs retrying in step would meet again (CI once saw eight deadlocks in
 * a row between two writers committing the same traces). */
enum { TRANSACTION_TRIES = 10 };

static void retry_pause(int tries) {
  static _Thread_local mlc_pcg32 rng;
  static _Thread_local bool seeded;
  if (!seeded) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    mlc_pcg32_seed(&rng, (uint64_t)now.tv_nsec ^ ((uint64_t)getpid() << 32), (uint64_t)getpid());
    seeded = true;
  }
  int64_t step_us = 1000LL << (tries < 8 ? tries - 1 : 7);
  int64_t us = step_us + mlc_pcg32_bounded(&rng, (uint32_t)step_us);
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

bool db_transaction(mlc_db *db, bool (*body)(mlc_db *db, void *ctx, mlc_error *err), void *ctx,
                    mlc_error *err) {
  for (int t = 1;; t++) {
    if (!db_begin(db, err)) return false;
    if (body(db, ctx, err) && db_commit(db, err)) return true;
    db_rollback(db);
    if (t == TRANSACTION_TRIES || !db->be->retryable(db)) return false;
    retry_pause(t);
  }
}

bool db_bind_text(mlc_db *db, db_stmt *st, int i, const char *s) {
  return db->be->bind_text(st, i, s);
}

const char *db_column_text(mlc_db *db, db_stmt *st, int i, mlc_arena *a) {
  const char *t = db->be->column_text(st, i);
  return t ? mlc_arena_strdup(a, t) : NULL;
}

void db_now(char out[32]) {
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

const char *mlc_db_path(const mlc_db *db) { return db->path; }
int mlc_db_opened_version(const mlc_db *db) { return db->opened_version; }

/* ---- schema -------------------------------------------------------------- */

/* The dialect words keep SQLite's text of the schema as it always was
 * (INTEGER PRIMARY KEY, REAL, BLOB). */
static const char *schema_v4 =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE workloads(id @ID, hash TEXT UNIQUE, task TEXT, shape TEXT,"
    " ir TEXT, created_at TEXT);"
    "CREATE TABLE records(id @ID, workload_id @INT REFERENCES workloads(id),"
    " target TEXT, trace TEXT, trace_hash TEXT, run_secs TEXT, mean_sec @REAL, error TEXT,"
    " round @INT, host TEXT, mlc_version TEXT, created_at TEXT, sched_hash TEXT,"
    " disturbed @INT, UNIQUE(workload_id, target, trace_hash));"
    "CREATE INDEX records_best ON records(workload_id, target, mean_sec);"
    "CREATE TABLE models(id @ID, target TEXT, feature_version @INT,"
    " created_at TEXT, n_samples @INT, checksum TEXT, blob @BLOB);";

/* Version 1 -> 2: provenance columns and the models table. */
static const char *migrate_v1 =
    "ALTER TABLE records ADD COLUMN host TEXT;"
    "ALTER TABLE records ADD COLUMN mlc_version TEXT;"
    "CREATE TABLE models(id @ID, target TEXT, feature_version @INT,"
    " created_at TEXT, n_samples @INT, checksum TEXT, blob @BLOB);";

/* Version 2 -> 3: the structural hash of each record's scheduled function
 * (NULL for the rows already there). */
static const char *migrate_v2 = "ALTER TABLE records ADD COLUMN sched_hash TEXT;";

/* Version 3 -> 4: whether the runner saw interference while it timed the
 * record (NULL for the rows already there: not watched). */
static const char *migrate_v3 = "ALTER TABLE records ADD COLUMN disturbed @INT;";

static bool set_meta(mlc_db *db, const char *key, const char *value, mlc_error *err) {
  db_stmt *st = db_prepare(db,
                           "INSERT INTO meta(key, value) VALUES(?, ?)"
                           " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                           err);
  if (!st) return false;
  bool ok = db_bind_text(db, st, 1, key) && db_bind_text(db, st, 2, value);
  if (!ok) mlc_error_set(err, "%s: writing meta: out of memory", db->path);
  else ok = db->be->step(st) == 0 || db_fail(db, err, "writing meta");
  db->be->finalize(st);
  return ok;
}

/* The integer a count query returns; -1 on error. arg (may be NULL) is
 * its one text parameter. */
static int64_t query_count(mlc_db *db, const char *sql, const char *arg, mlc_error *err) {
  db_stmt *st = db_prepare(db, sql, err);
  if (!st) return -1;
  int64_t v = -1;
  if (arg && !db_bind_text(db, st, 1, arg))
    mlc_error_set(err, "%s: reading the schema: out of memory", db->path);
  else if (db->be->step(st) == 1) v = db->be->column_int(st, 0);
  else db_fail(db, err, "reading the schema");
  db->be->finalize(st);
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
  db_stmt *st = db_prepare(db, "SELECT value FROM meta WHERE key = 'schema_version'", err);
  if (!st) return 0;
  int v = 0, rc = db->be->step(st);
  if (rc == 1) {
    const char *t = db->be->column_text(st, 0);
    char *end;
    long x = t ? strtol(t, &end, 10) : 0;
    if (t && *t && !*end && x > 0 && x < 1000000) v = (int)x;
  }
  if (rc < 0) db_fail(db, err, "reading the schema version");
  else if (!v) mlc_error_set(err, "%s: meta has no valid schema_version", db->path);
  db->be->finalize(st);
  return v;
}

static bool migrate(mlc_db *db, int v, mlc_error *err) {
  if (v == 1 && !(db_exec(db, migrate_v1, err) && set_meta(db, "schema_version", "2", err)))
    return mlc_error_prefix(err, "migrating schema version 1 to 2");
  if (v <= 2 && !(db_exec(db, migrate_v2, err) && set_meta(db, "schema_version", "3", err)))
    return mlc_error_prefix(err, "migrating schema version 2 to 3");
  if (v <= 3 && !(db_exec(db, migrate_v3, err) && set_meta(db, "schema_version", "4", err)))
    return mlc_error_prefix(err, "migrating schema version 3 to 4");
  return true;
}

/* An empty database gets the schema; ours is migrated; anything else is
 * refused. A server database must already hold ours when opened
 * MLC_DB_EXISTING, as a file must exist (readers never create tables). */
static bool check_schema(mlc_db *db, mlc_db_mode mode, mlc_error *err) {
  int64_t has_meta = query_count(db, db->be->count_table_sql, "meta", err);
  if (has_meta < 0) return false;
  if (has_meta == 0) {
    int64_t n = query_count(db, db->be->count_tables_sql, NULL, err);
    if (n < 0) return false;
    if (n > 0)
      return mlc_error_set(err, "%s: an %s database, but not an mlc-tune one (no meta table); "
                                "refusing to touch it", db->path, db->be->name);
    if (mode == MLC_DB_EXISTING && db->be != &db_backend_sqlite)
      return mlc_error_set(err, "%s: no mlc-tune database here (no tables yet; mlc-tune or "
                                "mlc-db import creates them)", db->path);
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
  return migrate(db, v, err);
}

static bool schema_body(mlc_db *db, void *ctx, mlc_error *err) {
  const mlc_db_mode *mode = ctx;
  return (!db->be->schema_lock_sql || db_exec(db, db->be->schema_lock_sql, err)) &&
         check_schema(db, *mode, err);
}

/* The schema is read, created or migrated in one transaction: a failed
 * migration leaves the database as it was. */
static bool open_schema(mlc_db *db, mlc_db_mode mode, mlc_error *err) {
  return db_transaction(db, schema_body, &mode, err) &&
         (!db->be->after_open || db->be->after_open(db, err));
}

bool mlc_db_is_url(const char *spec) {
  return spec && (!strncmp(spec, "postgresql://", 13) || !strncmp(spec, "postgres://", 11));
}

mlc_db *mlc_db_open(const char *spec, mlc_db_mode mode, mlc_error *err) {
  mlc_db *db = mlc_malloc(sizeof *db);
  if (!db) return mlc_error_set(err, "%s: out of memory opening the database", spec), NULL;
  memset(db, 0, sizeof *db);
  db->be = mlc_db_is_url(spec) ? &db_backend_pg : &db_backend_sqlite;
  if (!db->be->open(db, spec, mode, err) || !open_schema(db, mode, err)) {
    mlc_db_close(db);
    return NULL;
  }
  return db;
}

void mlc_db_close(mlc_db *db) {
  if (!db) return;
  if (db->conn) db->be->close(db);
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

static bool is_hex16(const char *s) {
  for (int i = 0; i < 16; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return s[16] == 0;
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

static void read_workload(mlc_db *db, db_stmt *st, mlc_arena *a, mlc_db_workload *w) {
  w->id = db->be->column_int(st, 0);
  w->hash = db_column_text(db, st, 1, a);
  w->task = db_column_text(db, st, 2, a);
  w->shape = db_column_text(db, st, 3, a);
  w->ir = db_column_text(db, st, 4, a);
  w->created_at = db_column_text(db, st, 5, a);
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
  db_stmt *st = db_prepare(db, "SELECT id, ir FROM workloads WHERE hash = ?", err);
  if (!st) return -1;
  if (!db_bind_text(db, st, 1, hash)) {
    db->be->finalize(st);
    return mlc_error_set(err, "%s: finding a workload: out of memory", db->path), -1;
  }
  int rc = db->be->step(st), found = 0;
  if (rc == 1) {
    *id = db->be->column_int(st, 0);
    found = 1;
    if (!same_workload(db->be->column_text(st, 1), f))
      found = -1, mlc_error_set(err, "%s: workload hash %s collides with a different workload",
                                db->path, hash);
  } else if (rc < 0) {
    found = -1, db_fail(db, err, "finding a workload");
  }
  db->be->finalize(st);
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

/* Inserts the workload unless a row with its hash is there: 1 inserted
 * (*id set), 0 already there (another client may have just added it: with
 * a server, its row is visible once the insert has waited for it), -1. */
static int insert_workload(mlc_db *db, const char *task, const char *shape, const char *hash,
                           const char *ir, int64_t *id, mlc_error *err) {
  db_stmt *st = db_prepare(db,
                           "INSERT INTO workloads(hash, task, shape, ir, created_at)"
                           " VALUES(?, ?, ?, ?, ?) ON CONFLICT(hash) DO NOTHING RETURNING id",
                           err);
  if (!st) return -1;
  char now[32];
  db_now(now);
  int rc = -1;
  bool bound = db_bind_text(db, st, 1, hash) && db_bind_text(db, st, 2, task) &&
               db_bind_text(db, st, 3, shape) && db_bind_text(db, st, 4, ir) &&
               db_bind_text(db, st, 5, now);
  if (!bound) mlc_error_set(err, "%s: adding a workload: out of memory", db->path);
  else if ((rc = db->be->step(st)) < 0) db_fail(db, err, "adding a workload");
  else if (rc == 1) *id = db->be->column_int(st, 0);
  db->be->finalize(st);
  return rc;
}

static int64_t add_workload(mlc_db *db, mlc_arena *a, const char *task, const char *shape,
                            const mlc_prim_func *f, mlc_error *err) {
  char hash[17];
  const char *ir;
  if (!workload_key(db, a, f, hash, &ir, err)) return -1;
  int64_t id;
  int found = find_by_hash(db, f, hash, &id, err);
  if (found) return found > 0 ? id : -1;
  int added = insert_workload(db, task, shape, hash, ir, &id, err);
  if (added) return added > 0 ? id : -1;
  found = find_by_hash(db, f, hash, &id, err); /* a concurrent client added it */
  if (found == 0) mlc_error_set(err, "%s: workload %s vanished while adding it", db->path, hash);
  return found > 0 ? id : -1;
}

int64_t db_add_workload(mlc_db *db, const char *task, const char *shape, const mlc_prim_func *f,
                        mlc_error *err) {
  mlc_arena *a = mlc_arena_try_new();
  if (!a) return mlc_error_set(err, "%s: adding a workload: out of memory", db->path), -1;
  int64_t id = add_workload(db, a, task, shape, f, err);
  mlc_arena_free(a);
  return id;
}

typedef struct add_workload_ctx {
  const char *task, *shape;
  const mlc_prim_func *f;
  int64_t id;
} add_workload_ctx;

static bool add_workload_body(mlc_db *db, void *ctx, mlc_error *err) {
  add_workload_ctx *c = ctx;
  return (c->id = db_add_workload(db, c->task, c->shape, c->f, err)) >= 0;
}

int64_t mlc_db_add_workload(mlc_db *db, const char *task, const char *shape,
                            const mlc_prim_func *f, mlc_error *err) {
  add_workload_ctx c = {task, shape, f, -1};
  return db_transaction(db, add_workload_body, &c, err) ? c.id : -1;
}

int mlc_db_list_workloads(mlc_db *db, const char *task, const char *shape, mlc_arena *a,
                          mlc_db_workload **out, mlc_error *err) {
  db_stmt *st = db_prepare(
      db,
      "SELECT w.id, w.hash, w.task, w.shape, w.ir, w.created_at, count(r.id),"
      " count(r.error) FROM workloads w LEFT JOIN records r ON r.workload_id = w.id"
      " WHERE (?1 IS NULL OR w.task = ?1) AND (?2 IS NULL OR w.shape = ?2)"
      " GROUP BY w.id ORDER BY w.id",
      err);
  if (!st) return -1;
  if (!db_bind_text(db, st, 1, task) || !db_bind_text(db, st, 2, shape)) {
    db->be->finalize(st);
    return mlc_error_set(err, "%s: listing workloads: out of memory", db->path), -1;
  }
  MLC_VEC(mlc_db_workload) v = {0};
  int rc;
  while ((rc = db->be->step(st)) == 1) {
    mlc_db_workload w;
    read_workload(db, st, a, &w);
    w.n_records = (int)db->be->column_int(st, 6);
    w.n_errors = (int)db->be->column_int(st, 7);
    MLC_VEC_APUSH(a, v, w);
  }
  db->be->finalize(st);
  if (rc < 0) return db_fail(db, err, "listing workloads"), -1;
  *out = v.data;
  return v.len;
}

bool mlc_db_get_workload(mlc_db *db, int64_t id, mlc_arena *a, mlc_db_workload *out,
                         mlc_error *err) {
  db_stmt *st = db_prepare(
      db, "SELECT id, hash, task, shape, ir, created_at FROM workloads WHERE id = ?", err);
  if (!st) return false;
  db->be->bind_int(st, 1, id);
  int rc = db->be->step(st);
  if (rc == 1) read_workload(db, st, a, out);
  db->be->finalize(st);
  if (rc == 1) return true;
  if (rc == 0) return mlc_error_set(err, "%s: no workload %lld", db->path, (long long)id);
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

static void read_record(mlc_db *db, db_stmt *st, mlc_arena *a, jmp_buf *jb, mlc_db_record *r) {
  const db_backend *be = db->be;
  r->id = be->column_int(st, 0);
  r->workload_id = be->column_int(st, 1);
  r->target = db_column_text(db, st, 2, a);
  r->trace = db_column_text(db, st, 3, a);
  r->trace_hash = db_column_text(db, st, 4, a);
  read_secs(be->column_text(st, 5), a, jb, r);
  r->mean_sec = be->column_double(st, 6);
  r->error = db_column_text(db, st, 7, a);
  r->round = be->column_int(st, 8);
  r->host = db_column_text(db, st, 9, a);
  r->mlc_version = db_column_text(db, st, 10, a);
  r->created_at = db_column_text(db, st, 11, a);
  r->sched_hash = db_column_text(db, st, 12, a);
  r->disturbed = be->column_int(st, 13) != 0; /* NULL reads 0 */
}

/* Into the caller's arena a, under an escape point of our own (the
 * caller's is put back): the records grow with the database, so running out
 * of memory is an error, and what was read stays owned by a. */
/* How one row becomes a record: read_record (every column) or
 * read_summary (no trace); jb: where running out of memory jumps. */
typedef void (*row_reader)(mlc_db *db, db_stmt *st, mlc_arena *a, jmp_buf *jb, mlc_db_record *r);

static int read_rows(mlc_db *db, db_stmt *st, mlc_arena *a, row_reader read, mlc_db_record **out,
                     mlc_error *err) {
  jmp_buf jb, *prev = mlc_arena_oom_jump(a);
  if (setjmp(jb)) {
    mlc_arena_set_oom_jump(a, prev);
    db->be->finalize(st);
    return mlc_error_set(err, "%s: reading records: out of memory", db->path), -1;
  }
  mlc_arena_set_oom_jump(a, &jb);
  MLC_VEC(mlc_db_record) v = {0};
  int rc;
  while ((rc = db->be->step(st)) == 1) {
    mlc_db_record r;
    read(db, st, a, &jb, &r);
    MLC_VEC_APUSH(a, v, r);
  }
  mlc_arena_set_oom_jump(a, prev);
  if (rc < 0) db_fail(db, err, "reading records");
  db->be->finalize(st);
  if (rc < 0) return -1;
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

/* The record's parameters for insert_record's statement, in its order. */
static bool bind_record(mlc_db *db, db_stmt *st, const mlc_db_record *r, const char *target,
                        const char *canon, const char *hash, const char *secs, int n) {
  const db_backend *be = db->be;
  char now[32];
  db_now(now);
  double sum = 0;
  for (int i = 0; i < n; i++) sum += r->secs[i];
  return be->bind_int(st, 1, r->workload_id) && db_bind_text(db, st, 2, target) &&
         db_bind_text(db, st, 3, canon) && db_bind_text(db, st, 4, hash) &&
         db_bind_text(db, st, 5, secs) &&
         (n ? be->bind_double(st, 6, sum / n) : be->bind_null(st, 6)) &&
         db_bind_text(db, st, 7, r->error) && be->bind_int(st, 8, r->round) &&
         db_bind_text(db, st, 9, mlc_target_host_cpu()) &&
         db_bind_text(db, st, 10, MLC_VERSION) && db_bind_text(db, st, 11, now) &&
         db_bind_text(db, st, 12, r->sched_hash) && be->bind_int(st, 13, r->disturbed ? 1 : 0);
}

/* The record's texts (canonical trace, run times) live in scratch arena a:
 * they grow with the record, so running out of memory is an error. A
 * record already there (this client's or another's, committed or being
 * committed: a server makes the insert wait for it) is skipped. */
static bool insert_record(mlc_db *db, mlc_arena *a, const mlc_db_record *r, bool *added,
                          mlc_error *err) {
  char hash[17], target[512];
  const char *canon, *secs;
  if (r->trace_hash) { /* the caller's canonical text and its hash, as they are */
    if (!is_hex16(r->trace_hash))
      return mlc_error_set(err, "%s: adding a record: trace hash '%.40s' is not 16 hex digits",
                           db->path, r->trace_hash);
    memcpy(hash, r->trace_hash, 17);
    canon = r->trace;
  } else if (!trace_text(a, r->trace, hash, &canon, err)) {
    return false;
  }
  int n = r->error ? 0 : r->n_secs;
  if (!(secs = secs_text(a, n, r->secs)))
    return mlc_error_set(err, "%s: adding a record: out of memory", db->path);
  mlc_db_normalize_target(r->target, target, sizeof target);
  db_stmt *st = db_prepare(db,
                           "INSERT INTO records(workload_id, target, trace, trace_hash, run_secs,"
                           " mean_sec, error, round, host, mlc_version, created_at, sched_hash,"
                           " disturbed) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                           " ON CONFLICT(workload_id, target, trace_hash) DO NOTHING RETURNING id",
                           err);
  if (!st) return false;
  int rc = -1;
  if (!bind_record(db, st, r, target, canon, hash, secs, n))
    mlc_error_set(err, "%s: adding a record: out of memory", db->path);
  else if ((rc = db->be->step(st)) < 0) db_fail(db, err, "adding a record");
  if (rc >= 0 && added) *added = rc == 1;
  db->be->finalize(st);
  return rc >= 0;
}

bool db_insert_record(mlc_db *db, const mlc_db_record *r, bool *added, mlc_error *err) {
  if (!check_record(r, err)) return false;
  mlc_arena *a = mlc_arena_try_new();
  if (!a) return mlc_error_set(err, "%s: adding a record: out of memory", db->path);
  bool ok = insert_record(db, a, r, added, err);
  mlc_arena_free(a);
  return ok;
}

typedef struct commit_ctx {
  int n;
  const mlc_db_record *recs;
  int added;
} commit_ctx;

static bool commit_body(mlc_db *db, void *ctx, mlc_error *err) {
  commit_ctx *c = ctx;
  c->added = 0;
  for (int i = 0; i < c->n; i++) {
    bool a = false;
    if (!db_insert_record(db, &c->recs[i], &a, err))
      return mlc_error_prefix(err, "record %d of the batch", i);
    c->added += a;
  }
  return true;
}

bool mlc_db_commit(mlc_db *db, int n, const mlc_db_record *recs, int *n_added, mlc_error *err) {
  commit_ctx c = {n, recs, 0};
  if (!db_transaction(db, commit_body, &c, err)) return false;
  if (n_added) *n_added = c.added;
  return true;
}

/* Record id's run times, its row locked until the transaction ends where
 * the engine locks rows (two jobs re-measuring it add both their times). */
static int get_record_locked(mlc_db *db, int64_t id, mlc_arena *a, mlc_db_record *out,
                             mlc_error *err) {
  db_stmt *st = db_prepare(db, "UPDATE records SET id = id WHERE id = ?", err);
  if (!st) return -1;
  db->be->bind_int(st, 1, id);
  int rc = db->be->step(st);
  if (rc < 0) db_fail(db, err, "locking a record");
  db->be->finalize(st);
  return rc < 0 ? -1 : mlc_db_get_record(db, id, a, out, err);
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
  db_stmt *st = db_prepare(db, "UPDATE records SET run_secs = ?, mean_sec = ? WHERE id = ?", err);
  bool ok = st != NULL;
  if (ok) {
    ok = db_bind_text(db, st, 1, mlc_str_cstr(&text)) && db->be->bind_double(st, 2, sum / total) &&
         db->be->bind_int(st, 3, r->id);
    if (!ok) mlc_error_set(err, "%s: adding run times: out of memory", db->path);
    else ok = db->be->step(st) == 0 || db_fail(db, err, "adding run times");
    db->be->finalize(st);
  }
  mlc_str_free(&text);
  mlc_free(all);
  return ok;
}

typedef struct run_secs_ctx {
  int64_t id;
  int n;
  const double *secs;
} run_secs_ctx;

static bool add_run_secs_body(mlc_db *db, void *ctx, mlc_error *err) {
  const run_secs_ctx *c = ctx;
  mlc_arena *a = mlc_arena_new();
  mlc_db_record r;
  int found = get_record_locked(db, c->id, a, &r, err);
  bool ok = found > 0 && !r.error;
  if (found == 0) mlc_error_set(err, "no record %lld", (long long)c->id);
  if (found > 0 && r.error)
    mlc_error_set(err, "record %lld failed (%s): it has no run times", (long long)c->id, r.error);
  ok = ok && append_secs(db, &r, c->n, c->secs, err);
  mlc_arena_free(a);
  return ok;
}

bool mlc_db_add_run_secs(mlc_db *db, int64_t id, int n, const double *secs, mlc_error *err) {
  for (int i = 0; i < n; i++)
    if (!(secs[i] > 0) || secs[i] > 1e9)
      return mlc_error_set(err, "record %lld: run time %g", (long long)id, secs[i]);
  if (n <= 0) return mlc_error_set(err, "record %lld: no run times to add", (long long)id);
  run_secs_ctx c = {id, n, secs};
  return db_transaction(db, add_run_secs_body, &c, err);
}

int mlc_db_top_k(mlc_db *db, int64_t workload_id, const char *target, int k, mlc_arena *a,
                 mlc_db_record **out, mlc_error *err) {
  char t[512];
  mlc_db_normalize_target(target, t, sizeof t);
  db_stmt *st = db_prepare(db,
                           "SELECT " RECORD_COLUMNS " FROM records WHERE workload_id = ?"
                           " AND target = ? AND error IS NULL AND mean_sec > 0"
                           " ORDER BY mean_sec, id LIMIT ?",
                           err);
  if (!st) return -1;
  bool bound = db->be->bind_int(st, 1, workload_id) && db_bind_text(db, st, 2, t) &&
               db->be->bind_int(st, 3, k);
  if (!bound) {
    db->be->finalize(st);
    return mlc_error_set(err, "%s: reading records: out of memory", db->path), -1;
  }
  return read_rows(db, st, a, read_record, out, err);
}

int mlc_db_records(mlc_db *db, int64_t workload_id, const char *target, mlc_arena *a,
                   mlc_db_record **out, mlc_error *err) {
  char t[512];
  if (target) mlc_db_normalize_target(target, t, sizeof t);
  db_stmt *st = db_prepare(db,
                           "SELECT " RECORD_COLUMNS " FROM records WHERE workload_id = ?1"
                           " AND (?2 IS NULL OR target = ?2) ORDER BY id",
                           err);
  if (!st) return -1;
  if (!db->be->bind_int(st, 1, workload_id) || !db_bind_text(db, st, 2, target ? t : NULL)) {
    db->be->finalize(st);
    return mlc_error_set(err, "%s: reading records: out of memory", db->path), -1;
  }
  return read_rows(db, st, a, read_record, out, err);
}

static void read_summary(mlc_db *db, db_stmt *st, mlc_arena *a, jmp_buf *jb, mlc_db_record *r) {
  MLC_UNUSED(jb);
  const db_backend *be = db->be;
  *r = (mlc_db_record){.id = be->column_int(st, 0), .workload_id = be->column_int(st, 1)};
  r->target = db_column_text(db, st, 2, a);
  r->mean_sec = be->column_double(st, 3);
  r->error = db_column_text(db, st, 4, a);
  r->round = be->column_int(st, 5);
  r->created_at = db_column_text(db, st, 6, a);
  r->disturbed = be->column_int(st, 7) != 0;
}

int mlc_db_record_summaries(mlc_db *db, int64_t workload_id, const char *target, mlc_arena *a,
                            mlc_db_record **out, mlc_error *err) {
  char t[512];
  if (target) mlc_db_normalize_target(target, t, sizeof t);
  db_stmt *st = db_prepare(db,
                           "SELECT id, workload_id, target, mean_sec, error, round, created_at,"
                           " disturbed FROM records WHERE workload_id = ?1"
                           " AND (?2 IS NULL OR target = ?2) ORDER BY id",
                           err);
  if (!st) return -1;
  if (!db->be->bind_int(st, 1, workload_id) || !db_bind_text(db, st, 2, target ? t : NULL)) {
    db->be->finalize(st);
    return mlc_error_set(err, "%s: reading records: out of memory", db->path), -1;
  }
  return read_rows(db, st, a, read_summary, out, err);
}

int mlc_db_get_record(mlc_db *db, int64_t id, mlc_arena *a, mlc_db_record *out, mlc_error *err) {
  db_stmt *st = db_prepare(db, "SELECT " RECORD_COLUMNS " FROM records WHERE id = ?", err);
  if (!st) return -1;
  db->be->bind_int(st, 1, id);
  mlc_db_record *rs;
  int n = read_rows(db, st, a, read_record, &rs, err);
  if (n > 0) *out = rs[0];
  return n < 0 ? -1 : n > 0;
}

int mlc_db_has_trace(mlc_db *db, int64_t workload_id, const char *target,
                     const char *trace_hash, mlc_error *err) {
  char t[512];
  mlc_db_normalize_target(target, t, sizeof t);
  db_stmt *st = db_prepare(
      db, "SELECT 1 FROM records WHERE workload_id = ? AND target = ? AND trace_hash = ?", err);
  if (!st) return -1;
  int rc = -1;
  if (!db->be->bind_int(st, 1, workload_id) || !db_bind_text(db, st, 2, t) ||
      !db_bind_text(db, st, 3, trace_hash))
    mlc_error_set(err, "%s: looking up a trace: out of memory", db->path);
  else if ((rc = db->be->step(st)) < 0) db_fail(db, err, "looking up a trace");
  db->be->finalize(st);
  return rc;
}

static int read_strings(mlc_db *db, db_stmt *st, mlc_arena *a, const char ***out,
                        mlc_error *err) {
  MLC_VEC(const char *) v = {0};
  int rc;
  while ((rc = db->be->step(st)) == 1) MLC_VEC_APUSH(a, v, db_column_text(db, st, 0, a));
  if (rc < 0) db_fail(db, err, "query");
  db->be->finalize(st);
  if (rc < 0) return -1;
  *out = v.data;
  return v.len;
}

int mlc_db_targets(mlc_db *db, int64_t workload_id, mlc_arena *a, const char ***out,
                   mlc_error *err) {
  db_stmt *st = db_prepare(
      db, "SELECT DISTINCT target FROM records WHERE workload_id = ? ORDER BY target", err);
  if (!st) return -1;
  db->be->bind_int(st, 1, workload_id);
  return read_strings(db, st, a, out, err);
}

static int read_counts(mlc_db *db, const char *sql, mlc_arena *a, mlc_db_count **out,
                       mlc_error *err) {
  db_stmt *st = db_prepare(db, sql, err);
  if (!st) return -1;
  MLC_VEC(mlc_db_count) v = {0};
  int rc;
  while ((rc = db->be->step(st)) == 1) {
    mlc_db_count c = {db_column_text(db, st, 0, a), db->be->column_int(st, 1)};
    if (!c.key) c.key = "";
    MLC_VEC_APUSH(a, v, c);
  }
  if (rc < 0) db_fail(db, err, "counting records");
  db->be->finalize(st);
  if (rc < 0) return -1;
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
                     "SELECT CASE WHEN error IS NULL THEN 'ok' WHEN @STRPOS(error, ':') > 0"
                     " THEN substr(error, 1, @STRPOS(error, ':') - 1) ELSE error END AS cls,"
                     " count(*) FROM records GROUP BY cls ORDER BY cls",
                     a, out, err);
}

/* ---- models ---------------------------------------------------------------------------- */

static void checksum_hex(const void *blob, size_t len, char out[17]) {
  snprintf(out, 17, "%016llx", (unsigned long long)mlc_hash_bytes(blob, len, 0x6d6f64656cULL));
}

int64_t mlc_db_save_model(mlc_db *db, const char *target, int feature_version, int64_t n_samples,
                          const void *blob, size_t len, mlc_error *err) {
  char t[512], sum[17], now[32];
  mlc_db_normalize_target(target, t, sizeof t);
  checksum_hex(blob, len, sum);
  db_now(now);
  db_stmt *st = db_prepare(db,
                           "INSERT INTO models(target, feature_version, created_at, n_samples,"
                           " checksum, blob) VALUES(?, ?, ?, ?, ?, ?) RETURNING id",
                           err);
  if (!st) return -1;
  const db_backend *be = db->be;
  int64_t id = -1;
  bool bound = db_bind_text(db, st, 1, t) && be->bind_int(st, 2, feature_version) &&
               db_bind_text(db, st, 3, now) && be->bind_int(st, 4, n_samples) &&
               db_bind_text(db, st, 5, sum) && be->bind_blob(st, 6, blob, len);
  if (!bound) mlc_error_set(err, "%s: saving a model: out of memory", db->path);
  else if (be->step(st) == 1) id = be->column_int(st, 0);
  else db_fail(db, err, "saving a model");
  be->finalize(st);
  return id;
}

/* The blob of the row st is on, checked against its checksum. */
static int read_model(mlc_db *db, db_stmt *st, void **blob, size_t *len, int64_t *n_samples,
                      mlc_error *err) {
  size_t n;
  void *p = db->be->column_blob(st, 3, &n);
  if (!p) return mlc_error_set(err, "%s: loading a model: out of memory", db->path), -1;
  const char *want = db->be->column_text(st, 2);
  char got[17];
  checksum_hex(p, n, got);
  if (!want || strcmp(want, got) != 0) {
    mlc_error_set(err, "%s: model %lld is damaged (checksum %s, expected %s)", db->path,
                  (long long)db->be->column_int(st, 0), got, want ? want : "none");
    mlc_free(p);
    return -1;
  }
  *blob = p;
  *len = n;
  if (n_samples) *n_samples = db->be->column_int(st, 1);
  return 1;
}

int mlc_db_load_model(mlc_db *db, const char *target, int feature_version, void **blob,
                      size_t *len, int64_t *n_samples, mlc_error *err) {
  char t[512];
  mlc_db_normalize_target(target, t, sizeof t);
  db_stmt *st = db_prepare(db,
                           "SELECT id, n_samples, checksum, blob FROM models WHERE target = ?"
                           " AND feature_version = ? ORDER BY id DESC LIMIT 1",
                           err);
  if (!st) return -1;
  int found = -1;
  if (!db_bind_text(db, st, 1, t) || !db->be->bind_int(st, 2, feature_version))
    mlc_error_set(err, "%s: loading a model: out of memory", db->path);
  else if ((found = db->be->step(st)) == 1) found = read_model(db, st, blob, len, n_samples, err);
  else if (found < 0) db_fail(db, err, "loading a model");
  db->be->finalize(st);
  return found;
}
