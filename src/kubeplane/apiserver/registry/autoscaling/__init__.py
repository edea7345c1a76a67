"""autoscaling/v1 kinds served through other resources' subresources (Scale)."""
