"""wanwide: geo-distributed OpenStack control-plane testbeds and benchmarks."""

__version__ = "0.1.0"

API_GROUP = "wanwide.io"
API_VERSION = "v1alpha1"
FIELD_MANAGER = "wanwide"
