"""autoscaling resources (HorizontalPodAutoscalers, v2 and v1) and the Scale kind served
through other resources' subresources."""
