/* db: export and import as JSON lines (docs/DATABASE.md). Import runs
 * in one transaction: a bad line leaves the database as it was. Lines are
 * untrusted: each trace is replayed on its workload before it is stored
 * (db/check.c). */
#include "db/db_internal.h"

#include <errno.h>
#include <string.h>

static void put_opt_string(mlc_str *s, const char *v) {
  if (v) mlc_json_write_string(s, v);
  else mlc_str_puts(s, "null");
}

static const char *text_or(mlc_db *db, db_stmt *st, int i, const char *dflt) {
  const char *t = db->be->column_text(st, i);
  return t ? t : dflt;
}

/* The export line of the row st is on. */
static void put_line(mlc_str *line, mlc_db *db, db_stmt *st) {
  const db_backend *be = db->be;
  mlc_str_clear(line);
  mlc_str_puts(line, "{\"task\":");
  put_opt_string(line, be->column_text(st, 0));
  mlc_str_puts(line, ",\"shape\":");
  put_opt_string(line, be->column_text(st, 1));
  mlc_str_puts(line, ",\"workload\":");
  mlc_json_write_string(line, text_or(db, st, 2, ""));
  mlc_str_puts(line, ",\"target\":");
  mlc_json_write_string(line, text_or(db, st, 3, ""));
  mlc_str_printf(line, ",\"trace\":%s,\"run_secs\":%s,\"error\":", text_or(db, st, 4, "null"),
                 text_or(db, st, 5, "[]"));
  put_opt_string(line, be->column_text(st, 6));
  mlc_str_puts(line, ",\"sched_hash\":");
  put_opt_string(line, be->column_text(st, 7));
  mlc_str_puts(line, "}\n");
}

int64_t mlc_db_export(mlc_db *db, const char *task, FILE *out, mlc_error *err) {
  db_stmt *st = db_prepare(db,
                           "SELECT w.task, w.shape, w.ir, r.target, r.trace, r.run_secs,"
                           " r.error, r.sched_hash FROM records r"
                           " JOIN workloads w ON w.id = r.workload_id"
                           " WHERE ?1 IS NULL OR w.task = ?1 ORDER BY r.id",
                           err);
  if (!st) return -1;
  if (!db_bind_text(db, st, 1, task)) {
    db->be->finalize(st);
    return mlc_error_set(err, "%s: exporting: out of memory", db->path), -1;
  }
  mlc_str line = {0};
  int64_t n = 0;
  int rc;
  while ((rc = db->be->step(st)) == 1) {
    put_line(&line, db, st);
    if (fputs(line.data, out) == EOF) {
      mlc_error_set(err, "writing the export: %s", strerror(errno));
      n = -1;
      break;
    }
    n++;
  }
  if (n >= 0 && rc < 0) n = -1, db_fail(db, err, "exporting");
  db->be->finalize(st);
  mlc_str_free(&line);
  return n;
}

/* ---- import ------------------------------------------------------------ */

static const mlc_json *field(const mlc_json *obj, const char *key, mlc_json_kind kind,
                             bool nullable, mlc_error *err) {
  const mlc_json *v = mlc_json_get(obj, key);
  if (!v) return mlc_error_set(err, "missing \"%s\"", key), NULL;
  if (v->kind == kind || (nullable && v->kind == MLC_JSON_NULL)) return v;
  return mlc_error_set(err, "\"%s\" has the wrong type", key), NULL;
}

static const char *opt_str(const mlc_json *v) {
  return v && v->kind == MLC_JSON_STRING ? v->str : NULL;
}

/* The workload as the database stores it (the IR of the first file that
 * brought it, its block names included): what mlc-compile replays the
 * record on, so what import replays it on. */
static const mlc_prim_func *stored_workload(mlc_db *db, mlc_arena *a, int64_t wid,
                                            mlc_error *err) {
  mlc_db_workload w;
  if (!mlc_db_get_workload(db, wid, a, &w, err)) return NULL;
  mlc_module *m = mlc_parse_module(a, "stored workload", w.ir ? w.ir : "", err);
  if (!m) return mlc_error_prefix(err, "workload %lld", (long long)wid), NULL;
  if (m->n_funcs != 1)
    return mlc_error_set(err, "stored workload %lld has %d functions", (long long)wid,
                         m->n_funcs), NULL;
  return m->funcs[0];
}

/* One line into the open transaction. */
static bool import_line(mlc_db *db, mlc_arena *a, const char *line, size_t len, bool *added,
                        mlc_error *err) {
  mlc_json *j = mlc_json_parse(a, line, len, err);
  if (!j) return false;
  if (j->kind != MLC_JSON_OBJECT) return mlc_error_set(err, "expected a JSON object");
  const mlc_json *task, *shape, *wl, *target, *trace, *secs, *error;
  if (!(task = field(j, "task", MLC_JSON_STRING, true, err)) ||
      !(shape = field(j, "shape", MLC_JSON_STRING, true, err)) ||
      !(wl = field(j, "workload", MLC_JSON_STRING, false, err)) ||
      !(target = field(j, "target", MLC_JSON_STRING, false, err)) ||
      !(trace = field(j, "trace", MLC_JSON_OBJECT, false, err)) ||
      !(secs = field(j, "run_secs", MLC_JSON_ARRAY, false, err)) ||
      !(error = field(j, "error", MLC_JSON_STRING, true, err)))
    return false;
  mlc_module *m = mlc_parse_module(a, "workload", wl->str, err);
  if (!m) return mlc_error_prefix(err, "workload");
  mlc_prim_func *f = mlc_module_find(m, "main");
  if (!f && m->n_funcs == 1) f = m->funcs[0];
  if (!f) return mlc_error_set(err, "workload: no prim_func \"main\"");
  if (!mlc_verify_func(f, err)) return mlc_error_prefix(err, "workload");
  double *v = MLC_NEW_ARRAY(a, double, secs->len + 1);
  for (int i = 0; i < secs->len; i++) {
    if (secs->items[i]->kind != MLC_JSON_NUMBER)
      return mlc_error_set(err, "\"run_secs\" holds a non-number");
    v[i] = secs->items[i]->number;
  }
  const mlc_json *stated = mlc_json_get(j, "sched_hash");
  if (stated && stated->kind != MLC_JSON_STRING && stated->kind != MLC_JSON_NULL)
    return mlc_error_set(err, "\"sched_hash\" has the wrong type");
  mlc_str tr = {0};
  mlc_json_write(&tr, trace);
  char hash[17];
  int64_t wid = db_add_workload(db, opt_str(task), opt_str(shape), f, err);
  const mlc_prim_func *stored = wid >= 0 ? stored_workload(db, a, wid, err) : NULL;
  bool ok = stored && mlc_db_replay_trace(a, stored, mlc_str_cstr(&tr), NULL, hash, err);
  if (ok && opt_str(stated) && strcmp(stated->str, hash) != 0)
    ok = mlc_error_set(err, "the trace replays to a function with hash %s, the record says %s "
                            "(another version, or a tampered record)", hash, stated->str);
  mlc_db_record r = {.workload_id = wid, .target = target->str, .trace = mlc_str_cstr(&tr),
                     .n_secs = secs->len, .secs = v, .error = opt_str(error),
                     .sched_hash = hash};
  ok = ok && db_insert_record(db, &r, added, err);
  mlc_str_free(&tr);
  return ok;
}

static bool blank(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r') return false;
  return true;
}

typedef struct import_ctx {
  const char *text;
  size_t len;
  int64_t added, dup;
} import_ctx;

/* Every line into the open transaction. */
static bool import_body(mlc_db *db, void *ctx, mlc_error *err) {
  import_ctx *c = ctx;
  c->added = c->dup = 0;
  size_t pos = 0;
  int lineno = 0;
  bool ok = true;
  while (ok && pos < c->len) {
    const char *line = c->text + pos;
    const char *nl = memchr(line, '\n', c->len - pos);
    size_t n = nl ? (size_t)(nl - line) : c->len - pos;
    pos += n + (nl ? 1 : 0);
    lineno++;
    if (blank(line, n)) continue;
    mlc_arena *a = mlc_arena_new();
    bool was_added = false;
    ok = import_line(db, a, line, n, &was_added, err);
    mlc_arena_free(a);
    if (!ok) mlc_error_prefix(err, "line %d", lineno);
    c->added += was_added;
    c->dup += ok && !was_added;
  }
  return ok;
}

bool mlc_db_import(mlc_db *db, const char *text, size_t len, int64_t *n_added, int64_t *n_dup,
                   mlc_error *err) {
  import_ctx c = {text, len, 0, 0};
  if (!db_transaction(db, import_body, &c, err)) return false;
  if (n_added) *n_added = c.added;
  if (n_dup) *n_dup = c.dup;
  return true;
}
