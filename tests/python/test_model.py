"""mlc_tune.Model: ONNX models loaded, compiled and run from NumPy arrays
and PyTorch tensors against their stored reference outputs; tuning into
a database, then compiling from it; export; errors as MlcError."""
import os
import signal
import tempfile
import threading
import unittest

import numpy as np

import mlc_tune
from mlc_tune import MlcError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ONNX = os.path.join(ROOT, "tests", "onnx")

try:
    import torch
except ImportError:
    torch = None


def rel_err(got, want):
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


class ModelTest(unittest.TestCase):
    def check_file_model(self, name, shapes=None, inputs=None, outputs=None):
        m = mlc_tune.load(os.path.join(ONNX, name + ".onnx"), input_shapes=shapes).compile()
        x = np.load(os.path.join(ONNX, inputs or name + "_input.npy"))
        want = np.load(os.path.join(ONNX, outputs or name + "_output.npy"))
        for _ in range(2):
            self.assertLess(rel_err(m(x), want), 1e-4)
        return m

    def test_cnn(self):
        m = self.check_file_model("tiny_cnn")
        self.assertEqual(m.inputs[0].shape, (1, 3, 8, 8))
        self.assertEqual(len(m.kernels), m.num_kernels)
        self.assertTrue(all(k.schedule.startswith("default schedule") for k in m.kernels))

    def test_encoder(self):
        self.check_file_model("tiny_encoder")

    def test_gpt2_token_ids(self):
        m = self.check_file_model("lm/gpt2_tiny", {"input_ids": (1, 5)},
                                  "lm/gpt2_s5_input_ids.npy", "lm/gpt2_s5_logits.npy")
        self.assertEqual(m.inputs[0].dtype, np.int64)
        with self.assertRaisesRegex(MlcError, "element 3 is 1000000"):
            m(np.array([[1, 2, 3, 1000000, 4]], dtype=np.int64))

    def test_no_copy_of_contiguous_input(self):
        m = mlc_tune.load(os.path.join(ONNX, "tiny_cnn.onnx"))
        x = np.zeros((1, 3, 8, 8), np.float32)
        self.assertEqual(m._input_pointer(0, x, []), x.ctypes.data)
        y = np.zeros((1, 3, 8, 8), np.float64)  # converted: a copy
        self.assertNotEqual(m._input_pointer(0, y, []), y.ctypes.data)

    @unittest.skipIf(torch is None, "PyTorch is not installed")
    def test_torch_tensors(self):
        m = mlc_tune.load(os.path.join(ONNX, "tiny_cnn.onnx")).compile()
        x = torch.from_numpy(np.load(os.path.join(ONNX, "tiny_cnn_input.npy")))
        self.assertEqual(m._input_pointer(0, x, []), x.data_ptr())
        y = m(x)
        self.assertIsInstance(y, torch.Tensor)
        want = np.load(os.path.join(ONNX, "tiny_cnn_output.npy"))
        self.assertLess(rel_err(y.numpy(), want), 1e-4)

    def test_errors(self):
        with self.assertRaisesRegex(MlcError, "nosuch.onnx"):
            mlc_tune.load("/nonexistent/nosuch.onnx")
        m = mlc_tune.load(os.path.join(ONNX, "tiny_cnn.onnx"))
        with self.assertRaisesRegex(MlcError, "not compiled"):
            m(np.zeros((1, 3, 8, 8), np.float32))
        with self.assertRaisesRegex(MlcError, "target"):
            m.compile(target="nosuch-target")
        m.compile()
        with self.assertRaisesRegex(MlcError, r"shape \[1, 3, 9, 8\], expected \[1, 3, 8, 8\]"):
            m(np.zeros((1, 3, 9, 8), np.float32))
        with self.assertRaisesRegex(MlcError, "takes 1 inputs"):
            m()
        m.close()
        with self.assertRaisesRegex(MlcError, "closed"):
            m(np.zeros((1, 3, 8, 8), np.float32))

    def test_export(self):
        m = mlc_tune.load(os.path.join(ONNX, "tiny_cnn.onnx")).compile()
        with tempfile.TemporaryDirectory() as d:
            m.export(os.path.join(d, "cnn.o"), os.path.join(d, "cnn.h"))
            with open(os.path.join(d, "cnn.o"), "rb") as f:
                self.assertEqual(f.read(4), b"\x7fELF")
            with open(os.path.join(d, "cnn.h")) as f:
                self.assertIn("tiny_cnn_run(const float *input, float *output)", f.read())
            with self.assertRaisesRegex(MlcError, "nodir"):
                m.export(os.path.join(d, "nodir", "x.o"))


class TuneTest(unittest.TestCase):
    def test_tune_then_compile(self):
        with tempfile.TemporaryDirectory() as d:
            db = os.path.join(d, "t.db")
            m = mlc_tune.load(os.path.join(ROOT, "examples", "mlp.json"))
            r = m.tune(trials=8, db=db, progress=False)
            self.assertGreaterEqual(r.measured, 2)
            self.assertGreater(r.est_sec, 0)
            m.compile(db=db)
            self.assertTrue(all(k.schedule.startswith("record") for k in m.kernels), m.kernels)
            x = np.random.default_rng(1).random(m.inputs[0].shape, np.float32)
            self.assertEqual(m(x).shape, m.outputs[0].shape)

    def test_interrupt_keeps_records(self):
        with tempfile.TemporaryDirectory() as d:
            db = os.path.join(d, "t.db")
            m = mlc_tune.load(os.path.join(ROOT, "examples", "mlp.json"))
            timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
            timer.start()
            try:
                with self.assertRaises(KeyboardInterrupt):
                    m.tune(trials=10000, db=db, progress=True)
            finally:
                timer.cancel()
            r = m.tune(trials=1, db=db, progress=False)  # the budget is spent: nothing to do
            self.assertEqual(r.measured, 0)
            m.compile(db=db)
            self.assertTrue(any(k.schedule.startswith("record") for k in m.kernels))


if __name__ == "__main__":
    unittest.main()
