/* Private to costmodel/: the XGBoost C API, opened with dlopen at first
 * use so nothing links against libxgboost (xgb.c). */
#ifndef MLC_COSTMODEL_XGB_INTERNAL_H
#define MLC_COSTMODEL_XGB_INTERNAL_H

#include "base/base.h"

#include <xgboost/c_api.h>

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

/* The functions the model uses, resolved from libxgboost.so.0. */
typedef struct xgb_api {
  const char *(*last_error)(void);
  __typeof__(XGDMatrixCreateFromMat) *dmatrix_from_mat;
  __typeof__(XGDMatrixSetFloatInfo) *dmatrix_set_float;
  __typeof__(XGDMatrixSetUIntInfo) *dmatrix_set_uint;
  __typeof__(XGDMatrixFree) *dmatrix_free;
  __typeof__(XGBoosterCreate) *booster_create;
  __typeof__(XGBoosterFree) *booster_free;
  __typeof__(XGBoosterSetParam) *booster_set_param;
  __typeof__(XGBoosterUpdateOneIter) *booster_update;
  __typeof__(XGBoosterBoostOneIter) *booster_boost;
  __typeof__(XGBoosterPredict) *booster_predict;
  __typeof__(XGBoosterSaveModelToBuffer) *booster_save;
  __typeof__(XGBoosterLoadModelFromBuffer) *booster_load;
} xgb_api;

/* The API, loading the library on first call; NULL with a message when it
 * is missing or lacks a function. Thread-safe. */
const xgb_api *xgb_get(mlc_error *err);

/* err = "<what>: <XGBoost's last error>"; returns false. */
bool xgb_fail(const xgb_api *x, mlc_error *err, const char *what);


#pragma GCC visibility pop
#endif
