"""Who counted a level's tokens, as the report's throughput table says it."""

import pandas as pd

from analysis.summary import token_counts


def _req(sources, ok=None):
    return pd.DataFrame({"token_source": sources, "ok": ok or [True] * len(sources)})


def test_levels_say_who_counted_their_tokens():
    assert token_counts(_req(["server", "server"])) == "server"
    assert token_counts(_req(["client", None])) == "client"
    assert token_counts(_req(["client", "server"])) == "mixed"
    assert token_counts(_req([None, None])) == "unknown"
    # A failed request's counts do not speak for the level.
    assert token_counts(_req(["server", "client"], ok=[False, True])) == "client"
    assert token_counts(pd.DataFrame()) == "unknown"
