"""The scheduling framework: extension points, the plugin runtime, NodeInfo and the plugins."""
