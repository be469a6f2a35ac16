/* db: helpers shared by the files of the module (private). */
#ifndef MLC_DB_INTERNAL_H
#define MLC_DB_INTERNAL_H

#include "db/db.h"

#include <sqlite3.h>

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

struct mlc_db {
  sqlite3 *h;
  char *path;
  int opened_version;
};

/* "PATH: what: sqlite message"; returns false. */
bool db_fail(mlc_db *db, mlc_error *err, const char *what);
sqlite3_stmt *db_prepare(mlc_db *db, const char *sql, mlc_error *err);
bool db_exec(mlc_db *db, const char *sql, mlc_error *err);
/* NULL binds NULL; false when SQLite could not copy the text (out of
 * memory: the parameter is then NULL, so writers check). */
bool db_bind_text(sqlite3_stmt *st, int i, const char *s);
const char *db_column_text(sqlite3_stmt *st, int i, mlc_arena *a); /* NULL stays NULL */

/* Inside a transaction the caller opened. */
int64_t db_add_workload(mlc_db *db, const char *task, const char *shape, const mlc_prim_func *f,
                        mlc_error *err);
bool db_insert_record(mlc_db *db, const mlc_db_record *r, bool *added, mlc_error *err);


#pragma GCC visibility pop
#endif
