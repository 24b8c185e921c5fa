"""A router policy file Dynamo 1.6.1's frontend accepts (it parses it at start and refuses a bad
one): what the router-setup tests pass with --router-policy-config and expect recorded."""

POLICY = """default_policy_family: agents
uncached_isl_buckets:
  - {min_tokens: 0, bucket: all}
policy_classes:
  - name: agents-all
    policy_family: agents
    cache_bucket: all
    queue_policy: wspt
    quantum: 1
    prefill_busy_threshold_frac: 0.9
"""
