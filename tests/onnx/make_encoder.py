#!/usr/bin/python3
"""Writes tests/onnx/tiny_encoder.onnx: one torch.nn.TransformerEncoderLayer
(d_model 32, 2 heads, feed-forward 64, sequence 8, batch 1; random weights,
eval mode) as torch.onnx.export writes it at opset 14 (MatMul, Gemm,
Softmax, the LayerNorm pattern, shape arithmetic), with an input and
PyTorch's output as .npy. tests/cli/mlc_compile.sh compiles and runs it.
Needs Debian's python3-torch (run with /usr/bin/python3):

    /usr/bin/python3 tests/onnx/make_encoder.py

Exported with autograd on: in eval mode under torch.no_grad() PyTorch 1.13
takes a fused fast path that has no ONNX export.
"""
import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    torch.manual_seed(3)
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=2, dim_feedforward=64)
    model = torch.nn.TransformerEncoder(layer, num_layers=1).eval()
    x = torch.randn(8, 1, 32)
    with torch.enable_grad():
        torch.onnx.export(model, (x,), os.path.join(HERE, "tiny_encoder.onnx"), opset_version=14,
                          input_names=["input"], output_names=["output"])
        y = model(x).detach()
    np.save(os.path.join(HERE, "tiny_encoder_input.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(HERE, "tiny_encoder_output.npy"), y.numpy().astype(np.float32))


if __name__ == "__main__":
    main()
