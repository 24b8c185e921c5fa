"""How a tool name is compared, host side: the rule TSQ scores by.

The mock bank (`toolschema.normalise_name`, which its suggestions use) and the verifier
(`verify.normalise_tool_name`, the same function) run inside the task environment on the
standard library and cannot import this; `tests/contracts/test_template_mirrors.py` pins them
equal to this one. Host-side readers that match an agent's call to a task's tool (export,
consistency) use this, so they agree with TSQ on names such as `bank__Get-Balance`.
"""

from __future__ import annotations


def normalise_tool_name(name: str) -> str:
    """`bank__Get-Balance` -> `getbalance`; `tools.get_balance` -> `getbalance`.

    A `prefix__tool` name keeps what follows the first `__`; a dotted `module.tool` keeps the
    last part; then lower-case and drop `_` and `-` (the reference implementation's rule).
    """
    name = name.strip()
    if "__" in name:
        name = name.split("__", 1)[1]
    return name.rsplit(".", 1)[-1].lower().replace("_", "").replace("-", "")
