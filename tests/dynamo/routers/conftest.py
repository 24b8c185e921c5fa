import pytest


@pytest.fixture(scope="session")
def dynamo_python():
    from bankbench.serve.dynamo_venv import ensure_dynamo_venv

    return ensure_dynamo_venv()
