import os

import pytest


@pytest.fixture(scope="session")
def dynamo_python():
    """The Dynamo venv's python (built once per machine, then cached)."""
    from bankbench.serve.dynamo_venv import ensure_dynamo_venv

    return ensure_dynamo_venv()


@pytest.fixture
def serve_env(tmp_path, monkeypatch):
    """Serve state under the test's folder, for this process and for a `bankbench serve` it
    runs (the environment to pass)."""
    root = tmp_path / "serve"
    monkeypatch.setenv("BANKBENCH_SERVE_STATE", str(root))
    return dict(os.environ, BANKBENCH_SERVE_STATE=str(root))
