"""Finding and declaring build/libmlc.so: every C function the package calls,
with its argument and result types, and the error convention (an
mlc_error buffer in, a Python MlcError out)."""
import ctypes
import os

c_char_p, c_int, c_bool, c_void_p, c_double, c_int64 = (
    ctypes.c_char_p, ctypes.c_int, ctypes.c_bool, ctypes.c_void_p, ctypes.c_double, ctypes.c_int64)

_ERROR_BYTES = 1024  # sizeof(mlc_error)


class MlcError(Exception):
    """A failure the C library reported; the message is its own."""


_HERE = os.path.dirname(os.path.abspath(__file__))
_TREE_BUILD = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "build")


def _candidates():
    """Where libmlc.so may be: $MLC_LIB, next to this file (an installed
    package), the tree's build/ (PYTHONPATH=python)."""
    if os.environ.get("MLC_LIB"):
        yield os.environ["MLC_LIB"]
    yield os.path.join(_HERE, "libmlc.so")
    yield os.path.join(_TREE_BUILD, "libmlc.so")


def _find_worker(lib_path):
    """mlc-worker (tuning measures in it) beside the library or in ../bin."""
    d = os.path.dirname(lib_path)
    for p in (os.path.join(d, "mlc-worker"), os.path.join(d, "bin", "mlc-worker")):
        if os.access(p, os.X_OK):
            return p
    return None


def _load():
    tried = []
    for path in _candidates():
        if os.path.exists(path):
            lib = ctypes.CDLL(path)
            if not os.environ.get("MLC_WORKER"):
                worker = _find_worker(path)
                if worker:
                    os.environ["MLC_WORKER"] = worker
            return lib, path
        tried.append(path)
    raise ImportError("mlc_tune: libmlc.so not found (tried %s); build it with `make` or set "
                      "MLC_LIB" % ", ".join(tried))


lib, lib_path = _load()

PROGRESS_FN = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_int, c_double, c_double)


class TuneOpts(ctypes.Structure):
    _fields_ = [("trials", c_int), ("db", c_char_p), ("target", c_char_p),
                ("progress", PROGRESS_FN), ("progress_ud", c_void_p),
                ("stop", ctypes.POINTER(c_int))]


class TuneResult(ctypes.Structure):
    _fields_ = [("measured", c_int), ("errors", c_int), ("stopped", c_bool),
                ("est_sec", c_double), ("est_default_sec", c_double), ("total_sec", c_double)]


def _declare(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = restype, list(argtypes)
    return fn


_M = c_void_p
model_load = _declare("mlc_model_load", _M, c_char_p, c_char_p, c_char_p, c_void_p)
model_free = _declare("mlc_model_free", None, _M)
model_name = _declare("mlc_model_name", c_char_p, _M)
model_num_inputs = _declare("mlc_model_num_inputs", c_int, _M)
model_num_outputs = _declare("mlc_model_num_outputs", c_int, _M)
model_io_name = _declare("mlc_model_io_name", c_char_p, _M, c_bool, c_int)
model_io_dtype = _declare("mlc_model_io_dtype", c_char_p, _M, c_bool, c_int)
model_io_ndim = _declare("mlc_model_io_ndim", c_int, _M, c_bool, c_int)
model_io_dim = _declare("mlc_model_io_dim", c_int64, _M, c_bool, c_int, c_int)
model_num_kernels = _declare("mlc_model_num_kernels", c_int, _M)
model_compile = _declare("mlc_model_compile", c_bool, _M, c_char_p, c_char_p, c_void_p)
model_kernel_symbol = _declare("mlc_model_kernel_symbol", c_char_p, _M, c_int)
model_kernel_schedule = _declare("mlc_model_kernel_schedule", c_char_p, _M, c_int)
model_kernel_workload = _declare("mlc_model_kernel_workload", c_char_p, _M, c_int)
model_run = _declare("mlc_model_run", c_bool, _M, c_void_p, c_void_p, c_void_p)
model_export = _declare("mlc_model_export", c_bool, _M, c_char_p, c_char_p, c_void_p)
model_tune = _declare("mlc_model_tune", c_bool, _M, ctypes.POINTER(TuneOpts),
                      ctypes.POINTER(TuneResult), c_void_p)


class MlcStr(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("len", ctypes.c_size_t), ("cap", ctypes.c_size_t),
                ("arena", c_void_p)]


class ReportOptions(ctypes.Structure):
    _fields_ = [("task", c_char_p), ("shape", c_char_p), ("target", c_char_p), ("model", c_char_p),
                ("max_dots", c_int), ("peak_gflops", c_double)]


MLC_DB_EXISTING = 1
db_open = _declare("mlc_db_open", c_void_p, c_char_p, c_int, c_void_p)
db_close = _declare("mlc_db_close", None, c_void_p)
report_top_json = _declare("mlc_report_top_json", c_bool, c_void_p, ctypes.POINTER(ReportOptions),
                           c_int, ctypes.POINTER(MlcStr), ctypes.POINTER(c_int), c_void_p)
report_record = _declare("mlc_report_record", c_int, c_void_p, c_int64, c_bool,
                         ctypes.POINTER(MlcStr), c_void_p)
str_free = _declare("mlc_str_free", None, ctypes.POINTER(MlcStr))
mlc_free = _declare("mlc_free", None, c_void_p)

_F = c_void_p
primfunc_parse = _declare("mlc_primfunc_parse", _F, c_char_p, c_char_p, c_void_p)
primfunc_task = _declare("mlc_primfunc_task", _F, c_char_p, c_char_p, c_void_p)
primfunc_free = _declare("mlc_primfunc_free", None, _F)
primfunc_name = _declare("mlc_primfunc_name", c_char_p, _F)
primfunc_hash = _declare("mlc_primfunc_hash", c_char_p, _F)
primfunc_script = _declare("mlc_primfunc_script", c_void_p, _F)
primfunc_apply_trace = _declare("mlc_primfunc_apply_trace", _F, _F, c_char_p, c_void_p)
class PrimFuncTuneOpts(ctypes.Structure):
    _fields_ = [("task", c_char_p), ("trials", c_int), ("db", c_char_p), ("target", c_char_p),
                ("progress", PROGRESS_FN), ("progress_ud", c_void_p),
                ("stop", ctypes.POINTER(c_int))]


class PrimFuncTuneResult(ctypes.Structure):
    _fields_ = [("measured", c_int), ("errors", c_int), ("stopped", c_bool),
                ("best_sec", c_double), ("best_record_id", c_int64)]


primfunc_tune = _declare("mlc_primfunc_tune", c_bool, _F, ctypes.POINTER(PrimFuncTuneOpts),
                         ctypes.POINTER(PrimFuncTuneResult), c_void_p)
primfunc_check = _declare("mlc_primfunc_check", c_bool, _F, c_char_p, ctypes.c_uint64,
                          ctypes.POINTER(c_double), c_void_p)


def take_str(s):
    """The text of an mlc_str, which is then freed."""
    text = ctypes.string_at(s.data, s.len).decode("utf-8", "replace") if s.data else ""
    str_free(ctypes.byref(s))
    return text


def take_cstr(p):
    """The text of a heap C string (mlc_free), which is then freed."""
    text = ctypes.string_at(p).decode("utf-8", "replace")
    mlc_free(p)
    return text


def error_buffer():
    return ctypes.create_string_buffer(_ERROR_BYTES)


def raise_error(buf):
    raise MlcError(buf.value.decode("utf-8", "replace"))


def enc(s):
    """A str for a const char * parameter (None stays NULL)."""
    return None if s is None else os.fsencode(s) if not isinstance(s, bytes) else s
