#!/usr/bin/python3
"""Writes the tiny language models of examples/lm_models.py (BERT, GPT-2,
Llama as HuggingFace writes them, random weights) into tests/onnx/lm/:

    <model>_tiny.onnx                exported at sequence 8, batch 1, with
                                     batch and sequence dynamic
    <model>_s<S>_<input>.npy         int64 inputs at S = 5, 12, 1, 7 and 64
    <model>_s<S>_<output>.npy        PyTorch's float32 outputs for them
    <model>_prefill_tiny.onnx,       GPT-2 and Llama for generation with a
    <model>_step_tiny.onnx           KV cache: prefill and the decode step
    <model>_gen_prompt.npy, _tokens.npy, _logits.npy
                                     a prompt, PyTorch's greedy tokens after
                                     it (with its cache) and their logits

The test lengths differ from the export length on purpose: a model only
runs at them if its shape chains (Shape, Range, ConstantOfShape, Expand)
are followed rather than baked in. BERT's mask at S = 12 pads its last 3
positions. Each file is checked with onnx.checker and run at both lengths
by onnx.reference, or, where this onnx lacks it (Debian's 1.12), by the
small numpy interpreter below, against PyTorch. Needs Debian's
python3-torch and python3-onnx (run with /usr/bin/python3); the files are
committed:

    /usr/bin/python3 tests/onnx/make_lm.py [--inventory]

--inventory also prints, per model, its op types and which nodes depend
only on input shapes (foldable once the shapes are known).
"""
import math
import os
import sys
from collections import Counter

import numpy as np
import onnx
import torch
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "lm")
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
import lm_models  # noqa: E402

EXPORT_SEQ = 8
# 5 and 12 for builds at one length; 1, 7 and 64 (the tiny models' bound)
# for the build once for every length (--dim seq=1..64). Appended, so the
# inputs drawn for the earlier lengths stay the same.
TEST_SEQS = (5, 12, 1, 7, 64)
BERT_PAD = {5: 0, 12: 3, 1: 0, 7: 2, 64: 9}  # trailing zeros of BERT's attention mask


def write_model(kind):
    cfg = lm_models.tiny_config(kind)
    model = lm_models.build(kind, cfg)
    gen = torch.Generator().manual_seed(1)
    path = os.path.join(OUT, kind + "_tiny.onnx")
    lm_models.export(model, kind, lm_models.example_inputs(kind, cfg, 1, EXPORT_SEQ, gen), path)
    onnx.checker.check_model(onnx.load(path))
    cases = {}
    for seq in TEST_SEQS:
        pad = BERT_PAD[seq] if kind == "bert" else 0
        x = lm_models.example_inputs(kind, cfg, 1, seq, gen, pad)
        y = lm_models.run(model, kind, x)
        prefix = os.path.join(OUT, "%s_s%d_" % (kind, seq))
        for name, t in x.items():
            np.save(prefix + name + ".npy", t.numpy().astype(np.int64))
        for name, t in y.items():
            np.save(prefix + name + ".npy", t.numpy().astype(np.float32))
        cases[seq] = ({k: v.numpy() for k, v in x.items()}, {k: v.numpy() for k, v in y.items()})
    print("%s: %s (%.0f KB, %d parameters)" % (kind, os.path.relpath(path), os.path.getsize(path) / 1e3,
                                            lm_models.param_count(model)))
    return path, cases


# ------------------------------------------------- numpy ONNX interpreter
# Only the ops these exports use, with the defaults torch.onnx writes.

def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def np_dtype(onnx_type):
    return onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[onnx_type]


def reshape(x, shape):
    shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return x.reshape(shape)


def slice_(x, starts, ends, axes=None, steps=None):
    axes = range(len(starts)) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    idx = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        idx[a] = slice(int(s), int(e), int(st))
    return x[tuple(idx)]


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def gemm(a, b, c=None, alpha=1.0, beta=1.0, transA=0, transB=0):
    y = alpha * ((a.T if transA else a) @ (b.T if transB else b))
    return y if c is None else y + beta * c


def div(a, b):
    return a // b if np.issubdtype(a.dtype, np.integer) else a / b


def trilu(x, k=None, upper=1):
    k = 0 if k is None else int(k)
    return np.triu(x, k) if upper else np.tril(x, k)


def split(x, sizes, axis):
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=axis))


ERF = np.vectorize(math.erf, otypes=[np.float64])

OPS = {
    "Add": lambda a, i: np.add(*i), "Sub": lambda a, i: np.subtract(*i),
    "Mul": lambda a, i: np.multiply(*i), "Div": lambda a, i: div(*i),
    "Pow": lambda a, i: np.power(*i), "Sqrt": lambda a, i: np.sqrt(i[0]),
    "Neg": lambda a, i: -i[0], "Tanh": lambda a, i: np.tanh(i[0]),
    "Erf": lambda a, i: ERF(i[0]).astype(i[0].dtype),
    "Sigmoid": lambda a, i: 1 / (1 + np.exp(-i[0])),
    "Cos": lambda a, i: np.cos(i[0]), "Sin": lambda a, i: np.sin(i[0]),
    "Equal": lambda a, i: np.equal(*i), "Less": lambda a, i: np.less(*i),
    "Where": lambda a, i: np.where(*i),
    "Cast": lambda a, i: i[0].astype(np_dtype(a["to"])),
    "Constant": lambda a, i: numpy_helper.to_array(a["value"]),
    "ConstantOfShape": lambda a, i: np.full(
        i[0], numpy_helper.to_array(a["value"])[0] if "value" in a else np.float32(0)),
    "Shape": lambda a, i: np.array(i[0].shape, np.int64),
    "Range": lambda a, i: np.arange(i[0], i[1], i[2]).astype(i[0].dtype),
    "Gather": lambda a, i: np.take(i[0], i[1], axis=a.get("axis", 0)),
    "Reshape": lambda a, i: reshape(*i),
    "Expand": lambda a, i: i[0] * np.ones(tuple(i[1]), i[0].dtype),
    "Concat": lambda a, i: np.concatenate(i, axis=a["axis"]),
    "Slice": lambda a, i: slice_(*i),
    "Split": lambda a, i: split(i[0], i[1], a.get("axis", 0)),
    "Squeeze": lambda a, i: np.squeeze(i[0], axis=tuple(i[1])),
    "Unsqueeze": lambda a, i: np.expand_dims(i[0], axis=tuple(i[1])),
    "Transpose": lambda a, i: np.transpose(i[0], a.get("perm")),
    "MatMul": lambda a, i: np.matmul(*i), "Gemm": lambda a, i: gemm(*i, **a),
    "Einsum": lambda a, i: np.einsum(a["equation"].decode(), *i),
    "Trilu": lambda a, i: trilu(*i, **a),
    "Softmax": lambda a, i: softmax(i[0], a.get("axis", -1)),
    "ReduceMean": lambda a, i: np.mean(i[0], axis=tuple(a["axes"]),
                                       keepdims=bool(a.get("keepdims", 1))).astype(i[0].dtype),
}


def numpy_run(model, feeds):
    env = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    env.update(feeds)
    for node in model.graph.node:
        ins = [env[n] if n else None for n in node.input]
        while ins and ins[-1] is None:
            ins.pop()
        out = OPS[node.op_type](attrs(node), ins)
        for name, v in zip(node.output, out if isinstance(out, tuple) else (out,)):
            env[name] = np.asarray(v)
    return {o.name: env[o.name] for o in model.graph.output}


def reference_run(model, feeds):
    try:
        from onnx.reference import ReferenceEvaluator
    except ImportError:
        return "numpy", numpy_run(model, feeds)
    sess = ReferenceEvaluator(model)
    return "onnx.reference", dict(zip([o.name for o in model.graph.output], sess.run(None, feeds)))


def check(path, cases):
    model = onnx.load(path)
    for seq, (x, want) in cases.items():
        how, got = reference_run(model, x)
        for name, w in want.items():
            err = float(np.abs(got[name].astype(np.float64) - w).max())
            print("  %s S=%d %s %s: max abs error %.3g (max |y| %.3g)"
                  % (how, seq, name, got[name].shape, err, float(np.abs(w).max())))
            assert got[name].shape == w.shape and err < 1e-3 * max(1.0, float(np.abs(w).max()))


# ------------------------------------------------- inventory

def value_types(model):
    """Element type of every value, from shape inference and Constants."""
    inferred = onnx.shape_inference.infer_shapes(model)
    g = inferred.graph
    types = {v.name: v.type.tensor_type.elem_type for v in list(g.input) + list(g.output)
             + list(g.value_info)}
    types.update({t.name: t.data_type for t in g.initializer})
    for node in g.node:
        if node.op_type == "Constant":
            types[node.output[0]] = attrs(node)["value"].data_type
    return types


def classify(model):
    """Per node: "const" (only initializers and constants in), "shape"
    (also values derived only from input shapes: foldable once the shapes
    are known) or "data" (depends on input values)."""
    kind = {t.name: "const" for t in model.graph.initializer}
    kind.update({i.name: "data" for i in model.graph.input})
    out = []
    for node in model.graph.node:
        ins = [kind[n] for n in node.input if n]
        if node.op_type == "Shape":
            k = "shape"
        elif "data" in ins:
            k = "data"
        elif "shape" in ins:
            k = "shape"
        else:
            k = "const"
        for o in node.output:
            kind[o] = k
        out.append((node, k))
    return out


def type_name(t):
    return onnx.TensorProto.DataType.Name(t).lower() if t else "?"


def inventory(path):
    model = onnx.load(path)
    types = value_types(model)
    print("== %s: opset %d, %d bytes, %d nodes" % (os.path.relpath(path), model.opset_import[0].version,
                                                 os.path.getsize(path), len(model.graph.node)))
    ops = Counter()
    for node, k in classify(model):
        sig = ",".join(type_name(types.get(n, 0)) for n in node.input if n)
        res = ",".join(type_name(types.get(n, 0)) for n in node.output)
        ops[(node.op_type, k, sig + " -> " + res)] += 1
    for (op, k, sig), n in sorted(ops.items()):
        print("  %-16s %-5s x%-3d %s" % (op, k, n, sig))
    for node in model.graph.node:
        if node.op_type in ("Range", "Expand", "Trilu", "ConstantOfShape", "Where", "Einsum",
                            "Cast", "Split", "Gather", "ReduceMean", "Softmax", "Gemm"):
            a = {k: (numpy_helper.to_array(v).tolist() if isinstance(v, onnx.TensorProto) else v)
                 for k, v in attrs(node).items()}
            print("  attr %s %s %s" % (node.op_type, node.name, a))


# Generation: the decoders as prefill + decode step
# (lm_models.export_generation), a prompt of GEN_PROMPT tokens and
# GEN_TOKENS greedy tokens after it, so that the last step fills the cache
# to the tiny models' 64 positions.
GEN_PROMPT = 7
GEN_TOKENS = 57


def write_generation(kind):
    cfg = lm_models.tiny_config(kind)
    model = lm_models.build(kind, cfg)
    prefill = os.path.join(OUT, kind + "_prefill_tiny.onnx")
    step = os.path.join(OUT, kind + "_step_tiny.onnx")
    lm_models.export_generation(model, cfg, prefill, step)
    for path in (prefill, step):
        onnx.checker.check_model(onnx.load(path))
    gen = torch.Generator().manual_seed(3)
    prompt = torch.randint(0, cfg["vocab"], (1, GEN_PROMPT), generator=gen)
    tokens, logits = lm_models.greedy(model, prompt, GEN_TOKENS)
    with torch.no_grad():  # the cache changes nothing: one run over every position agrees
        full = model(torch.cat([prompt, tokens[None, :-1]], 1))[0, GEN_PROMPT - 1:]
    assert torch.allclose(full, logits, rtol=1e-4, atol=1e-5), "cached and full logits differ"
    for name, t in (("prompt", prompt), ("tokens", tokens), ("logits", logits)):
        np.save(os.path.join(OUT, "%s_gen_%s.npy" % (kind, name)),
                t.numpy().astype(np.float32 if name == "logits" else np.int64))
    print("%s generation: %s, %s; %d-token prompt, %d tokens" % (
        kind, os.path.relpath(prefill), os.path.relpath(step), GEN_PROMPT, GEN_TOKENS))


def main(argv):
    os.makedirs(OUT, exist_ok=True)
    for kind in lm_models.KINDS:
        path, cases = write_model(kind)
        check(path, cases)
        if "--inventory" in argv:
            inventory(path)
    for kind in ("gpt2", "llama"):
        write_generation(kind)


if __name__ == "__main__":
    main(sys.argv[1:])
