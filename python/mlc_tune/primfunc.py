"""One TensorIR function from Python: parse TVMScript (or build a task's
workload), print it, schedule it with a trace, compile and check it
against the reference interpreter.

    f = mlc_tune.PrimFunc.task("matmul", "64,64,64")
    s = f.apply_trace(db.record(best_id)["trace"])
    print(s)                     # TVMScript
    sec = s.check()              # compiled, checked against the interpreter, timed
"""
import ctypes
import json
from collections import namedtuple

from . import _lib
from .model import run_tuning

KernelTuneResult = namedtuple("KernelTuneResult", "measured errors stopped best_sec best_record_id")


class PrimFunc:
    def __init__(self, handle):
        self._h = handle
        self.name = _lib.primfunc_name(handle).decode()
        self.hash = _lib.primfunc_hash(handle).decode()

    @classmethod
    def parse(cls, text, name=None):
        """TVMScript text (a module or one @T.prim_func); name picks a
        function of a module."""
        err = _lib.error_buffer()
        h = _lib.primfunc_parse(_lib.enc(text), _lib.enc(name), err)
        if not h:
            _lib.raise_error(err)
        return cls(h)

    @classmethod
    def task(cls, task, shape=None):
        """A built-in workload (mlc-ir --list-tasks), e.g. ("matmul", "64,64,64")."""
        err = _lib.error_buffer()
        h = _lib.primfunc_task(_lib.enc(task), _lib.enc(shape), err)
        if not h:
            _lib.raise_error(err)
        return cls(h)

    def __del__(self):
        if getattr(self, "_h", None):
            _lib.primfunc_free(self._h)
            self._h = None

    def script(self):
        """The function as TVMScript."""
        return _lib.take_cstr(_lib.primfunc_script(self._h))

    __str__ = script

    def __repr__(self):
        return "<mlc_tune.PrimFunc %s %s>" % (self.name, self.hash)

    def apply_trace(self, trace):
        """A new PrimFunc: this one scheduled by trace (JSON text or the
        parsed dict, as the database stores traces)."""
        if not isinstance(trace, (str, bytes)):
            trace = json.dumps(trace)
        err = _lib.error_buffer()
        h = _lib.primfunc_apply_trace(self._h, _lib.enc(trace), err)
        if not h:
            _lib.raise_error(err)
        return PrimFunc(h)

    def tune(self, trials=64, db="mlc.db", target="llvm", task=None, progress=True):
        """Tunes this function alone (mlc-tune --task-file), its records in
        db under task (None: its name); a rerun tops them up. Progress and
        Ctrl-C as Model.tune."""
        res = _lib.PrimFuncTuneResult()

        def call(cb, stop, err):
            opts = _lib.PrimFuncTuneOpts(_lib.enc(task), trials, _lib.enc(str(db)), _lib.enc(target),
                                         cb, None, stop)
            return _lib.primfunc_tune(self._h, ctypes.byref(opts), ctypes.byref(res), err)

        run_tuning(call, trials, db, "best %.4f ms", progress)
        return KernelTuneResult(res.measured, res.errors, res.stopped, res.best_sec,
                                res.best_record_id)

    def check(self, target="llvm", seed=1):
        """Compiles it for target, runs it and the reference interpreter on
        the same seeded inputs (MlcError naming the buffer when they
        differ) and returns the median seconds per call."""
        sec, err = ctypes.c_double(0), _lib.error_buffer()
        if not _lib.primfunc_check(self._h, _lib.enc(target), seed, ctypes.byref(sec), err):
            _lib.raise_error(err)
        return sec.value
