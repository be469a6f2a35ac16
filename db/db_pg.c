/* db: the PostgreSQL backend (libpq), for tuning jobs that share records.
 *
 * A statement keeps its parameters as text (binary for blobs) with their
 * types, and runs when first stepped; its rows are then read from the
 * result. Shared SQL's `?` and `?N` become `$N` here (translate). Each
 * batch is a READ COMMITTED transaction: a record another job is
 * committing makes our insert of it wait, then skip it (the unique key),
 * and readers see committed batches only without blocking anyone. Library
 * code never prints: libpq's notices are dropped.
 *
 * Built only with libpq (MLC_HAVE_LIBPQ, set by the Makefile when libpq-dev
 * is installed); without it, URLs are refused with a message.
 */
#include "db/db_internal.h"

#include <string.h>

#ifdef MLC_HAVE_LIBPQ

#include <ctype.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>

/* Type oids from PostgreSQL's catalog (pg_type.dat): stable. */
enum { OID_BYTEA = 17, OID_INT8 = 20, OID_TEXT = 25, OID_FLOAT8 = 701 };
enum { MAX_PARAMS = 16 };

typedef struct pg_conn {
  PGconn *c;
  char msg[600];   /* the last error, for errmsg */
  char state[6];   /* its SQLSTATE ("" if none) */
} pg_conn;

struct db_stmt {
  mlc_db *db;
  char *sql;                 /* with $N placeholders */
  int n_params;
  Oid types[MAX_PARAMS];     /* 0: let the server infer (a NULL of the column's type) */
  char *values[MAX_PARAMS];  /* heap copies; NULL is SQL NULL */
  int lengths[MAX_PARAMS], formats[MAX_PARAMS];
  PGresult *res;             /* NULL until the first step */
  int next;                  /* the row the next step reads */
};

static pg_conn *C(mlc_db *db) { return db->conn; }

/* Keeps message (without its trailing newline) and state for errmsg and
 * retryable. */
static void set_msg(mlc_db *db, const char *message, const char *state) {
  pg_conn *pc = C(db);
  snprintf(pc->msg, sizeof pc->msg, "%s", message && *message ? message : "unknown error");
  size_t n = strlen(pc->msg);
  while (n > 0 && (pc->msg[n - 1] == '\n' || pc->msg[n - 1] == ' ')) pc->msg[--n] = 0;
  snprintf(pc->state, sizeof pc->state, "%s", state ? state : "");
}

static void set_result_msg(mlc_db *db, const PGresult *res) {
  if (res) set_msg(db, PQresultErrorMessage(res), PQresultErrorField(res, PG_DIAG_SQLSTATE));
  else set_msg(db, PQerrorMessage(C(db)->c), NULL);
}

static bool result_ok(const PGresult *res) {
  ExecStatusType s = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
  return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK || s == PGRES_EMPTY_QUERY;
}

/* ---- the connection ---------------------------------------------------------------- */

/* The URL as messages show it: "user:secret@" loses ":secret", and a
 * password=... parameter is left out. NULL: out of memory. */
static char *display_url(const char *url) {
  char *out = mlc_malloc(strlen(url) + 1), *q = out;
  if (!out) return NULL;
  const char *p = strstr(url, "://") + 3;
  q = (char *)memcpy(q, url, (size_t)(p - url)) + (p - url);
  size_t auth = strcspn(p, "/?"); /* user[:password]@host[:port] */
  const char *at = memchr(p, '@', auth), *colon = at ? memchr(p, ':', (size_t)(at - p)) : NULL;
  if (colon) {
    q = (char *)memcpy(q, p, (size_t)(colon - p)) + (colon - p);
    p = at;
  }
  for (bool query = false; *p;) {
    size_t n = strcspn(p, "?&");
    bool secret = query && !strncmp(p, "password=", 9);
    if (!secret) q = (char *)memcpy(q, p, n) + n;
    p += n;
    if (*p) {
      if (!secret || *p == '?') *q++ = *p;
      query = true;
      p++;
    }
  }
  *q = 0;
  size_t n = strlen(out);
  if (n && (out[n - 1] == '&' || out[n - 1] == '?')) out[n - 1] = 0;
  return out;
}

static void drop_notice(void *arg, const char *message) {
  MLC_UNUSED(arg), MLC_UNUSED(message);
}

static bool pg_open(mlc_db *db, const char *url, mlc_db_mode mode, mlc_error *err) {
  MLC_UNUSED(mode); /* the database must exist either way; check_schema looks inside */
  pg_conn *pc = mlc_malloc(sizeof *pc);
  if (!pc || !(db->path = display_url(url))) {
    mlc_free(pc);
    return mlc_error_set(err, "out of memory opening a PostgreSQL database");
  }
  memset(pc, 0, sizeof *pc);
  db->conn = pc;
  pc->c = PQconnectdb(url);
  if (!pc->c) return mlc_error_set(err, "%s: cannot connect: out of memory", db->path);
  if (PQstatus(pc->c) != CONNECTION_OK) {
    set_msg(db, PQerrorMessage(pc->c), NULL);
    return mlc_error_set(err, "%s: cannot connect: %s", db->path, pc->msg);
  }
  PQsetNoticeProcessor(pc->c, drop_notice, NULL);
  return true;
}

static void pg_close(mlc_db *db) {
  PQfinish(C(db)->c);
  mlc_free(db->conn);
}

static const char *pg_errmsg(mlc_db *db) { return C(db)->msg; }

static bool pg_exec(mlc_db *db, const char *sql) {
  PGresult *res = PQexec(C(db)->c, sql);
  bool ok = result_ok(res);
  if (!ok) set_result_msg(db, res);
  PQclear(res);
  return ok;
}

/* ---- statements --------------------------------------------------------------------- */

/* sql with SQLite's placeholders as `$N` (quoted text left alone): `?N`
 * is parameter N, a bare `?` one more than the largest so far (SQLite's
 * rule). *n receives the highest number. NULL: out of memory, or (*n
 * then -1) a parameter numbered 0 or over MAX_PARAMS. */
static char *translate(const char *sql, int *n) {
  char *out = mlc_malloc(strlen(sql) * 3 + 1), *q = out; /* "?" -> "$16" */
  if (!out) return NULL;
  int max = 0;
  bool quoted = false;
  for (const char *p = sql; *p; p++) {
    if (*p == '\'') quoted = !quoted;
    if (quoted || *p != '?') {
      *q++ = *p;
      continue;
    }
    long k = max + 1;
    if (isdigit((unsigned char)p[1])) {
      char *end;
      k = strtol(p + 1, &end, 10);
      p = end - 1;
    }
    if (k < 1 || k > MAX_PARAMS) return *n = -1, mlc_free(out), NULL;
    if (k > max) max = (int)k;
    q += sprintf(q, "$%ld", k);
  }
  *q = 0;
  *n = max;
  return out;
}

static db_stmt *pg_prepare(mlc_db *db, const char *sql) {
  db_stmt *st = mlc_malloc(sizeof *st);
  if (!st) return set_msg(db, "out of memory", NULL), NULL;
  memset(st, 0, sizeof *st);
  st->db = db;
  if (!(st->sql = translate(sql, &st->n_params))) {
    set_msg(db, st->n_params < 0 ? "a parameter numbered 0 or over 16" : "out of memory", NULL);
    mlc_free(st);
    return NULL;
  }
  return st;
}

/* Parameter i takes a copy of n bytes at p (NULL: SQL NULL) of type oid. */
static bool bind(db_stmt *st, int i, Oid oid, const void *p, size_t n, int format) {
  MLC_ASSERT(i >= 1 && i <= st->n_params);
  char *copy = NULL;
  if (p && !(copy = mlc_malloc(n + 1))) return false;
  if (copy) memcpy(copy, p, n), copy[n] = 0;
  mlc_free(st->values[i - 1]);
  st->values[i - 1] = copy;
  st->types[i - 1] = oid;
  st->lengths[i - 1] = (int)n;
  st->formats[i - 1] = format;
  return true;
}

static bool pg_bind_text(db_stmt *st, int i, const char *s) {
  return bind(st, i, OID_TEXT, s, s ? strlen(s) : 0, 0);
}

static bool pg_bind_int(db_stmt *st, int i, int64_t v) {
  char b[24];
  int n = snprintf(b, sizeof b, "%" PRId64, v);
  return bind(st, i, OID_INT8, b, (size_t)n, 0);
}

/* 17 significant digits read back as the same double. */
static bool pg_bind_double(db_stmt *st, int i, double v) {
  char b[40];
  int n = snprintf(b, sizeof b, "%.17g", v);
  return bind(st, i, OID_FLOAT8, b, (size_t)n, 0);
}

static bool pg_bind_null(db_stmt *st, int i) { return bind(st, i, 0, NULL, 0, 0); }

static bool pg_bind_blob(db_stmt *st, int i, const void *p, size_t n) {
  return bind(st, i, OID_BYTEA, n ? p : "", n, 1);
}

/* Runs the statement; its rows are read from the result. */
static bool run(db_stmt *st) {
  st->res = PQexecParams(C(st->db)->c, st->sql, st->n_params, st->types,
                         (const char *const *)st->values, st->lengths, st->formats, 0);
  if (result_ok(st->res)) return true;
  set_result_msg(st->db, st->res);
  return false;
}

static int pg_step(db_stmt *st) {
  if (!st->res && !run(st)) return -1;
  if (!result_ok(st->res)) return -1; /* stepped again after an error */
  if (st->next >= PQntuples(st->res)) return 0;
  st->next++;
  return 1;
}

static int row(db_stmt *st) { return st->next - 1; }

static bool pg_column_null(db_stmt *st, int i) { return PQgetisnull(st->res, row(st), i); }

static int64_t pg_column_int(db_stmt *st, int i) {
  return pg_column_null(st, i) ? 0 : strtoll(PQgetvalue(st->res, row(st), i), NULL, 10);
}

static double pg_column_double(db_stmt *st, int i) {
  return pg_column_null(st, i) ? 0 : strtod(PQgetvalue(st->res, row(st), i), NULL);
}

static const char *pg_column_text(db_stmt *st, int i) {
  return pg_column_null(st, i) ? NULL : PQgetvalue(st->res, row(st), i);
}

/* BYTEA comes back as text ("\x0011..."); libpq decodes it. */
static void *pg_column_blob(db_stmt *st, int i, size_t *n) {
  *n = 0;
  const char *text = pg_column_text(st, i);
  unsigned char *raw = text ? PQunescapeBytea((const unsigned char *)text, n) : NULL;
  void *out = raw ? mlc_malloc(*n + 1) : NULL;
  if (out && *n) memcpy(out, raw, *n);
  PQfreemem(raw);
  return out;
}

static void pg_finalize(db_stmt *st) {
  if (!st) return;
  PQclear(st->res);
  for (int i = 0; i < st->n_params; i++) mlc_free(st->values[i]);
  mlc_free(st->sql);
  mlc_free(st);
}

/* deadlock_detected, serialization_failure. */
static bool pg_retryable(mlc_db *db) {
  return !strcmp(C(db)->state, "40P01") || !strcmp(C(db)->state, "40001");
}

const db_backend db_backend_pg = {
    .name = "PostgreSQL",
    .words = {.id = "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", .int_ = "BIGINT",
              .real = "DOUBLE PRECISION", .blob = "BYTEA", .strpos = "strpos"},
    .open = pg_open,
    .close = pg_close,
    .errmsg = pg_errmsg,
    .exec = pg_exec,
    .prepare = pg_prepare,
    .bind_text = pg_bind_text,
    .bind_int = pg_bind_int,
    .bind_double = pg_bind_double,
    .bind_null = pg_bind_null,
    .bind_blob = pg_bind_blob,
    .step = pg_step,
    .column_int = pg_column_int,
    .column_double = pg_column_double,
    .column_text = pg_column_text,
    .column_blob = pg_column_blob,
    .finalize = pg_finalize,
    .begin_sql = "BEGIN",
    /* Two jobs starting on an empty database would both create the tables;
     * a transaction-scoped advisory lock (any fixed key) lets one do it. */
    .schema_lock_sql = "SELECT pg_advisory_xact_lock(7236284830462935)",
    .after_open = NULL,
    .count_tables_sql = "SELECT count(*) FROM information_schema.tables"
                        " WHERE table_schema = current_schema()",
    .count_table_sql = "SELECT count(*) FROM information_schema.tables"
                       " WHERE table_schema = current_schema() AND table_name = ?",
    .retryable = pg_retryable,
};

#else /* no libpq */

static bool pg_open_missing(mlc_db *db, const char *url, mlc_db_mode mode, mlc_error *err) {
  MLC_UNUSED(db), MLC_UNUSED(mode);
  size_t n = strcspn(url, "@/?"); /* the scheme and "//": no user, no password */
  return mlc_error_set(err, "%.*s...: this mlc-tune was built without PostgreSQL support "
                            "(libpq-dev was missing at build time; install it and rebuild)",
                       (int)(n + 2 < strlen(url) ? n + 2 : n), url);
}

/* Only open is ever called: it fails, so no connection exists. */
const db_backend db_backend_pg = {.name = "PostgreSQL", .open = pg_open_missing};

#endif
