"""bankbench: agent-traffic load tests that score tool selection while timing the server."""

__version__ = "0.1.0"
