"""Which screen cells `benchmarks/compare_small_n.py --confirm N --worst-cells K` runs again:
the K worst and every cell tied with the K-th, since the screen cannot order tied cells and a
cut among them would follow the table's order alone. The selection alone, on small tables of
screen rates (no simulation)."""

from __future__ import annotations

from benchmarks.compare_small_n import confirm_cells

SIMS = 60  # rates as the screen makes them: hits / sims, so ties are exact


def table(hits: dict[str, int]) -> list[tuple[float, str, tuple]]:
    return [(h / SIMS, name, (14, 1, 1, 5)) for name, h in hits.items()]


def names(cells: list[tuple[float, str, tuple]]) -> list[str]:
    return [name for _, name, _ in cells]


def test_every_cell_tied_with_the_kth_is_run_again():
    every = table({"iid": 2, "heavy": 1, "sinusoid": 2, "regime switch": 3, "counts": 2,
                   "co-running": 0, "compaction": 2, "session swing": 2})
    chosen, ties = confirm_cells(every, 3)
    # The worst first, then the five at 2 of 60 in the table's order: three past the cut.
    assert names(chosen) == ["regime switch", "iid", "sinusoid", "counts", "compaction",
                             "session swing"]
    assert ties == 3


def test_no_tie_at_the_cut_runs_exactly_k():
    every = table({"iid": 3, "heavy": 3, "sinusoid": 2, "counts": 1, "compaction": 1})
    # Tied above the cut but not at it: the 3rd (2 of 60) stands alone.
    chosen, ties = confirm_cells(every, 3)
    assert names(chosen) == ["iid", "heavy", "sinusoid"]
    assert ties == 0


def test_k_beyond_the_table_runs_every_cell_once():
    every = table({"iid": 1, "heavy": 1})
    chosen, ties = confirm_cells(every, 8)
    assert names(chosen) == ["iid", "heavy"]
    assert ties == 0
