/* The pass list and pipeline, and task extraction. */
#include "graph/graph_impl.h"
#include "tuner/tuner.h"

#include <string.h>

static const mlc_gpass passes[] = {
    {"patterns", "exporters' decomposed layer norm -> layernorm, erf GELU -> gelu",
     mlc_graph_rewrite_patterns},
    {"rewrite", "pattern rewrite: multiply + add -> ewise_fma", mlc_graph_rewrite_fma},
    {"quantize", "a dense layer over dequantized uint8 activations and int8 constant weights (QDQ "
                 "models) -> qdense on the integers (int32), the zero point's share subtracted, "
                 "dequantized by the product of the scales",
     mlc_graph_quantize},
    {"fold", "evaluate ops over weights only at compile time (transposed weights)",
     mlc_graph_fold_constants},
    {"layout", "conv2d weights packed once for the NCHWc kernels ([K/k,C/c,R,S,c,k]; depthwise "
               "[C/k,1,R,S,1,k]); NCHWc values passed between them, unpack_nchwc where NCHW is read; "
               "dense weights packed [N/n,K,n]; a matmul by a constant [K,N] weight becomes a "
               "dense over it packed so",
     mlc_graph_pack_weights},
    {"fuse", "fuse matmul/dense/conv2d + elementwise chains into primitive sub-functions "
             "(reshapes first sunk below elementwise ops where the other operands allow); a "
             "transpose only a matmul reads joins its group, read in place",
     mlc_graph_fuse},
    {"append", "a concat of a model input and new rows into a model output -> append: its kernel "
               "writes the new rows only, and the input is copied in unless the caller passed "
               "the output's memory (a KV cache extended in place)",
     mlc_graph_append_in_place},
    {"lower", "map every op to a prim_func (R.call_tir, destination-passing); a reshape in main "
              "that is no output stays a view of its operand's memory (no kernel)",
     mlc_graph_lower},
    {"fuse_tir", "one prim_func per fused sub-function, intermediates internal",
     mlc_graph_fuse_tir},
    {"dce", "share identical prim_funcs; remove unused bindings, functions, prim_funcs, weights",
     mlc_graph_dce},
};

int mlc_graph_pass_count(void) { return MLC_COUNTOF(passes); }
const mlc_gpass *mlc_graph_pass_at(int i) { return &passes[i]; }

const mlc_gpass *mlc_graph_pass_find(const char *name) {
  for (int i = 0; i < MLC_COUNTOF(passes); i++)
    if (strcmp(passes[i].name, name) == 0) return &passes[i];
  return NULL;
}

/* A pass allocates in the module's arena (what it builds) and in scratch
 * arenas that are children of it, as much as the model is big: one escape
 * point on the module's arena turns running out of memory anywhere in the
 * pass into an error. The module is then half rewritten and only fit for
 * mlc_graph_free, which frees whatever the pass took. The caller's own
 * escape point is put back. */
static bool run_guarded(const mlc_gpass *p, mlc_gmodule *m, mlc_error *err) {
  jmp_buf jb, *outer = mlc_arena_oom_jump(m->arena);
  if (setjmp(jb)) {
    mlc_arena_set_oom_jump(m->arena, outer);
    return mlc_error_set(err, "pass %s: out of memory", p->name);
  }
  mlc_arena_set_oom_jump(m->arena, &jb);
  bool ok = p->run(m, err);
  mlc_arena_set_oom_jump(m->arena, outer);
  return ok;
}

bool mlc_graph_run_pipeline(mlc_gmodule *m, const char *print_after,
                            void (*show)(const mlc_gmodule *m, const char *pass, void *ud),
                            void *ud, mlc_error *err) {
  if (print_after && !mlc_graph_pass_find(print_after))
    return mlc_error_set(err, "unknown pass \"%s\"", print_after);
  mlc_graph_find_index_checks(m);
  for (int i = 0; i < MLC_COUNTOF(passes); i++) {
    if (!run_guarded(&passes[i], m, err))
      return mlc_error_prefix(err, "after pass %s", passes[i].name);
    if (show && print_after && strcmp(print_after, passes[i].name) == 0)
      show(m, passes[i].name, ud);
  }
  return true;
}

/* ---- tasks -------------------------------------------------------------------- */

int mlc_graph_extract_tasks(const mlc_gmodule *m, mlc_gtask **out) {
  const mlc_gfunc *f = mlc_graph_main(m);
  mlc_gtask *ts = mlc_xmalloc(sizeof *ts * (size_t)(f->n_bindings + 1));
  int n = 0;
  for (int i = 0; i < f->n_bindings; i++) {
    const mlc_gbinding *b = &f->bindings[i];
    if (b->kind != MLC_GCALL_TIR) continue;
    uint64_t h = mlc_func_struct_hash(b->tir);
    int k = 0;
    while (k < n && !(ts[k].hash == h && mlc_func_struct_equal(ts[k].func, b->tir))) k++;
    if (k == n) ts[n++] = (mlc_gtask){b->tir, h, 0};
    ts[k].calls++;
  }
  *out = ts;
  return n;
}

mlc_prim_func *mlc_graph_task_func(mlc_arena *a, const mlc_gtask *t) {
  mlc_prim_func *f = mlc_func_copy(a, t->func);
  f->name = "main";
  for (int k = 0; k < f->n_attrs; k++)
    if (strcmp(f->attrs[k].key, "global_symbol") == 0) f->attrs[k].s = "main";
  return f;
}

enum { ANCHOR_SIZE = 128 };

/* The sizes a kernel of size vars is tuned at: for one size var
 * mlc_size_samples', else every size at its bound (one run); *count of
 * them, each a row of f->n_sizes values. */
static int64_t *tuned_sizes(mlc_arena *a, const mlc_prim_func *f, int *count) {
  int64_t *rows = MLC_NEW_ARRAY(a, int64_t, 4 * (size_t)f->n_sizes);
  *count = f->n_sizes == 1 ? mlc_size_samples(&f->sizes[0], rows) : 0;
  if (*count == 0) {
    for (int k = 0; k < f->n_sizes; k++) rows[k] = f->sizes[k].hi;
    *count = 1;
  }
  return rows;
}

/* The work of g, a kernel at sizes v, for the ratios of a family
 * (mlc_tuner_task): its flops where it has float arithmetic, else the
 * sizes' product. */
static double work_at(const mlc_prim_func *g, int n_sizes, const int64_t *v) {
  double w = mlc_func_flops(g);
  if (w > 0) return w;
  w = 1;
  for (int k = 0; k < n_sizes; k++) w *= (double)v[k];
  return w;
}

/* "seq=16;n=8": sizes as mlc-tune --size stores them (the shape by which
 * mlc-compile finds a kernel's records, graph/replay.c). */
static const char *sizes_shape(mlc_arena *a, const mlc_prim_func *f, const int64_t *v) {
  mlc_str s = {.arena = a};
  for (int k = 0; k < f->n_sizes; k++)
    mlc_str_printf(&s, "%s%s=%lld", k ? ";" : "", f->sizes[k].var->name, (long long)v[k]);
  return mlc_str_cstr(&s);
}

int mlc_graph_tuner_tasks(mlc_arena *a, const mlc_gmodule *m, mlc_tuner_task **out) {
  mlc_gtask *gt;
  int n = mlc_graph_extract_tasks(m, &gt);
  MLC_VEC(mlc_tuner_task) ts = {0};
  for (int i = 0; i < n; i++) {
    const char *name = mlc_graph_symbol(a, m, gt[i].func);
    mlc_prim_func *f = mlc_graph_task_func(a, &gt[i]);
    if (!f->n_sizes) {
      MLC_VEC_APUSH(a, ts, ((mlc_tuner_task){name, f, gt[i].calls, 0, NULL, 0, 1, false}));
      continue;
    }
    /* A kernel of size vars is tuned as its specializations: a family
     * led by the last, at the largest sizes, and warmed up at the largest
     * up to ANCHOR_SIZE (measuring there costs less than at a large
     * bound, and says as much of where the time goes). */
    int count;
    int64_t *rows = tuned_sizes(a, f, &count);
    int first = ts.len, anchor = first;
    for (int r = 0; r < count; r++) {
      mlc_error err;
      const int64_t *v = rows + (size_t)r * (size_t)f->n_sizes;
      mlc_prim_func *g = mlc_func_specialize(a, f, v, &err);
      MLC_ASSERT(g); /* the sizes lie in the bounds, which the verifier checked */
      bool small = true;
      for (int k = 0; k < f->n_sizes; k++) small = small && v[k] <= ANCHOR_SIZE;
      if (small) anchor = ts.len;
      MLC_VEC_APUSH(a, ts, ((mlc_tuner_task){name, g, gt[i].calls, 0, sizes_shape(a, f, v),
                                             i + 1, work_at(g, f->n_sizes, v), false}));
    }
    double lead = ts.data[ts.len - 1].size_ratio;
    for (int r = first; r < ts.len; r++) ts.data[r].size_ratio /= lead;
    ts.data[anchor].anchor = true;
  }
  mlc_free(gt);
  *out = ts.data;
  return ts.len;
}
