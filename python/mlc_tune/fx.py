"""PyTorch models in through torch.fx (the course's from_fx): the traced
graph is translated node by node (call_module, call_function,
call_method) into our model JSON, parameters taken as constants, then
loaded like any model file. The ops are those the ONNX importer produces
for the same layers (a Linear is a dense and an add, a flatten a reshape,
a batch norm folded into its conv by the graph passes), so a model
brought in either way gets the same kernels and shares tuning records.

    import torchvision, torch, mlc_tune
    m = mlc_tune.from_torch(torchvision.models.resnet18().eval(), torch.randn(1, 3, 224, 224))
"""
import inspect
import json
import operator
import os
import re
import tempfile
import types

import numpy as np

from . import model as _model
from ._lib import MlcError


class UnsupportedError(MlcError):
    """A node the translator does not know: the message names it."""


def _pair(v, n=2):
    return list(v) if isinstance(v, (tuple, list)) else [v] * n


def _bind(node, names, **defaults):
    """A call's arguments by name: the positional ones in the order of names
    (the function's signature), then its keywords, defaults for the rest."""
    args = dict(defaults)
    args.update(zip(names, node.args))
    args.update(node.kwargs)
    return args


class _Translator:
    def __init__(self, gm, example_inputs, constant_inputs=()):
        """constant_inputs: names of placeholders taken as constants (their
        example values), not model inputs: the parameters and sizes that
        torch.compile's graphs receive as arguments."""
        import torch
        import torch.fx
        self.torch = torch
        self.gm = gm
        self.modules = dict(gm.named_modules())
        # Every node's value on the example inputs: shapes, and the values of
        # what does not depend on the inputs (sizes, position ids, causal
        # masks), which become constants instead of ops.
        values = {}

        class Recorder(torch.fx.Interpreter):
            def run_node(self, n):
                values[n.name] = v = super().run_node(n)
                return v

        Recorder(gm).run(*example_inputs)
        self.values = values
        self.dynamic = set()  # nodes whose tensor depends on an input
        self.inputs, self.weights, self.nodes, self.outputs = [], {}, [], []
        self.alias = {}  # dynamic node name -> the name of its value in the graph
        self.static_weight = {}  # static node name -> its weight
        self.pending_bias = {}  # addmm node -> its bias, added after the view that follows
        self.used = set()
        self.forms = self.functional_forms()
        self.constant_inputs = set(constant_inputs)

    # ---- names and values -------------------------------------------------------------------

    def fresh(self, base):
        base = re.sub(r"\W", "_", base)
        if not re.match(r"[A-Za-z_]", base) or base in ("main", "cls") or base.startswith("fused_"):
            base = "v_" + base
        name, k = base, 1
        while name in self.used:
            name, k = "%s_%d" % (base, k), k + 1
        self.used.add(name)
        return name

    def weight(self, base, value):
        """A constant (tensor, array or Python number) as a weight; its name."""
        arr = value.detach().cpu().numpy() if isinstance(value, self.torch.Tensor) else np.asarray(value)
        if arr.dtype != np.float32:
            if not np.issubdtype(arr.dtype, np.number) and arr.dtype != np.bool_:
                raise UnsupportedError("constant %s of dtype %s" % (base, arr.dtype))
            arr = arr.astype(np.float32)
        name = self.fresh(base)
        self.weights[name] = np.ascontiguousarray(arr)
        return name

    def ref(self, a, hint="const"):
        """The name of an argument: a node's value, or a constant (a node that
        does not depend on the inputs, a tensor, a number) made a weight."""
        if isinstance(a, self.torch.fx.Node):
            if a.name in self.dynamic:
                if isinstance(self.alias[a.name], list):
                    raise UnsupportedError("node %s: a tuple where a tensor is wanted" % a.name)
                if self.alias[a.name] is None:
                    raise UnsupportedError("node %s: a result of its op that is not translated"
                                           % a.name)
                return self.alias[a.name]
            if a.name in self.static_weight:
                return self.static_weight[a.name]
            value = self.values[a.name]
            if not isinstance(value, self.torch.Tensor) and not isinstance(value, (int, float, bool)):
                raise UnsupportedError("node %s: a %s where a tensor is wanted" % (a.name, type(value).__name__))
            name = self.weight(a.name, value if isinstance(value, self.torch.Tensor) else np.float32(value))
            self.static_weight[a.name] = name
            return name
        if isinstance(a, (int, float, bool)) or isinstance(a, self.torch.Tensor):
            return self.weight(hint, np.float32(a) if not isinstance(a, self.torch.Tensor) else a)
        raise UnsupportedError("argument %r" % (a,))

    def value(self, a):
        """An argument's concrete value (a node's on the example inputs)."""
        return self.values[a.name] if isinstance(a, self.torch.fx.Node) else a

    def emit(self, node, op, inputs, name=None, **attrs):
        out = name or self.fresh(node.name)
        self.nodes.append(dict(name=out, op=op, inputs=inputs, **attrs))
        return out

    def shape(self, node):
        v = self.value(node)
        if not isinstance(v, self.torch.Tensor):
            raise UnsupportedError("%s: not a tensor" % (getattr(node, "name", repr(node)),))
        return [int(d) for d in v.shape]

    # ---- the ops ------------------------------------------------------------------------------

    def conv2d(self, node, x, w, b, stride, padding, dilation, groups):
        kh, kw = w.shape[2], w.shape[3]
        dil = _pair(dilation)
        if isinstance(padding, str):
            if padding == "valid":
                pads = [0, 0, 0, 0]
            else:  # "same", stride 1
                th, tw = dil[0] * (kh - 1), dil[1] * (kw - 1)
                pads = [th // 2, tw // 2, th - th // 2, tw - tw // 2]
        else:
            p = _pair(padding)
            pads = [p[0], p[1], p[0], p[1]]
        inputs = [self.ref(x), self.weight(node.name + "_weight", w)]
        if b is not None:
            inputs.append(self.weight(node.name + "_bias", b))
        return self.emit(node, "conv2d", inputs, strides=_pair(stride), pads=pads, dilations=dil,
                         groups=int(groups))

    def linear(self, node, x, w, b, shape=None):
        """x @ w.T + b as the ONNX importer has it: a dense, an add; an
        input of rank > 2 as [M, K] and the result reshaped back."""
        shape = shape or self.shape(x)
        ref = self.ref(x)
        if len(shape) != 2:
            ref = self.emit(node, "reshape", [ref], name=self.fresh(node.name + "_2d"),
                            shape=[int(np.prod(shape[:-1])), shape[-1]])
        last = len(shape) == 2
        y = self.emit(node, "dense", [ref, self.weight(node.name + "_weight", w)],
                      name=None if last and b is None else self.fresh(node.name + "_mm"))
        if b is not None:
            y = self.emit(node, "add", [y, self.weight(node.name + "_bias", b)],
                          name=None if last else self.fresh(node.name + "_add"))
        if not last:
            y = self.emit(node, "reshape", [y], shape=list(shape[:-1]) + [int(w.shape[0])])
        return y

    def pool(self, node, op, x, kernel, stride, padding, ceil_mode, **extra):
        p = _pair(padding)
        return self.emit(node, op, [self.ref(x)], kernel=_pair(kernel),
                         strides=_pair(stride if stride else kernel), pads=[p[0], p[1], p[0], p[1]],
                         ceil_mode=bool(ceil_mode), **extra)

    def adaptive_avg(self, node, x, size):
        if _pair(size) != [1, 1]:
            raise UnsupportedError("node %s: adaptive_avg_pool2d to %s (only 1x1)" % (node.name, size))
        return self.emit(node, "global_avg_pool2d", [self.ref(x)])

    def reshape(self, node, x):
        return self.emit(node, "reshape", [self.ref(x)], shape=self.shape(node))

    def batch_norm(self, node, x, mean, var, gamma, beta, eps):
        """Inference batch norm (running statistics), folded into the conv
        before it by the graph passes."""
        ws = [self.weight(node.name + s, v) for s, v in
              (("_gamma", gamma if gamma is not None else self.torch.ones_like(mean)),
               ("_beta", beta if beta is not None else self.torch.zeros_like(mean)),
               ("_mean", mean), ("_var", var))]
        return self.emit(node, "batch_norm", [self.ref(x)] + ws, eps=float(eps))

    def layer_norm(self, node, x, normalized_shape, w, b, eps):
        normalized_shape = _pair(normalized_shape, 1)
        if len(normalized_shape) != 1:
            raise UnsupportedError("node %s: LayerNorm over %d axes" % (node.name, len(normalized_shape)))
        w = w if w is not None else self.torch.ones(normalized_shape)
        b = b if b is not None else self.torch.zeros(normalized_shape)
        return self.emit(node, "layernorm", [self.ref(x), self.weight(node.name + "_weight", w),
                                             self.weight(node.name + "_bias", b)], eps=float(eps))

    def hard_sigmoid(self, node, x):
        return self.emit(node, "hard_sigmoid", [self.ref(x)], alpha=1 / 6, beta=0.5)

    def silu(self, node, x):
        s = self.emit(node, "sigmoid", [self.ref(x)], name=self.fresh(node.name + "_sigmoid"))
        return self.emit(node, "multiply", [self.ref(x), s])

    def split(self, node, x, size, dim):
        """x.split(size, dim): a list of slices; size an int (equal parts,
        the last one shorter) or a list of section sizes."""
        shape = self.shape(x)
        dim %= len(shape)
        if isinstance(size, int):
            bounds = [(lo, min(lo + size, shape[dim])) for lo in range(0, shape[dim], size)]
        else:
            ends = np.cumsum([int(v) for v in size])
            bounds = [(int(e - v), int(e)) for e, v in zip(ends, size)]
        return [self.emit(node, "slice", [self.ref(x)], axes=[dim], starts=[lo], ends=[hi],
                          name=self.fresh("%s_%d" % (node.name, k)))
                for k, (lo, hi) in enumerate(bounds)]

    def module(self, node):
        nn = self.torch.nn
        mod = self.modules[node.target]
        x = node.args[0] if node.args else None
        t = type(mod)
        if t is nn.Conv2d:
            if mod.padding_mode != "zeros":
                raise UnsupportedError("node %s: Conv2d padding_mode %s" % (node.name, mod.padding_mode))
            return self.conv2d(node, x, mod.weight, mod.bias, mod.stride, mod.padding, mod.dilation,
                               mod.groups)
        if t in (nn.BatchNorm2d, nn.BatchNorm1d):
            if mod.training or mod.running_mean is None:
                raise UnsupportedError("node %s: %s in training mode (call .eval())" % (node.name, t.__name__))
            return self.batch_norm(node, x, mod.running_mean, mod.running_var, mod.weight, mod.bias, mod.eps)
        if t is nn.Linear:
            return self.linear(node, x, mod.weight, mod.bias)
        if t is nn.MaxPool2d:
            if _pair(mod.dilation) != [1, 1] or mod.return_indices:
                raise UnsupportedError("node %s: MaxPool2d with dilation or indices" % node.name)
            return self.pool(node, "max_pool2d", x, mod.kernel_size, mod.stride, mod.padding,
                             mod.ceil_mode)
        if t is nn.AvgPool2d:
            return self.pool(node, "avg_pool2d", x, mod.kernel_size, mod.stride, mod.padding,
                             mod.ceil_mode, count_include_pad=bool(mod.count_include_pad))
        if t is nn.AdaptiveAvgPool2d:
            return self.adaptive_avg(node, x, mod.output_size)
        if t is nn.Flatten:
            return self.reshape(node, x)
        if t is nn.LayerNorm:
            return self.layer_norm(node, x, mod.normalized_shape, mod.weight, mod.bias, mod.eps)
        if t in (nn.Softmax, nn.LogSoftmax):
            return self.emit(node, "softmax" if t is nn.Softmax else "log_softmax", [self.ref(x)],
                             axis=-1 if mod.dim is None else int(mod.dim))
        if t in (nn.Dropout, nn.Identity):
            return self.ref(x)
        if t is nn.Hardtanh or t is nn.ReLU6:
            return self.emit(node, "clip", [self.ref(x)], min=float(mod.min_val), max=float(mod.max_val))
        if t is nn.Hardsigmoid:
            return self.hard_sigmoid(node, x)
        if t is nn.LeakyReLU:
            return self.emit(node, "leaky_relu", [self.ref(x)], alpha=float(mod.negative_slope))
        if t is nn.GELU and getattr(mod, "approximate", "none") != "none":
            raise UnsupportedError("node %s: GELU approximate=%s" % (node.name, mod.approximate))
        unary = {nn.ReLU: "relu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh", nn.GELU: "gelu",
                 nn.Hardswish: "hard_swish"}
        if t in unary:
            return self.emit(node, unary[t], [self.ref(x)])
        if t is nn.Embedding:
            return self.emit(node, "gather", [self.weight(node.name + "_weight", mod.weight), self.ref(x)])
        if t is nn.TransformerEncoderLayer:
            if node.kwargs.get("src_mask") is not None or node.kwargs.get("src_key_padding_mask") is not None or len(node.args) > 1:
                raise UnsupportedError("node %s: TransformerEncoderLayer with a mask" % node.name)
            return _EncoderLayer(self, node, mod).emit()
        if t is nn.SiLU:
            return self.silu(node, x)
        raise UnsupportedError("node %s: module %s (%s) is not supported" % (node.name, node.target, t.__name__))

    def getitem(self, node, x, idx):
        """x[idx] for slices (step 1), integers and None: a slice of the axes
        cut, then the result's shape."""
        shape = self.shape(x)
        idx = idx if isinstance(idx, tuple) else (idx,)
        if any(i is Ellipsis for i in idx):
            k = idx.index(Ellipsis)
            fill = len(shape) - sum(1 for i in idx if i is not None and i is not Ellipsis)
            idx = idx[:k] + (slice(None),) * fill + idx[k + 1:]
        axes, starts, ends, d = [], [], [], 0
        for it in idx:
            if it is None:
                continue
            if isinstance(it, slice):
                if it.step not in (None, 1):
                    raise UnsupportedError("node %s: a slice with step %s" % (node.name, it.step))
                lo, hi, _ = it.indices(shape[d])
                if (lo, hi) != (0, shape[d]):
                    axes.append(d), starts.append(lo), ends.append(hi)
            elif isinstance(it, int):
                i = it % shape[d]
                axes.append(d), starts.append(i), ends.append(i + 1)
            else:
                raise UnsupportedError("node %s: indexing with %s" % (node.name, type(it).__name__))
            d += 1
        y = self.ref(x)
        out = self.shape(node)
        if axes:
            y = self.emit(node, "slice", [y], axes=axes, starts=starts, ends=ends,
                          name=self.fresh(node.name + "_slice"))
        return self.emit(node, "reshape", [y], shape=out)

    def where(self, node, cond, a, b):
        """where(cond, a, b); a constant condition (a causal mask) as a
        comparison of its 0/1 weight, the graph's constants being float32."""
        if isinstance(cond, self.torch.fx.Node) and cond.name in self.dynamic:
            c = self.ref(cond)
        else:
            c = self.emit(node, "greater", [self.ref(cond, node.name + "_mask"),
                                            self.weight(node.name + "_half", np.float32(0.5))],
                          name=self.fresh(node.name + "_cond"))
        return self.emit(node, "where", [c, self.ref(a, node.name + "_a"), self.ref(b, node.name + "_b")])

    def astype(self, node, x):
        names = {self.torch.float32: "float32", self.torch.int64: "int64",
                 self.torch.int32: "int32", self.torch.bool: "bool"}
        to = self.value(node).dtype
        if to not in names:
            raise UnsupportedError("node %s: conversion to %s" % (node.name, to))
        if self.value(x).dtype == to:
            return self.ref(x)
        return self.emit(node, "astype", [self.ref(x)], to=names[to])

    def power(self, node, x, e):
        if isinstance(e, (int, float)):
            return self.emit(node, "power", [self.ref(x)], exponent=float(e))
        return self.emit(node, "pow", [self.ref(x), self.ref(e, node.name + "_e")])

    def binary(self, node, op, a, b):
        return self.emit(node, op, [self.ref(a, node.name + "_a"), self.ref(b, node.name + "_b")])

    # ---- functional forms: what dynamo's graphs call where symbolic tracing has modules -----

    def functional_forms(self):
        """{function: translation} for the torch.nn.functional (and torch.*)
        forms of the layers. torch.compile's graphs inline the modules'
        forward, so a Conv2d arrives as torch.conv2d with its weight an
        argument; symbolic traces call some of these too (F.gelu, F.silu)."""
        torch, F = self.torch, self.torch.nn.functional
        forms = {torch.conv2d: self.f_conv2d,  # F.conv2d is the same builtin
                 F.batch_norm: self.f_batch_norm,
                 F.linear: self.f_linear,
                 F.layer_norm: self.f_layer_norm,
                 F.embedding: self.f_embedding,
                 F.max_pool2d: self.f_max_pool2d,
                 F.avg_pool2d: self.f_avg_pool2d,
                 F.hardtanh: self.f_hardtanh,
                 F.relu6: lambda n: self.emit(n, "clip", [self.ref(n.args[0])], min=0.0, max=6.0),
                 F.hardsigmoid: lambda n: self.hard_sigmoid(n, n.args[0]),
                 F.silu: lambda n: self.silu(n, n.args[0]),
                 F.leaky_relu: self.f_leaky_relu,
                 F.gelu: self.f_gelu,
                 F.log_softmax: self.f_log_softmax,
                 F.dropout: self.f_dropout,
                 torch.split: self.f_split,
                 F.multi_head_attention_forward: self.f_self_attention}
        encoder_fastpath = getattr(torch, "_transformer_encoder_layer_fwd", None)
        if encoder_fastpath is not None:
            forms[encoder_fastpath] = self.f_encoder_layer
        return forms

    def constant(self, node, a, what):
        """The value of an argument that must not depend on the inputs (a
        weight: dynamo passes parameters as arguments)."""
        if isinstance(a, self.torch.fx.Node) and a.name in self.dynamic:
            raise UnsupportedError("node %s: its %s is computed from the inputs" % (node.name, what))
        return self.value(a)

    def f_conv2d(self, node):
        a = _bind(node, ("input", "weight", "bias", "stride", "padding", "dilation", "groups"),
                  bias=None, stride=1, padding=0, dilation=1, groups=1)
        return self.conv2d(node, a["input"], self.constant(node, a["weight"], "weight"),
                           self.constant(node, a["bias"], "bias"), a["stride"], a["padding"],
                           a["dilation"], a["groups"])

    def f_batch_norm(self, node):
        a = _bind(node, ("input", "running_mean", "running_var", "weight", "bias", "training",
                         "momentum", "eps"), weight=None, bias=None, training=False, eps=1e-5)
        if a["training"] or a["running_mean"] is None:
            raise UnsupportedError("node %s: batch_norm in training mode (call .eval())" % node.name)
        c = lambda k: self.constant(node, a[k], k)
        return self.batch_norm(node, a["input"], c("running_mean"), c("running_var"), c("weight"),
                               c("bias"), a["eps"])

    def f_linear(self, node):
        a = _bind(node, ("input", "weight", "bias"), bias=None)
        return self.linear(node, a["input"], self.constant(node, a["weight"], "weight"),
                           self.constant(node, a["bias"], "bias"))

    def f_layer_norm(self, node):
        a = _bind(node, ("input", "normalized_shape", "weight", "bias", "eps"), weight=None,
                  bias=None, eps=1e-5)
        return self.layer_norm(node, a["input"], a["normalized_shape"],
                               self.constant(node, a["weight"], "weight"),
                               self.constant(node, a["bias"], "bias"), a["eps"])

    def f_embedding(self, node):
        a = _bind(node, ("input", "weight", "padding_idx", "max_norm"), max_norm=None)
        if a["max_norm"] is not None:  # renormalizes the weight in place as it reads it
            raise UnsupportedError("node %s: embedding with max_norm" % node.name)
        w = self.constant(node, a["weight"], "weight")
        return self.emit(node, "gather", [self.weight(node.name + "_weight", w), self.ref(a["input"])])

    def f_max_pool2d(self, node):
        a = _bind(node, ("input", "kernel_size", "stride", "padding", "dilation", "ceil_mode",
                         "return_indices"), stride=None, padding=0, dilation=1, ceil_mode=False,
                  return_indices=False)
        if _pair(a["dilation"]) != [1, 1] or a["return_indices"]:
            raise UnsupportedError("node %s: max_pool2d with dilation or indices" % node.name)
        return self.pool(node, "max_pool2d", a["input"], a["kernel_size"], a["stride"], a["padding"],
                         a["ceil_mode"])

    def f_avg_pool2d(self, node):
        a = _bind(node, ("input", "kernel_size", "stride", "padding", "ceil_mode",
                         "count_include_pad", "divisor_override"), stride=None, padding=0,
                  ceil_mode=False, count_include_pad=True, divisor_override=None)
        if a["divisor_override"] is not None:
            raise UnsupportedError("node %s: avg_pool2d with divisor_override" % node.name)
        return self.pool(node, "avg_pool2d", a["input"], a["kernel_size"], a["stride"], a["padding"],
                         a["ceil_mode"], count_include_pad=bool(a["count_include_pad"]))

    def f_hardtanh(self, node):
        a = _bind(node, ("input", "min_val", "max_val"), min_val=-1.0, max_val=1.0)
        return self.emit(node, "clip", [self.ref(a["input"])], min=float(a["min_val"]),
                         max=float(a["max_val"]))

    def f_leaky_relu(self, node):
        a = _bind(node, ("input", "negative_slope"), negative_slope=0.01)
        return self.emit(node, "leaky_relu", [self.ref(a["input"])], alpha=float(a["negative_slope"]))

    def f_gelu(self, node):
        a = _bind(node, ("input",), approximate="none")
        if a["approximate"] != "none":  # ours is the erf form
            raise UnsupportedError("node %s: gelu approximate=%s" % (node.name, a["approximate"]))
        return self.emit(node, "gelu", [self.ref(a["input"])])

    def f_log_softmax(self, node):
        a = _bind(node, ("input", "dim"), dim=None)
        if a["dim"] is None:
            raise UnsupportedError("node %s: log_softmax without dim" % node.name)
        return self.emit(node, "log_softmax", [self.ref(a["input"])], axis=int(a["dim"]))

    def f_dropout(self, node):
        a = _bind(node, ("input", "p", "training"), p=0.5, training=True)
        if a["training"] and a["p"] > 0:
            raise UnsupportedError("node %s: dropout in training mode (call .eval())" % node.name)
        return self.ref(a["input"])

    def f_split(self, node):
        a = _bind(node, ("tensor", "split_size_or_sections", "dim"), dim=0)
        return self.split(node, a["tensor"], a["split_size_or_sections"], a["dim"])

    def f_self_attention(self, node):
        """F.multi_head_attention_forward as nn.MultiheadAttention calls it
        for self-attention (query, key and value the same tensor, [S, B, E]):
        the attention of _EncoderLayer. Returns (output, None): the attention
        weights are not translated (an error only where they are read)."""
        names = ("query", "key", "value", "embed_dim_to_check", "num_heads", "in_proj_weight",
                 "in_proj_bias", "bias_k", "bias_v", "add_zero_attn", "dropout_p",
                 "out_proj_weight", "out_proj_bias", "training", "key_padding_mask",
                 "need_weights", "attn_mask", "use_separate_proj_weight")
        a = _bind(node, names, training=True, key_padding_mask=None, attn_mask=None,
                  use_separate_proj_weight=False, is_causal=False)
        if not (a["query"] is a["key"] is a["value"]):
            raise UnsupportedError("node %s: attention other than self-attention" % node.name)
        if any(a[k] is not None for k in ("bias_k", "bias_v", "key_padding_mask", "attn_mask")) or \
                a["add_zero_attn"] or a["use_separate_proj_weight"] or a["is_causal"]:
            raise UnsupportedError("node %s: attention with masks, extra keys or separate q/k/v "
                                   "weights" % node.name)
        if a["training"] and a["dropout_p"] > 0:
            raise UnsupportedError("node %s: attention dropout in training mode" % node.name)
        c = lambda k: self.constant(node, a[k], k)
        attn = types.SimpleNamespace(
            embed_dim=int(a["embed_dim_to_check"]), num_heads=int(a["num_heads"]),
            in_proj_weight=c("in_proj_weight"), in_proj_bias=c("in_proj_bias"), bias_k=None,
            add_zero_attn=False, out_proj=types.SimpleNamespace(weight=c("out_proj_weight"),
                                                                bias=c("out_proj_bias")))
        layer = _EncoderLayer(self, node, types.SimpleNamespace(self_attn=attn))
        S, B, _ = layer.shape
        return [layer.attention(self.ref(a["query"]), S, B), None]

    def f_encoder_layer(self, node):
        """torch._transformer_encoder_layer_fwd: nn.TransformerEncoderLayer's
        fast path (eval, no grad, batch_first), every weight an argument; the
        same translation as the module."""
        names = ("src", "embed_dim", "num_heads", "qkv_weight", "qkv_bias", "proj_weight",
                 "proj_bias", "use_gelu", "norm_first", "eps", "norm_weight_1", "norm_bias_1",
                 "norm_weight_2", "norm_bias_2", "ffn_weight_1", "ffn_bias_1", "ffn_weight_2",
                 "ffn_bias_2", "mask", "mask_type")
        a = _bind(node, names, mask=None, mask_type=None)
        if a["mask"] is not None:
            raise UnsupportedError("node %s: TransformerEncoderLayer with a mask" % node.name)
        c = lambda k: self.constant(node, a[k], k)
        ns = types.SimpleNamespace
        eps = float(a["eps"])
        layer = ns(self_attn=ns(embed_dim=int(a["embed_dim"]), num_heads=int(a["num_heads"]),
                                in_proj_weight=c("qkv_weight"), in_proj_bias=c("qkv_bias"),
                                bias_k=None, add_zero_attn=False, batch_first=True,
                                out_proj=ns(weight=c("proj_weight"), bias=c("proj_bias"))),
                   norm_first=bool(a["norm_first"]),
                   norm1=ns(weight=c("norm_weight_1"), bias=c("norm_bias_1"), eps=eps),
                   norm2=ns(weight=c("norm_weight_2"), bias=c("norm_bias_2"), eps=eps),
                   linear1=ns(weight=c("ffn_weight_1"), bias=c("ffn_bias_1")),
                   linear2=ns(weight=c("ffn_weight_2"), bias=c("ffn_bias_2")),
                   activation=self.torch.nn.functional.gelu if a["use_gelu"] else
                   self.torch.nn.functional.relu)
        return _EncoderLayer(self, node, layer).emit()

    def aten(self, node):
        """An ATen op of a graph traced by make_fx (the fallback for modules
        symbolic tracing refuses)."""
        name, args, kw = node.target.overloadpacket.__name__, node.args, node.kwargs
        x = args[0] if args else None
        binary = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide",
                  "mm": "matmul", "bmm": "matmul", "matmul": "matmul"}
        if name in binary:
            if kw.get("alpha", 1) != 1 or kw.get("rounding_mode"):
                raise UnsupportedError("node %s: %s with %s" % (node.name, name, dict(kw)))
            return self.binary(node, binary[name], args[0], args[1])
        if name == "rsub":  # other - x
            return self.binary(node, "subtract", args[1], args[0])
        unary = {"relu": "relu", "tanh": "tanh", "sigmoid": "sigmoid", "exp": "exp", "sqrt": "sqrt",
                 "neg": "negative", "erf": "erf", "log": "log", "abs": "abs", "sin": "sin", "cos": "cos"}
        if name in unary:
            return self.emit(node, unary[name], [self.ref(x)])
        if name in ("view", "_unsafe_view", "_reshape_alias", "reshape", "unsqueeze", "squeeze",
                    "flatten"):
            bias = self.pending_bias.pop(x.name, None)
            if bias is None:
                return self.reshape(node, x)
            y = self.emit(node, "reshape", [self.ref(x)], shape=self.shape(node),
                          name=self.fresh(node.name + "_3d"))
            return self.emit(node, "add", [self.ref(bias, node.name + "_bias"), y])
        if name == "expand":
            if np.prod(self.shape(node)) == np.prod(self.shape(x)):
                return self.reshape(node, x)
            zeros = self.weight(node.name + "_zeros", np.zeros(self.shape(node), np.float32))
            return self.emit(node, "add", [self.ref(x), zeros])  # broadcast to the shape
        if name in ("clone", "detach", "alias", "lift_fresh_copy", "contiguous"):
            return self.ref(x)
        if name == "embedding":
            return self.emit(node, "gather", [self.ref(args[0], node.name + "_weight"), self.ref(args[1])])
        if name == "addmm":
            mm = self.emit(node, "matmul", [self.ref(args[1]), self.ref(args[2], node.name + "_w")],
                           name=self.fresh(node.name + "_mm"))
            users = list(node.users)
            w = args[2]
            linear = isinstance(w, self.torch.fx.Node) and w.op == "call_function" and \
                getattr(w.target, "overloadpacket", None) is not None and \
                w.target.overloadpacket.__name__ == "t"
            if linear and len(users) == 1 and users[0].op == "call_function" and \
                    getattr(users[0].target, "overloadpacket", None) is not None and \
                    users[0].target.overloadpacket.__name__ in ("view", "_unsafe_view"):
                # F.linear on an N-d input (addmm by the transposed weight,
                # then a view back): the bias goes after the view, add(bias,
                # y), as the ONNX exporter spells nn.Linear (an addmm written
                # out stays a Gemm: add(y, bias) before the view)
                self.pending_bias[node.name] = args[0]
                return mm
            return self.emit(node, "add", [mm, self.ref(args[0], node.name + "_bias")])
        if name in ("t", "transpose", "permute"):
            nd = len(self.shape(x))
            if name == "t":
                perm = [1, 0]
            elif name == "transpose":
                perm = list(range(nd))
                i, j = args[1] % nd, args[2] % nd
                perm[i], perm[j] = perm[j], perm[i]
            else:
                perm = [int(d) % nd for d in args[1]]
            return self.emit(node, "transpose", [self.ref(x)], axes=perm)
        if name == "_softmax":
            return self.emit(node, "softmax", [self.ref(x)], axis=int(args[1]))
        if name == "gelu":
            if kw.get("approximate", "none") != "none":
                raise UnsupportedError("node %s: gelu approximate=%s" % (node.name, kw["approximate"]))
            return self.emit(node, "gelu", [self.ref(x)])
        if name == "silu":
            return self.silu(node, x)
        if name in ("rsqrt", "reciprocal"):
            r = self.ref(x)
            if name == "rsqrt":
                r = self.emit(node, "sqrt", [r], name=self.fresh(node.name + "_sqrt"))
            return self.emit(node, "divide", [self.weight(node.name + "_one", np.float32(1)), r])
        if name == "pow":
            e = args[1]
            return self.power(node, x, e if isinstance(e, self.torch.fx.Node) and e.name in self.dynamic
                              else self.value(e))
        if name == "mean":
            dims = [int(d) for d in args[1]]
            return self.emit(node, "reduce_mean", [self.ref(x)], axes=dims,
                             keepdims=bool(args[2] if len(args) > 2 else kw.get("keepdim", False)))
        if name == "native_layer_norm":  # (out, mean, rstd): only out is read
            if len(args[1]) != 1:
                raise UnsupportedError("node %s: layer norm over %d axes" % (node.name, len(args[1])))
            out = self.emit(node, "layernorm", [self.ref(x), self.ref(args[2], node.name + "_weight"),
                                                self.ref(args[3], node.name + "_bias")], eps=float(args[4]))
            return [out, None, None]
        if name == "slice":
            dim, shape = args[1] % len(self.shape(x)), self.shape(x)
            lo, hi, step = slice(args[2] if len(args) > 2 else None,
                                 args[3] if len(args) > 3 else None,
                                 args[4] if len(args) > 4 else 1).indices(shape[dim])
            if step != 1:
                raise UnsupportedError("node %s: a slice with step %d" % (node.name, step))
            if (lo, hi) == (0, shape[dim]):
                return self.ref(x)
            return self.emit(node, "slice", [self.ref(x)], axes=[dim], starts=[lo], ends=[hi])
        if name == "select":
            idx = [slice(None)] * len(self.shape(x))
            idx[args[1] % len(idx)] = args[2]
            return self.getitem(node, x, tuple(idx))
        if name == "split":
            return self.split(node, x, args[1], args[2] if len(args) > 2 else 0)
        if name == "cat":
            return self.emit(node, "concat", [self.ref(a) for a in args[0]],
                             axis=int(args[1] if len(args) > 1 else 0))
        if name in ("masked_fill", "masked_fill_"):
            return self.where(node, args[1], self.value(args[2]), x)
        if name == "where":
            return self.where(node, args[0], args[1], args[2])
        if name == "_to_copy":
            return self.astype(node, x)
        raise UnsupportedError("node %s: ATen op %s is not supported" % (node.name, node.target))

    def function(self, node):
        torch, F = self.torch, self.torch.nn.functional
        f, args, kw = node.target, node.args, node.kwargs
        if isinstance(f, torch._ops.OpOverload):
            return self.aten(node)
        if getattr(f, "__name__", "") == "_assert_is_none":  # the guard of a concrete argument
            return None
        if f in self.forms:
            return self.forms[f](node)
        binary = {operator.add: "add", torch.add: "add", operator.mul: "multiply", torch.mul: "multiply",
                  operator.sub: "subtract", torch.sub: "subtract", operator.truediv: "divide",
                  torch.div: "divide", torch.matmul: "matmul", operator.matmul: "matmul"}
        if f in binary and not kw:
            return self.binary(node, binary[f], args[0], args[1])
        unary = {F.relu: "relu", torch.relu: "relu", torch.sigmoid: "sigmoid", torch.tanh: "tanh",
                 torch.exp: "exp", torch.sqrt: "sqrt", F.hardswish: "hard_swish"}
        if f in unary:
            return self.emit(node, unary[f], [self.ref(args[0])])
        if f is torch.flatten or f in (torch.unsqueeze, torch.squeeze, torch.reshape):
            return self.reshape(node, args[0])
        if f is operator.getitem:
            if isinstance(args[0], torch.fx.Node) and isinstance(self.alias.get(args[0].name), list):
                return self.alias[args[0].name][args[1]]  # None: an error only when read
            return self.getitem(node, args[0], args[1])
        if f is torch.addmm and not kw:  # bias + x @ w
            mm = self.emit(node, "matmul", [self.ref(args[1]), self.ref(args[2], node.name + "_w")],
                           name=self.fresh(node.name + "_mm"))
            return self.emit(node, "add", [mm, self.ref(args[0], node.name + "_bias")])
        if f in (torch.pow, operator.pow):
            return self.power(node, args[0], self.value(args[1]) if not isinstance(args[1], self.torch.fx.Node)
                              or args[1].name not in self.dynamic else args[1])
        if f in (operator.neg, torch.neg):
            return self.emit(node, "negative", [self.ref(args[0])])
        if f is torch.rsqrt:
            r = self.emit(node, "sqrt", [self.ref(args[0])], name=self.fresh(node.name + "_sqrt"))
            return self.emit(node, "divide", [self.weight(node.name + "_one", np.float32(1)), r])
        if f is torch.where and len(args) == 3:
            return self.where(node, args[0], args[1], args[2])
        if f is torch.tanh:
            return self.emit(node, "tanh", [self.ref(args[0])])
        if f is F.adaptive_avg_pool2d:
            return self.adaptive_avg(node, args[0], args[1] if len(args) > 1 else kw["output_size"])
        if f is torch.cat:
            return self.emit(node, "concat", [self.ref(a) for a in args[0]],
                             axis=int(args[1] if len(args) > 1 else kw.get("dim", 0)))
        if f in (F.softmax, torch.softmax):
            dim = args[1] if len(args) > 1 else kw.get("dim")
            return self.emit(node, "softmax", [self.ref(args[0])], axis=int(dim))
        name = getattr(f, "__name__", str(f))
        raise UnsupportedError("node %s: function %s is not supported" % (node.name, name))

    def method(self, node):
        m, args = node.target, node.args
        if m in ("view", "reshape", "flatten", "unsqueeze", "squeeze", "expand_as") and \
                self.shape(node) and np.prod(self.shape(node)) == np.prod(self.shape(args[0])):
            return self.reshape(node, args[0])
        if m in ("to", "float", "long", "int", "bool", "type_as"):
            return self.astype(node, args[0])
        if m == "masked_fill":
            fill = self.value(args[2] if len(args) > 2 else node.kwargs["value"])
            return self.where(node, args[1], fill, args[0])
        if m == "pow":
            e = args[1]
            return self.power(node, args[0], e if isinstance(e, self.torch.fx.Node) and e.name in self.dynamic
                              else self.value(e))
        if m in ("tanh", "sigmoid", "exp", "sqrt"):
            return self.emit(node, m, [self.ref(args[0])])
        if m == "t":
            return self.emit(node, "transpose", [self.ref(args[0])], axes=[1, 0])
        if m == "softmax":
            dim = args[1] if len(args) > 1 else node.kwargs.get("dim")
            return self.emit(node, "softmax", [self.ref(args[0])], axis=int(dim))
        if m in ("contiguous", "clone", "detach"):
            return self.ref(args[0])
        if m == "split":
            a = _bind(node, ("self", "split_size", "dim"), dim=0)
            return self.split(node, args[0], a["split_size"], a["dim"])
        if m == "relu":
            return self.emit(node, "relu", [self.ref(args[0])])
        if m in ("permute", "transpose"):
            nd = len(self.shape(args[0]))
            if m == "transpose":
                perm = list(range(nd))
                i, j = (a % nd for a in args[1:3])
                perm[i], perm[j] = perm[j], perm[i]
            else:
                perm = [int(a) % nd for a in (args[1] if len(args) == 2 and isinstance(args[1], (list, tuple)) else args[1:])]
            return self.emit(node, "transpose", [self.ref(args[0])], axes=perm)
        if m == "mean":
            dims = args[1] if len(args) > 1 else node.kwargs.get("dim")
            dims = [dims] if isinstance(dims, int) else list(dims)
            return self.emit(node, "reduce_mean", [self.ref(args[0])], axes=dims,
                             keepdims=bool(node.kwargs.get("keepdim", args[2] if len(args) > 2 else False)))
        binary = {"add": "add", "mul": "multiply", "sub": "subtract", "div": "divide"}
        if m in binary and not node.kwargs:
            return self.binary(node, binary[m], args[0], args[1])
        raise UnsupportedError("node %s: method .%s() is not supported" % (node.name, m))

    # ---- the graph ----------------------------------------------------------------------------

    def depends_on_input(self, node):
        """A tensor (or tuple of them) computed from an input; anything else
        (sizes, and tensors of weights, position ids, masks) is a constant."""
        def has_tensor(v):
            return isinstance(v, self.torch.Tensor) or (
                isinstance(v, (tuple, list)) and any(has_tensor(x) for x in v))

        if not has_tensor(self.values.get(node.name)):
            return False
        deps = []
        self.torch.fx.node.map_arg((node.args, node.kwargs), deps.append)
        return any(d.name in self.dynamic for d in deps)

    def translated(self, node, name):
        self.alias[node.name] = name
        self.dynamic.add(node.name)

    def run(self, name, outputs=None):
        """The model JSON; outputs: the nodes to make its outputs (default:
        what the graph returns)."""
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                if node.args and node.args[0] is None:  # a concrete argument (mask=None)
                    continue
                if node.name in self.constant_inputs:
                    continue  # materialized where a dynamic node reads it
                v = self.values[node.name]
                dtypes = {self.torch.float32: "float32", self.torch.int64: "int64",
                          self.torch.int32: "int32", self.torch.bool: "bool"}
                if not isinstance(v, self.torch.Tensor) or v.dtype not in dtypes:
                    raise UnsupportedError("input %s: float32, int64, int32 or bool tensors only"
                                           % node.name)
                n = self.fresh(node.name)
                self.inputs.append({"name": n, "shape": list(v.shape), "dtype": dtypes[v.dtype]})
                self.alias[node.name] = n
                self.dynamic.add(node.name)
            elif node.op == "output":
                outs = node.args[0] if outputs is None else outputs
                outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
                self.outputs = [self.ref(o) for o in outs]
            elif not self.depends_on_input(node):
                continue  # a constant: materialized where a dynamic node reads it
            elif node.op == "call_module":
                self.translated(node, self.module(node))
            elif node.op == "call_function":
                self.translated(node, self.function(node))
            elif node.op == "call_method":
                self.translated(node, self.method(node))
        self.prune()
        return {"name": re.sub(r"\W", "_", name),
                "inputs": self.inputs,
                "weights": [{"name": k, "shape": list(v.shape)} for k, v in self.weights.items()],
                "nodes": self.nodes,
                "outputs": self.outputs}


    def prune(self):
        """Drops the nodes and weights no output needs, which the model
        loader refuses: the parts of a split nobody reads, the results of a
        graph whose outputs are chosen (the torch.compile backend)."""
        needed = set(self.outputs)
        for n in reversed(self.nodes):
            if n["name"] in needed:
                needed.update(n["inputs"])
        self.nodes = [n for n in self.nodes if n["name"] in needed]
        self.weights = {k: v for k, v in self.weights.items() if k in needed}


class _EncoderLayer:
    """nn.TransformerEncoderLayer (no mask, dropout off) as the ops of its
    ONNX export (torch.onnx, opset 14), op for op, so the encoder gets the
    same kernels either way: linear layers as a matmul by the transposed
    weight between reshapes, then add(bias, y); attention heads as slices,
    reshapes and batched matmuls, q divided by sqrt(d); layer norms spelled
    out (mean, subtract, power, mean, add eps, sqrt, divide, scale, shift),
    which the graph's pattern pass turns into layernorm kernels."""

    def __init__(self, tr, node, mod):
        """mod: the layer, or a namespace with its attributes (what the
        functional forms pass; a bare self-attention has no activation)."""
        self.tr, self.node, self.mod = tr, node, mod
        self.shape = tr.shape(node.args[0])
        if len(self.shape) != 3:
            raise UnsupportedError("node %s: a %d-d input (3-d only)" % (node.name, len(self.shape)))
        self.act = self.activation(mod.activation) if hasattr(mod, "activation") else None

    def activation(self, act):
        name = getattr(act, "__name__", type(act).__name__).lower()
        if name not in ("relu", "gelu") or getattr(act, "approximate", "none") != "none":
            raise UnsupportedError("node %s: activation %s" % (self.node.name, act))
        return name

    def op(self, suffix, op, inputs, **attrs):
        return self.tr.emit(self.node, op, inputs, name=self.tr.fresh(self.node.name + "_" + suffix), **attrs)

    def const(self, suffix, value):
        return self.tr.weight(self.node.name + "_" + suffix, value)

    def linear(self, suffix, x, lin_w, lin_b, S, B):
        """[S, B, K] -> [S, B, N] as MatMul(x, W^T) + Add(bias, y)."""
        N, K = lin_w.shape
        x2 = self.op(suffix + "_a2d", "reshape", [x], shape=[S * B, K])
        mm = self.op(suffix + "_mm", "matmul", [x2, self.const(suffix + "_wt", lin_w.detach().t().contiguous())])
        y = self.op(suffix + "_3d", "reshape", [mm], shape=[S, B, N])
        return self.op(suffix, "add", [self.const(suffix + "_bias", lin_b), y])

    def norm(self, suffix, x, ln):
        mean = self.op(suffix + "_mean", "reduce_mean", [x], axes=[-1], keepdims=True)
        d = self.op(suffix + "_sub", "subtract", [x, mean])
        sq = self.op(suffix + "_pow", "power", [d], exponent=2)
        var = self.op(suffix + "_var", "reduce_mean", [sq], axes=[-1], keepdims=True)
        ve = self.op(suffix + "_add_eps", "add", [var, self.const(suffix + "_eps", np.float32(ln.eps))])
        sd = self.op(suffix + "_sqrt", "sqrt", [ve])
        n = self.op(suffix + "_div", "divide", [d, sd])
        sc = self.op(suffix + "_mul", "multiply", [n, self.const(suffix + "_weight", ln.weight)])
        return self.op(suffix, "add", [sc, self.const(suffix + "_bias", ln.bias)])

    def attention(self, x, S, B):
        a = self.mod.self_attn
        E, H = a.embed_dim, a.num_heads
        D = E // H
        if a.in_proj_weight is None or a.bias_k is not None or a.add_zero_attn:
            raise UnsupportedError("node %s: attention with separate q/k/v weights or extra keys"
                                   % self.node.name)
        qkv = self.linear("qkv", x, a.in_proj_weight, a.in_proj_bias, S, B)
        parts = []
        for i, (part, perm) in enumerate((("q", [1, 0, 2]), ("k", [1, 2, 0]), ("v", [1, 0, 2]))):
            p = self.op(part, "slice", [qkv], axes=[2], starts=[i * E], ends=[(i + 1) * E])
            p = self.op(part + "_heads", "reshape", [p], shape=[S, B * H, D])
            parts.append(self.op(part + "_t", "transpose", [p], axes=perm))
        q, kt, v = parts
        q = self.op("q_scaled", "divide", [q, self.const("sqrt_d", np.float32(np.sqrt(D)))])
        scores = self.op("scores", "matmul", [q, kt])
        probs = self.op("probs", "softmax", [scores], axis=2)
        o = self.op("attn", "matmul", [probs, v])
        o = self.op("attn_t", "transpose", [o], axes=[1, 0, 2])
        o = self.op("attn_2d", "reshape", [o], shape=[S * B, E])
        o = self.op("out_proj_mm", "dense", [o, self.const("out_proj_weight", a.out_proj.weight)])
        o = self.op("out_proj", "add", [o, self.const("out_proj_bias", a.out_proj.bias)])
        return self.op("attn_out", "reshape", [o], shape=[S, B, E])

    def feed_forward(self, x, S, B):
        m = self.mod
        h = self.linear("linear1", x, m.linear1.weight, m.linear1.bias, S, B)
        h = self.op(self.act, self.act, [h])
        return self.linear("linear2", h, m.linear2.weight, m.linear2.bias, S, B)

    def emit(self):
        m, tr = self.mod, self.tr
        x = tr.ref(self.node.args[0])
        if m.self_attn.batch_first:  # [B, S, E] -> [S, B, E]
            x = self.op("sbe", "transpose", [x], axes=[1, 0, 2])
            B, S, _ = self.shape
        else:
            S, B, _ = self.shape
        if m.norm_first:
            x = self.op("res1", "add", [x, self.attention(self.norm("norm1", x, m.norm1), S, B)])
            x = self.op("res2", "add", [x, self.feed_forward(self.norm("norm2", x, m.norm2), S, B)])
        else:
            x = self.norm("norm1", self.op("res1", "add", [x, self.attention(x, S, B)]), m.norm1)
            x = self.norm("norm2", self.op("res2", "add", [x, self.feed_forward(x, S, B)]), m.norm2)
        if m.self_attn.batch_first:
            return tr.emit(self.node, "transpose", [x], axes=[1, 0, 2])
        return x


def _trace(module, n_inputs):
    """torch.fx.symbolic_trace with the modules translated whole as leaves
    (a TransformerEncoderLayer's forward branches on its input)."""
    import torch
    import torch.fx

    leaves = (torch.nn.TransformerEncoderLayer,)

    class Tracer(torch.fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, leaves) or super().is_leaf_module(m, qualname)

    if isinstance(module, leaves):  # the root is traced through: wrap it

        class Root(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return self.inner(x)

        module, n_inputs = Root(module), 1

    # forward's parameters past the example inputs keep their defaults
    # (mask=None, ...), so that branches on them trace as Python
    params = list(inspect.signature(module.forward).parameters.values())[n_inputs:]
    concrete = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
    graph = Tracer().trace(module, concrete_args=concrete or None)
    return torch.fx.GraphModule(module, graph, type(module).__name__)


def _trace_aten(module, example_inputs):
    """The module traced at the ATen level on the example inputs (make_fx):
    the fallback where symbolic tracing refuses Python that reads shapes
    (torch.arange over a traced size)."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx
    with torch.no_grad():
        return make_fx(module)(*example_inputs)


def to_json(module, example_inputs, name=None):
    """The model JSON of a torch.nn.Module (traced with torch.fx) or
    fx.GraphModule and its weights as NumPy arrays: (dict, {name: array})."""
    import torch
    import torch.fx
    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    if isinstance(module, torch.fx.GraphModule):
        gm = module
    else:
        try:
            gm = _trace(module, len(example_inputs))
        except (torch.fx.proxy.TraceError, TypeError, RuntimeError):
            gm = _trace_aten(module, example_inputs)
    t = translate(gm, example_inputs, name or type(module).__name__.lower())
    return t.graph, t.weights


def translate(gm, example_inputs, name, constant_inputs=(), outputs=None):
    """An fx.GraphModule translated on example_inputs: the translator, with
    .graph (the model JSON), .weights ({name: array}) and .values (every
    node's value on the example inputs, the outputs among them)."""
    import torch
    with torch.no_grad():
        t = _Translator(gm, example_inputs, constant_inputs)
        t.graph = t.run(name, outputs)
    return t


def load_graph(graph, weights):
    """A model JSON and its weights loaded as a Model (not yet compiled)."""
    with tempfile.TemporaryDirectory(prefix="mlc_fx_") as d:
        path = os.path.join(d, graph["name"] + ".json")
        wdir = os.path.join(d, "weights")
        os.mkdir(wdir)
        for k, v in weights.items():
            np.save(os.path.join(wdir, k + ".npy"), v)
        with open(path, "w") as f:
            json.dump(graph, f)
        return _model.load(path, weights=wdir)


def from_torch(module, example_inputs, name=None):
    """A torch.nn.Module (in eval mode) or fx.GraphModule, traced and
    translated, as a Model (not yet compiled). example_inputs fix the
    input shapes. Unsupported nodes raise UnsupportedError naming them."""
    return load_graph(*to_json(module, example_inputs, name))
