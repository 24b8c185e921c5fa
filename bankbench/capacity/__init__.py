"""`bankbench capacity`: the highest concurrency at which latency SLOs hold and the agent's
decisions stay the same (search.py: which level next and does it pass; run.py: the loop over
the sweep runner's levels; output.py: table, headline, frontier plot)."""
