/* Target strings, host detection, and the build driver (lower, then the
 * target's backend). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity */
#endif
#include "targets/llvm_internal.h"

#include <ctype.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Every kind of target, by the first word of its string. */
static const mlc_target_backend *const backends[] = {&mlc_backend_llvm, &mlc_backend_cuda};

/* ---- host ------------------------------------------------------------------ */

static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static char host_cpu[64];
static char *host_features; /* heap, lives for the process */
static int host_cores;

static void detect_host(void) {
  char *cpu = LLVMGetHostCPUName();
  snprintf(host_cpu, sizeof host_cpu, "%s", cpu && *cpu ? cpu : "generic");
  LLVMDisposeMessage(cpu);
  char *feat = LLVMGetHostCPUFeatures();
  host_features = mlc_xstrdup(feat ? feat : "");
  LLVMDisposeMessage(feat);
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) host_cores = CPU_COUNT(&set);
  if (host_cores < 1) host_cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (host_cores < 1) host_cores = 1;
}

const char *mlc_target_host_cpu(void) {
  pthread_once(&host_once, detect_host);
  return host_cpu;
}

const char *mlc_target_host_features(void) {
  pthread_once(&host_once, detect_host);
  return host_features;
}

int mlc_target_host_cores(void) {
  pthread_once(&host_once, detect_host);
  return host_cores;
}

const char *mlc_target_cpu_features(const mlc_target *t) {
  if (t->backend->device != MLC_DEVICE_CPU) return "";
  if (t->mattr[0]) return t->mattr;
  return strcmp(t->mcpu, mlc_target_host_cpu()) == 0 ? mlc_target_host_features() : "";
}

bool mlc_target_has_feature(const mlc_target *t, const char *feature) {
  return mlc_feature_list_has(mlc_target_cpu_features(t), feature);
}

/* ---- parsing ---------------------------------------------------------------- */

/* Next space-separated word of *p into buf; false at the end. */
static bool next_word(const char **p, char *buf, size_t n, bool *too_long) {
  const char *s = *p;
  while (isspace((unsigned char)*s)) s++;
  if (!*s) return false;
  size_t len = 0;
  while (s[len] && !isspace((unsigned char)s[len])) len++;
  *too_long = len >= n;
  snprintf(buf, n, "%.*s", (int)(len < n ? len : n - 1), s);
  *p = s + len;
  return true;
}

mlc_device_kind mlc_target_device(const mlc_target *t) { return t->backend->device; }

bool mlc_target_parse(const char *text, mlc_target *out, mlc_error *err) {
  mlc_target t = {0};
  char word[512];
  bool too_long;
  const char *p = text ? text : "";
  if (!next_word(&p, word, sizeof word, &too_long))
    return mlc_error_set(err, "empty target string (expected e.g. \"llvm\")");
  for (int i = 0; i < MLC_COUNTOF(backends); i++)
    if (strcmp(word, backends[i]->kind) == 0) t.backend = backends[i];
  if (!t.backend) return mlc_error_set(err, "unknown target '%s' (known: llvm, cuda)", word);
  while (next_word(&p, word, sizeof word, &too_long)) {
    if (too_long) return mlc_error_set(err, "target option too long: %.40s...", word);
    if (word[0] != '-' || !word[1])
      return mlc_error_set(err, "bad target option '%s' (expected -key=value)", word);
    const char *key = word[1] == '-' ? word + 2 : word + 1;
    char *eq = strchr(word, '=');
    const char *value = NULL;
    if (eq) {
      *eq = 0;
      value = eq + 1;
    }
    if (!t.backend->set_option(&t, key, value, err)) return false;
  }
  t.backend->finish(&t);
  *out = t;
  return true;
}

void mlc_target_host(mlc_target *out) {
  mlc_error err;
  bool ok = mlc_target_parse("llvm", out, &err);
  MLC_ASSERT(ok);
}

/* ---- building ------------------------------------------------------------------ */

void mlc_object_free(mlc_object *o) {
  if (!o) return;
  mlc_free(o->data);
  o->data = NULL;
  o->len = 0;
}

bool mlc_object_write(const mlc_object *o, const char *path, mlc_error *err) {
  return mlc_write_file(path, o->data, o->len, err);
}

/* Every symbol of the object differs: LLVM would rename a second one. */
static bool check_data_symbols(int n, const char *const *syms, int n_data,
                               const mlc_object_data *data, mlc_error *err) {
  for (int i = 0; i < n_data; i++) {
    for (int k = 0; k < i; k++)
      if (strcmp(data[k].symbol, data[i].symbol) == 0)
        return mlc_error_set(err, "two data arrays would both be named %s", data[i].symbol);
    for (int k = 0; k < n; k++)
      if (strcmp(syms[k], data[i].symbol) == 0)
        return mlc_error_set(err, "data array %s has the name of a function", data[i].symbol);
  }
  return true;
}

bool mlc_target_build_with_data(const mlc_target *t, int n, const mlc_prim_func *const *funcs,
                                const char *const *symbols, int n_data,
                                const mlc_object_data *data, mlc_str *ir_text, mlc_object *out,
                                mlc_error *err) {
  *out = (mlc_object){0};
  if (n < 1) return mlc_error_set(err, "nothing to build: no functions");
  if (n_data > 0 && !t->backend->build_with_data)
    return mlc_error_set(err, "target %s: cannot place data arrays in its objects", t->str);
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func **lowered = MLC_NEW_ARRAY(a, mlc_prim_func *, n);
  const char **syms = MLC_NEW_ARRAY(a, const char *, n);
  bool ok = true;
  for (int i = 0; i < n && ok; i++) {
    syms[i] = symbols && symbols[i] ? symbols[i] : funcs[i]->name;
    for (int k = 0; k < i; k++)
      if (strcmp(syms[k], syms[i]) == 0)
        ok = mlc_error_set(err, "two functions would both be named %s", syms[i]);
    const mlc_prim_func *f = funcs[i];
    if (ok && t->backend->prepare) f = t->backend->prepare(a, f, err);
    if (ok && !f) ok = false;
    if (ok) lowered[i] = mlc_target_lower(a, f, err);
    ok = ok && lowered[i];
  }
  ok = ok && check_data_symbols(n, syms, n_data, data, err);
  if (ok && n_data > 0)
    ok = t->backend->build_with_data(t, n, lowered, syms, n_data, data, ir_text, out, err);
  else ok = ok && t->backend->build(t, n, lowered, syms, ir_text, out, err);
  mlc_arena_free(a);
  return ok;
}

bool mlc_target_build(const mlc_target *t, int n, const mlc_prim_func *const *funcs,
                      const char *const *symbols, mlc_str *ir_text, mlc_object *out,
                      mlc_error *err) {
  return mlc_target_build_with_data(t, n, funcs, symbols, 0, NULL, ir_text, out, err);
}

bool mlc_target_build_module(const mlc_target *t, const mlc_module *m, mlc_str *ir_text,
                             mlc_object *out, mlc_error *err) {
  return mlc_target_build(t, m->n_funcs, (const mlc_prim_func *const *)m->funcs, NULL, ir_text,
                          out, err);
}
