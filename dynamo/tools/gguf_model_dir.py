"""Build a weightless Hugging Face model folder from a GGUF file (run with the Dynamo venv).

Usage: python gguf_model_dir.py GGUF OUT_DIR CHAT_TEMPLATE_FILE

Writes tokenizer.json (byte-level BPE rebuilt from the GGUF vocabulary and merges),
tokenizer_config.json (with the given chat template) and config.json (architecture numbers
from the GGUF header). The Dynamo frontend and mocker need exactly these files; no weights.
Standalone on purpose: it imports only gguf and tokenizers, which live in the Dynamo venv.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import gguf
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

CONTROL = 3  # gguf token_type for control (special) tokens


def field(reader: gguf.GGUFReader, key: str):
    f = reader.fields.get(key)
    return None if f is None else f.contents()


def build_tokenizer(reader: gguf.GGUFReader) -> tuple[Tokenizer, list[str]]:
    tokens: list[str] = field(reader, "tokenizer.ggml.tokens")
    merges: list[str] = field(reader, "tokenizer.ggml.merges")
    types: list[int] = field(reader, "tokenizer.ggml.token_type")
    vocab = {tok: i for i, tok in enumerate(tokens)}
    pairs = [tuple(m.split(" ", 1)) for m in merges]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=pairs, fuse_unk=False, byte_fallback=False))
    # SmolLM2 ("smollm" pre-tokenizer): digits split one by one, then GPT-2 byte-level rules.
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    specials = [t for t, ty in zip(tokens, types, strict=True) if ty == CONTROL]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    return tok, specials


def main(gguf_file: str, out_dir: str, template_file: str) -> None:
    reader = gguf.GGUFReader(gguf_file)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok, specials = build_tokenizer(reader)
    tokens = field(reader, "tokenizer.ggml.tokens")
    bos_id = int(field(reader, "tokenizer.ggml.bos_token_id"))
    eos_id = int(field(reader, "tokenizer.ggml.eos_token_id"))
    arch = field(reader, "general.architecture")
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": tokens[bos_id],
                "eos_token": tokens[eos_id],
                "pad_token": tokens[eos_id],
                "unk_token": tokens[int(field(reader, "tokenizer.ggml.unknown_token_id") or 0)],
                "additional_special_tokens": [t for t in specials if t not in {tokens[0]}],
                "add_bos_token": False,
                "add_eos_token": False,
                "clean_up_tokenization_spaces": False,
                "model_max_length": int(field(reader, f"{arch}.context_length")),
                "chat_template": Path(template_file).read_text(),
            },
            indent=2,
        )
    )
    hidden = int(field(reader, f"{arch}.embedding_length"))
    heads = int(field(reader, f"{arch}.attention.head_count"))
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": arch,
        "hidden_size": hidden,
        "intermediate_size": int(field(reader, f"{arch}.feed_forward_length")),
        "num_hidden_layers": int(field(reader, f"{arch}.block_count")),
        "num_attention_heads": heads,
        "num_key_value_heads": int(field(reader, f"{arch}.attention.head_count_kv")),
        "head_dim": hidden // heads,
        "max_position_embeddings": int(field(reader, f"{arch}.context_length")),
        "rope_theta": float(field(reader, f"{arch}.rope.freq_base")),
        "rms_norm_eps": float(field(reader, f"{arch}.attention.layer_norm_rms_epsilon")),
        "vocab_size": len(tokens),
        "bos_token_id": bos_id,
        "eos_token_id": eos_id,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
    }
    (out / "config.json").write_text(json.dumps(config, indent=2))
    (out / "generation_config.json").write_text(
        json.dumps({"bos_token_id": bos_id, "eos_token_id": eos_id}, indent=2)
    )


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
