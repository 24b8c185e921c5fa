"""The concurrency sweep: one Harbor job per concurrency level against one server."""
