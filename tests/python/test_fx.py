"""mlc_tune.from_torch: PyTorch modules through torch.fx. Outputs match
PyTorch's (CNNs, a transformer encoder); ResNet-18, MobileNetV2 and the
encoder give the same kernels (symbols and workload hashes, so the same tuning
records) as their ONNX exports; a node the translator does not know is
named in the error."""
import os
import tempfile
import unittest

import numpy as np

try:
    import torch
    import torch.fx  # noqa: F401
except ImportError:
    torch = None
try:
    import torchvision
except ImportError:
    torchvision = None

import mlc_tune

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if torch is not None:
    class SmallNet(torch.nn.Module):
        """The layers a CNN traces to: conv, batch norm, ReLU6, pool,
        residual add, flatten, linear, softmax; a method and a function."""

        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False)
            self.bn = torch.nn.BatchNorm2d(8)
            self.act = torch.nn.ReLU6()
            self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1, groups=2)
            self.pool = torch.nn.MaxPool2d(2)
            self.fc = torch.nn.Linear(8 * 4 * 4, 10)

        def forward(self, x):
            y = self.act(self.bn(self.conv(x)))
            y = torch.relu(self.conv2(y) + y) * 0.5
            y = self.pool(y).flatten(1)
            return torch.softmax(self.fc(y), dim=-1)

    class TinyLM(torch.nn.Module):
        """What language models trace to without data-dependent Python: int64
        token ids into an embedding, a position table sliced by a constant,
        an int mask converted to float, a constant causal mask filled in,
        addmm, an RMS norm (pow, mean, rsqrt), negation, indexing, tanh."""

        def __init__(self, vocab=50, seq=6, d=16):
            super().__init__()
            self.emb = torch.nn.Embedding(vocab, d)
            self.pos = torch.nn.Parameter(torch.randn(32, d))
            self.register_buffer("causal", torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1))
            self.w = torch.nn.Parameter(torch.randn(d, d) / 4)
            self.b = torch.nn.Parameter(torch.randn(d))
            self.seq = seq

        def forward(self, ids, mask):
            h = self.emb(ids) + self.pos[: self.seq]
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
            q = torch.addmm(self.b, h.view(-1, h.shape[-1]), self.w).view(h.shape)
            scores = torch.matmul(q, h.transpose(-1, -2)).masked_fill(self.causal, -1e9)
            scores = scores + (1.0 - mask[:, None, :].to(torch.float32)) * -1e9
            att = torch.softmax(scores, dim=-1)
            out = torch.matmul(att, h)
            return torch.tanh(-out[:, 0]), out

    class Unsupported(torch.nn.Module):
        def forward(self, x):
            return torch.sort(x, dim=-1)[0]


def rel_err(got, want):
    return float((got - want).abs().max() / want.abs().max())


@unittest.skipIf(torch is None, "PyTorch is not installed (python3-torch)")
class FxTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)

    def same_as_torch(self, net, x, name):
        net.eval()
        m = mlc_tune.from_torch(net, x, name=name).compile()
        with torch.no_grad():
            want = net(x)
        self.assertLess(rel_err(m(x), want), 1e-4)
        return m

    def same_kernels_as_onnx(self, net, x, name, m):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, name + ".onnx")
            torch.onnx.export(net, (x,), path, opset_version=14, input_names=["input"],
                              output_names=["output"], do_constant_folding=True)
            o = mlc_tune.load(path)
        ours = sorted((k.symbol, k.workload) for k in m.kernels)
        theirs = sorted((k.symbol, k.workload) for k in o.kernels)
        self.assertEqual(ours, theirs)

    def test_small_net(self):
        net = SmallNet()
        with torch.no_grad():  # batch norm statistics that are not the identity
            net.bn.running_mean.uniform_(-1, 1)
            net.bn.running_var.uniform_(0.5, 2)
        x = torch.randn(1, 3, 8, 8)
        m = self.same_as_torch(net, x, "small")
        self.same_kernels_as_onnx(net, x, "small", m)

    @unittest.skipIf(torchvision is None, "torchvision is not installed")
    def test_resnet18(self):
        net, x = torchvision.models.resnet18().eval(), torch.randn(1, 3, 224, 224)
        m = self.same_as_torch(net, x, "resnet18")
        self.same_kernels_as_onnx(net, x, "resnet18", m)

    @unittest.skipIf(torchvision is None, "torchvision is not installed")
    def test_mobilenet_v2(self):
        net, x = torchvision.models.mobilenet_v2().eval(), torch.randn(1, 3, 224, 224)
        m = self.same_as_torch(net, x, "mobilenet_v2")
        self.same_kernels_as_onnx(net, x, "mobilenet_v2", m)

    def test_transformer_encoder(self):
        """The encoder of models/encoder.onnx (d_model 256, 4 heads, 4 layers),
        shorter: each TransformerEncoderLayer translated whole."""
        layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
                                                 dropout=0.1)
        enc = torch.nn.TransformerEncoder(layer, num_layers=2)
        x = torch.randn(16, 1, 256)
        m = self.same_as_torch(enc, x, "encoder")
        self.same_kernels_as_onnx(enc, x, "encoder", m)
        first = torch.nn.TransformerEncoderLayer(d_model=64, nhead=2, dim_feedforward=128,
                                                 batch_first=True, norm_first=True,
                                                 activation="gelu")
        self.same_as_torch(first, torch.randn(2, 8, 64), "encoder_layer")

    def test_token_ids_and_masks(self):
        net = TinyLM().eval()
        ids = torch.randint(0, 50, (2, 6))
        mask = torch.ones(2, 6, dtype=torch.long)
        mask[1, 4:] = 0
        m = mlc_tune.from_torch(net, (ids, mask), name="tiny_lm").compile()
        self.assertEqual([s.dtype.name for s in m.inputs], ["int64", "int64"])
        with torch.no_grad():
            want = net(ids, mask)
        got = m(ids, mask)
        for g, w in zip(got, want):
            self.assertLess(rel_err(g, w), 1e-4)
        with self.assertRaisesRegex(mlc_tune.MlcError, "element"):
            m(torch.full((2, 6), 99), mask)  # a token id outside the embedding

    def test_language_models(self):
        """examples/lm_models.py's BERT, GPT-2 and Llama (tiny sizes): their
        forward reads shapes in Python (torch.arange over a size), which
        symbolic tracing refuses, so they come in traced at the ATen level."""
        import sys
        sys.path.insert(0, os.path.join(ROOT, "examples"))
        import lm_models
        for kind in ("bert", "gpt2", "llama"):
            cfg = lm_models.tiny_config(kind)
            model = lm_models.build(kind, cfg)
            x = lm_models.example_inputs(kind, cfg, 1, 12, torch.Generator().manual_seed(1),
                                         pad=2 if kind == "bert" else 0)
            m = mlc_tune.from_torch(model, tuple(x.values()), name=kind).compile()
            got = m(*x.values())
            got = got if isinstance(got, tuple) else (got,)
            want = lm_models.run(model, kind, x)
            self.assertEqual(len(got), len(want))
            for g, (name, w) in zip(got, want.items()):
                self.assertLess(rel_err(g, w), 1e-4, "%s %s" % (kind, name))

    def test_graph_module(self):
        gm = torch.fx.symbolic_trace(SmallNet().eval())
        m = self.same_as_torch(gm, torch.randn(1, 3, 8, 8), "small_gm")
        self.assertEqual(m.name, "small_gm")

    def test_unsupported_node_named(self):
        with self.assertRaisesRegex(mlc_tune.UnsupportedError, "node sort: function sort"):
            mlc_tune.from_torch(Unsupported(), torch.randn(2, 5))

    def test_training_batch_norm_refused(self):
        with self.assertRaisesRegex(mlc_tune.UnsupportedError, "training mode"):
            mlc_tune.from_torch(SmallNet().train(), torch.randn(1, 3, 8, 8))


if __name__ == "__main__":
    unittest.main()
