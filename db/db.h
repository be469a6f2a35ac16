/* db: the tuning database (docs/DATABASE.md): an SQLite file, or a
 * PostgreSQL database that several tuning jobs share.
 *
 *   mlc_db *db = mlc_db_open("mlc.db", MLC_DB_CREATE, &err);   // WAL, busy timeout
 *   // or "postgresql://user@host/dbname", "postgres://...",
 *   //    "postgresql:///dbname?host=/run/dir" (a Unix socket)
 *   int64_t wid = mlc_db_add_workload(db, "matmul", "64,64,64", func, &err);
 *   mlc_db_record r = {.workload_id = wid, .target = "llvm", .trace = json,
 *                      .n_secs = 3, .secs = secs, .round = 1};
 *   mlc_db_commit(db, 1, &r, &err);        // one transaction per batch
 *   mlc_db_record *best; int n = mlc_db_top_k(db, wid, "llvm", 5, arena, &best, &err);
 *   mlc_db_close(db);
 *
 * Schema (version MLC_DB_SCHEMA_VERSION, in meta.schema_version):
 *   meta(key TEXT PRIMARY KEY, value TEXT)          schema_version, created_by
 *   workloads(id, hash TEXT UNIQUE, task, shape, ir, created_at)
 *   records(id, workload_id REFERENCES workloads, target, trace, trace_hash,
 *           run_secs, mean_sec, error, round, host, mlc_version, created_at,
 *           sched_hash, disturbed)
 *     unique (workload_id, target, trace_hash); index (workload_id, target, mean_sec)
 *   models(id, target, feature_version, created_at, n_samples, checksum, blob)
 * Version 1 (the first files) had no provenance columns (records.host,
 * records.mlc_version) and no models table; version 2 had no
 * records.sched_hash; version 3 had no records.disturbed. Opening an older
 * file migrates it in one transaction; its old rows keep sched_hash NULL
 * (mlc-compile and tuning do not trust them: see Trust), and disturbed
 * NULL (not watched). A newer version, a file that is not SQLite, or an
 * SQLite file without our meta table is refused with a message; nothing
 * is ever overwritten.
 *
 * Keys. A workload is keyed by the structural hash of its prim_func (16 hex
 * digits, mlc_func_hash_hex), confirmed by structural equality with the
 * stored IR. A record is keyed by workload, normalized target string
 * (mlc_db_normalize_target) and trace hash (mlc_trace_hash of the
 * canonical trace JSON); committing a record already present is a no-op,
 * so records of one target are never served for another and a trace is
 * measured once.
 *
 * Trust. A record is untrusted input once shared (import, a database from
 * another machine or version). sched_hash is the structural hash of the
 * scheduled function that was measured: import replays every trace and
 * stores the hash of the replay (refusing a trace that does not replay and
 * verify, or whose line states another hash), and whoever compiles a
 * record replays it and skips it when the hashes differ
 * (mlc_db_replay_trace) or when the row has no hash (written with SQL
 * around the API, or migrated: export and import into a new database
 * gives it one).
 *
 * Backends. The string given to mlc_db_open picks one: a postgresql:// or
 * postgres:// URL (libpq's syntax) a PostgreSQL server, anything else an
 * SQLite file. Both hold the same schema (PostgreSQL types: BIGINT
 * identity ids, DOUBLE PRECISION, BYTEA) and behave the same; on a server,
 * concurrent jobs' batches are transactions, a trace two jobs commit at
 * once is stored once (the unique key), readers never wait for writers
 * (MVCC), and a batch a deadlock aborted is run again. Messages name the
 * URL without its password. A build without libpq refuses URLs.
 *
 * Strings returned in records and workloads live in the arena passed in.
 */
#ifndef MLC_DB_H
#define MLC_DB_H

#include "ir/ir.h"

#include <stdio.h>

#define MLC_DB_SCHEMA_VERSION 4
#define MLC_DB_BUSY_TIMEOUT_MS 10000

typedef struct mlc_db mlc_db;

typedef enum mlc_db_mode {
  MLC_DB_CREATE,   /* create the file if missing */
  MLC_DB_EXISTING, /* the file must exist (tools reading a database) */
} mlc_db_mode;

/* path: a file or a postgresql:// URL. A server database must exist; with
 * MLC_DB_EXISTING it must also hold the schema already. */
mlc_db *mlc_db_open(const char *path, mlc_db_mode mode, mlc_error *err);
void mlc_db_close(mlc_db *db);
/* The file, or the URL without its password. */
const char *mlc_db_path(const mlc_db *db);
/* Whether spec names a server (postgresql:// or postgres://), not a file. */
bool mlc_db_is_url(const char *spec);
/* The schema version the file had when opened (before any migration). */
int mlc_db_opened_version(const mlc_db *db);

/* "llvm" -> "llvm -mcpu=znver3 -num-cores=2" on this host; strings no
 * target parses (another kind of device) are kept with spaces squeezed. */
void mlc_db_normalize_target(const char *target, char *out, size_t n);
/* 16 hex digits of the canonical JSON's hash; false if the JSON is not a
 * trace. canonical (may be NULL) receives the canonical text. */
bool mlc_db_trace_hash(const char *trace_json, char hash[17], mlc_str *canonical,
                       mlc_error *err);

/* ---- workloads ---------------------------------------------------------- */

typedef struct mlc_db_workload {
  int64_t id;
  const char *hash, *task, *shape, *ir, *created_at;
  int n_records;     /* filled by mlc_db_list_workloads */
  int n_errors;      /* records with an error */
} mlc_db_workload;

/* Id of f's workload, adding it (task, shape: how it was made; the IR is
 * stored as TVMScript) when absent. -1 on error. */
int64_t mlc_db_add_workload(mlc_db *db, const char *task, const char *shape,
                            const mlc_prim_func *f, mlc_error *err);
/* 1 found (*id set), 0 absent, -1 error. */
int mlc_db_find_workload(mlc_db *db, const mlc_prim_func *f, int64_t *id, mlc_error *err);
/* Every workload (task NULL) or those of one task (and shape, if not NULL). */
int mlc_db_list_workloads(mlc_db *db, const char *task, const char *shape, mlc_arena *a,
                          mlc_db_workload **out, mlc_error *err);
bool mlc_db_get_workload(mlc_db *db, int64_t id, mlc_arena *a, mlc_db_workload *out,
                         mlc_error *err);

/* ---- records ------------------------------------------------------------- */

typedef struct mlc_db_record {
  int64_t id;          /* set by queries; ignored by commit */
  int64_t workload_id;
  const char *target;  /* normalized by commit */
  const char *trace;   /* trace JSON (stored canonical) */
  /* Set by queries. Commit computes it from `trace` (parsed, written
   * canonical) unless given: then `trace` must already be the canonical
   * text (mlc_trace_to_json's) and this its hash (mlc_trace_hash's, 16
   * lowercase hex digits), as the tuner has them; neither is re-derived. */
  const char *trace_hash;
  int n_secs;
  const double *secs;  /* seconds per call per repeat; n_secs == 0 with an error */
  double mean_sec;     /* set by queries (0 with an error) */
  const char *error;   /* NULL on success, else "<class>: <message>" */
  int64_t round;
  const char *host, *mlc_version, *created_at; /* set by queries */
  /* 16 hex digits of mlc_func_struct_hash of the scheduled function that
   * was measured (the trace replayed on the workload); NULL: unknown (rows
   * from before schema version 3, or a caller without it), and such a row
   * is not served to mlc-compile nor taken as a best by tuning. */
  const char *sched_hash;
  /* The runner saw interference from other work in every timing of this
   * record (it was re-timed and stayed disturbed): its times may be too
   * slow. false for rows from before schema version 4. */
  bool disturbed;
} mlc_db_record;

/* Insert a batch in one transaction; records already present (same
 * workload, target and trace hash) are skipped. *n_added (may be NULL)
 * receives how many were new. All or nothing on error. */
bool mlc_db_commit(mlc_db *db, int n, const mlc_db_record *recs, int *n_added, mlc_error *err);
/* More run times for successful record id (it was measured again): they
 * join its run_secs and mean_sec is recomputed, in one transaction. Fails
 * for a missing or failed record and for non-positive times. */
bool mlc_db_add_run_secs(mlc_db *db, int64_t id, int n, const double *secs, mlc_error *err);
/* Replay trace (JSON) on workload as the measurement worker and
 * mlc-compile do: stored decisions (a decision that no longer fits is an
 * error, not resampled), the function named as the trace's GetBlock
 * instructions ask; the result must verify. hash receives its structural
 * hash (mlc_func_hash_hex); out (may be NULL) a copy in a. */
bool mlc_db_replay_trace(mlc_arena *a, const mlc_prim_func *workload, const char *trace,
                         mlc_prim_func **out, char hash[17], mlc_error *err);
/* Best k successful records by mean_sec for (workload, target); a row
 * whose mean_sec is not positive (written around the API) is never one. */
int mlc_db_top_k(mlc_db *db, int64_t workload_id, const char *target, int k, mlc_arena *a,
                 mlc_db_record **out, mlc_error *err);
/* Every record of a workload (target NULL: all targets), errors included,
 * by id: the cost model's training data. */
int mlc_db_records(mlc_db *db, int64_t workload_id, const char *target, mlc_arena *a,
                   mlc_db_record **out, mlc_error *err);
/* mlc_db_records without what a summary does not need, for reports of
 * 100,000 records: trace, trace_hash, sched_hash, host and mlc_version
 * NULL, n_secs 0 (mean_sec is set). */
int mlc_db_record_summaries(mlc_db *db, int64_t workload_id, const char *target, mlc_arena *a,
                            mlc_db_record **out, mlc_error *err);
/* 1 if present (*out filled), 0 if no such record, -1 on error. */
int mlc_db_get_record(mlc_db *db, int64_t id, mlc_arena *a, mlc_db_record *out, mlc_error *err);
/* Whether this trace was measured for (workload, target): 1, 0, -1. */
int mlc_db_has_trace(mlc_db *db, int64_t workload_id, const char *target,
                     const char *trace_hash, mlc_error *err);
/* Distinct normalized targets holding records of a workload. */
int mlc_db_targets(mlc_db *db, int64_t workload_id, mlc_arena *a, const char ***out,
                   mlc_error *err);

/* Counts: records per target and per error class ("ok" for successes). */
typedef struct mlc_db_count {
  const char *key;
  int64_t n;
} mlc_db_count;
int mlc_db_count_by_target(mlc_db *db, mlc_arena *a, mlc_db_count **out, mlc_error *err);
int mlc_db_count_by_error(mlc_db *db, mlc_arena *a, mlc_db_count **out, mlc_error *err);

/* ---- cost-model snapshots ---------------------------------------------------- */

/* Store a model blob with a checksum; returns its id or -1. */
int64_t mlc_db_save_model(mlc_db *db, const char *target, int feature_version, int64_t n_samples,
                          const void *blob, size_t len, mlc_error *err);
/* The latest model of a target with the given feature version: 1 found
 * (*blob on the heap, free with mlc_free), 0 none, -1 on error (a checksum
 * mismatch included). n_samples may be NULL. */
int mlc_db_load_model(mlc_db *db, const char *target, int feature_version, void **blob,
                      size_t *len, int64_t *n_samples, mlc_error *err);

/* ---- JSON lines ---------------------------------------------------------------- */

/* One object per record (docs/DATABASE.md):
 *   {"task":..., "shape":..., "workload":"<TVMScript>", "target":...,
 *    "trace":{...}, "run_secs":[...], "error":null, "sched_hash":"..."}
 * ("sched_hash" null when unknown, and optional on import). task NULL:
 * every workload. Returns records written or -1. */
int64_t mlc_db_export(mlc_db *db, const char *task, FILE *out, mlc_error *err);
/* Read the same format; all lines in one transaction (nothing changes on
 * any error, which names the line). Duplicates are skipped. Every line is
 * checked as untrusted input: its trace must replay on its workload and
 * verify (mlc_db_replay_trace), a stated "sched_hash" must be the
 * replay's, run times must be finite and positive; the replay's hash is
 * stored. */
bool mlc_db_import(mlc_db *db, const char *text, size_t len, int64_t *n_added, int64_t *n_dup,
                   mlc_error *err);

#endif
