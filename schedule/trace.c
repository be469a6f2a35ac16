/* Traces: recording, copying, canonical JSON both ways, and the Python-like
 * printout of the notes. */
#include "schedule/sched_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- kind tables (inst_kinds.def) --------------------------------------- */

/* How many levels of nesting a kind can add (inst_kinds.def's deepens). */
enum { DEEPENS_NONE, DEEPENS_OUTPUTS, DEEPENS_ANY };

static const struct {
  const char *name, *py;
  bool is_sampling;
  int min_inputs;
  const char *attrs;
  int deepens;
} inst_info[] = {
#define MLC_INST(id, name, py, is_sampling, min_inputs, attrs, deepens) \
  {name, py, is_sampling, min_inputs, attrs, DEEPENS_##deepens},
#include "schedule/inst_kinds.def"
};
_Static_assert(sizeof inst_info / sizeof inst_info[0] == MLC_INST_KIND_COUNT, "inst table");
_Static_assert(MLC_INST_KIND_COUNT == 31, "inst_kinds.def changed: update the tables");

const char *mlc_inst_kind_name(mlc_inst_kind k) { return inst_info[k].name; }
const char *mlc_inst_kind_method(mlc_inst_kind k) { return inst_info[k].py; }
bool mlc_inst_kind_is_sampling(mlc_inst_kind k) { return inst_info[k].is_sampling; }

bool mlc_inst_kind_from_name(const char *name, mlc_inst_kind *out) {
  for (int i = 0; i < MLC_INST_KIND_COUNT; i++)
    if (strcmp(name, inst_info[i].name) == 0) {
      *out = (mlc_inst_kind)i;
      return true;
    }
  return false;
}

/* The i-th attribute key of a kind into buf; false past the last. */
static bool attr_key_at(mlc_inst_kind k, int i, char *buf, size_t n) {
  const char *p = inst_info[k].attrs;
  for (; i > 0 && *p; i--) {
    p = strchr(p, ',');
    if (!p) return false;
    p++;
  }
  if (!*p) return false;
  size_t len = strcspn(p, ",");
  if (len >= n) len = n - 1;
  memcpy(buf, p, len);
  buf[len] = 0;
  return true;
}

/* ---- recording and copying --------------------------------------------------- */

mlc_attr sched_attr_bool(const char *key, bool v) {
  return (mlc_attr){.key = key, .kind = MLC_ATTR_BOOL, .i = v};
}
mlc_attr sched_attr_int(const char *key, int64_t v) {
  return (mlc_attr){.key = key, .kind = MLC_ATTR_INT, .i = v};
}
mlc_attr sched_attr_str(const char *key, const char *v) {
  return (mlc_attr){.key = key, .kind = MLC_ATTR_STR, .s = v};
}

const mlc_attr *sched_attr_find(const mlc_inst *in, const char *key) {
  for (int i = 0; i < in->n_attrs; i++)
    if (strcmp(in->attrs[i].key, key) == 0) return &in->attrs[i];
  return NULL;
}

/* n elements of size sz (not zeroed first: the copy writes them all);
 * never NULL, so empty arrays need no special case. */
static void *dup_array(mlc_arena *a, const void *p, int n, size_t sz) {
  void *d = mlc_arena_alloc_uninit(a, sz * (size_t)n + 1);
  if (n > 0) memcpy(d, p, sz * (size_t)n);
  return d;
}

/* keys_static: src's attribute keys outlive dst (sched_record's literals)
 * and are shared, not copied. */
static void copy_inst(mlc_arena *a, mlc_inst *dst, const mlc_inst *src, bool keys_static) {
  *dst = *src;
  dst->inputs = dup_array(a, src->inputs, src->n_inputs, sizeof(mlc_operand));
  for (int i = 0; i < src->n_inputs; i++) {
    if (src->inputs[i].kind == MLC_OPERAND_STR)
      dst->inputs[i].s = mlc_arena_strdup(a, src->inputs[i].s);
    if (src->inputs[i].kind == MLC_OPERAND_ANN) {
      mlc_ann *v = MLC_NEW(a, mlc_ann);
      *v = mlc_ann_dup(a, src->inputs[i].ann);
      dst->inputs[i].ann = v;
    }
  }
  dst->attrs = dup_array(a, src->attrs, src->n_attrs, sizeof(mlc_attr));
  for (int i = 0; i < src->n_attrs; i++) {
    mlc_attr *t = &dst->attrs[i];
    if (!keys_static) t->key = mlc_arena_strdup(a, t->key);
    if (t->kind == MLC_ATTR_STR) t->s = mlc_arena_strdup(a, t->s);
    if (t->kind == MLC_ATTR_INTS)
      t->ints = dup_array(a, t->ints, t->n, sizeof(int64_t));
    if (t->kind == MLC_ATTR_FLOATS)
      t->floats = dup_array(a, t->floats, t->n, sizeof(double));
  }
  dst->outputs = dup_array(a, src->outputs, src->n_outputs, sizeof(mlc_rv));
}

mlc_inst *sched_record(mlc_sched *s, mlc_inst_kind kind, int n_in, const mlc_operand *in,
                       int n_attrs, const mlc_attr *attrs, int n_out, const mlc_rv *out) {
  mlc_inst tmp = {kind, n_in, (mlc_operand *)in, n_attrs, (mlc_attr *)attrs, n_out,
                  (mlc_rv *)out, {0}};
  mlc_inst copy;
  copy_inst(s->arena, &copy, &tmp, true);
  /* the height stays a bound where the primitive's growth is known */
  int d = inst_info[kind].deepens;
  s->height = !s->height || d == DEEPENS_ANY ? 0 : s->height + (d == DEEPENS_OUTPUTS ? n_out - 1 : 0);
  s->located = NULL;
  MLC_VEC_APUSH(s->arena, s->trace.insts, copy);
  return &s->trace.insts.data[s->trace.insts.len - 1];
}

void sched_trace_copy_into(mlc_arena *a, mlc_trace *dst, const mlc_trace *src) {
  memset(dst, 0, sizeof *dst);
  int n = src->insts.len, nk = src->rv_kinds.len;
  dst->insts.data = MLC_NEW_ARRAY(a, mlc_inst, n + 1);
  dst->insts.len = dst->insts.cap = n;
  for (int i = 0; i < n; i++) copy_inst(a, &dst->insts.data[i], &src->insts.data[i], false);
  dst->rv_kinds.data = dup_array(a, src->rv_kinds.data, nk, sizeof *src->rv_kinds.data);
  dst->rv_kinds.len = dst->rv_kinds.cap = nk;
}

mlc_trace *mlc_trace_copy(mlc_arena *a, const mlc_trace *t) {
  mlc_trace *c = MLC_NEW(a, mlc_trace);
  sched_trace_copy_into(a, c, t);
  return c;
}

static char rv_letter(mlc_rv_kind k) {
  switch (k) {
  case MLC_RV_BLOCK: return 'b';
  case MLC_RV_LOOP: return 'l';
  case MLC_RV_VALUE: return 'v';
  }
  mlc_unreachable();
}

/* Without snprintf: primitives name their handles in every message they
 * prepare, tens of thousands of times a search round. */
void mlc_trace_rv_name(const mlc_trace *t, mlc_rv rv, char buf[16]) {
  MLC_ASSERT(rv >= 0 && rv < t->rv_kinds.len);
  char digits[12];
  int n = 0;
  for (unsigned v = (unsigned)rv; n == 0 || v > 0; v /= 10) digits[n++] = (char)('0' + v % 10);
  buf[0] = rv_letter(t->rv_kinds.data[rv]);
  for (int i = 0; i < n; i++) buf[1 + i] = digits[n - 1 - i];
  buf[1 + n] = '\0';
}

/* ---- JSON writer ------------------------------------------------------------- */

/* Floats keep a fraction or exponent so that they read back as floats. */
static void put_float_text(mlc_str *out, double v, bool python) {
  size_t start = out->len;
  if (python) mlc_str_put_double(out, v);
  else mlc_json_write_number(out, v);
  const char *t = out->data + start;
  if (isfinite(v) && !strpbrk(t, ".eEn")) mlc_str_puts(out, ".0");
}

/* A string literal where TVM translates inputs (instruction inputs and the
 * lists among them) is quoted inside the JSON string, as TVM writes it, so
 * that it cannot be taken for a handle name. Between the quotes the string
 * is escaped as a C literal (TVM's StrEscape: \" \\ \t \r \n, any other
 * byte outside ' '..'~' as \xHH), so that a quote inside the value cannot
 * end the literal and the reader gets back the bytes written; JSON escaping
 * then applies to the whole. */
static void json_quoted(mlc_str *out, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  mlc_str q = {0};
  mlc_str_putc(&q, '"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    unsigned char c = *p;
    const char *esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\t' ? "\\t"
                    : c == '\r' ? "\\r" : c == '\n' ? "\\n" : NULL;
    if (esc) mlc_str_puts(&q, esc);
    else if (c >= ' ' && c <= '~') mlc_str_putc(&q, (char)c);
    else mlc_str_printf(&q, "\\x%c%c", hex[c >> 4], hex[c & 15]);
  }
  mlc_str_putc(&q, '"');
  mlc_json_write_string(out, mlc_str_cstr(&q));
  mlc_str_free(&q);
}

/* An annotation value. TVM translates lists element by element (strings
 * quoted) but stores a dict as it is (strings plain), at any depth. */
static void json_ann(mlc_str *out, const mlc_ann *v, bool quoted) {
  switch (v->kind) {
  case MLC_ANN_INT: mlc_str_put_i64(out, v->i); return;
  case MLC_ANN_BOOL: mlc_str_puts(out, v->i ? "true" : "false"); return;
  case MLC_ANN_FLOAT: put_float_text(out, v->f, false); return;
  case MLC_ANN_STRING:
    if (quoted) json_quoted(out, v->s);
    else mlc_json_write_string(out, v->s);
    return;
  case MLC_ANN_LIST:
    mlc_str_putc(out, '[');
    for (int i = 0; i < v->n; i++) {
      if (i) mlc_str_putc(out, ',');
      json_ann(out, &v->items[i], quoted);
    }
    mlc_str_putc(out, ']');
    return;
  case MLC_ANN_DICT:
    mlc_str_putc(out, '{');
    for (int i = 0; i < v->n; i++) {
      if (i) mlc_str_putc(out, ',');
      mlc_json_write_string(out, v->items[i].key);
      mlc_str_putc(out, ':');
      json_ann(out, &v->items[i], false);
    }
    mlc_str_putc(out, '}');
    return;
  }
  mlc_unreachable();
}

/* A handle's name as a JSON string (a letter and digits: nothing to escape). */
static void json_rv(mlc_str *out, const mlc_trace *t, mlc_rv rv) {
  MLC_ASSERT(rv >= 0 && rv < t->rv_kinds.len);
  char head[3] = {'"', rv_letter(t->rv_kinds.data[rv]), 0};
  mlc_str_putn(out, head, 2);
  mlc_str_put_i64(out, rv);
  mlc_str_putc(out, '"');
}

static void json_operand(mlc_str *out, const mlc_trace *t, const mlc_operand *op) {
  switch (op->kind) {
  case MLC_OPERAND_NONE: mlc_str_puts(out, "null"); return;
  case MLC_OPERAND_RV: json_rv(out, t, op->rv); return;
  case MLC_OPERAND_INT: mlc_str_put_i64(out, op->i); return;
  case MLC_OPERAND_FLOAT: put_float_text(out, op->f, false); return;
  case MLC_OPERAND_STR: json_quoted(out, op->s); return;
  case MLC_OPERAND_ANN: json_ann(out, op->ann, true); return;
  }
  mlc_unreachable();
}

static void json_attr_value(mlc_str *out, const mlc_attr *at) {
  switch (at->kind) {
  case MLC_ATTR_BOOL: mlc_str_puts(out, at->i ? "true" : "false"); return;
  case MLC_ATTR_INT: mlc_str_put_i64(out, at->i); return;
  case MLC_ATTR_FLOAT: put_float_text(out, at->f, false); return;
  case MLC_ATTR_STR: mlc_json_write_string(out, at->s); return;
  case MLC_ATTR_INTS:
    mlc_str_putc(out, '[');
    for (int i = 0; i < at->n; i++) {
      if (i) mlc_str_putc(out, ',');
      mlc_str_put_i64(out, at->ints[i]);
    }
    mlc_str_putc(out, ']');
    return;
  case MLC_ATTR_FLOATS:
    mlc_str_putc(out, '[');
    for (int i = 0; i < at->n; i++) {
      if (i) mlc_str_putc(out, ',');
      put_float_text(out, at->floats[i], false);
    }
    mlc_str_putc(out, ']');
    return;
  }
  mlc_unreachable();
}

static void json_decision(mlc_str *out, const mlc_inst *in) {
  if (in->kind == MLC_INST_SAMPLE_PERFECT_TILE) {
    mlc_str_putc(out, '[');
    for (int i = 0; i < in->decision.n; i++) {
      if (i) mlc_str_putc(out, ',');
      mlc_str_put_i64(out, in->decision.v[i]);
    }
    mlc_str_putc(out, ']');
  } else {
    mlc_str_put_i64(out, in->decision.v[0]);
  }
}

void mlc_trace_to_json(mlc_str *out, const mlc_trace *t) {
  mlc_str_puts(out, "{\"insts\":[");
  for (int i = 0; i < t->insts.len; i++) {
    const mlc_inst *in = &t->insts.data[i];
    mlc_str_puts(out, i ? ",[" : "[");
    mlc_json_write_string(out, mlc_inst_kind_name(in->kind));
    mlc_str_puts(out, ",[");
    for (int j = 0; j < in->n_inputs; j++) {
      if (j) mlc_str_putc(out, ',');
      json_operand(out, t, &in->inputs[j]);
    }
    mlc_str_puts(out, "],{");
    for (int j = 0; j < in->n_attrs; j++) {
      if (j) mlc_str_putc(out, ',');
      mlc_json_write_string(out, in->attrs[j].key);
      mlc_str_putc(out, ':');
      json_attr_value(out, &in->attrs[j]);
    }
    mlc_str_puts(out, "},[");
    for (int j = 0; j < in->n_outputs; j++) {
      if (j) mlc_str_putc(out, ',');
      json_rv(out, t, in->outputs[j]);
    }
    mlc_str_puts(out, "]]");
  }
  mlc_str_puts(out, "],\"decisions\":{");
  bool first = true;
  for (int i = 0; i < t->insts.len; i++) {
    const mlc_inst *in = &t->insts.data[i];
    if (!mlc_inst_kind_is_sampling(in->kind) || in->decision.n == 0) continue;
    mlc_str_puts(out, first ? "\"" : ",\"");
    mlc_str_put_i64(out, i);
    mlc_str_puts(out, "\":");
    json_decision(out, in);
    first = false;
  }
  mlc_str_puts(out, "},\"version\":1}");
}

uint64_t mlc_trace_hash(const mlc_trace *t) {
  mlc_str s = {0};
  mlc_str_reserve(&s, 64 * (size_t)t->insts.len + 64); /* about the text's size: no regrowth */
  mlc_trace_to_json(&s, t);
  uint64_t h = mlc_hash_str(mlc_str_cstr(&s), 0);
  mlc_str_free(&s);
  return h;
}

/* ---- JSON reader -------------------------------------------------------------- */

typedef struct reader {
  mlc_arena *a;
  mlc_trace *t;
  mlc_error *err;
  MLC_VEC(const char *) names; /* handle names, indexed by trace rv */
  /* names as a hash table (open addressing): rv + 1, 0 empty; a scan per
   * lookup made reading a trace of n instructions O(n^2) */
  int *slots;
  int cap;
} reader;

static int name_slot(const reader *r, const char *name) {
  int i = (int)(mlc_hash_str(name, 0) & (uint64_t)(r->cap - 1));
  while (r->slots[i] && strcmp(r->names.data[r->slots[i] - 1], name) != 0)
    i = (i + 1) & (r->cap - 1);
  return i;
}

static mlc_rv lookup_name(const reader *r, const char *name) {
  return r->cap ? r->slots[name_slot(r, name)] - 1 : -1;
}

/* Appends a name not yet defined (the table stays at most half full). */
static void add_name(reader *r, const char *name) {
  MLC_VEC_APUSH(r->a, r->names, name);
  if (2 * r->names.len > r->cap) {
    r->cap = r->cap ? 2 * r->cap : 64;
    r->slots = MLC_NEW_ARRAY(r->a, int, r->cap);
    memset(r->slots, 0, sizeof(int) * (size_t)r->cap);
    for (int i = 0; i < r->names.len - 1; i++) r->slots[name_slot(r, r->names.data[i])] = i + 1;
  }
  r->slots[name_slot(r, name)] = r->names.len;
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* The byte an escape after a backslash stands for; *len gets the escape's
 * length after the backslash. -1 for an escape json_quoted does not write. */
static int unescape_one(const char *p, int *len) {
  *len = 1;
  switch (*p) {
  case '"': return '"';
  case '\\': return '\\';
  case 't': return '\t';
  case 'r': return '\r';
  case 'n': return '\n';
  case 'x': {
    int hi = hex_digit(p[1]), lo = hi < 0 ? -1 : hex_digit(p[2]);
    *len = 3;
    return lo < 0 || (hi | lo) == 0 ? -1 : hi * 16 + lo;
  }
  }
  return -1;
}

/* The value of a quoted string literal as json_quoted writes it
 * ("\"x\"" holds x); a quote inside without a backslash stands for itself.
 * *out is NULL if s is not quoted; false (with err set) for a bad escape. */
static bool unquote(reader *r, int idx, int j, const char *s, const char **out) {
  size_t len = strlen(s);
  *out = NULL;
  if (len < 2 || s[0] != '"' || s[len - 1] != '"') return true;
  char *v = mlc_arena_alloc(r->a, len);
  size_t n = 0;
  for (size_t i = 1; i < len - 1; i++) {
    if (s[i] != '\\') {
      v[n++] = s[i];
      continue;
    }
    int k, c = i + 1 < len - 1 ? unescape_one(s + i + 1, &k) : -1;
    if (c < 0 || i + k >= len - 1)
      return mlc_error_set(r->err,
                           "trace: insts[%d]: input %d: bad escape at byte %zu of the string "
                           "literal %s (expected \\\" \\\\ \\t \\r \\n or \\xHH, not NUL)",
                           idx, j, i, s);
    v[n++] = (char)c;
    i += (size_t)k;
  }
  v[n] = 0;
  *out = v;
  return true;
}

/* An annotation value read back as json_ann wrote it. */
static bool read_ann(reader *r, int idx, int j, const mlc_json *v, bool quoted, mlc_ann *out,
                     int depth) {
  memset(out, 0, sizeof *out);
  if (depth > 64)
    return mlc_error_set(r->err, "trace: insts[%d]: input %d: value nested too deeply", idx, j);
  switch (v->kind) {
  case MLC_JSON_BOOL:
    out->kind = MLC_ANN_BOOL;
    out->i = v->boolean;
    return true;
  case MLC_JSON_NUMBER:
    if (v->is_integer) out->kind = MLC_ANN_INT, out->i = v->integer;
    else out->kind = MLC_ANN_FLOAT, out->f = v->number;
    return true;
  case MLC_JSON_STRING:
    out->kind = MLC_ANN_STRING;
    out->s = v->str;
    if (quoted && !unquote(r, idx, j, v->str, &out->s)) return false;
    if (!out->s)
      return mlc_error_set(r->err,
                           "trace: insts[%d]: input %d: a string in a list must be a quoted "
                           "literal (\"\\\"%s\\\"\"), not a handle name",
                           idx, j, v->str);
    return true;
  case MLC_JSON_ARRAY:
  case MLC_JSON_OBJECT: {
    bool dict = v->kind == MLC_JSON_OBJECT;
    out->kind = dict ? MLC_ANN_DICT : MLC_ANN_LIST;
    out->n = v->len;
    out->items = MLC_NEW_ARRAY(r->a, mlc_ann, v->len + 1);
    for (int i = 0; i < v->len; i++) {
      if (!read_ann(r, idx, j, v->items[i], quoted && !dict, &out->items[i], depth + 1))
        return false;
      if (dict) out->items[i].key = v->keys[i];
      for (int k = 0; dict && k < i; k++)
        if (strcmp(v->keys[k], v->keys[i]) == 0)
          return mlc_error_set(r->err, "trace: insts[%d]: input %d: key \"%s\" appears twice",
                               idx, j, v->keys[i]);
    }
    return true;
  }
  case MLC_JSON_NULL: break;
  }
  return mlc_error_set(r->err, "trace: insts[%d]: input %d: null inside a value", idx, j);
}

static bool read_operand(reader *r, int idx, int j, const mlc_json *v, mlc_operand *op) {
  switch (v->kind) {
  case MLC_JSON_NULL: *op = MLC_OP_NONE; return true;
  case MLC_JSON_NUMBER:
    *op = v->is_integer ? MLC_OP_INT(v->integer) : MLC_OP_FLOAT(v->number);
    return true;
  case MLC_JSON_STRING: {
    const char *lit;
    if (!unquote(r, idx, j, v->str, &lit)) return false;
    if (lit) {
      *op = MLC_OP_STR(lit);
      return true;
    }
    mlc_rv rv = lookup_name(r, v->str);
    if (rv < 0)
      return mlc_error_set(r->err, "trace: insts[%d]: input %d: handle \"%s\" is not defined before",
                           idx, j, v->str);
    *op = MLC_OP_RV(rv);
    return true;
  }
  case MLC_JSON_BOOL:
  case MLC_JSON_ARRAY:
  case MLC_JSON_OBJECT: {
    mlc_ann *a = MLC_NEW(r->a, mlc_ann);
    if (!read_ann(r, idx, j, v, true, a, 0)) return false;
    *op = MLC_OP_ANN(a);
    return true;
  }
  }
  return mlc_error_set(r->err,
                       "trace: insts[%d]: input %d: expected a handle name, a number, a quoted "
                       "string, a bool, a list, a dict or null",
                       idx, j);
}

static bool read_number_list(reader *r, int idx, const char *key, const mlc_json *v,
                             mlc_attr *at) {
  bool all_int = true;
  for (int i = 0; i < v->len; i++) {
    if (v->items[i]->kind != MLC_JSON_NUMBER)
      return mlc_error_set(r->err, "trace: insts[%d]: attr \"%s\": expected a list of numbers",
                           idx, key);
    all_int = all_int && v->items[i]->is_integer;
  }
  at->n = v->len;
  /* probs are floats even when written as integers */
  if (all_int && strcmp(key, "probs") != 0) {
    at->kind = MLC_ATTR_INTS;
    at->ints = MLC_NEW_ARRAY(r->a, int64_t, v->len + 1);
    for (int i = 0; i < v->len; i++) at->ints[i] = v->items[i]->integer;
  } else {
    at->kind = MLC_ATTR_FLOATS;
    at->floats = MLC_NEW_ARRAY(r->a, double, v->len + 1);
    for (int i = 0; i < v->len; i++) at->floats[i] = v->items[i]->number;
  }
  return true;
}

static bool read_attr(reader *r, int idx, const char *key, const mlc_json *v, mlc_attr *at) {
  at->key = mlc_arena_strdup(r->a, key);
  switch (v->kind) {
  case MLC_JSON_BOOL:
    at->kind = MLC_ATTR_BOOL;
    at->i = v->boolean;
    return true;
  case MLC_JSON_NUMBER:
    if (v->is_integer) {
      at->kind = MLC_ATTR_INT;
      at->i = v->integer;
    } else {
      at->kind = MLC_ATTR_FLOAT;
      at->f = v->number;
    }
    return true;
  case MLC_JSON_STRING:
    at->kind = MLC_ATTR_STR;
    at->s = v->str;
    return true;
  case MLC_JSON_ARRAY: return read_number_list(r, idx, key, v, at);
  case MLC_JSON_NULL:
  case MLC_JSON_OBJECT: break;
  }
  return mlc_error_set(r->err, "trace: insts[%d]: attr \"%s\": unexpected value", idx, key);
}

/* Attributes in the kind's canonical order; each required, no others. */
static bool read_attrs(reader *r, int idx, const mlc_json *obj, mlc_inst *in) {
  if (obj->kind != MLC_JSON_OBJECT)
    return mlc_error_set(r->err, "trace: insts[%d]: attrs must be an object", idx);
  char key[64];
  int n = 0;
  while (attr_key_at(in->kind, n, key, sizeof key)) n++;
  in->n_attrs = n;
  in->attrs = MLC_NEW_ARRAY(r->a, mlc_attr, n + 1);
  for (int i = 0; i < n; i++) {
    attr_key_at(in->kind, i, key, sizeof key);
    const mlc_json *v = mlc_json_get(obj, key);
    if (!v)
      return mlc_error_set(r->err, "trace: insts[%d] (%s): missing attr \"%s\"", idx,
                           mlc_inst_kind_name(in->kind), key);
    if (!read_attr(r, idx, key, v, &in->attrs[i])) return false;
  }
  for (int i = 0; i < obj->len; i++)
    if (!sched_attr_find(in, obj->keys[i]))
      return mlc_error_set(r->err, "trace: insts[%d] (%s): unknown attr \"%s\"", idx,
                           mlc_inst_kind_name(in->kind), obj->keys[i]);
  return true;
}

static bool read_outputs(reader *r, int idx, const mlc_json *arr, mlc_inst *in) {
  if (arr->kind != MLC_JSON_ARRAY)
    return mlc_error_set(r->err, "trace: insts[%d]: outputs must be an array", idx);
  in->n_outputs = arr->len;
  in->outputs = MLC_NEW_ARRAY(r->a, mlc_rv, arr->len + 1);
  for (int j = 0; j < arr->len; j++) {
    const mlc_json *v = arr->items[j];
    if (v->kind != MLC_JSON_STRING)
      return mlc_error_set(r->err, "trace: insts[%d]: output %d must be a handle name", idx, j);
    mlc_rv_kind k;
    switch (v->str[0]) {
    case 'b': k = MLC_RV_BLOCK; break;
    case 'l': k = MLC_RV_LOOP; break;
    case 'v': k = MLC_RV_VALUE; break;
    default:
      return mlc_error_set(r->err,
                           "trace: insts[%d]: output \"%s\": a handle name starts with b, l or v",
                           idx, v->str);
    }
    if (lookup_name(r, v->str) >= 0)
      return mlc_error_set(r->err, "trace: insts[%d]: output \"%s\" is defined twice", idx, v->str);
    add_name(r, v->str);
    MLC_VEC_APUSH(r->a, r->t->rv_kinds, k);
    in->outputs[j] = r->names.len - 1;
  }
  return true;
}

static bool read_inst(reader *r, int idx, const mlc_json *v) {
  if (v->kind != MLC_JSON_ARRAY || v->len != 4)
    return mlc_error_set(r->err, "trace: insts[%d]: expected [kind, inputs, attrs, outputs]", idx);
  mlc_inst in = {0};
  if (v->items[0]->kind != MLC_JSON_STRING)
    return mlc_error_set(r->err, "trace: insts[%d]: kind must be a string", idx);
  if (!mlc_inst_kind_from_name(v->items[0]->str, &in.kind))
    return mlc_error_set(r->err, "trace: insts[%d]: unknown instruction kind \"%s\"", idx,
                         v->items[0]->str);
  const mlc_json *ins = v->items[1];
  if (ins->kind != MLC_JSON_ARRAY)
    return mlc_error_set(r->err, "trace: insts[%d]: inputs must be an array", idx);
  if (ins->len < inst_info[in.kind].min_inputs)
    return mlc_error_set(r->err, "trace: insts[%d] (%s): needs at least %d inputs, got %d", idx,
                         mlc_inst_kind_name(in.kind), inst_info[in.kind].min_inputs, ins->len);
  in.n_inputs = ins->len;
  in.inputs = MLC_NEW_ARRAY(r->a, mlc_operand, ins->len + 1);
  for (int j = 0; j < ins->len; j++)
    if (!read_operand(r, idx, j, ins->items[j], &in.inputs[j])) return false;
  if (!read_attrs(r, idx, v->items[2], &in) || !read_outputs(r, idx, v->items[3], &in))
    return false;
  MLC_VEC_APUSH(r->a, r->t->insts, in);
  return true;
}

static bool read_decision(reader *r, const char *key, const mlc_json *v) {
  char *end;
  long idx = strtol(key, &end, 10);
  if (!*key || *end || idx < 0 || idx >= r->t->insts.len)
    return mlc_error_set(r->err, "trace: decisions: key \"%s\" is not an instruction index", key);
  mlc_inst *in = &r->t->insts.data[idx];
  if (!mlc_inst_kind_is_sampling(in->kind))
    return mlc_error_set(r->err, "trace: decisions: instruction %ld (%s) is not a sampling instruction",
                         idx, mlc_inst_kind_name(in->kind));
  if (v->kind == MLC_JSON_NUMBER && v->is_integer && in->kind != MLC_INST_SAMPLE_PERFECT_TILE) {
    in->decision.n = 1;
    in->decision.v[0] = v->integer;
    return true;
  }
  if (v->kind == MLC_JSON_ARRAY && in->kind == MLC_INST_SAMPLE_PERFECT_TILE &&
      v->len >= 1 && v->len <= MLC_SCHED_MAX_TILE) {
    for (int i = 0; i < v->len; i++) {
      if (v->items[i]->kind != MLC_JSON_NUMBER || !v->items[i]->is_integer)
        return mlc_error_set(r->err, "trace: decisions[\"%s\"]: expected integers", key);
      in->decision.v[i] = v->items[i]->integer;
    }
    in->decision.n = v->len;
    return true;
  }
  return mlc_error_set(r->err, "trace: decisions[\"%s\"]: expected %s", key,
                       in->kind == MLC_INST_SAMPLE_PERFECT_TILE
                           ? "a list of 1 to 16 integers"
                           : "an integer");
}

static bool read_trace(reader *r, const mlc_json *root) {
  if (root->kind != MLC_JSON_OBJECT) return mlc_error_set(r->err, "trace: expected a JSON object");
  for (int i = 0; i < root->len; i++) {
    const char *k = root->keys[i];
    if (strcmp(k, "insts") && strcmp(k, "decisions") && strcmp(k, "version"))
      return mlc_error_set(r->err, "trace: unknown key \"%s\"", k);
  }
  const mlc_json *ver = mlc_json_get(root, "version");
  if (ver && (ver->kind != MLC_JSON_NUMBER || !ver->is_integer || ver->integer < 1))
    return mlc_error_set(r->err, "trace: \"version\" must be a positive integer");
  if (ver && ver->integer > 1)
    return mlc_error_set(r->err, "trace: version %" PRId64 " is newer than this build reads (1)",
                         ver->integer);
  const mlc_json *insts = mlc_json_get(root, "insts");
  if (!insts || insts->kind != MLC_JSON_ARRAY)
    return mlc_error_set(r->err, "trace: \"insts\" must be an array");
  for (int i = 0; i < insts->len; i++)
    if (!read_inst(r, i, insts->items[i])) return false;
  const mlc_json *dec = mlc_json_get(root, "decisions");
  if (!dec) return true;
  if (dec->kind != MLC_JSON_OBJECT)
    return mlc_error_set(r->err, "trace: \"decisions\" must be an object");
  for (int i = 0; i < dec->len; i++)
    if (!read_decision(r, dec->keys[i], dec->items[i])) return false;
  return true;
}

/* Reading the trace out of its JSON allocates in `a` as much again as the
 * text, so a failure there is an error too: the arena jumps back here and
 * whatever the reading took stays owned by `a`. */
static mlc_trace *read_guarded(mlc_arena *a, const mlc_json *root, mlc_error *err) {
  jmp_buf jb, *outer = mlc_arena_oom_jump(a);
  if (setjmp(jb)) {
    mlc_arena_set_oom_jump(a, outer);
    mlc_error_set(err, "trace JSON: out of memory reading the trace");
    return NULL;
  }
  mlc_arena_set_oom_jump(a, &jb);
  reader r = {a, MLC_NEW(a, mlc_trace), err, {0}, NULL, 0};
  mlc_trace *t = read_trace(&r, root) ? r.t : NULL;
  mlc_arena_set_oom_jump(a, outer);
  return t;
}

mlc_trace *mlc_trace_from_json(mlc_arena *a, const char *text, size_t len, mlc_error *err) {
  mlc_json *root = mlc_json_parse(a, text, len, err);
  if (!root) {
    mlc_error_prefix(err, "trace JSON");
    return NULL;
  }
  return read_guarded(a, root, err);
}

/* ---- Python-like printing ------------------------------------------------------ */

static void py_string(mlc_str *out, const char *s) { mlc_json_write_string(out, s); }

static void py_ann(mlc_str *out, const mlc_ann *v) {
  switch (v->kind) {
  case MLC_ANN_INT: mlc_str_put_i64(out, v->i); return;
  case MLC_ANN_BOOL: mlc_str_puts(out, v->i ? "True" : "False"); return;
  case MLC_ANN_FLOAT: put_float_text(out, v->f, true); return;
  case MLC_ANN_STRING: py_string(out, v->s); return;
  case MLC_ANN_LIST:
  case MLC_ANN_DICT: {
    bool dict = v->kind == MLC_ANN_DICT;
    mlc_str_putc(out, dict ? '{' : '[');
    for (int i = 0; i < v->n; i++) {
      if (i) mlc_str_puts(out, ", ");
      if (dict) {
        py_string(out, v->items[i].key);
        mlc_str_puts(out, ": ");
      }
      py_ann(out, &v->items[i]);
    }
    mlc_str_putc(out, dict ? '}' : ']');
    return;
  }
  }
  mlc_unreachable();
}

static void py_operand(mlc_str *out, const mlc_trace *t, const mlc_operand *op) {
  char name[16];
  switch (op->kind) {
  case MLC_OPERAND_NONE: mlc_str_puts(out, "None"); return;
  case MLC_OPERAND_RV:
    mlc_trace_rv_name(t, op->rv, name);
    mlc_str_puts(out, name);
    return;
  case MLC_OPERAND_INT: mlc_str_printf(out, "%" PRId64, op->i); return;
  case MLC_OPERAND_FLOAT: put_float_text(out, op->f, true); return;
  case MLC_OPERAND_STR: py_string(out, op->s); return;
  case MLC_OPERAND_ANN: py_ann(out, op->ann); return;
  }
  mlc_unreachable();
}

static void py_attr_value(mlc_str *out, const mlc_attr *at) {
  switch (at->kind) {
  case MLC_ATTR_BOOL: mlc_str_puts(out, at->i ? "True" : "False"); return;
  case MLC_ATTR_INT: mlc_str_put_i64(out, at->i); return;
  case MLC_ATTR_FLOAT: put_float_text(out, at->f, true); return;
  case MLC_ATTR_STR: py_string(out, at->s); return;
  case MLC_ATTR_INTS:
    mlc_str_putc(out, '[');
    for (int i = 0; i < at->n; i++) mlc_str_printf(out, "%s%" PRId64, i ? ", " : "", at->ints[i]);
    mlc_str_putc(out, ']');
    return;
  case MLC_ATTR_FLOATS:
    mlc_str_putc(out, '[');
    for (int i = 0; i < at->n; i++) {
      if (i) mlc_str_puts(out, ", ");
      put_float_text(out, at->floats[i], true);
    }
    mlc_str_putc(out, ']');
    return;
  }
  mlc_unreachable();
}

/* "l1, l2 = " / "l1, = " (a one-element list, as TVM prints) / "b0 = ". */
static void py_outputs(mlc_str *out, const mlc_trace *t, const mlc_inst *in, bool list) {
  char name[16];
  if (in->n_outputs == 0) return;
  for (int j = 0; j < in->n_outputs; j++) {
    mlc_trace_rv_name(t, in->outputs[j], name);
    mlc_str_printf(out, "%s%s", j ? ", " : "", name);
  }
  mlc_str_puts(out, list && in->n_outputs == 1 ? ", = " : " = ");
}

/* Arguments: named ones take the i-th input; NULL names print positionally. */
static void py_args(mlc_str *out, const mlc_trace *t, const mlc_inst *in, int n_names,
                    const char *const *names) {
  int k = 0;
  for (int j = 0; j < in->n_inputs; j++, k++) {
    if (k) mlc_str_puts(out, ", ");
    if (j < n_names && names[j]) mlc_str_printf(out, "%s=", names[j]);
    py_operand(out, t, &in->inputs[j]);
  }
  for (int j = 0; j < in->n_attrs; j++, k++) {
    if (k) mlc_str_puts(out, ", ");
    mlc_str_printf(out, "%s=", in->attrs[j].key);
    py_attr_value(out, &in->attrs[j]);
  }
}

static void py_decision(mlc_str *out, const mlc_inst *in) {
  if (in->decision.n == 0) return;
  mlc_str_puts(out, ", decision=");
  if (in->kind == MLC_INST_SAMPLE_PERFECT_TILE) {
    mlc_str_putc(out, '[');
    for (int i = 0; i < in->decision.n; i++)
      mlc_str_printf(out, "%s%" PRId64, i ? ", " : "", in->decision.v[i]);
    mlc_str_putc(out, ']');
  } else {
    mlc_str_printf(out, "%" PRId64, in->decision.v[0]);
  }
}

/* TVM's order: block=b0, read_buffer_index=0, storage_scope="shared",
 * consumer_blocks=[b2, b3] (the inputs after the block). */
static void py_cache(mlc_str *out, const mlc_trace *t, const mlc_inst *in) {
  mlc_str_puts(out, "block=");
  py_operand(out, t, &in->inputs[0]);
  for (int j = 0; j < in->n_attrs; j++) {
    mlc_str_printf(out, ", %s=", in->attrs[j].key);
    py_attr_value(out, &in->attrs[j]);
  }
  if (in->n_inputs < 2) return;
  mlc_str_puts(out, ", consumer_blocks=[");
  for (int j = 1; j < in->n_inputs; j++) {
    if (j > 1) mlc_str_puts(out, ", ");
    py_operand(out, t, &in->inputs[j]);
  }
  mlc_str_putc(out, ']');
}

static void py_split(mlc_str *out, const mlc_trace *t, const mlc_inst *in) {
  mlc_str_puts(out, "loop=");
  py_operand(out, t, &in->inputs[0]);
  mlc_str_puts(out, ", factors=[");
  for (int j = 1; j < in->n_inputs; j++) {
    if (j > 1) mlc_str_puts(out, ", ");
    py_operand(out, t, &in->inputs[j]);
  }
  mlc_str_puts(out, "]");
  for (int j = 0; j < in->n_attrs; j++) {
    mlc_str_printf(out, ", %s=", in->attrs[j].key);
    py_attr_value(out, &in->attrs[j]);
  }
}

static void print_inst(mlc_str *out, const mlc_trace *t, const mlc_inst *in) {
  static const char *const block_arg[] = {"block"};
  static const char *const loop_arg[] = {"loop"};
  static const char *const ann_args[] = {"block_or_loop", "ann_val"};
  static const char *const at_args[] = {"block", "loop"};
  mlc_str_puts(out, "  ");
  bool list = false;
  switch (in->kind) {
  case MLC_INST_GET_LOOPS:
  case MLC_INST_GET_CHILD_BLOCKS:
  case MLC_INST_GET_PRODUCERS:
  case MLC_INST_GET_CONSUMERS:
  case MLC_INST_SPLIT:
  case MLC_INST_SAMPLE_PERFECT_TILE: list = true; break;
  case MLC_INST_GET_BLOCK:
  case MLC_INST_FUSE:
  case MLC_INST_REORDER:
  case MLC_INST_PARALLEL:
  case MLC_INST_VECTORIZE:
  case MLC_INST_UNROLL:
  case MLC_INST_BIND:
  case MLC_INST_ANNOTATE:
  case MLC_INST_UNANNOTATE:
  case MLC_INST_COMPUTE_AT:
  case MLC_INST_REVERSE_COMPUTE_AT:
  case MLC_INST_COMPUTE_INLINE:
  case MLC_INST_REVERSE_COMPUTE_INLINE:
  case MLC_INST_CACHE_READ:
  case MLC_INST_CACHE_WRITE:
  case MLC_INST_DECOMPOSE_REDUCTION:
  case MLC_INST_RFACTOR:
  case MLC_INST_BLOCKIZE:
  case MLC_INST_STORAGE_ALIGN:
  case MLC_INST_SET_SCOPE:
  case MLC_INST_SAMPLE_CATEGORICAL:
  case MLC_INST_SAMPLE_COMPUTE_LOCATION:
  case MLC_INST_TENSORIZE:
  case MLC_INST_LIBRARY_CALL:
  case MLC_INST_ENTER_POSTPROC: break;
  }
  py_outputs(out, t, in, list);
  mlc_str_printf(out, "sch.%s(", mlc_inst_kind_method(in->kind));
  switch (in->kind) {
  case MLC_INST_SPLIT: py_split(out, t, in); break;
  case MLC_INST_CACHE_READ:
  case MLC_INST_CACHE_WRITE: py_cache(out, t, in); break;
  case MLC_INST_GET_LOOPS:
  case MLC_INST_GET_PRODUCERS:
  case MLC_INST_GET_CONSUMERS:
  case MLC_INST_COMPUTE_INLINE:
  case MLC_INST_REVERSE_COMPUTE_INLINE:
  case MLC_INST_SAMPLE_COMPUTE_LOCATION:
  case MLC_INST_STORAGE_ALIGN:
  case MLC_INST_SET_SCOPE: py_args(out, t, in, 1, block_arg); break;
  case MLC_INST_COMPUTE_AT:
  case MLC_INST_REVERSE_COMPUTE_AT:
  case MLC_INST_DECOMPOSE_REDUCTION: py_args(out, t, in, 2, at_args); break;
  case MLC_INST_PARALLEL:
  case MLC_INST_VECTORIZE:
  case MLC_INST_UNROLL:
  case MLC_INST_BIND:
  case MLC_INST_RFACTOR:
  case MLC_INST_BLOCKIZE:
  case MLC_INST_SAMPLE_PERFECT_TILE: py_args(out, t, in, 1, loop_arg); break;
  case MLC_INST_ANNOTATE: {
    /* ann_key prints before ann_val, as TVM's signature orders them */
    mlc_str_puts(out, "block_or_loop=");
    py_operand(out, t, &in->inputs[0]);
    mlc_str_puts(out, ", ann_key=");
    py_attr_value(out, &in->attrs[0]);
    if (in->n_inputs > 1) {
      mlc_str_puts(out, ", ann_val=");
      py_operand(out, t, &in->inputs[1]);
    }
    break;
  }
  case MLC_INST_UNANNOTATE: py_args(out, t, in, 2, ann_args); break;
  case MLC_INST_TENSORIZE: /* TVM's keywords: block_or_loop=b1, tensor_intrin="tmm16" */
    mlc_str_puts(out, "block_or_loop=");
    py_operand(out, t, &in->inputs[0]);
    mlc_str_puts(out, ", tensor_intrin=");
    py_attr_value(out, &in->attrs[0]);
    break;
  case MLC_INST_LIBRARY_CALL: /* block=b0, library="openblas" */
    mlc_str_puts(out, "block=");
    py_operand(out, t, &in->inputs[0]);
    mlc_str_puts(out, ", library=");
    py_attr_value(out, &in->attrs[0]);
    break;
  case MLC_INST_GET_BLOCK:
  case MLC_INST_GET_CHILD_BLOCKS:
  case MLC_INST_FUSE:
  case MLC_INST_REORDER:
  case MLC_INST_SAMPLE_CATEGORICAL:
  case MLC_INST_ENTER_POSTPROC: py_args(out, t, in, 0, NULL); break;
  }
  if (mlc_inst_kind_is_sampling(in->kind)) py_decision(out, in);
  mlc_str_puts(out, ")\n");
}

void mlc_trace_print(mlc_str *out, const mlc_trace *t) {
  mlc_str_puts(out, "# from tvm import tir\ndef apply_trace(sch: tir.Schedule) -> None:\n");
  if (t->insts.len == 0) mlc_str_puts(out, "  pass\n");
  for (int i = 0; i < t->insts.len; i++) print_inst(out, t, &t->insts.data[i]);
}
