"""The reward router: the gRPC reward service, its scoring pipeline, task registry and composites."""
