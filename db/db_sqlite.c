/* db: the SQLite backend (a file; the embedded default).
 *
 * Every connection uses WAL (readers never block the writer), a busy
 * timeout (two tuners can share one file) and synchronous=NORMAL, which in
 * WAL mode loses nothing on a process kill: a batch is either committed
 * whole or absent. A db_stmt is an sqlite3_stmt.
 */
#include "db/db_internal.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

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

/* ---- the connection --------------------------------------------------------- */

static sqlite3 *H(mlc_db *db) { return db->conn; }
static sqlite3_stmt *S(db_stmt *st) { return (sqlite3_stmt *)st; }

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

static bool sq_open(mlc_db *db, const char *path, mlc_db_mode mode, mlc_error *err) {
  struct stat sb;
  bool exists = stat(path, &sb) == 0;
  if (!exists && mode == MLC_DB_EXISTING)
    return mlc_error_set(err, "%s: no such database", path);
  if (exists && !S_ISREG(sb.st_mode)) return mlc_error_set(err, "%s: not a regular file", path);
  if (exists && !looks_like_sqlite(path, err)) return false;
  pthread_once(&sqlite_memory_once, route_sqlite_memory);
  if (!(db->path = mlc_malloc(strlen(path) + 1)))
    return mlc_error_set(err, "%s: out of memory opening the database", path);
  strcpy(db->path, path);
  sqlite3 *h = NULL;
  int flags = SQLITE_OPEN_READWRITE | (mode == MLC_DB_CREATE ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(path, &h, flags, NULL);
  db->conn = h; /* set even on failure: it holds the message, and close frees it */
  if (rc != SQLITE_OK) return db_fail(db, err, "cannot open");
  sqlite3_busy_timeout(h, MLC_DB_BUSY_TIMEOUT_MS);
  return db_exec(db, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON", err);
}

static void sq_close(mlc_db *db) { sqlite3_close_v2(H(db)); }
static const char *sq_errmsg(mlc_db *db) { return sqlite3_errmsg(H(db)); }

static bool sq_exec(mlc_db *db, const char *sql) {
  return sqlite3_exec(H(db), sql, NULL, NULL, NULL) == SQLITE_OK;
}

static db_stmt *sq_prepare(mlc_db *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(H(db), sql, -1, &st, NULL) == SQLITE_OK) return (db_stmt *)st;
  sqlite3_finalize(st);
  return NULL;
}

/* ---- statements ------------------------------------------------------------- */

static bool sq_bind_text(db_stmt *st, int i, const char *s) {
  if (s) return sqlite3_bind_text(S(st), i, s, -1, SQLITE_TRANSIENT) == SQLITE_OK;
  return sqlite3_bind_null(S(st), i) == SQLITE_OK;
}

static bool sq_bind_int(db_stmt *st, int i, int64_t v) {
  return sqlite3_bind_int64(S(st), i, v) == SQLITE_OK;
}

static bool sq_bind_double(db_stmt *st, int i, double v) {
  return sqlite3_bind_double(S(st), i, v) == SQLITE_OK;
}

static bool sq_bind_null(db_stmt *st, int i) { return sqlite3_bind_null(S(st), i) == SQLITE_OK; }

static bool sq_bind_blob(db_stmt *st, int i, const void *p, size_t n) {
  return sqlite3_bind_blob64(S(st), i, n ? p : "", n, SQLITE_TRANSIENT) == SQLITE_OK;
}

static int sq_step(db_stmt *st) {
  int rc = sqlite3_step(S(st));
  return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

static int64_t sq_column_int(db_stmt *st, int i) { return sqlite3_column_int64(S(st), i); }
static double sq_column_double(db_stmt *st, int i) { return sqlite3_column_double(S(st), i); }

static const char *sq_column_text(db_stmt *st, int i) {
  return (const char *)sqlite3_column_text(S(st), i);
}

static void *sq_column_blob(db_stmt *st, int i, size_t *n) {
  const void *p = sqlite3_column_blob(S(st), i);
  *n = (size_t)sqlite3_column_bytes(S(st), i);
  void *out = mlc_malloc(*n + 1);
  if (out && *n) memcpy(out, p, *n);
  return out;
}

static void sq_finalize(db_stmt *st) { sqlite3_finalize(S(st)); }

/* SQLite never deadlocks here: BEGIN IMMEDIATE waits (busy timeout) for
 * the one writer instead. */
static bool sq_retryable(mlc_db *db) { return MLC_UNUSED(db), false; }

/* WAL only once the file is known to be ours: switching writes the
 * header, and a refused file must stay byte for byte as it was. The
 * switch takes no busy handler when another process opening the same
 * fresh file switches it at the same moment ("database is locked" at
 * once, about 1 in 60 such races), so it waits here as the busy timeout
 * would, then gives up with SQLite's message. */
static bool sq_use_wal(mlc_db *db, mlc_error *err) {
  enum { STEP_MS = 5 };
  for (int waited = 0;; waited += STEP_MS) {
    int rc = sqlite3_exec(H(db), "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
    if (rc == SQLITE_OK) return true;
    if ((rc & 0xff) != SQLITE_BUSY || waited >= MLC_DB_BUSY_TIMEOUT_MS)
      return db_fail(db, err, "switching to WAL");
    struct timespec ts = {0, STEP_MS * 1000000L};
    nanosleep(&ts, NULL);
  }
}

const db_backend db_backend_sqlite = {
    .name = "SQLite",
    .words = {.id = "INTEGER PRIMARY KEY", .int_ = "INTEGER", .real = "REAL", .blob = "BLOB",
              .strpos = "instr"},
    .open = sq_open,
    .close = sq_close,
    .errmsg = sq_errmsg,
    .exec = sq_exec,
    .prepare = sq_prepare,
    .bind_text = sq_bind_text,
    .bind_int = sq_bind_int,
    .bind_double = sq_bind_double,
    .bind_null = sq_bind_null,
    .bind_blob = sq_bind_blob,
    .step = sq_step,
    .column_int = sq_column_int,
    .column_double = sq_column_double,
    .column_text = sq_column_text,
    .column_blob = sq_column_blob,
    .finalize = sq_finalize,
    .begin_sql = "BEGIN IMMEDIATE",
    .schema_lock_sql = NULL,
    .after_open = sq_use_wal,
    .count_tables_sql = "SELECT count(*) FROM sqlite_master",
    .count_table_sql = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
    .retryable = sq_retryable,
};
