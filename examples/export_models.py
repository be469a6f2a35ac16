#!/usr/bin/python3
"""Exports the real networks mlc-compile and mlc-tune are checked on, with
random weights in eval mode, into models/ (git-ignored; `make models`):

    models/resnet18.onnx      ResNet-18, input 1x3x224x224
    models/mobilenet_v2.onnx  MobileNetV2, input 1x3x224x224
    models/encoder.onnx       torch.nn.TransformerEncoder: d_model 256,
                              4 heads, 4 layers, feed-forward 1024,
                              sequence 128, batch 1 (input 128x1x256)

each with <name>_in.npy (the input) and <name>_out.npy (PyTorch's output),
and three language models as HuggingFace writes them (examples/lm_models.py),
exported at sequence 16 with batch and sequence dynamic:

    models/bert_base.onnx     BERT-base: 12 layers, hidden 768, 12 heads,
                              vocabulary 30522; inputs input_ids,
                              token_type_ids, attention_mask; outputs
                              last_hidden_state, pooler_output
    models/gpt2_small.onnx    GPT-2 small: 12 layers, hidden 768, 12 heads,
                              vocabulary 50257, tied lm_head; output logits
    models/llama_100m.onnx    Llama-style: 12 layers, hidden 768, 12 query
                              and 4 key/value heads, SwiGLU 2048, vocabulary
                              32000 (about 125M parameters); output logits

each with its inputs and PyTorch's outputs at sequence 128, batch 1 (the
bench length), as <name>_s128_<input or output name>.npy, and each output of the
same model run in float64 as <name>_s128_<output>_f64.npy (rounded to float32).
GPT-2 small also as prefill + decode step for generation with a KV cache
(lm_models.export_generation), with PyTorch's greedy generation of 64 tokens
after the 128-token input:

    models/gpt2_small_prefill.onnx, models/gpt2_small_step.onnx
    models/gpt2_small_gen_prompt.npy, _tokens.npy, _logits.npy (64 x vocab)
Needs Debian's python3-torch and python3-torchvision, which only
/usr/bin/python3 sees:

    /usr/bin/python3 examples/export_models.py [OUTDIR] [--only NAME]

The encoder is exported with autograd enabled: under torch.no_grad() in
eval mode PyTorch 1.13 takes the fused fast path
(aten::_transformer_encoder_layer_fwd), which has no ONNX export.
"""
import copy
import os
import sys

import numpy as np
import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lm_models  # noqa: E402

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
LM_MODELS = {"bert_base": "bert", "gpt2_small": "gpt2", "llama_100m": "llama"}
LM_EXPORT_SEQ = 16
LM_BENCH_SEQ = 128
GEN_TOKENS = 64


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


def export_lm(name, outdir):
    """Exported at one length and checked at another, so that the sequence
    axis is followed through the shape chains rather than baked in."""
    kind = LM_MODELS[name]
    cfg = lm_models.real_config(kind)
    model = lm_models.build(kind, cfg)
    gen = torch.Generator().manual_seed(1)
    path = os.path.join(outdir, name + ".onnx")
    lm_models.export(model, kind, lm_models.example_inputs(kind, cfg, 1, LM_EXPORT_SEQ, gen), path)
    x = lm_models.example_inputs(kind, cfg, 1, LM_BENCH_SEQ, gen)
    y = lm_models.run(model, kind, x)
    prefix = os.path.join(outdir, "%s_s%d_" % (name, LM_BENCH_SEQ))
    for n, t in x.items():
        np.save(prefix + n + ".npy", t.numpy().astype(np.int64))
    for n, t in y.items():
        np.save(prefix + n + ".npy", t.numpy().astype(np.float32))
    # The same model in float64: the value float32 engines approximate,
    # each in its own summation order (check_models.sh judges ours and
    # PyTorch's float32 outputs against it).
    y64 = lm_models.run(copy.deepcopy(model).double(), kind, x)
    for n, t in y64.items():
        np.save(prefix + n + "_f64.npy", t.numpy().astype(np.float32))
    print("%s: %s (%.1f MB, %.1fM parameters), outputs at sequence %d: %s"
          % (name, path, os.path.getsize(path) / 1e6, lm_models.param_count(model) / 1e6,
             LM_BENCH_SEQ, ", ".join("%s %s" % (n, tuple(t.shape)) for n, t in y.items())))
    if kind == "gpt2":
        export_generation(name, model, cfg, outdir, x["input_ids"])


def export_generation(name, model, cfg, outdir, prompt):
    """GPT-2 as prefill + decode step (lm_models.export_generation) and
    PyTorch's greedy generation of GEN_TOKENS tokens after the bench
    prompt, with its own KV cache: the tokens and their logits rows."""
    prefill = os.path.join(outdir, name + "_prefill.onnx")
    step = os.path.join(outdir, name + "_step.onnx")
    lm_models.export_generation(model, cfg, prefill, step)
    tokens, logits = lm_models.greedy(model, prompt, GEN_TOKENS)
    prefix = os.path.join(outdir, name + "_gen_")
    np.save(prefix + "prompt.npy", prompt.numpy().astype(np.int64))
    np.save(prefix + "tokens.npy", tokens.numpy().astype(np.int64))
    np.save(prefix + "logits.npy", logits.numpy().astype(np.float32))
    print("%s: %s, %s; %d greedy tokens after a %d-token prompt" % (
        name, prefill, step, GEN_TOKENS, prompt.size(1)))


USAGE = "usage: export_models.py [OUTDIR] [--only NAME]  (OUTDIR: models)"


def main(argv):
    outdir = "models"
    only = None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a in ("-h", "--help"):
            print(USAGE + "\n\n" + __doc__.strip())
            return
        if a == "--only":
            if not args:
                sys.exit("export_models.py: --only wants a model name\n" + USAGE)
            only = args.pop(0)
        elif a.startswith("-"):
            sys.exit("export_models.py: unknown option %s\n%s" % (a, USAGE))
        else:
            outdir = a
    os.makedirs(outdir, exist_ok=True)
    if only is not None and only not in MODELS and only not in LM_MODELS:
        sys.exit("export_models.py: unknown model %s" % only)
    for name in MODELS:
        if only is None or only == name:
            export(name, outdir)
    for name in LM_MODELS:
        if only is None or only == name:
            export_lm(name, outdir)


if __name__ == "__main__":
    main(sys.argv[1:])
