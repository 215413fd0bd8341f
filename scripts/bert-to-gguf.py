#!/usr/bin/env python3
"""Writes a BERT sentence-embedding model (a Hugging Face `BertModel` folder: config.json,
model.safetensors, vocab.txt and, when present, the sentence-transformers pooling config) as
one GGUF file that llama.cpp (and so llama-cpp-python's server) loads as architecture `bert`.

Usage: bert-to-gguf.py MODEL_DIR OUT.gguf

Every tensor is written as float32, so the file computes what the safetensors compute. Needs
the `gguf` package (gguf-py, which brings numpy); the safetensors file is read here directly
(an 8-byte little-endian header length, a JSON header, then the raw tensors).

What llama.cpp expects of a BERT GGUF, and how this writes it:
  - metadata: `general.architecture = "bert"`, `bert.context_length`, `bert.embedding_length`,
    `bert.feed_forward_length`, `bert.block_count`, `bert.attention.head_count`,
    `bert.attention.layer_norm_epsilon`, `bert.attention.causal = false` and
    `bert.pooling_type` (mean, CLS or last token, from the sentence-transformers pooling
    config; mean when there is none);
  - vocabulary: `tokenizer.ggml.model = "bert"` (WordPiece). llama.cpp marks the start of a
    word with U+2581 instead of marking continuations with `##`, so `##ing` is stored as
    `ing` and `play` as `\u2581play`; the bracketed special tokens ([PAD], [UNK], [CLS],
    [SEP], [MASK]) are kept as they are and typed as control tokens. [CLS] opens and [SEP]
    closes every input;
  - tensors: renamed from the Hugging Face names (embeddings.*, encoder.layer.N.*) to
    llama.cpp's (token_embd, position_embd, token_types, token_embd_norm, blk.N.attn_q/k/v,
    attn_output, attn_output_norm, ffn_up, ffn_down, layer_output_norm); the pooler and the
    masked-language-model head are not needed for embeddings and are left out.
"""

import json
import struct
import sys
from pathlib import Path

import numpy as np
import gguf

# safetensors dtype names -> numpy dtypes (the ones BERT checkpoints use).
DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": None, "I64": np.int64}

# Hugging Face BERT tensor names (after the layer number) -> llama.cpp's, for one layer.
LAYER_TENSORS = {
    "attention.self.query": "attn_q",
    "attention.self.key": "attn_k",
    "attention.self.value": "attn_v",
    "attention.output.dense": "attn_output",
    "attention.output.LayerNorm": "attn_output_norm",
    "intermediate.dense": "ffn_up",
    "output.dense": "ffn_down",
    "output.LayerNorm": "layer_output_norm",
}

# Tensors outside the layers.
TOP_TENSORS = {
    "embeddings.word_embeddings": "token_embd",
    "embeddings.position_embeddings": "position_embd",
    "embeddings.token_type_embeddings": "token_types",
    "embeddings.LayerNorm": "token_embd_norm",
}

SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def read_safetensors(path: Path) -> dict:
    """Every tensor of a safetensors file as a float32 numpy array, by name."""
    data = path.read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        raw = data[base + start : base + end]
        dtype = info["dtype"]
        if dtype == "BF16":
            # bfloat16 is the upper half of a float32.
            halves = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            array = halves.view(np.float32)
        elif dtype in DTYPES:
            array = np.frombuffer(raw, dtype=np.dtype(DTYPES[dtype]).newbyteorder("<"))
        else:
            raise SystemExit(f"{path}: tensor {name} has dtype {dtype}, which this converter does not read")
        tensors[name] = array.reshape(info["shape"])
    return tensors


def gguf_name(hf_name: str):
    """llama.cpp's name of a Hugging Face BERT tensor, or None for one embeddings do not use."""
    name = hf_name.removeprefix("bert.")
    stem, _, kind = name.rpartition(".")
    kind = {"gamma": "weight", "beta": "bias"}.get(kind, kind)
    if stem in TOP_TENSORS:
        return f"{TOP_TENSORS[stem]}.{kind}"
    if stem.startswith("encoder.layer."):
        number, _, rest = stem.removeprefix("encoder.layer.").partition(".")
        if rest in LAYER_TENSORS:
            return f"blk.{int(number)}.{LAYER_TENSORS[rest]}.{kind}"
    return None


def pooling_type(model_dir: Path) -> gguf.PoolingType:
    """The pooling the sentence-transformers configuration names (mean when there is none)."""
    modules = model_dir / "modules.json"
    if modules.is_file():
        for module in json.loads(modules.read_text()):
            if module.get("type", "").endswith("Pooling"):
                config = json.loads((model_dir / module["path"] / "config.json").read_text())
                if config.get("pooling_mode_cls_token"):
                    return gguf.PoolingType.CLS
                if config.get("pooling_mode_lasttoken"):
                    return gguf.PoolingType.LAST
                return gguf.PoolingType.MEAN
    return gguf.PoolingType.MEAN


def vocabulary(model_dir: Path):
    """The WordPiece vocabulary in llama.cpp's spelling and each token's type."""
    tokens, types = [], []
    for line in (model_dir / "vocab.txt").read_text(encoding="utf-8").splitlines():
        if line in SPECIAL:
            tokens.append(line)
            types.append(gguf.TokenType.CONTROL)
        elif line.startswith("##"):
            tokens.append(line[2:])
            types.append(gguf.TokenType.NORMAL)
        else:
            tokens.append("\u2581" + line)
            types.append(gguf.TokenType.NORMAL)
    return tokens, types


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit(__doc__.split("\n\n")[1])
    model_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
    config = json.loads((model_dir / "config.json").read_text())
    if config.get("model_type") != "bert":
        raise SystemExit(f"{model_dir}: model_type is {config.get('model_type')!r}, not 'bert'")
    tokens, types = vocabulary(model_dir)
    raw = read_safetensors(model_dir / "model.safetensors")

    writer = gguf.GGUFWriter(str(out), "bert")
    writer.add_name(model_dir.name)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_layer_norm_eps(config["layer_norm_eps"])
    writer.add_causal_attention(False)
    writer.add_pooling_type(pooling_type(model_dir))

    writer.add_tokenizer_model("bert")
    writer.add_token_type_count(config.get("type_vocab_size", 2))
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    ids = {t: i for i, t in enumerate(tokens)}
    writer.add_bos_token_id(ids["[CLS]"])
    writer.add_sep_token_id(ids["[SEP]"])
    writer.add_unk_token_id(ids["[UNK]"])
    writer.add_pad_token_id(ids["[PAD]"])
    writer.add_mask_token_id(ids["[MASK]"])
    writer.add_add_bos_token(True)
    writer.add_add_sep_token(True)
    lower = json.loads((model_dir / "tokenizer_config.json").read_text()).get("do_lower_case", True)
    # (gguf-py 0.19.0 has no helper for this key; llama.cpp reads it for WordPiece vocabularies.)
    writer.add_bool("tokenizer.ggml.normalizer.lowercase", bool(lower))

    written = 0
    for hf_name, array in raw.items():
        name = gguf_name(hf_name)
        if name is None:
            continue
        writer.add_tensor(name, np.ascontiguousarray(array, dtype=np.float32))
        written += 1
    expected = 5 + 16 * config["num_hidden_layers"]
    if written != expected:
        raise SystemExit(f"{model_dir}: wrote {written} tensors, a BERT of this size has {expected}")

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"{out}: {len(tokens)} tokens, {written} tensors", file=sys.stderr)


if __name__ == "__main__":
    main()
