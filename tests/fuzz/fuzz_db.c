/* libFuzzer harness for JSON-lines import and export: any text imports
 * into a fresh in-memory database or is refused naming the line (and then
 * nothing was added); what imports exports, and the export imports into
 * another fresh database and exports the same text again. */
#include "db/db.h"
#include "fuzz.h"

/* The export of db as text (mlc_free), or NULL. */
static char *export_text(mlc_db *db) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  mlc_error err;
  int64_t n = mlc_db_export(db, NULL, f, &err);
  fclose(f);
  if (n < 0) fuzz_fail(err.msg, "(export)", "");
  char *out = mlc_xstrdup(buf ? buf : "");
  free(buf);
  return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlc_error err;
  mlc_db *db = mlc_db_open(":memory:", MLC_DB_CREATE, &err);
  if (!db) fuzz_fail(err.msg, "(open)", "");
  int64_t added = 0, dup = 0;
  if (mlc_db_import(db, (const char *)data, size, &added, &dup, &err)) {
    char *e1 = export_text(db);
    mlc_db *db2 = mlc_db_open(":memory:", MLC_DB_CREATE, &err);
    if (!db2) fuzz_fail(err.msg, "(open)", "");
    if (!mlc_db_import(db2, e1, strlen(e1), &added, &dup, &err)) fuzz_fail(err.msg, e1, "");
    char *e2 = export_text(db2);
    if (strcmp(e1, e2) != 0) fuzz_fail("export(import(export)) != export", e1, e2);
    mlc_free(e1);
    mlc_free(e2);
    mlc_db_close(db2);
  } else {
    char *e = export_text(db);
    if (*e) fuzz_fail("a refused import added records", (const char *)"", e);
    mlc_free(e);
  }
  mlc_db_close(db);
  return 0;
}
