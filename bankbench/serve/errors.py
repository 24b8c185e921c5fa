"""The one error `bankbench serve` raises for anything the user can act on."""

from __future__ import annotations


class ServeError(RuntimeError):
    """A stack could not be started, checked or stopped.

    `cause` is one line naming the culprit (profile, option, port, component); `log_tail` holds
    the last lines of the failing component's log when there is one. str() gives both.
    """

    def __init__(self, cause: str, log_tail: str = "", component: str | None = None) -> None:
        self.cause = cause
        self.log_tail = log_tail
        self.component = component
        text = cause
        if log_tail:
            whose = "each container's log" if component == "containers" else f"the {component} log"
            text += f"\n--- last lines of {whose} ---\n{log_tail}"
        super().__init__(text)
