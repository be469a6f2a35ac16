/* ONNX converters: data movement composed of graph ops (Tile, Expand, DepthToSpace, Trilu, CumSum).
 * The op table is onnx_ops.c. */
#include "frontend/onnx_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- data movement composed of graph ops -------------------------------------- */

/* x along axis ax gathered at indices idx[0..c) (in range). */
static mlc_gvar *gather_at(onode *n, const char *sfx, mlc_gvar *x, int ax, int64_t c,
                           const int64_t *idx) {
  mlc_gtype t = {MLC_FLOAT32, 1, {c}};
  mlc_gvar *ic = onnx_new_const(n, mlc_arena_printf(n->arena, "%s_indices", sfx), &t);
  for (int64_t k = 0; k < c; k++) ((float *)ic->data)[k] = (float)idx[k];
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_GATHER, &a);
  a.axis = ax;
  mlc_gvar *args[2] = {x, ic};
  return onnx_emit(n, sfx, MLC_GOP_GATHER, &a, 2, args);
}

/* x repeated reps[d] times along each axis d (Tile): a gather per
 * repeated axis with indices 0..e-1, r times over; the last step (or a
 * reshape when nothing repeats) is the output. */
static mlc_gvar *tile_axes(onode *n, mlc_gvar *x, const int64_t *reps) {
  int nd = x->type.ndim, last = -1;
  for (int d = 0; d < nd; d++)
    if (reps[d] != 1) last = d;
  if (last < 0) return onnx_reshape(n, NULL, x, nd, x->type.shape);
  for (int d = 0; d <= last && x; d++) {
    if (reps[d] == 1) continue;
    int64_t e = x->type.shape[d], most = INT64_C(1) << 24;
    if (e < 1 || reps[d] > most / e) { /* checked before multiplying: no overflow */
      onnx_fail(n, "axis %d would have more than %lld elements", d, (long long)most);
      return NULL;
    }
    int64_t c = e * reps[d];
    int64_t *idx = mlc_arena_alloc(n->arena, sizeof(int64_t) * (size_t)c);
    for (int64_t k = 0; k < c; k++) idx[k] = k % e;
    x = gather_at(n, d == last ? NULL : mlc_arena_printf(n->arena, "tile%d", d), x, d, c, idx);
  }
  return x;
}

/* Tile (repeats a constant input since opset 6). */
bool onnx_cv_tile(onode *n) {
  if (!onnx_no_attrs(n)) return false;
  if (n->opset < 6) return onnx_fail(n, "Tile before opset 6 (tiles and axis inputs) is not supported");
  int64_t c;
  const int64_t *r = onnx_ints(n, 1, &c);
  if (!r) return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  int nd = onnx_in_rank(n, 0);
  if (nd == 0) return onnx_fail(n, "tiling a scalar is not supported");
  if (c != nd) return onnx_fail(n, "repeats has %lld entries for rank %d", (long long)c, nd);
  for (int d = 0; d < nd; d++)
    if (r[d] < 1) return onnx_fail(n, "repeats %lld along axis %d (must be >= 1)", (long long)r[d], d);
  return onnx_set_var(n, 0, tile_axes(n, x, r));
}

/* Expand: x broadcast (numpy, both ways) with the constant shape input:
 * x onnx_reshaped to the result's rank, then each unit axis that grows
 * gathered at index 0 that many times. */
bool onnx_cv_expand(onode *n) {
  if (!onnx_no_attrs(n)) return false;
  int64_t c;
  const int64_t *s = onnx_ints(n, 1, &c);
  if (!s) return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  if (c > MLC_GRAPH_MAX_DIMS) return onnx_fail(n, "more than %d dimensions", MLC_GRAPH_MAX_DIMS);
  oval sv = {.ndim = (int)c, .is_int = true};
  for (int d = 0; d < c; d++) {
    if (s[d] < 1) return onnx_fail(n, "shape entry %lld (must be >= 1)", (long long)s[d]);
    sv.shape[d] = s[d];
  }
  int nd;
  int64_t out[MLC_GRAPH_MAX_DIMS], xs[MLC_GRAPH_MAX_DIMS], reps[MLC_GRAPH_MAX_DIMS];
  if (!onnx_broadcast_shape(n, n->in[0], &sv, &nd, out)) return false;
  if (nd == 0) return onnx_fail(n, "a scalar result is not supported");
  int xr = onnx_in_rank(n, 0);
  for (int d = 0; d < nd; d++) {
    xs[d] = d < nd - xr ? 1 : n->in[0]->shape[d - (nd - xr)];
    reps[d] = xs[d] == out[d] ? 1 : out[d];
  }
  mlc_gvar *xr_var = onnx_reshape(n, "ranked", x, nd, xs);
  if (!xr_var) return false;
  return onnx_set_var(n, 0, tile_axes(n, xr_var, reps));
}

/* DepthToSpace (DCR or CRD) and SpaceToDepth over NCHW: a reshape to 6-D,
 * a onnx_transpose and a reshape, as ONNX defines them. */
static bool depth_space(onode *n, bool to_space) {
  int64_t b;
  const char *mode = "DCR";
  if (!onnx_check_attrs(n, to_space ? " blocksize mode " : " blocksize ") ||
      !onnx_attr_int(n, "blocksize", 0, &b) ||
      (to_space && !onnx_attr_string(n, "mode", "DCR", &mode)))
    return false;
  bool crd = strcmp(mode, "CRD") == 0;
  if (!crd && strcmp(mode, "DCR") != 0) return onnx_fail(n, "mode \"%s\" is not supported", mode);
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  if (onnx_in_rank(n, 0) != 4) return onnx_fail(n, "the input must be 4-D (N, C, H, W)");
  if (b < 1 || b > 4096) return onnx_fail(n, "blocksize %lld is out of range", (long long)b);
  const int64_t *s = x->type.shape;
  int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  int64_t six[6], out[4];
  int perm[6];
  if (to_space) {
    if (C % (b * b)) return onnx_fail(n, "C %lld is not a multiple of blocksize^2", (long long)C);
    int64_t c = C / (b * b);
    int64_t dcr[6] = {N, b, b, c, H, W}, crds[6] = {N, c, b, b, H, W};
    int pd[6] = {0, 3, 4, 1, 5, 2}, pc[6] = {0, 1, 4, 2, 5, 3};
    memcpy(six, crd ? crds : dcr, sizeof six);
    memcpy(perm, crd ? pc : pd, sizeof perm);
    int64_t o[4] = {N, c, H * b, W * b};
    memcpy(out, o, sizeof out);
  } else {
    if (H % b || W % b) return onnx_fail(n, "H and W must be multiples of blocksize");
    int64_t s6[6] = {N, C, H / b, b, W / b, b}, o[4] = {N, C * b * b, H / b, W / b};
    int p6[6] = {0, 3, 5, 1, 2, 4};
    memcpy(six, s6, sizeof six);
    memcpy(perm, p6, sizeof perm);
    memcpy(out, o, sizeof out);
  }
  mlc_gvar *x6 = onnx_reshape(n, "split", x, 6, six);
  mlc_gvar *t = x6 ? onnx_transpose(n, "moved", x6, 6, perm) : NULL;
  return onnx_set_var(n, 0, t ? onnx_reshape(n, NULL, t, 4, out) : NULL);
}


/* Trilu: upper (1) picks triu, the optional constant input k the diagonal. */
bool onnx_cv_trilu(onode *n) {
  int64_t upper, k = 0;
  if (!onnx_check_attrs(n, " upper ") || !onnx_attr_int(n, "upper", 1, &upper)) return false;
  if (onnx_in_val(n, 1)) {
    int64_t c;
    const int64_t *v = onnx_ints(n, 1, &c);
    if (!v) return false;
    if (c != 1) return onnx_fail(n, "k must be a single value");
    k = onnx_clamp40(v[0]);
  }
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  if (onnx_in_rank(n, 0) < 2) return onnx_fail(n, "the input must have at least 2 dimensions");
  mlc_gop op = upper ? MLC_GOP_TRIU : MLC_GOP_TRIL;
  mlc_gattrs a;
  mlc_gattrs_init(op, &a);
  a.k = k;
  return onnx_set_var(n, 0, onnx_emit(n, NULL, op, &a, 1, &x));
}

/* CumSum along the constant axis input, exclusive and reverse. */
bool onnx_cv_cumsum(onode *n) {
  int64_t exclusive, reverse, c;
  if (!onnx_check_attrs(n, " exclusive reverse ") || !onnx_attr_int(n, "exclusive", 0, &exclusive) ||
      !onnx_attr_int(n, "reverse", 0, &reverse))
    return false;
  const int64_t *axis = onnx_ints(n, 1, &c);
  if (!axis) return false;
  if (c != 1) return onnx_fail(n, "axis must be a single value");
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  if (onnx_in_rank(n, 0) == 0) return onnx_fail(n, "the input is a scalar (no axis)");
  int ax = 0;
  if (!onnx_norm_axis(n, axis[0], onnx_in_rank(n, 0), &ax)) return false;
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_CUMSUM, &a);
  a.axis = ax;
  a.exclusive = exclusive != 0;
  a.reverse = reverse != 0;
  return onnx_set_var(n, 0, onnx_emit(n, NULL, MLC_GOP_CUMSUM, &a, 1, &x));
}

/* The op table's row gives the graph op (n->op->gop). */
bool onnx_cv_depth_space(onode *n) { return depth_space(n, n->op->arg != 0); }
