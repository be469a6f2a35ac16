"""mlc_tune.dynamo_backend, the torch.compile backend: a CNN, an encoder
(our attention, nn.TransformerEncoderLayer's two paths) and token ids match
eager PyTorch, with mlc_tune's code answering (no fallback); an op the
translator refuses runs in PyTorch with a warning naming it; a second call
reuses the compiled model; new shapes and parameters changed in place are
compiled again, never answered by the old model; inputs that need autograd
run in PyTorch. The torch.compile tests need PyTorch 2 (tests/cli/python.sh
runs them with build/torch2-venv, `make torch2-deps`); Debian's 1.13 runs
the backend on an fx graph only."""
import math
import unittest
import warnings

try:
    import torch
    import torch.fx
except ImportError:
    torch = None

import mlc_tune

HAS_COMPILE = torch is not None and hasattr(torch, "compile")
NO_COMPILE = "torch.compile needs PyTorch 2; this python has %s (build/torch2-venv: make torch2-deps)" % (
    "PyTorch " + torch.__version__ if torch is not None else "no PyTorch")

if torch is not None:
    nn, F = torch.nn, torch.nn.functional

    class SmallCNN(nn.Module):
        """Conv, batch norm, the activations, a grouped conv and residual, the
        pools, flatten, linear, batch norm 1d, (log) softmax: in dynamo's
        graph the functional forms, the weights arguments."""

        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(8)
            self.acts = nn.Sequential(nn.ReLU6(), nn.Hardswish(), nn.LeakyReLU(0.1), nn.SiLU(),
                                      nn.Dropout(0.2))
            self.conv2 = nn.Conv2d(8, 8, 3, padding=1, groups=2)
            self.pool, self.avg, self.gap = nn.MaxPool2d(2), nn.AvgPool2d(2), nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(8, 6)
            self.bn1 = nn.BatchNorm1d(6)

        def forward(self, x):
            y = self.acts(self.bn(self.conv(x)))
            y = F.gelu(self.conv2(y) + y) * 0.5
            y = self.gap(self.avg(self.pool(y))).flatten(1)
            y = torch.sigmoid(self.bn1(self.fc(y)))
            return torch.softmax(y, dim=-1), F.log_softmax(y, dim=1)

    class TinyEncoder(nn.Module):
        """Token ids to an embedding, attention written out (split, views,
        transposes, matmuls, softmax), layer norms, a GELU feed-forward, then
        an nn.TransformerEncoderLayer and a mean."""

        def __init__(self, vocab=30, d=32, heads=4):
            super().__init__()
            self.heads = heads
            self.emb = nn.Embedding(vocab, d)
            self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff1, self.ff2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)
            self.layer = nn.TransformerEncoderLayer(d, 2, dim_feedforward=48, batch_first=True)

        def forward(self, ids):
            x = self.emb(ids)
            B, S, D = x.shape
            q, k, v = (t.view(B, S, self.heads, D // self.heads).transpose(1, 2)
                       for t in self.qkv(x).split(D, dim=-1))
            a = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(D // self.heads), dim=-1) @ v
            x = self.n1(x + self.out(a.transpose(1, 2).reshape(B, S, D)))
            x = self.n2(x + self.ff2(F.gelu(self.ff1(x))))
            return self.layer(x).mean(dim=1)

    class Sorted(nn.Module):
        """torch.sort: not translated."""

        def forward(self, x):
            return torch.sort(x, dim=-1)[0] * 2

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(12, 16), nn.Linear(16, 3)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))


def rel_err(got, want):
    return float((got - want).abs().max() / want.abs().max())


class BackendOptionsTest(unittest.TestCase):
    def test_trials_need_db(self):
        with self.assertRaisesRegex(ValueError, "needs db"):
            mlc_tune.dynamo_backend(trials=8)


@unittest.skipIf(torch is None, "PyTorch is not installed (python3-torch)")
class BackendOnFxGraphTest(unittest.TestCase):
    def test_backend_on_fx_graph(self):
        """The backend called as dynamo would, on a symbolically traced graph
        (any PyTorch with torch.fx): the same answers, the second call
        reusing the model."""
        torch.manual_seed(0)
        net = MLP().eval()
        backend = mlc_tune.dynamo_backend()
        x = torch.randn(4, 12)
        fn = backend(torch.fx.symbolic_trace(net), [x])
        with torch.no_grad():
            for _ in range(2):
                x = torch.randn(4, 12)
                self.assertLess(rel_err(fn(x), net(x)), 1e-4)
        self.assertEqual((backend.graphs[0].compiles, backend.graphs[0].runs), (1, 2))


@unittest.skipIf(not HAS_COMPILE, NO_COMPILE)
class DynamoTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        torch._dynamo.reset()  # no graph cached by an earlier test's backend

    def compiled(self, net, **options):
        backend = mlc_tune.dynamo_backend(**options)
        return torch.compile(net, backend=backend), backend

    def assert_same(self, got, want):
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        self.assertEqual(len(got), len(want))
        for g, w in zip(got, want):
            self.assertEqual((g.shape, g.dtype), (w.shape, w.dtype))
            self.assertLess(rel_err(g, w), 1e-4)

    def assert_ours(self, backend):
        """mlc_tune answered: graphs taken, none left to PyTorch."""
        self.assertEqual(backend.fallbacks, [])
        self.assertTrue(backend.graphs)
        self.assertTrue(all(g.runs > 0 for g in backend.graphs))

    def test_cnn_matches_eager(self):
        net = SmallCNN().eval()
        with torch.no_grad():
            net.bn.running_mean.uniform_(-1, 1)
            net.bn.running_var.uniform_(0.5, 2)
        fast, backend = self.compiled(net)
        x = torch.randn(2, 3, 16, 16)
        with torch.no_grad():
            self.assert_same(fast(x), net(x))
        self.assert_ours(backend)

    def test_encoder_matches_eager(self):
        net = TinyEncoder().eval()
        fast, backend = self.compiled(net)
        ids = torch.randint(0, 30, (2, 7))
        with torch.no_grad():  # the encoder layer's fast path: _transformer_encoder_layer_fwd
            self.assert_same(fast(ids), net(ids))
        self.assert_ours(backend)

    def test_encoder_layer_attention(self):
        """nn.TransformerEncoder, sequence first: dynamo inlines it down to
        F.multi_head_attention_forward, the layer norms and linears."""
        layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, activation="gelu")
        net = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
        fast, backend = self.compiled(net)
        x = torch.randn(6, 2, 32)
        with torch.no_grad():
            self.assert_same(fast(x), net(x))
        self.assert_ours(backend)

    def test_unsupported_op_runs_in_pytorch_with_warning(self):
        net = Sorted()
        fast, backend = self.compiled(net)
        x = torch.randn(3, 5)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = fast(x)
        self.assertTrue(torch.equal(got, net(x)))
        texts = [str(w.message) for w in caught if issubclass(w.category, mlc_tune.FallbackWarning)]
        self.assertEqual(len(texts), 1, texts)
        self.assertRegex(texts[0], r"PyTorch runs graph 0: node sort: function sort is not supported")
        self.assertEqual((backend.graphs, backend.fallbacks), ([], texts))

    def test_second_call_reuses_compiled_model(self):
        net = MLP().eval()
        fast, backend = self.compiled(net)
        with torch.no_grad():
            for _ in range(2):
                x = torch.randn(5, 12)
                self.assert_same(fast(x), net(x))
        self.assertEqual(len(backend.graphs), 1)
        self.assertEqual((backend.graphs[0].compiles, backend.graphs[0].runs), (1, 2))

    def test_new_shapes_compiled_again(self):
        """Other batch sizes (dynamo makes the dimension dynamic after the
        second): each compiled for, and answered right."""
        net = MLP().eval()
        fast, backend = self.compiled(net)
        with torch.no_grad():
            for batch in (2, 3, 5, 3):
                x = torch.randn(batch, 12)
                self.assert_same(fast(x), net(x))
        self.assert_ours(backend)
        self.assertEqual(sum(g.compiles for g in backend.graphs), 3)

    def test_parameter_changed_in_place(self):
        net = MLP().eval()
        fast, backend = self.compiled(net)
        x = torch.randn(4, 12)
        with torch.no_grad():
            fast(x)
            net.fc2.weight.mul_(-2)
            self.assert_same(fast(x), net(x))
        self.assertEqual(sum(g.compiles for g in backend.graphs), 2)

    def test_inputs_requiring_grad_run_in_pytorch(self):
        net = MLP().eval()
        fast, backend = self.compiled(net)
        x = torch.randn(4, 12, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = fast(x)
        self.assertIsNotNone(y.grad_fn)
        self.assert_same(y.detach(), net(x).detach())
        self.assertTrue(any("require grad" in str(w.message) for w in caught))


if __name__ == "__main__":
    unittest.main()
