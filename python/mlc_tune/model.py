"""Models: load (ONNX or our JSON), compile, call on NumPy arrays or
PyTorch CPU tensors, export the object and header, tune."""
import ctypes
import signal
import sys
import time
from collections import namedtuple

import numpy as np

from . import _lib
from ._lib import MlcError

TensorSpec = namedtuple("TensorSpec", "name dtype shape")
Kernel = namedtuple("Kernel", "symbol workload schedule")
TuneResult = namedtuple("TuneResult",
                        "measured errors stopped est_sec est_default_sec total_sec")


def load(path, weights=None, input_shapes=None):
    """Loads a model file (.onnx, or our JSON with its .npy weights) and runs
    the graph passes. input_shapes: {"input_ids": (1, 128)} for inputs with
    symbolic dimensions."""
    shapes = None
    if input_shapes:
        shapes = ";".join("%s=%s" % (k, ",".join(str(int(d)) for d in v))
                          for k, v in input_shapes.items())
    err = _lib.error_buffer()
    h = _lib.model_load(_lib.enc(str(path)), _lib.enc(weights and str(weights)), _lib.enc(shapes),
                        err)
    if not h:
        _lib.raise_error(err)
    return Model(h)


def _specs(h, output):
    n = (_lib.model_num_outputs if output else _lib.model_num_inputs)(h)
    out = []
    for i in range(n):
        ndim = _lib.model_io_ndim(h, output, i)
        out.append(TensorSpec(_lib.model_io_name(h, output, i).decode(),
                              np.dtype(_lib.model_io_dtype(h, output, i).decode()),
                              tuple(_lib.model_io_dim(h, output, i, a) for a in range(ndim))))
    return out


def _is_torch(x):
    return type(x).__module__.startswith("torch")


class Model:
    """A loaded model. compile() it, then call it: model(x) or
    model(x0, x1, ...) returns the output (a tuple for several)."""

    def __init__(self, handle):
        self._h = handle
        self.name = _lib.model_name(handle).decode()
        self.inputs = _specs(handle, False)
        self.outputs = _specs(handle, True)
        self._in = (ctypes.c_void_p * max(1, len(self.inputs)))()
        self._out = (ctypes.c_void_p * max(1, len(self.outputs)))()
        self._err = _lib.error_buffer()
        self.compiled = False

    def __del__(self):
        self.close()

    def close(self):
        """Frees the C side now (the GC does it otherwise)."""
        if getattr(self, "_h", None):
            _lib.model_free(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        spec = lambda s: "%s: %s%s" % (s.name, s.dtype, list(s.shape))
        return "<mlc_tune.Model %s (%s) -> (%s)%s>" % (
            self.name, ", ".join(map(spec, self.inputs)), ", ".join(map(spec, self.outputs)),
            "" if self.compiled else ", not compiled")

    def _handle(self):
        if not self._h:
            raise MlcError("model %s is closed" % self.name)
        return self._h

    @property
    def num_kernels(self):
        return _lib.model_num_kernels(self._handle())

    def compile(self, target="llvm", db=None):
        """Compiles every kernel for target (the host CPU by default) with the
        best records of db (a file or postgresql:// URL; None: the default
        schedules). Returns self."""
        if not _lib.model_compile(self._handle(), _lib.enc(target), _lib.enc(db and str(db)),
                                  self._err):
            _lib.raise_error(self._err)
        self.compiled = True
        return self

    @property
    def kernels(self):
        """Each kernel's symbol, workload hash (its records' key in the
        database) and, after compile, how it was compiled (else None)."""
        h = self._handle()
        out = []
        for i in range(self.num_kernels):
            sched = _lib.model_kernel_schedule(h, i)
            out.append(Kernel(_lib.model_kernel_symbol(h, i).decode(),
                              _lib.model_kernel_workload(h, i).decode(),
                              sched.decode() if sched else None))
        return out

    def _input_pointer(self, i, x, keep):
        spec = self.inputs[i]
        if _is_torch(x):
            if (x.device.type == "cpu" and x.is_contiguous() and tuple(x.shape) == spec.shape and
                    str(x.dtype) == "torch." + spec.dtype.name):
                return x.data_ptr()
            x = x.detach().cpu().numpy()
        if not (type(x) is np.ndarray and x.dtype == spec.dtype and x.flags.c_contiguous):
            x = np.ascontiguousarray(x, dtype=spec.dtype)  # a copy only where needed
        if x.shape != spec.shape:
            raise MlcError("input %d (%s): shape %s, expected %s" % (i, spec.name, list(x.shape),
                                                                      list(spec.shape)))
        keep.append(x)
        return x.ctypes.data

    def __call__(self, *inputs):
        """Runs the compiled model; outputs are new NumPy arrays (PyTorch
        tensors sharing their memory when the first input is a tensor)."""
        h = self._handle()
        if len(inputs) != len(self.inputs):
            raise MlcError("model %s takes %d inputs (%s), got %d" % (
                self.name, len(self.inputs), ", ".join(s.name for s in self.inputs), len(inputs)))
        keep = []
        for i, x in enumerate(inputs):
            self._in[i] = self._input_pointer(i, x, keep)
        outs = [np.empty(s.shape, s.dtype) for s in self.outputs]
        for i, y in enumerate(outs):
            self._out[i] = y.ctypes.data
        if not _lib.model_run(h, self._in, self._out, self._err):
            _lib.raise_error(self._err)
        if inputs and _is_torch(inputs[0]):
            import torch
            outs = [torch.from_numpy(y) for y in outs]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def export(self, object_path, header_path=None):
        """Writes the object and C header `mlc-compile -o --header` writes
        (weights in the object), for the target and database of the last
        compile."""
        if not _lib.model_export(self._handle(), _lib.enc(str(object_path)),
                                 _lib.enc(header_path and str(header_path)), self._err):
            _lib.raise_error(self._err)

    def tune(self, trials=64, db="mlc.db", target="llvm", progress=True):
        """Tunes every kernel under one budget of trials (mlc-tune --model),
        recording into db; a rerun tops the records up. Progress: a tqdm bar
        when tqdm is installed, else a line on stderr. Ctrl-C stops after
        the current round, keeps what was measured and raises
        KeyboardInterrupt. Compile again afterwards to use the records."""
        res = _lib.TuneResult()

        def call(cb, stop, err):
            opts = _lib.TuneOpts(trials, _lib.enc(str(db)), _lib.enc(target), cb, None, stop)
            return _lib.model_tune(self._handle(), ctypes.byref(opts), ctypes.byref(res), err)

        run_tuning(call, trials, db, "model %.3f ms", progress)
        return TuneResult(res.measured, res.errors, res.stopped, res.est_sec,
                          res.est_default_sec, res.total_sec)


def run_tuning(call, trials, db, note, progress):
    """call(progress_callback, stop_pointer, error_buffer) -> ok, with a
    progress bar (tqdm when installed, else a line on stderr; note formats
    the time in seconds it reports) and Ctrl-C turned into the stop flag:
    the round in flight finishes, what was measured stays in db, then
    KeyboardInterrupt."""
    stop = ctypes.c_int(0)
    bar = _Progress(trials, note) if progress else None
    interrupted = []

    def on_sigint(_sig, _frame):  # runs at the next round's callback
        stop.value = 1
        interrupted.append(True)

    def on_round(_ud, done, total, sec, elapsed):
        if bar:
            bar.update(done, total, sec, elapsed)

    cb = _lib.PROGRESS_FN(on_round)
    err = _lib.error_buffer()
    try:
        previous = signal.signal(signal.SIGINT, on_sigint)
    except ValueError:  # not the main thread: Ctrl-C reaches the main thread's handler
        previous = None
    try:
        ok = call(cb, ctypes.pointer(stop), err)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        if bar:
            bar.close()
    if not ok:
        _lib.raise_error(err)
    if interrupted:
        raise KeyboardInterrupt("tuning stopped; %s keeps the finished rounds" % db)


class _Progress:
    """tqdm when it is installed, else one line on stderr rewritten."""

    def __init__(self, total, note):
        try:
            from tqdm import tqdm
            self._bar = tqdm(total=total, unit="trial", desc="tuning")
        except ImportError:
            self._bar = None
        self._last = 0
        self._note = note

    def update(self, done, total, sec, elapsed):
        note = self._note % (sec * 1e3) if sec > 0 else ""
        if self._bar is not None:
            self._bar.total = total
            self._bar.update(done - self._last)
            self._bar.set_postfix_str(note)
        else:
            sys.stderr.write("\rtuning: %d/%d trials, %.0f s %s" % (done, total, elapsed, note))
            sys.stderr.flush()
        self._last = done

    def close(self):
        if self._bar is not None:
            self._bar.close()
        elif self._last:
            sys.stderr.write("\n")
