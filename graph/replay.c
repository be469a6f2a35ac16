/* Choosing what to compile for each kernel: the best record of the tuning
 * database for its workload (by structural hash) and target, replayed, or
 * the default schedule when there is none.
 *
 * The trace is replayed on the workload IR stored with the record (so the
 * block names the trace asks for exist, whatever the graph named them),
 * with its stored decisions and the postprocessing steps it recorded; the
 * result takes the kernel's name. Structural equality of the stored IR
 * and the kernel (checked) guarantees the same parameters in the same
 * order.
 *
 * Records are untrusted: one whose replay fails, or whose replay is not
 * the function it measured (the stored structural hash), is skipped with a
 * note naming it, and the next best is tried. So is a record without a
 * stored hash (a row written around mlc-tune with SQL, or one migrated from
 * a schema before version 3): nothing ties its run time to the function it
 * replays to, and a numeric check (--verify) would only show that the
 * kernel computes the right thing, not that it is the fast one the row
 * claims. `mlc-db export` and `import` into a new database give such rows
 * a hash (import replays and checks each). */
#include "db/db.h"
#include "graph/graph_impl.h"
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "tuner/tuner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_name(mlc_arena *a, mlc_prim_func *f, const char *name) {
  f->name = mlc_arena_strdup(a, name);
  for (int i = 0; i < f->n_attrs; i++)
    if (strcmp(f->attrs[i].key, "global_symbol") == 0) f->attrs[i].s = f->name;
}

/* Replay record r of workload w for f; NULL with a message on failure,
 * or (*differs set) when the replay is not the function the record
 * measured (its stored sched_hash). Requires r->sched_hash. */
static mlc_prim_func *replay(mlc_arena *a, const mlc_prim_func *f, const mlc_db_workload *w,
                             const mlc_db_record *r, bool *differs, mlc_error *err) {
  mlc_arena *tmp = mlc_arena_new();
  mlc_prim_func *out = NULL, *s;
  char hash[17];
  mlc_module *mod = mlc_parse_module(tmp, "workload.py", w->ir, err);
  if (mod && mod->n_funcs != 1) mlc_error_set(err, "the stored workload has %d functions", mod->n_funcs);
  else if (mod && !mlc_func_struct_equal(mod->funcs[0], f))
    mlc_error_set(err, "the stored workload differs from the kernel (hash collision)");
  else if (mod && mlc_db_replay_trace(tmp, mod->funcs[0], r->trace, &s, hash, err)) {
    *differs = strcmp(hash, r->sched_hash) != 0;
    if (*differs)
      mlc_error_set(err, "its trace replays to a function with hash %s, the record says %s "
                         "(a record from another version, or a tampered one)",
                    hash, r->sched_hash);
    else {
      out = mlc_func_copy(a, s);
      set_name(a, out, f->name);
    }
  }
  mlc_arena_free(tmp);
  return out;
}

/* The library a record's trace calls (LibraryCall) into buf, or "". */
static void record_library(const mlc_db_record *r, char *buf, size_t n) {
  buf[0] = 0;
  if (!strstr(r->trace, "\"LibraryCall\"")) return;
  mlc_arena *a = mlc_arena_new();
  mlc_error e;
  mlc_trace *t = mlc_trace_from_json(a, r->trace, strlen(r->trace), &e);
  const char *lib = t ? mlc_trace_library(t) : NULL;
  if (lib) snprintf(buf, n, "%s", lib);
  mlc_arena_free(a);
}

/* Records tried, best first, before the default schedule. */
#define MAX_TRIED 8

/* Appends "record N <what>: <msg>" (what NULL: msg alone) to the note. */
static void add_note(mlc_gkernel *out, size_t *len, int64_t id, const char *what,
                     const char *msg) {
  if (*len >= sizeof out->note) return;
  const char *sep = *len ? "; " : "";
  int k = what ? snprintf(out->note + *len, sizeof out->note - *len, "%srecord %lld %s: %s", sep,
                          (long long)id, what, msg)
               : snprintf(out->note + *len, sizeof out->note - *len, "%s%s", sep, msg);
  *len += k > 0 ? (size_t)k : 0;
}

/* The first of the best records that replays to its stored hash; notes
 * why the ones before it were skipped. */
static void choose_record(mlc_arena *a, const mlc_prim_func *f, const mlc_db_workload *w, int n,
                          const mlc_db_record *best, mlc_gkernel *out) {
  size_t len = 0;
  for (int i = 0; i < n; i++) {
    mlc_error why;
    bool differs = false;
    mlc_prim_func *s = NULL;
    if (!best[i].sched_hash) {
      mlc_error_set(&why, "record %lld has no scheduled-function hash (written outside "
                          "mlc-tune?); skipped (mlc-db export, then import into a new database, "
                          "checks and hashes it)",
                    (long long)best[i].id);
      add_note(out, &len, best[i].id, NULL, why.msg);
    } else if ((s = replay(a, f, w, &best[i], &differs, &why))) {
      out->sched = s;
      out->record_id = best[i].id;
      out->record_sec = best[i].mean_sec;
      record_library(&best[i], out->library, sizeof out->library);
      return;
    } else {
      add_note(out, &len, best[i].id, differs ? "skipped" : "did not replay", why.msg);
    }
  }
}

/* ---- kernels of size vars ----------------------------------------------------------- */

/* The sizes a workload of the database was tuned at, when it is f at some
 * sizes: its shape reads "n=128;m=4" (as mlc-tune --size stores it) and
 * f specialized to them has its hash. The product of the sizes in *weight. */
static bool tuned_sizes(mlc_arena *a, const mlc_prim_func *f, const mlc_db_workload *w,
                        int64_t *sizes, double *weight) {
  if (!w->shape || !w->hash) return false;
  const char *specs[MLC_MAX_SIZES];
  int n = 0;
  char *copy = mlc_arena_strdup(a, w->shape), *save = NULL;
  for (char *t = strtok_r(copy, ";", &save); t && n < MLC_MAX_SIZES; t = strtok_r(NULL, ";", &save))
    specs[n++] = t;
  *weight = 1;
  for (int k = 0; k < f->n_sizes; k++) {
    mlc_error e;
    const mlc_size_var *sv = &f->sizes[k];
    if (mlc_size_values(n, specs, sv->var->name, &sizes[k], 1, &e) != 1 || sizes[k] < sv->lo ||
        sizes[k] > sv->hi)
      return false;
    *weight *= (double)sizes[k];
  }
  mlc_error e;
  mlc_prim_func *g = mlc_func_specialize(a, f, sizes, &e);
  char hex[17];
  if (!g) return false;
  mlc_func_hash_hex(g, hex);
  return strcmp(hex, w->hash) == 0;
}

/* One schedule of a kernel of size vars: what a record of one tuned size
 * replays to on the kernel. */
typedef struct sized_variant {
  mlc_prim_func *sched;
  int64_t record_id, size;
  double record_sec;
  const char *shape;
} sized_variant;

static const double SLOWER_THAN_BEST = 1.5;

/* The first of the best records of workload w (f at sizes) that replays
 * to the function it measured and, on f, to a function that verifies. */
static bool variant_of(mlc_arena *a, mlc_db *db, const char *target, const mlc_prim_func *f,
                       const mlc_db_workload *w, const int64_t *sizes, sized_variant *out,
                       mlc_gkernel *k, size_t *len, mlc_error *err) {
  mlc_prim_func *g = mlc_func_specialize(a, f, sizes, err), *as_main = mlc_func_copy(a, f);
  set_name(a, as_main, "main"); /* as traces name the function they were tuned on */
  mlc_db_record *best;
  int nb = g ? mlc_db_top_k(db, w->id, target, MAX_TRIED, a, &best, err) : -1;
  if (nb < 0) return false;
  for (int i = 0; i < nb; i++) {
    mlc_error why;
    bool differs = false;
    mlc_prim_func *s = NULL;
    if (!best[i].sched_hash || !replay(a, g, w, &best[i], &differs, &why)) continue;
    /* Past the best ones that do not replay (a reduction factored under
     * a tail's predicate), a far slower record is no better a guess than
     * the default schedule of this size (add_default_variants). */
    if (best[i].mean_sec > SLOWER_THAN_BEST * best[0].mean_sec) break;
    mlc_trace *t = mlc_trace_from_json(a, best[i].trace, strlen(best[i].trace), &why);
    if (!t || !(s = mlc_tuner_replay_sized(a, as_main, t, &why))) {
      add_note(k, len, best[i].id, "(tuned at this kernel's sizes) does not replay on it", why.msg);
      continue;
    }
    *out = (sized_variant){s, best[i].id, sizes[0], best[i].mean_sec, w->shape};
    return true;
  }
  out->sched = NULL;
  return true;
}

static int by_size(const void *x, const void *y) {
  int64_t a = ((const sized_variant *)x)->size, b = ((const sized_variant *)y)->size;
  return (a > b) - (a < b);
}

enum { MAX_DISPATCH = 16 };

/* The sizes a kernel of one size var branches at when some are untuned:
 * its least, then 16 and its doublings, then its max, within its bounds
 * (a schedule serves the sizes down to the next such size: tiles made for
 * twice the rows or more run mostly in their tails); none without a
 * declared max. */
static int dispatch_sizes(const mlc_size_var *sv, int64_t *vals) {
  int64_t lo, hi;
  mlc_size_default_bounds(sv->var->dtype, &lo, &hi);
  if (sv->hi == hi) return 0;
  int n = 0;
  vals[n++] = sv->lo > 1 ? sv->lo : 1;
  for (int64_t v = 16; v < sv->hi && n < MAX_DISPATCH - 1; v *= 2)
    if (v > vals[n - 1]) vals[n++] = v;
  if (sv->hi > vals[n - 1]) vals[n++] = sv->hi;
  return n;
}

/* The sizes a kernel of one size var branches at (dispatch_sizes) that
 * have no variant among vs (nv of them, from records of the sizes it was
 * tuned at) get the default schedule of f's instance there, as an untuned
 * build at that size has (the task scheduler tunes the sizes that pay and
 * measures no others; a schedule for many rows shrunk to one, or the
 * converse, is slower than it), and one that serves the sizes above the
 * largest. Appended; returns the new count. */
static int add_default_variants(mlc_arena *a, const mlc_prim_func *f, sized_variant *vs, int nv) {
  int64_t samples[MAX_DISPATCH];
  int ns = dispatch_sizes(&f->sizes[0], samples), n = nv;
  int64_t largest = 0;
  for (int i = 0; i < ns; i++) {
    bool have = false;
    for (int j = 0; j < nv && !have; j++) have = vs[j].size == samples[i];
    if (!have)
      vs[n++] = (sized_variant){mlc_tuner_cpu_default_schedule_at(a, f, &samples[i]), 0,
                                samples[i], 0, NULL};
  }
  for (int i = 0; i < n; i++) largest = vs[i].size > largest ? vs[i].size : largest;
  if (largest < f->sizes[0].hi) /* above every size tuned or sampled (no declared max) */
    vs[n++] = (sized_variant){mlc_tuner_cpu_default_schedule(a, f), 0, f->sizes[0].hi, 0, NULL};
  return n;
}

/* Neighbouring default variants (vs sorted by size) that schedule alike
 * as one, serving up to the larger size: one copy of the code. Returns
 * the new count. */
static int merge_equal_defaults(sized_variant *vs, int nv) {
  int m = 0;
  for (int i = 0; i < nv; i++) {
    sized_variant *prev = m > 0 ? &vs[m - 1] : NULL;
    if (prev && !prev->record_id && !vs[i].record_id && mlc_func_struct_equal(prev->sched, vs[i].sched))
      prev->size = vs[i].size;
    else vs[m++] = vs[i];
  }
  return m;
}

/* "seq=16,384; default at 1,128": the sizes of the variants vs (sorted
 * by size) of a kernel of one size var, those of records first. */
static void tuned_at_list(char *buf, size_t cap, const mlc_prim_func *f, const sized_variant *vs,
                          int nv) {
  mlc_str s = {0};
  mlc_str_printf(&s, "%s=", f->sizes[0].var->name);
  for (int i = 0, k = 0; i < nv; i++)
    if (vs[i].record_id) mlc_str_printf(&s, "%s%lld", k++ ? "," : "", (long long)vs[i].size);
  for (int i = 0, k = 0; i < nv; i++)
    if (!vs[i].record_id)
      mlc_str_printf(&s, "%s%lld", k++ ? "," : "; default at ", (long long)vs[i].size);
  snprintf(buf, cap, "%s", mlc_str_cstr(&s));
  mlc_str_free(&s);
}

/* A kernel of size vars has no records of its own: it takes the records
 * of the sizes it was tuned at (workloads that are its specializations).
 * With one size var, one kernel dispatches by size: the schedule tuned at
 * each size serves the sizes down to the next branch point, the branch
 * points without a record their own default (add_default_variants);
 * otherwise the largest tuned sizes' record serves all. Each record is
 * trusted as any other (it must replay to the function it measured); its
 * trace must then replay on the kernel and verify. */
static bool choose_sized_record(mlc_arena *a, mlc_db *db, const char *target,
                                const mlc_prim_func *f, mlc_gkernel *out, mlc_error *err) {
  mlc_arena *q = mlc_arena_new();
  mlc_db_workload *ws;
  int n = mlc_db_list_workloads(db, NULL, NULL, q, &ws, err);
  if (n < 0) return mlc_arena_free(q), false;
  typedef struct { int64_t v[MLC_MAX_SIZES]; } size_row;
  size_row *sizes = MLC_NEW_ARRAY(q, size_row, n + 1);
  double *weight = MLC_NEW_ARRAY(q, double, n + 1);
  bool *match = MLC_NEW_ARRAY(q, bool, n + 1);
  sized_variant *vs = MLC_NEW_ARRAY(q, sized_variant, n + MAX_DISPATCH + 2);
  int nv = 0;
  for (int i = 0; i < n; i++) match[i] = tuned_sizes(q, f, &ws[i], sizes[i].v, &weight[i]);
  size_t len = strlen(out->note);
  for (;;) { /* the largest sizes first */
    int pick = -1;
    for (int i = 0; i < n; i++)
      if (match[i] && (pick < 0 || weight[i] > weight[pick])) pick = i;
    if (pick < 0) break;
    match[pick] = false;
    if (!variant_of(q, db, target, f, &ws[pick], sizes[pick].v, &vs[nv], out, &len, err))
      return mlc_arena_free(q), false;
    if (vs[nv].sched) nv++;
    if (nv == 1 && f->n_sizes != 1) break;
  }
  if (nv > 0) {
    sized_variant top_v = vs[0]; /* the largest tuned sizes' */
    const sized_variant *top = &top_v;
    mlc_prim_func *chosen = top->sched;
    snprintf(out->tuned_at, sizeof out->tuned_at, "%s", top->shape);
    if (f->n_sizes == 1) nv = add_default_variants(q, f, vs, nv);
    if (nv > 1) {
      qsort(vs, (size_t)nv, sizeof *vs, by_size);
      nv = merge_equal_defaults(vs, nv);
      const mlc_prim_func **scheds = MLC_NEW_ARRAY(q, const mlc_prim_func *, nv);
      int64_t *upto = MLC_NEW_ARRAY(q, int64_t, nv);
      const char **tags = MLC_NEW_ARRAY(q, const char *, nv);
      for (int i = 0; i < nv; i++) {
        scheds[i] = vs[i].sched;
        upto[i] = vs[i].size;
        tags[i] = mlc_arena_printf(q, "at%lld", (long long)vs[i].size);
      }
      mlc_error why;
      mlc_prim_func *sel = mlc_func_select_by_size(q, f, nv, scheds, upto, tags, &why);
      if (sel && mlc_verify_func(sel, &why)) {
        chosen = sel;
        tuned_at_list(out->tuned_at, sizeof out->tuned_at, f, vs, nv);
      } else {
        add_note(out, &len, 0, NULL, "the schedules of the tuned sizes do not combine; the "
                                     "largest sizes' serves every size");
      }
    }
    mlc_prim_func *c = mlc_func_copy(a, chosen);
    set_name(a, c, f->name);
    out->sched = c;
    out->record_id = top->record_id;
    out->record_sec = top->record_sec;
  }
  mlc_arena_free(q);
  return true;
}

/* Whether f takes 8-bit integers or bfloat16 (what the CPU tensor
 * intrinsics multiply). */
static bool has_narrow_param(const mlc_prim_func *f) {
  for (int i = 0; i < f->n_params; i++) {
    mlc_dtype t = f->params[i]->dtype;
    if (t == MLC_UINT8 || t == MLC_INT8 || t == MLC_BFLOAT16) return true;
  }
  return false;
}

bool mlc_graph_schedule_kernel(mlc_arena *a, mlc_db *db, const char *target,
                               const mlc_prim_func *f, bool schedule, mlc_gkernel *out,
                               mlc_error *err) {
  memset(out, 0, sizeof *out);
  out->func = f;
  int64_t wid = 0;
  int found = db && schedule ? mlc_db_find_workload(db, f, &wid, err) : 0;
  if (found < 0) return false;
  mlc_target t;
  /* Records tensorized with the target CPU's intrinsics replay only with
   * them registered, and the default schedule tiles 8-bit and bfloat16
   * products around them (registering parses their descriptions: only
   * for kernels that may use them). */
  bool cpu = mlc_target_parse(target, &t, NULL) && mlc_target_device(&t) == MLC_DEVICE_CPU;
  const char *features = cpu ? mlc_target_cpu_features(&t) : NULL;
  if (cpu && (found || has_narrow_param(f)) && !mlc_tensor_intrin_register_cpu(features, NULL, err))
    return false;
  if (found) {
    mlc_arena *q = mlc_arena_new();
    mlc_db_record *best;
    mlc_db_workload w;
    int n = mlc_db_top_k(db, wid, target, MAX_TRIED, q, &best, err);
    bool ok = n >= 0 && (n == 0 || mlc_db_get_workload(db, wid, q, &w, err));
    if (ok) choose_record(a, f, &w, n, best, out);
    mlc_tuner_library_cmp cmp;
    if (ok && mlc_tuner_library_compare(db, wid, target, &cmp, err) < 0) ok = false;
    if (ok) {
      snprintf(out->offer_library, sizeof out->offer_library, "%s", cmp.library);
      out->library_sec = cmp.library_sec;
      out->tuned_sec = cmp.tuned_sec;
    }
    mlc_arena_free(q);
    if (!ok) return mlc_error_prefix(err, "tuning database");
    if (out->sched) return true;
  }
  if (!found && db && schedule && f->n_sizes > 0 && !choose_sized_record(a, db, target, f, out, err))
    return mlc_error_prefix(err, "tuning database");
  if (out->sched) return true;
  out->sched = schedule ? mlc_tuner_cpu_default_schedule_for(a, f, features) : f;
  return true;
}

/* ---- --verify ---------------------------------------------------------------------- */

static mlc_array *seeded_args(const mlc_prim_func *f, uint64_t seed) {
  mlc_array *args = mlc_xmalloc(sizeof *args * (size_t)(f->n_params + 1));
  for (int i = 0; i < f->n_params; i++) {
    mlc_array *x = mlc_array_for_buffer(f->params[i]);
    mlc_pcg32 rng;
    mlc_pcg32_seed(&rng, seed, (uint64_t)i);
    mlc_array_fill_random(x, &rng);
    args[i] = *x;
    mlc_free(x); /* the data now belongs to args[i] */
  }
  return args;
}

static void free_args(const mlc_prim_func *f, mlc_array *args) {
  for (int i = 0; i < f->n_params; i++) mlc_free(args[i].data);
  mlc_free(args);
}

/* Every parameter of got within tolerance of want (floats: rtol 1e-3 and
 * atol 1e-4 of the largest |want|, or f's MLC_ATTR_CHECK_ATOL; integers
 * exact). */
static bool same_results(const mlc_prim_func *f, const mlc_array *got, const mlc_array *want,
                         mlc_error *err) {
  for (int i = 0; i < f->n_params; i++) {
    bool fl = mlc_dtype_is_float(want[i].dtype);
    double scale = 0, max_err = 0;
    for (int64_t j = 0; fl && j < mlc_array_numel(&want[i]); j++)
      scale = fmax(scale, fabs(mlc_array_get(&want[i], j)));
    double atol = mlc_func_check_atol(f, 1e-4);
    if (!mlc_array_allclose(&got[i], &want[i], fl ? 1e-3 : 0, fl ? atol * fmax(scale, 1) : 0,
                            &max_err))
      return mlc_error_set(err, "parameter %s differs from the unscheduled function's (max abs "
                                "error %.3g)", f->params[i]->name, max_err);
  }
  return true;
}

bool mlc_graph_check_kernel(const mlc_prim_func *f, mlc_gkernel_fn run, void *ud, uint64_t seed,
                            mlc_error *err) {
  mlc_array *got = seeded_args(f, seed), *want = seeded_args(f, seed);
  bool ok = run(ud, f, f->n_params, got, err) &&
            mlc_interp_run_n(f, f->n_params, want, err) && same_results(f, got, want, err);
  free_args(f, got);
  free_args(f, want);
  return ok;
}
