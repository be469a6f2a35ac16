/* C headers for emitted objects: the raw entry and a typed wrapper per
 * function.
 *
 *   int32_t mm(void **args);
 *   static inline int32_t mm_call(float *A, float *B, float *C) { ... }
 */
#include "targets/targets.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static bool is_c_ident(const char *s) {
  if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return false;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_') return false;
  return true;
}

/* C keywords and names the generated code itself uses. */
static bool is_reserved(const char *s) {
  static const char *const kw[] = {
      "auto",     "break",   "case",     "char",   "const",    "continue", "default",
      "do",       "double",  "else",     "enum",   "extern",   "float",    "for",
      "goto",     "if",      "inline",   "int",    "long",     "register", "restrict",
      "return",   "short",   "signed",   "sizeof", "static",   "struct",   "switch",
      "typedef",  "union",   "unsigned", "void",   "volatile", "while",    "args",
      "_Bool",    "bool",    "int8_t",   "int32_t", "int64_t", "uint8_t",  "uint16_t"};
  for (int i = 0; i < MLC_COUNTOF(kw); i++)
    if (strcmp(s, kw[i]) == 0) return true;
  return false;
}

bool mlc_target_c_reserved(const char *name) { return is_reserved(name); }

/* Parameter names must be distinct C identifiers that are not keywords,
 * `args` (the wrapper's local) or the entry it calls; else argN. */
static void param_name(char *buf, size_t n, const mlc_prim_func *f, const char *sym, int i) {
  const char *name = f->params[i]->name;
  bool ok = is_c_ident(name) && !is_reserved(name) && strcmp(name, sym) != 0 &&
            strncmp(name, "arg", 3) != 0;
  for (int k = 0; k < i && ok; k++) ok = strcmp(f->params[k]->name, name) != 0;
  if (ok) snprintf(buf, n, "%s", name);
  else snprintf(buf, n, "arg%d", i);
}

/* A size var's C name: its own when that is a free identifier, else sizeN. */
static void size_name(char *buf, size_t n, const mlc_prim_func *f, const char *sym, int k) {
  const char *name = f->sizes[k].var->name;
  bool ok = is_c_ident(name) && !is_reserved(name) && strcmp(name, sym) != 0 &&
            strncmp(name, "arg", 3) != 0 && strncmp(name, "size", 4) != 0;
  char other[128];
  for (int i = 0; i < f->n_params && ok; i++) {
    param_name(other, sizeof other, f, sym, i);
    ok = strcmp(other, name) != 0;
  }
  for (int j = 0; j < k && ok; j++) ok = strcmp(f->sizes[j].var->name, name) != 0;
  if (ok) snprintf(buf, n, "%s", name);
  else snprintf(buf, n, "size%d", k);
}

static void put_extents(mlc_str *out, const mlc_buffer *b) {
  for (int d = 0; d < b->ndim; d++) {
    if (d) mlc_str_puts(out, ", ");
    if (b->dims) mlc_print_expr(out, b->dims[d]);
    else mlc_str_printf(out, "%lld", (long long)b->shape[d]);
  }
}

static void write_function(mlc_str *out, const mlc_prim_func *f, const char *sym, bool gpu) {
  char name[128];
  mlc_str_printf(out, "/* %s:", sym);
  for (int i = 0; i < f->n_params; i++) {
    const mlc_buffer *b = f->params[i];
    param_name(name, sizeof name, f, sym, i);
    mlc_str_printf(out, "%s %s %s[", i ? "," : "", name, mlc_dtype_name(b->dtype));
    put_extents(out, b);
    mlc_str_puts(out, "]");
  }
  if (gpu)
    mlc_str_puts(out, " (dense, row-major, in host memory).\n * Runs on the GPU; returns 0, or -1 "
                      "with the reason in mlc_rt_cuda_error(). */\n");
  else if (f->n_sizes == 0)
    mlc_str_puts(out, " (dense, row-major). Returns 0, or -1 if memory ran out. */\n");
  else {
    mlc_str_puts(out, " (dense, row-major), for sizes");
    for (int k = 0; k < f->n_sizes; k++)
      mlc_str_printf(out, "%s %lld <= %s <= %lld", k ? "," : "", (long long)f->sizes[k].lo,
                     f->sizes[k].var->name, (long long)f->sizes[k].hi);
    mlc_str_puts(out, ".\n * args[] holds the buffers, then a pointer to each size's int64_t value.\n"
                      " * Returns 0, -1 if memory ran out, or -2 (doing nothing) when a size is\n"
                      " * outside its bounds. */\n");
  }
  mlc_str_printf(out, "int32_t %s(void **args);\n", sym);
  mlc_str_printf(out, "static inline int32_t %s_call(", sym);
  for (int i = 0; i < f->n_params; i++) {
    param_name(name, sizeof name, f, sym, i);
    mlc_str_printf(out, "%s%s *%s", i ? ", " : "", mlc_dtype_c_name(f->params[i]->dtype), name);
  }
  for (int k = 0; k < f->n_sizes; k++) {
    size_name(name, sizeof name, f, sym, k);
    mlc_str_printf(out, "%sint64_t %s", f->n_params + k ? ", " : "", name);
  }
  if (f->n_params + f->n_sizes == 0) mlc_str_puts(out, "void");
  mlc_str_puts(out, ") {\n");
  if (f->n_sizes) {
    mlc_str_printf(out, "  int64_t sizes[%d] = {", f->n_sizes);
    for (int k = 0; k < f->n_sizes; k++) {
      size_name(name, sizeof name, f, sym, k);
      mlc_str_printf(out, "%s%s", k ? ", " : "", name);
    }
    mlc_str_puts(out, "};\n");
  }
  int total = f->n_params + f->n_sizes;
  mlc_str_printf(out, "  void *args[%d] = {", total > 0 ? total : 1);
  for (int i = 0; i < f->n_params; i++) {
    param_name(name, sizeof name, f, sym, i);
    mlc_str_printf(out, "%s(void *)%s", i ? ", " : "", name);
  }
  for (int k = 0; k < f->n_sizes; k++)
    mlc_str_printf(out, "%s(void *)&sizes[%d]", f->n_params + k ? ", " : "", k);
  if (total == 0) mlc_str_puts(out, "0");
  mlc_str_printf(out, "};\n  return %s(args);\n}\n\n", sym);
}

static bool write_header(mlc_str *out, int n, const mlc_prim_func *const *funcs,
                         const char *const *symbols, const char *guard, bool gpu,
                         mlc_error *err) {
  if (!guard) guard = "MLC_KERNELS_H";
  if (!is_c_ident(guard)) return mlc_error_set(err, "header guard '%s' is not a C identifier", guard);
  for (int i = 0; i < n; i++) {
    const char *sym = symbols && symbols[i] ? symbols[i] : funcs[i]->name;
    if (!is_c_ident(sym)) return mlc_error_set(err, "symbol '%s' is not a C identifier", sym);
    if (strcmp(sym, "main") == 0)
      return mlc_error_set(err, "a kernel cannot be named main in C; give it another name");
    if (is_reserved(sym)) return mlc_error_set(err, "symbol '%s' is reserved in C", sym);
    for (int k = 0; k < n; k++) {
      const char *other = symbols && symbols[k] ? symbols[k] : funcs[k]->name;
      size_t len = strlen(other);
      if (k != i && (strcmp(sym, other) == 0 ||
                     (strncmp(sym, other, len) == 0 && strcmp(sym + len, "_call") == 0)))
        return mlc_error_set(err, "symbols %s and %s clash in C (wrappers are named <symbol>_call)",
                             other, sym);
    }
  }
  if (!gpu)
    mlc_str_printf(out,
                   "/* Generated by mlc-tune %s. Link with the object and libmlcrt.a (-lpthread). */\n",
                   MLC_VERSION);
  else
    mlc_str_printf(out,
                   "/* Generated by mlc-tune %s. The kernels run on the GPU (CUDA device 0): each\n"
                   " * call copies its arguments to the device, launches the kernel, waits, and\n"
                   " * copies every argument back. The CUDA driver (libcuda.so.1) is opened at\n"
                   " * run time. Link with the object and libmlcrt.a (-ldl -lpthread). */\n",
                   MLC_VERSION);
  mlc_str_printf(out,
                 "#ifndef %s\n#define %s\n\n#include <stdint.h>\n\n"
                 "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
                 guard, guard);
  if (gpu)
    mlc_str_puts(out, "/* Why the last failed kernel call of this thread failed (libmlcrt). */\n"
                      "const char *mlc_rt_cuda_error(void);\n\n");
  for (int i = 0; i < n; i++)
    write_function(out, funcs[i], symbols && symbols[i] ? symbols[i] : funcs[i]->name, gpu);
  mlc_str_printf(out, "#ifdef __cplusplus\n}\n#endif\n\n#endif /* %s */\n", guard);
  return true;
}

bool mlc_target_write_header(mlc_str *out, int n, const mlc_prim_func *const *funcs,
                             const char *const *symbols, const char *guard, mlc_error *err) {
  return write_header(out, n, funcs, symbols, guard, false, err);
}

bool mlc_cuda_write_header(mlc_str *out, int n, const mlc_prim_func *const *funcs,
                           const char *const *symbols, const char *guard, mlc_error *err) {
  return write_header(out, n, funcs, symbols, guard, true, err);
}
