"""mlc_tune: the mlc-tune compiler from Python, over build/libmlc.so
(ctypes; no compiled extension).

    import mlc_tune, numpy as np
    m = mlc_tune.load("models/resnet18.onnx")
    m.tune(trials=64, db="mlc.db")       # optional: records into mlc.db
    m.compile(db="mlc.db")
    y = m(np.random.rand(1, 3, 224, 224).astype(np.float32))
    m.export("resnet18.o", "resnet18.h")

PyTorch 2: torch.compile(net, backend=mlc_tune.dynamo_backend(db="mlc.db")).
"""
from ._lib import MlcError
from .model import Kernel, Model, TensorSpec, TuneResult, load
from .db import Database
from .fx import UnsupportedError, from_torch
from .dynamo import DynamoBackend, FallbackWarning, dynamo_backend
from .primfunc import PrimFunc

__all__ = ["MlcError", "UnsupportedError", "Model", "TensorSpec", "Kernel", "TuneResult", "load",
           "from_torch", "dynamo_backend", "DynamoBackend", "FallbackWarning", "Database", "PrimFunc"]
__version__ = "0.1.0"
