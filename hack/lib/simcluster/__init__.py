"""A real Kubernetes control plane on loopback with simulated accelerator nodes.

This package backs ``hack/cluster``. It exists so that integration and end-to-end
tests exercise the real kube-apiserver, controllers and scheduler instead of a fake:
only the kubelets are simulated (by kwok, plus the small helper in ``devsim``).
"""
