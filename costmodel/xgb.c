/* Opening XGBoost with dlopen: the model works wherever libxgboost.so.0 is
 * installed, and every other program builds and runs without it (the
 * Makefile links nothing extra, as with the CUDA driver). */
#include "costmodel/xgb_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static xgb_api api;
static bool api_ok;
static char api_error[512];
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

static void *sym(void *lib, const char *name) {
  void *p = dlsym(lib, name);
  if (!p && !api_error[0])
    snprintf(api_error, sizeof api_error, "xgboost: symbol %s missing in libxgboost", name);
  return p;
}

static void open_api(void) {
  static const char *const names[] = {"libxgboost.so.0", "libxgboost.so"};
  void *lib = NULL;
  for (int i = 0; i < MLC_COUNTOF(names) && !lib; i++) lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    const char *e = dlerror();
    snprintf(api_error, sizeof api_error,
             "xgboost: cannot open libxgboost.so.0 (install libxgboost-dev): %s", e ? e : "");
    return;
  }
  /* dlsym returns void *; the casts go through the exact prototypes. */
  *(void **)&api.last_error = sym(lib, "XGBGetLastError");
  *(void **)&api.dmatrix_from_mat = sym(lib, "XGDMatrixCreateFromMat");
  *(void **)&api.dmatrix_set_float = sym(lib, "XGDMatrixSetFloatInfo");
  *(void **)&api.dmatrix_set_uint = sym(lib, "XGDMatrixSetUIntInfo");
  *(void **)&api.dmatrix_free = sym(lib, "XGDMatrixFree");
  *(void **)&api.booster_create = sym(lib, "XGBoosterCreate");
  *(void **)&api.booster_free = sym(lib, "XGBoosterFree");
  *(void **)&api.booster_set_param = sym(lib, "XGBoosterSetParam");
  *(void **)&api.booster_update = sym(lib, "XGBoosterUpdateOneIter");
  *(void **)&api.booster_boost = sym(lib, "XGBoosterBoostOneIter");
  *(void **)&api.booster_predict = sym(lib, "XGBoosterPredict");
  *(void **)&api.booster_save = sym(lib, "XGBoosterSaveModelToBuffer");
  *(void **)&api.booster_load = sym(lib, "XGBoosterLoadModelFromBuffer");
  api_ok = !api_error[0];
}

const xgb_api *xgb_get(mlc_error *err) {
  pthread_once(&api_once, open_api);
  if (!api_ok) {
    mlc_error_set(err, "%s", api_error);
    return NULL;
  }
  return &api;
}

bool xgb_fail(const xgb_api *x, mlc_error *err, const char *what) {
  const char *e = x && x->last_error ? x->last_error() : NULL;
  if (!e || !*e) e = "failed";
  /* XGBoost appends a stack trace: keep the first line. */
  const char *st = strstr(e, "Stack trace");
  size_t n = st ? (size_t)(st - e) : strlen(e);
  const char *nl = memchr(e, '\n', n);
  if (nl) n = (size_t)(nl - e);
  while (n > 0 && (e[n - 1] == ' ' || e[n - 1] == ':')) n--;
  return mlc_error_set(err, "xgboost: %s: %.*s", what, (int)n, e);
}
