#!/usr/bin/python3
"""Exports the real networks mlc-compile and mlc-tune are checked on, with
random weights in eval mode, into models/ (git-ignored; `make models`):

    models/resnet18.onnx      ResNet-18, input 1x3x224x224
    models/mobilenet_v2.onnx  MobileNetV2, input 1x3x224x224
    models/encoder.onnx       torch.nn.TransformerEncoder: d_model 256,
                              4 heads, 4 layers, feed-forward 1024,
                              sequence 128, batch 1 (input 128x1x256)

each with <name>_in.npy (the input) and <name>_out.npy (PyTorch's output).
Needs Debian's python3-torch and python3-torchvision, which only
/usr/bin/python3 sees:

    /usr/bin/python3 examples/export_models.py [OUTDIR] [--only NAME]

The encoder is exported with autograd enabled: under torch.no_grad() in
eval mode PyTorch 1.13 takes the fused fast path
(aten::_transformer_encoder_layer_fwd), which has no ONNX export.
"""
import os
import sys

import numpy as np
import torch
import torchvision

OPSET = 14  # torch.onnx.export's default in PyTorch 1.13


def resnet18():
    return torchvision.models.resnet18(weights=None), torch.randn(1, 3, 224, 224)


def mobilenet_v2():
    return torchvision.models.mobilenet_v2(weights=None), torch.randn(1, 3, 224, 224)


def encoder():
    layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
                                             dropout=0.1)
    return torch.nn.TransformerEncoder(layer, num_layers=4), torch.randn(128, 1, 256)


MODELS = {"resnet18": resnet18, "mobilenet_v2": mobilenet_v2, "encoder": encoder}


def export(name, outdir):
    torch.manual_seed(0)
    model, x = MODELS[name]()
    model.eval()
    path = os.path.join(outdir, name + ".onnx")
    # Autograd on for the export (see the top); the reference output
    # itself is computed the same way, so both take the same path.
    with torch.enable_grad():
        torch.onnx.export(model, (x,), path, opset_version=OPSET, input_names=["input"],
                          output_names=["output"], do_constant_folding=True)
        y = model(x).detach()
    np.save(os.path.join(outdir, name + "_in.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(outdir, name + "_out.npy"), y.numpy().astype(np.float32))
    print("%s: %s (%.1f MB), input %s, output %s" % (name, path, os.path.getsize(path) / 1e6,
                                                  tuple(x.shape), tuple(y.shape)))


def main(argv):
    outdir = "models"
    only = None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--only":
            only = args.pop(0)
        else:
            outdir = a
    os.makedirs(outdir, exist_ok=True)
    for name in MODELS:
        if only is None or only == name:
            export(name, outdir)


if __name__ == "__main__":
    main(sys.argv[1:])
