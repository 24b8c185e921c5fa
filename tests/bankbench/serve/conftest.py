import pytest


@pytest.fixture(scope="session")
def dynamo_python():
    """The Dynamo venv's python (built once per machine, then cached)."""
    from bankbench.serve.dynamo_venv import ensure_dynamo_venv

    return ensure_dynamo_venv()
