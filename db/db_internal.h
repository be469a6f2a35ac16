/* db: helpers shared by the files of the module (private).
 *
 * The store sits behind one interface, db_backend: a connection and
 * prepared statements with positional parameters, plus the few words of
 * SQL the engines spell differently. db.c and jsonl.c write every query
 * once against it; db_sqlite.c and db_pg.c implement it. Shared SQL uses
 * SQLite's placeholders (`?`, and `?N` for a parameter used twice) and
 * the dialect words below; the PostgreSQL backend rewrites placeholders to
 * `$N`, and db_sql() expands the words for either backend. */
#ifndef MLC_DB_INTERNAL_H
#define MLC_DB_INTERNAL_H

#include "db/db.h"

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

typedef struct db_stmt db_stmt; /* a backend's prepared statement */

/* Words of SQL that differ between engines: "@ID" (an integer primary key
 * the engine numbers), "@INT" (64-bit integer), "@REAL" (double), "@BLOB"
 * (bytes), "@STRPOS" (position of a substring, 1-based, 0 if absent). */
typedef struct db_dialect {
  const char *id, *int_, *real, *blob, *strpos;
} db_dialect;

typedef struct db_backend {
  const char *name; /* "SQLite", "PostgreSQL": in messages */
  db_dialect words;
  /* Connect to spec (a file path or a URL) and set db->conn and db->path
   * (a URL without its password). mode MLC_DB_EXISTING: the file must
   * exist; a server database must exist either way. */
  bool (*open)(mlc_db *db, const char *spec, mlc_db_mode mode, mlc_error *err);
  void (*close)(mlc_db *db);
  /* The engine's last error message (no trailing newline). */
  const char *(*errmsg)(mlc_db *db);
  /* Run statements that return no rows; false sets db's error message. */
  bool (*exec)(mlc_db *db, const char *sql);
  db_stmt *(*prepare)(mlc_db *db, const char *sql);
  /* Parameters count from 1. A NULL text binds NULL. false: out of memory. */
  bool (*bind_text)(db_stmt *st, int i, const char *s);
  bool (*bind_int)(db_stmt *st, int i, int64_t v);
  bool (*bind_double)(db_stmt *st, int i, double v);
  bool (*bind_null)(db_stmt *st, int i); /* a NULL of the column's type */
  bool (*bind_blob)(db_stmt *st, int i, const void *p, size_t n);
  /* 1: a row is ready; 0: done; -1: error (db's message set). */
  int (*step)(db_stmt *st);
  int64_t (*column_int)(db_stmt *st, int i);       /* NULL reads 0 */
  double (*column_double)(db_stmt *st, int i);     /* NULL reads 0 */
  const char *(*column_text)(db_stmt *st, int i);  /* NULL stays NULL; valid until next step */
  /* Bytes of a blob column, on the heap (mlc_free); NULL: out of memory
   * or not a blob. */
  void *(*column_blob)(db_stmt *st, int i, size_t *n);
  void (*finalize)(db_stmt *st); /* NULL is a no-op */
  /* Transactions: begin takes the write lock up front where the engine
   * has one (SQLite's BEGIN IMMEDIATE), so a batch never fails half way
   * on a busy database. */
  const char *begin_sql;
  /* Run inside the opening transaction before the schema is read, NULL
   * if none: serializes schema creation and migration between clients. */
  const char *schema_lock_sql;
  /* Runs after the opening transaction (SQLite: WAL), or NULL. */
  bool (*after_open)(mlc_db *db, mlc_error *err);
  /* Counts of our tables: name NULL counts every table of the database. */
  const char *count_tables_sql, *count_table_sql;
  /* Whether the last failure was a deadlock or serialization failure, after
   * which the whole transaction may simply be run again. */
  bool (*retryable)(mlc_db *db);
} db_backend;

extern const db_backend db_backend_sqlite, db_backend_pg;

struct mlc_db {
  const db_backend *be;
  void *conn;     /* the backend's connection */
  char *path;     /* the file, or the URL without a password: in messages */
  int opened_version;
};

/* "PATH: what: engine message"; returns false. */
bool db_fail(mlc_db *db, mlc_error *err, const char *what);
/* sql with the dialect words expanded, prepared; NULL with err set. */
db_stmt *db_prepare(mlc_db *db, const char *sql, mlc_error *err);
bool db_exec(mlc_db *db, const char *sql, mlc_error *err);
bool db_begin(mlc_db *db, mlc_error *err);
bool db_commit(mlc_db *db, mlc_error *err);
void db_rollback(mlc_db *db);
/* body(db, ctx, err) in a transaction: committed when it returns true,
 * else rolled back; run again from the start (so body must start from
 * ctx's inputs alone) when the engine aborted it for a deadlock. */
bool db_transaction(mlc_db *db, bool (*body)(mlc_db *db, void *ctx, mlc_error *err), void *ctx,
                    mlc_error *err);
/* The statement's calls through db->be, shorter to read. */
bool db_bind_text(mlc_db *db, db_stmt *st, int i, const char *s);
const char *db_column_text(mlc_db *db, db_stmt *st, int i, mlc_arena *a); /* NULL stays NULL */
/* The time now, UTC, as "2026-01-31T12:00:00Z" (the created_at columns). */
void db_now(char out[32]);

/* Inside a transaction the caller opened. */
int64_t db_add_workload(mlc_db *db, const char *task, const char *shape, const mlc_prim_func *f,
                        mlc_error *err);
bool db_insert_record(mlc_db *db, const mlc_db_record *r, bool *added, mlc_error *err);

#pragma GCC visibility pop
#endif
