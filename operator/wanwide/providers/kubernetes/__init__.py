"""The Kubernetes provider: the plan rendered to objects, a Trial's lifecycle carried out with them.

- ``render``: plan → Kubernetes objects and Helm releases (pure).
- ``controller``: kopf handlers (thin), observe → the lifecycle's step → the step as objects
  (``phases``) → one executor of writes.
- ``kube``: the only place that talks to the API server or runs helm.
"""
