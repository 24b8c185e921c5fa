"""Pydantic models of the files that cross a process boundary (the contracts of DESIGN).

This package sits at the bottom of the import graph: it imports nothing of bankbench, and
every other package may import it. The mock bank and the verifier run inside the task
environment on the standard library alone, so they write these shapes as plain JSON; the host
side validates them with the models here when it reads them.
"""
