"""Three language models written the way HuggingFace transformers writes
them (BertModel, GPT2LMHeadModel, LlamaForCausalLM), hand-written here so
that nothing but Debian's python3-torch is needed. Their ONNX exports carry
what real LM exports carry: int64 token ids into Gather, Range over the
sequence length, shape chains into Reshape and Expand, masks built from
ConstantOfShape / Trilu / comparisons and applied with Where.

    tiny_config(kind), real_config(kind)  -> dict
    build(kind, cfg)                      -> nn.Module in eval mode, random weights
    example_inputs(kind, cfg, batch, seq, gen) -> dict name -> int64 tensor
    export(model, kind, inputs, path)     -> torch.onnx.export with dynamic axes

kind is "bert", "gpt2" or "llama". Used by examples/export_models.py (the
real sizes into models/) and tests/onnx/make_lm.py (the tiny ones, committed).
"""
import math

import torch
from torch import nn

OPSET = 14  # torch.onnx.export's default in PyTorch 1.13
KINDS = ("bert", "gpt2", "llama")

INPUT_NAMES = {"bert": ["input_ids", "token_type_ids", "attention_mask"],
               "gpt2": ["input_ids"], "llama": ["input_ids"]}
OUTPUT_NAMES = {"bert": ["last_hidden_state", "pooler_output"],
                "gpt2": ["logits"], "llama": ["logits"]}


def tiny_config(kind):
    return {
        "bert": dict(vocab=100, hidden=32, layers=2, heads=4, ffn=64, max_pos=64, type_vocab=2),
        "gpt2": dict(vocab=96, hidden=32, layers=2, heads=4, ffn=128, max_pos=64),
        "llama": dict(vocab=128, hidden=32, layers=2, heads=4, kv_heads=2, ffn=64, max_pos=64),
    }[kind]


def real_config(kind):
    return {
        # bert-base-uncased
        "bert": dict(vocab=30522, hidden=768, layers=12, heads=12, ffn=3072, max_pos=512,
                     type_vocab=2),
        # gpt2 (small)
        "gpt2": dict(vocab=50257, hidden=768, layers=12, heads=12, ffn=3072, max_pos=1024),
        # a small Llama: the Llama-2 vocabulary, grouped-query attention (3 query
        # heads per key/value head), about 125M parameters
        "llama": dict(vocab=32000, hidden=768, layers=12, heads=12, kv_heads=4, ffn=2048,
                      max_pos=2048),
    }[kind]


# ---------------------------------------------------------------- BERT

class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab"], c["hidden"])
        self.position_embeddings = nn.Embedding(c["max_pos"], c["hidden"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab"], c["hidden"])
        self.LayerNorm = nn.LayerNorm(c["hidden"], eps=1e-12)
        # HF slices a stored arange rather than calling arange: in the
        # export this is an int64 initializer sliced by the sequence length
        self.register_buffer("position_ids", torch.arange(c["max_pos"]).expand((1, -1)))

    def forward(self, input_ids, token_type_ids):
        seq_length = input_ids.size()[1]
        position_ids = self.position_ids[:, 0:seq_length]
        emb = (self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
               + self.position_embeddings(position_ids))
        return self.LayerNorm(emb)


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_heads = c["heads"]
        self.head_size = c["hidden"] // c["heads"]
        self.query = nn.Linear(c["hidden"], c["hidden"])
        self.key = nn.Linear(c["hidden"], c["hidden"])
        self.value = nn.Linear(c["hidden"], c["hidden"])

    def transpose_for_scores(self, x):
        new_shape = x.size()[:-1] + (self.num_heads, self.head_size)
        return x.view(new_shape).permute(0, 2, 1, 3)

    def forward(self, h, mask):
        q = self.transpose_for_scores(self.query(h))
        k = self.transpose_for_scores(self.key(h))
        v = self.transpose_for_scores(self.value(h))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
        probs = nn.functional.softmax(scores + mask, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.size()[:-2] + (self.num_heads * self.head_size,))


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertSelfAttention(c)
        self.attention_output = nn.Linear(c["hidden"], c["hidden"])
        self.attention_norm = nn.LayerNorm(c["hidden"], eps=1e-12)
        self.intermediate = nn.Linear(c["hidden"], c["ffn"])
        self.output = nn.Linear(c["ffn"], c["hidden"])
        self.output_norm = nn.LayerNorm(c["hidden"], eps=1e-12)

    def forward(self, h, mask):
        h = self.attention_norm(self.attention_output(self.attention(h, mask)) + h)
        ff = self.output(nn.functional.gelu(self.intermediate(h)))  # erf GELU
        return self.output_norm(ff + h)


class Bert(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.layers = nn.ModuleList(BertLayer(c) for _ in range(c["layers"]))
        self.pooler = nn.Linear(c["hidden"], c["hidden"])

    def forward(self, input_ids, token_type_ids, attention_mask):
        # get_extended_attention_mask: 0 where attended, the most negative
        # float where padded, broadcast over heads and query positions
        ext = attention_mask[:, None, None, :].to(dtype=torch.float32)
        ext = (1.0 - ext) * torch.finfo(torch.float32).min
        h = self.embeddings(input_ids, token_type_ids)
        for layer in self.layers:
            h = layer(h, ext)
        pooled = torch.tanh(self.pooler(h[:, 0]))
        return h, pooled


# ---------------------------------------------------------------- GPT-2

class Conv1D(nn.Module):
    """GPT-2's projection: the weight stored [in, out], applied as addmm on
    the rows flattened to 2-D (a Gemm between two Reshapes in the export)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def gelu_new(x):
    # GPT-2's tanh approximation (NewGELUActivation)
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_heads = c["heads"]
        self.head_dim = c["hidden"] // c["heads"]
        self.split_size = c["hidden"]
        self.c_attn = Conv1D(3 * c["hidden"], c["hidden"])
        self.c_proj = Conv1D(c["hidden"], c["hidden"])

    def split_heads(self, x):
        x = x.view(x.size()[:-1] + (self.num_heads, self.head_dim))
        return x.permute(0, 2, 1, 3)

    def merge_heads(self, x):
        x = x.permute(0, 2, 1, 3).contiguous()
        return x.view(x.size()[:-2] + (self.num_heads * self.head_dim,))

    def forward(self, h, past=None):
        q, k, v = self.c_attn(h).split(self.split_size, dim=2)
        if past is not None:
            # The cache is position-major, [batch, positions, hidden]: a
            # step's key and value are its next row, so a cache allocated
            # for the bound holds the first `positions` rows in place.
            k = torch.cat((past[0], k), dim=1)
            v = torch.cat((past[1], v), dim=1)
        present = (k, v)
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype)
        if past is None:
            seq = q.size(-2)
            causal = torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1)
            w = w.masked_fill(causal, torch.finfo(w.dtype).min)
        # else a decode step: its one query attends every position
        w = nn.functional.softmax(w, dim=-1)
        return self.c_proj(self.merge_heads(torch.matmul(w, v))), present


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c["hidden"], eps=1e-5)
        self.attn = GPT2Attention(c)
        self.ln_2 = nn.LayerNorm(c["hidden"], eps=1e-5)
        self.c_fc = Conv1D(c["ffn"], c["hidden"])
        self.c_proj = Conv1D(c["hidden"], c["ffn"])

    def forward(self, h, past=None):
        a, present = self.attn(self.ln_1(h), past)
        h = h + a
        return h + self.c_proj(gelu_new(self.c_fc(self.ln_2(h)))), present


class GPT2(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c["vocab"], c["hidden"])
        self.wpe = nn.Embedding(c["max_pos"], c["hidden"])
        self.h = nn.ModuleList(GPT2Block(c) for _ in range(c["layers"]))
        self.ln_f = nn.LayerNorm(c["hidden"], eps=1e-5)

    def forward(self, input_ids, position_ids=None, past=None, use_cache=False):
        """Logits, and with use_cache also the presents: per layer (key,
        value), each [batch, positions, hidden], past's with this call's
        appended. Prefill passes the prompt and no past (causal attention);
        a decode step one token, its position and the cache so far."""
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        if position_ids is None:
            position_ids = torch.arange(0, input_shape[-1], dtype=torch.long)
            position_ids = position_ids.unsqueeze(0).view(-1, input_shape[-1])
        h = self.wte(input_ids) + self.wpe(position_ids)
        presents = []
        for i, block in enumerate(self.h):
            h, present = block(h, None if past is None else past[i])
            presents.append(present)
        h = self.ln_f(h)
        h = h.view(input_shape + (h.size(-1),))
        # lm_head tied to the token embedding
        logits = torch.matmul(h, self.wte.weight.t())
        return (logits, presents) if use_cache else logits


# ---------------------------------------------------------------- Llama

class RMSNorm(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotary_cos_sin(seq, head_dim, base=10000.0):
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
    t = torch.arange(seq, dtype=inv_freq.dtype)
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos()[None, None], emb.sin()[None, None]


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x, n_rep):
    batch, kv_heads, slen, head_dim = x.shape
    x = x[:, :, None, :, :].expand(batch, kv_heads, n_rep, slen, head_dim)
    return x.reshape(batch, kv_heads * n_rep, slen, head_dim)


def causal_mask(seq):
    # _make_causal_mask: the most negative float above the diagonal, built
    # from a comparison of two aranges
    mask = torch.full((seq, seq), torch.finfo(torch.float32).min)
    cond = torch.arange(mask.size(-1))
    mask.masked_fill_(cond < (cond + 1).view(mask.size(-1), 1), 0)
    return mask[None, None]


class LlamaAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_heads = c["heads"]
        self.num_kv = c["kv_heads"]
        self.head_dim = c["hidden"] // c["heads"]
        self.hidden = c["hidden"]
        self.q_proj = nn.Linear(self.hidden, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(self.hidden, self.num_kv * self.head_dim, bias=False)
        self.v_proj = nn.Linear(self.hidden, self.num_kv * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, self.hidden, bias=False)

    def heads(self, x, bsz, q_len, n):
        return x.view(bsz, q_len, n, self.head_dim).transpose(1, 2)

    def forward(self, h, cos, sin, mask, past=None, use_cache=False):
        """Also returns present (with use_cache; else None): (key, value),
        each [batch, positions, kv_heads * head_dim], the keys rotated,
        past's with this call's appended (past None: this call's). mask
        None: a decode step's one query attends every position."""
        bsz, q_len, _ = h.size()
        q = self.heads(self.q_proj(h), bsz, q_len, self.num_heads)
        k = self.heads(self.k_proj(h), bsz, q_len, self.num_kv)
        v = self.v_proj(h)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        present = None
        if use_cache:
            cached = k.transpose(1, 2).reshape(bsz, q_len, -1)  # position-major, as GPT-2's
            if past is not None:
                cached = torch.cat((past[0], cached), dim=1)
                v = torch.cat((past[1], v), dim=1)
                k = self.heads(cached, bsz, cached.size(1), self.num_kv)
            present = (cached, v)
        v = self.heads(v, bsz, v.size(1), self.num_kv)
        k = repeat_kv(k, self.num_heads // self.num_kv)
        v = repeat_kv(v, self.num_heads // self.num_kv)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        if mask is not None:
            w = w + mask
        w = nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(w, v).transpose(1, 2).contiguous()
        return self.o_proj(out.reshape(bsz, q_len, self.hidden)), present


class LlamaLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c["hidden"])
        self.self_attn = LlamaAttention(c)
        self.post_attention_layernorm = RMSNorm(c["hidden"])
        self.gate_proj = nn.Linear(c["hidden"], c["ffn"], bias=False)
        self.up_proj = nn.Linear(c["hidden"], c["ffn"], bias=False)
        self.down_proj = nn.Linear(c["ffn"], c["hidden"], bias=False)

    def forward(self, h, cos, sin, mask, past=None, use_cache=False):
        a, present = self.self_attn(self.input_layernorm(h), cos, sin, mask, past, use_cache)
        h = h + a
        x = self.post_attention_layernorm(h)
        return h + self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x)), present


class Llama(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.head_dim = c["hidden"] // c["heads"]
        self.embed_tokens = nn.Embedding(c["vocab"], c["hidden"])
        self.layers = nn.ModuleList(LlamaLayer(c) for _ in range(c["layers"]))
        self.norm = RMSNorm(c["hidden"])
        self.lm_head = nn.Linear(c["hidden"], c["vocab"], bias=False)
        self.max_pos = c["max_pos"]

    def forward(self, input_ids, position_ids=None, past=None, use_cache=False):
        """As GPT2.forward: logits, and with use_cache the presents. A
        decode step's rotation is looked up by its position in a table of
        max_pos rows."""
        seq = input_ids.size(1)
        if position_ids is None:
            cos, sin = rotary_cos_sin(seq, self.head_dim)
        else:
            cos, sin = rotary_cos_sin(self.max_pos, self.head_dim)
            cos, sin = cos[0, 0][position_ids][:, None], sin[0, 0][position_ids][:, None]
        mask = causal_mask(seq) if past is None else None
        h = self.embed_tokens(input_ids)
        presents = []
        for i, layer in enumerate(self.layers):
            h, present = layer(h, cos, sin, mask, None if past is None else past[i], use_cache)
            presents.append(present)
        logits = self.lm_head(self.norm(h))
        return (logits, presents) if use_cache else logits


# ---------------------------------------------------------------- common

def randomize(model, hidden):
    """Random weights of about unit gain (std 1/sqrt(hidden)) and norm
    scales and biases away from 1 and 0. HF's init (std 0.02, unit norms,
    zero biases) leaves a tiny model's attention almost uniform and its
    logits almost zero, where a wrong mask or rotation would hardly show."""
    std = hidden ** -0.5
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.normal_(0.0, std)
            elif name.endswith("bias"):
                p.normal_(0.0, 0.1)
            else:  # norm scales
                p.normal_(1.0, 0.1)


def build(kind, cfg, seed=0):
    torch.manual_seed(seed)
    model = {"bert": Bert, "gpt2": GPT2, "llama": Llama}[kind](cfg)
    randomize(model, cfg["hidden"])
    return model.eval()


def param_count(model):
    # a tied weight is one parameter: named_parameters lists it once
    return sum(p.numel() for p in model.parameters())


def example_inputs(kind, cfg, batch, seq, gen, pad=0):
    """Token ids over the whole vocabulary, with the last id present (the
    highest row of the embedding table); for BERT also token types (a
    second segment from the middle) and an attention mask whose last pad
    positions are 0."""
    ids = torch.randint(0, cfg["vocab"], (batch, seq), generator=gen)
    ids[:, -1 - pad] = cfg["vocab"] - 1
    if kind != "bert":
        return {"input_ids": ids}
    types = torch.zeros(batch, seq, dtype=torch.long)
    types[:, seq // 2:] = 1
    mask = torch.ones(batch, seq, dtype=torch.long)
    if pad:
        mask[:, seq - pad:] = 0
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}


def run(model, kind, inputs):
    with torch.no_grad():
        out = model(*[inputs[n] for n in INPUT_NAMES[kind]])
    out = out if isinstance(out, tuple) else (out,)
    return dict(zip(OUTPUT_NAMES[kind], out))


def dynamic_axes(kind):
    axes = {n: {0: "batch", 1: "sequence"} for n in INPUT_NAMES[kind] + OUTPUT_NAMES[kind]}
    if kind == "bert":
        axes["pooler_output"] = {0: "batch"}
    return axes


def export(model, kind, inputs, path):
    args = tuple(inputs[n] for n in INPUT_NAMES[kind])
    with torch.no_grad():
        torch.onnx.export(model, args, path, opset_version=OPSET,
                          input_names=INPUT_NAMES[kind], output_names=OUTPUT_NAMES[kind],
                          dynamic_axes=dynamic_axes(kind), do_constant_folding=True)


# ---------------------------------------------------------------- generation
# The decoders (GPT-2, Llama) exported as two models for generation with a
# KV cache: prefill (the
# prompt in; logits and every layer's keys and values out) and the decode
# step (one token, its position and the cache so far in; logits and the
# cache with the token's keys and values appended out). The cache is
# position-major, [1, positions, hidden] per layer and kind, so a step's
# present is its past plus one row: the same memory when the caller passes
# one buffer allocated for the bound as both.

def cache_names(cfg, io):
    """past_key_0, past_value_0, past_key_1, ... (io "past" or "present")"""
    return ["%s_%s_%d" % (io, kv, i) for i in range(cfg["layers"]) for kv in ("key", "value")]


class Prefill(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        logits, presents = self.model(input_ids, use_cache=True)
        return (logits,) + tuple(t for kv in presents for t in kv)


class DecodeStep(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, position_ids, *past):
        pairs = [(past[i], past[i + 1]) for i in range(0, len(past), 2)]
        logits, presents = self.model(input_ids, position_ids, pairs, use_cache=True)
        return (logits,) + tuple(t for kv in presents for t in kv)


def export_generation(model, cfg, prefill_path, step_path, prompt_len=8):
    """Writes the prefill model (input_ids [1, seq] -> logits [1, seq,
    vocab], present_* [1, seq, row]) and the decode step (input_ids and
    position_ids [1, 1], past_* [1, past, row] -> logits [1, 1, vocab],
    present_* [1, past + 1, row]); row is hidden (GPT-2) or kv_heads x
    head_dim (Llama). model: a GPT2 or Llama."""
    ids = torch.arange(prompt_len).view(1, -1) % cfg["vocab"]
    present = cache_names(cfg, "present")
    axes = {"input_ids": {1: "sequence"}, "logits": {1: "sequence"}}
    axes.update({n: {1: "sequence"} for n in present})
    with torch.no_grad():
        torch.onnx.export(Prefill(model), (ids,), prefill_path, opset_version=OPSET,
                          input_names=["input_ids"], output_names=["logits"] + present,
                          dynamic_axes=axes, do_constant_folding=True)
        _, presents = model(ids, use_cache=True)
        past = tuple(t for kv in presents for t in kv)
        step_ids = torch.tensor([[1]])
        pos = torch.tensor([[prompt_len]])
        past_names = cache_names(cfg, "past")
        axes = {n: {1: "past"} for n in past_names}
        axes.update({n: {1: "past_1"} for n in present})
        torch.onnx.export(DecodeStep(model), (step_ids, pos) + past, step_path, opset_version=OPSET,
                          input_names=["input_ids", "position_ids"] + past_names,
                          output_names=["logits"] + present, dynamic_axes=axes,
                          do_constant_folding=True)


def greedy(model, prompt_ids, n_tokens):
    """PyTorch's greedy decoding with its KV cache: n_tokens new token ids
    (the first from the prompt's last logits, each next from a decode step
    on the one before) and the logits each was chosen from, [n_tokens,
    vocab]."""
    with torch.no_grad():
        logits, presents = model(prompt_ids, use_cache=True)
        rows = [logits[0, -1]]
        tokens = [int(rows[0].argmax())]
        pos = prompt_ids.size(1)
        while len(tokens) < n_tokens:
            logits, presents = model(torch.tensor([[tokens[-1]]]), torch.tensor([[pos]]),
                                     presents, use_cache=True)
            rows.append(logits[0, -1])
            tokens.append(int(rows[-1].argmax()))
            pos += 1
    return torch.tensor(tokens, dtype=torch.long), torch.stack(rows)
