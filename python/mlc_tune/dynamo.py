"""A torch.compile backend (PyTorch 2): each graph TorchDynamo captures goes
through the torch.fx translator (fx.py), is compiled with mlc_tune and runs
in place of PyTorch's kernels; a graph the translator refuses runs in
PyTorch, with a FallbackWarning that names the op.

    import torch, mlc_tune
    fast = torch.compile(model.eval(), backend=mlc_tune.dynamo_backend(db="mlc.db"))
    with torch.no_grad():
        y = fast(x)

Dynamo hands over a graph whose arguments are the inputs, and, with the
modules inlined, the parameters and buffers (and sizes, where it made a
dimension dynamic). The parameters become constants of the compiled
model, as in from_torch; the compiled model is fixed to the shapes, the
sizes and the parameters it was compiled with, so every call first looks
up that signature: a new one is translated and compiled again (at most
max_shapes per graph, then PyTorch runs the new ones), a parameter
changed in place gives a new signature through its version counter.
Importing this needs no PyTorch; with PyTorch 1.13 (no torch.compile)
a backend can be made and called on an fx.GraphModule, nothing more.
"""
import itertools
import warnings

from . import fx as _fx
from ._lib import MlcError


class FallbackWarning(UserWarning):
    """A graph, or a call of one, that PyTorch runs instead of mlc_tune; the
    message says why (for the translator's refusals: the node and its op)."""


def dynamo_backend(target="llvm", db=None, trials=0, progress=False, max_shapes=8, check=True):
    """A backend for torch.compile(model, backend=...): every captured graph
    translated like from_torch, tuned for trials (into db; 0: no tuning),
    compiled for target with db's best records (None: default schedules).
    max_shapes: signatures (input shapes, sizes, parameters) compiled per
    graph before new ones run in PyTorch. check: the first run of each
    compiled signature is compared with PyTorch's result on the same
    inputs (computed anyway, the translator runs the graph), and PyTorch
    keeps the signature where they differ."""
    if trials and db is None:
        raise ValueError("dynamo_backend: trials=%d needs db, the database the records go to" % trials)
    return DynamoBackend(target, db, trials, progress, max_shapes, check)


class DynamoBackend:
    """The callable torch.compile calls with each graph: (gm, example_inputs)
    -> the function to run in its place. graphs: the _CompiledGraph of each
    graph taken (compiles and runs count them); fallbacks: one line per
    refusal, as warned."""

    def __init__(self, target, db, trials, progress, max_shapes, check):
        self.target, self.db, self.trials, self.progress = target, db, trials, progress
        self.max_shapes, self.check = max_shapes, check
        self.graphs, self.fallbacks = [], []
        self._count = 0

    def __repr__(self):
        return "<mlc_tune.DynamoBackend target=%s db=%s trials=%d: %d graphs, %d fallbacks>" % (
            self.target, self.db, self.trials, len(self.graphs), len(self.fallbacks))

    def __call__(self, gm, example_inputs):
        index, self._count = self._count, self._count + 1
        try:
            graph = _CompiledGraph(self, gm, list(example_inputs), index)
        except _Refused as e:
            self.refuse(index, str(e))
            return gm.forward
        if graph.computes_nothing():
            return gm.forward  # it only passes arguments through: nothing to compile
        # Concrete examples are the first call's arguments: compile now, so
        # that a refused graph goes back to dynamo as PyTorch's. Symbolic ones
        # (dynamic sizes), and calls PyTorch answers for autograd, wait for
        # the calls' signatures.
        if graph.concrete(example_inputs) and not graph.needs_autograd(example_inputs) and \
                graph.model_for(list(example_inputs)) is None:
            return gm.forward
        self.graphs.append(graph)
        return graph

    def refuse(self, index, why):
        msg = "mlc_tune.dynamo_backend: PyTorch runs graph %d: %s" % (index, why)
        self.fallbacks.append(msg)
        warnings.warn(msg, FallbackWarning, stacklevel=3)


class _Refused(Exception):
    """Why a graph or a signature is left to PyTorch."""


_INPUT, _STATE, _VALUE = "input", "state", "value"
_MISSING = object()
# Model names, unique in the process: the JIT refuses a second model whose
# kernel symbols (named after the model) are already loaded.
_model_numbers = itertools.count()


class _CompiledGraph:
    """One captured graph: its compiled models by call signature, each used
    while the signature holds. compiles: models compiled (refusals not
    counted); runs: calls mlc_tune's code answered."""

    def __init__(self, backend, gm, example_inputs, index):
        import torch
        self.torch, self.backend, self.gm, self.index = torch, backend, gm, index
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(example_inputs):
            raise _Refused("%d arguments for %d placeholders" % (len(example_inputs), len(placeholders)))
        self.kinds = [self.kind(n, a) for n, a in zip(placeholders, example_inputs)]
        self.inputs = [i for i, k in enumerate(self.kinds) if k == _INPUT]
        self.constant_names = [n.name for n, k in zip(placeholders, self.kinds) if k != _INPUT]
        # tensors the graph holds itself (get_attr): constants too, watched
        # through their version counters
        self.attrs = [t for t in (_attr(gm, n.target) for n in gm.graph.nodes if n.op == "get_attr")
                      if isinstance(t, torch.Tensor)]
        self.plan, self.container, self.computed = _output_plan(gm, placeholders)
        self.models = {}  # signature -> Model, or None where PyTorch runs it
        self.compiles = self.runs = 0
        self._warned = set()

    def kind(self, node, example):
        """input: a tensor passed to the compiled model; state: a tensor taken
        as a constant (a parameter, a buffer, a global), watched by identity
        and version; value: a number (a dynamic size) compiled in."""
        torch = self.torch
        if not isinstance(example, torch.Tensor):
            if _is_number(example) or _is_symbolic_number(torch, example):
                return _VALUE
            raise _Refused("argument %s is a %s" % (node.name, type(example).__name__))
        if isinstance(example, torch.nn.Parameter):
            return _STATE
        source = getattr(node.meta.get("grapharg"), "source", None)
        guard = getattr(source, "guard_source", None)
        guard = guard() if callable(guard) else guard  # a method before PyTorch 2.5ish
        name = getattr(guard, "name", "")
        return _STATE if "NN_MODULE" in name or name.startswith("GLOBAL") else _INPUT

    def computes_nothing(self):
        return not self.computed

    def concrete(self, args):
        """Real values, not dynamo's symbols (SymInt sizes, fake tensors)."""
        fake = getattr(getattr(self.torch, "_subclasses", None), "FakeTensor", ())
        return all(_is_number(a) or (isinstance(a, self.torch.Tensor) and not isinstance(a, fake)
                                     and a.device.type != "meta") for a in args)

    # ---- calls --------------------------------------------------------------------------------

    def __call__(self, *args):
        if self.needs_autograd(args):
            self.warn_once("autograd", "inputs that require grad (mlc_tune's outputs would carry "
                           "no autograd graph); run under torch.no_grad() to use mlc_tune")
            return self.gm.forward(*args)
        model = self.model_for(args)
        if model is None:
            return self.gm.forward(*args)
        return self.run(model, args)

    def needs_autograd(self, args):
        return self.torch.is_grad_enabled() and any(args[i].requires_grad for i in self.inputs)

    def run(self, model, args):
        outs = model(*[args[i] for i in self.inputs])
        outs = list(outs) if isinstance(outs, tuple) else [outs]
        self.runs += 1
        results = [outs[k] if kind == "model" else args[k] if kind == "arg" else k
                   for kind, k in self.plan]
        return self.container(results) if self.container else results[0]

    def signature(self, args):
        """What a compiled model is fixed to: the inputs' shapes and dtypes,
        the sizes, the constant tensors (identity and in-place version)."""
        key = []
        for kind, a in zip(self.kinds, args):
            if kind == _INPUT:
                key.append((tuple(a.shape), a.dtype, a.device.type))
            elif kind == _STATE:
                key.append((a.data_ptr(), _version(a), tuple(a.shape), a.dtype))
            else:
                key.append(a)
        key.extend(_version(t) for t in self.attrs)
        return tuple(key)

    def model_for(self, args):
        """The compiled model for this call's signature (compiled now if new),
        or None where PyTorch runs it."""
        key = self.signature(args)
        model = self.models.get(key, _MISSING)
        if model is not _MISSING:
            return model
        if len(self.models) >= self.backend.max_shapes:
            self.warn_once("shapes", "more than max_shapes=%d signatures (shapes, sizes or "
                           "parameters changed in place); the new ones run in PyTorch"
                           % self.backend.max_shapes)
            return None
        try:
            model = self.compile(args)
        except (_Refused, MlcError) as e:
            self.backend.refuse(self.index, str(e))
            model = None
        except Exception as e:  # the translator meeting what it does not expect
            self.backend.refuse(self.index, "%s: %s" % (type(e).__name__, e))
            model = None
        self.models[key] = model
        return model

    def warn_once(self, what, why):
        if what not in self._warned:
            self._warned.add(what)
            self.backend.refuse(self.index, why)

    # ---- compiling ----------------------------------------------------------------------------

    def compile(self, args):
        b = self.backend
        for i in self.inputs:
            if args[i].device.type != "cpu":
                raise _Refused("input %d is on %s (mlc_tune runs on the CPU)" % (i, args[i].device))
        name = "dynamo_%d" % next(_model_numbers)
        t = _fx.translate(self.gm, args, name, self.constant_names, self.computed)
        model = _fx.load_graph(t.graph, t.weights)
        if b.trials:
            model.tune(trials=b.trials, db=b.db, target=b.target, progress=b.progress)
        model.compile(target=b.target, db=b.db)
        self.compiles += 1
        if b.check:
            self.check(model, args, [t.values[n.name] for n in self.computed])
        return model

    def check(self, model, args, want):
        """The compiled model against PyTorch on the same inputs."""
        got = model(*[args[i] for i in self.inputs])
        got = list(got) if isinstance(got, tuple) else [got]
        for k, (g, w) in enumerate(zip(got, want)):
            if g.shape != w.shape or g.dtype != w.dtype:
                raise _Refused("output %d is %s %s, PyTorch's %s %s" % (
                    k, g.dtype, list(g.shape), w.dtype, list(w.shape)))
            if not _close(self.torch, g, w):
                raise _Refused("output %d differs from PyTorch's (max difference %g)"
                               % (k, float((g.double() - w.double()).abs().max())))


def _output_plan(gm, placeholders):
    """Where each result comes from: ("model", k) the compiled model's k-th
    output, ("arg", i) an argument passed through (the C model's outputs
    are nodes), ("value", v) a constant. Also the container (tuple, list,
    or None for a lone result) and the computed nodes, once each, in order:
    the compiled model's outputs."""
    import torch.fx
    out = [n for n in gm.graph.nodes if n.op == "output"][0].args[0]
    container = (list if isinstance(out, list) else tuple) if isinstance(out, (tuple, list)) else None
    plan, computed = [], []
    for o in (out if container else [out]):
        if isinstance(o, torch.fx.Node) and o.op == "placeholder":
            plan.append(("arg", placeholders.index(o)))
        elif isinstance(o, torch.fx.Node):
            if o not in computed:
                computed.append(o)
            plan.append(("model", computed.index(o)))
        elif o is None or _is_number(o):
            plan.append(("value", o))
        else:
            raise _Refused("a graph result of type %s (nested outputs are not taken)"
                           % type(o).__name__)
    return plan, container, computed


def _attr(gm, target):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _is_number(a):
    return isinstance(a, (int, float, bool))


def _is_symbolic_number(torch, a):
    """A dynamic size as dynamo's example (a SymInt); calls pass numbers."""
    kinds = tuple(getattr(torch, k) for k in ("SymInt", "SymFloat", "SymBool") if hasattr(torch, k))
    return isinstance(a, kinds)


def _version(t):
    """The in-place version counter (inference tensors have none)."""
    try:
        return t._version
    except RuntimeError:
        return -1


def _close(torch, got, want):
    if not want.is_floating_point():
        return bool(torch.equal(got, want))
    finite = want[torch.isfinite(want)]
    scale = float(finite.abs().max()) if finite.numel() else 1.0
    return bool(torch.allclose(got, want, rtol=1e-3, atol=1e-3 * scale, equal_nan=True))
