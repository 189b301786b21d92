"""wanwide: geo-distributed OpenStack control-plane testbeds and benchmarks.

``core`` decides (the plan of every trial, its lifecycle), ``providers`` carry it out (Kubernetes, the lab),
``pipeline`` runs the load and reads the results; ``cli`` is the command line (docs/architecture.md).
"""

__version__ = "0.1.0"
DEFAULT_IMAGE = f"ghcr.io/wanwide/wanwide:{__version__}"  # the chart's image when its values leave it alone

API_GROUP = "wanwide.io"
API_VERSION = "v1alpha1"
FIELD_MANAGER = "wanwide"
