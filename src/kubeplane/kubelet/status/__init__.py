"""Pod status: the kubelet-owned conditions (generate.py) and the status manager that writes them."""
