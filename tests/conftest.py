"""Suite-wide fixtures."""

import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def own_serve_state(tmp_path_factory):
    """Stacks the tests start are recorded in a folder of this session, never in the user's
    `<cache>/serve` (where a dead test stack would make a plain `bankbench serve down` ask
    which stack was meant). Only serve state moves: the Dynamo venv, the llama.cpp wheel and
    the model files in the cache stay shared. Set in os.environ so CLI subprocesses inherit it."""
    before = os.environ.get("BANKBENCH_SERVE_STATE")
    os.environ["BANKBENCH_SERVE_STATE"] = str(tmp_path_factory.mktemp("serve-state"))
    yield
    if before is None:
        os.environ.pop("BANKBENCH_SERVE_STATE", None)
    else:
        os.environ["BANKBENCH_SERVE_STATE"] = before
