"""Strings that point somewhere or end up in a command line or a config file: URLs, image and chart
references, chart versions, Galera provider options, Secret keys, S3 prefixes.

Each is one regular expression the planner checks with ``re.fullmatch`` and the CRD with CEL's
``matches`` (RE2, whose ``$`` is the end of the text), so neither takes a value the other refuses.
A Benchmark's author is not the cluster's admin: what the operator fetches, runs or writes from
these fields is held to a strict shape (no leading ``-`` that helm would read as an option, no user
name or password in a URL, no link-local or cloud metadata host, no newline, quote, ``;`` or ``=``
where a config file or SQL statement would take it as syntax).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, Field, WithJsonSchema

from wanwide.core.api.base import cel_matches

# ---- URLs ------------------------------------------------------------------------------------------

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
# a host name's last label starts with a letter: "2852039166" or "0xa9fea9fe" would be read as an IPv4
# address by getaddrinfo (inet_aton's forms), so only a dotted quad is an address
_HOSTNAME = rf"({_LABEL}\.)*[a-z]([-a-z0-9]*[a-z0-9])?"
_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = rf"{_OCTET}(\.{_OCTET}){{3}}"
_IPV6 = r"\[[0-9a-f:]{2,39}\]"
_HOST = rf"({_HOSTNAME}|{_IPV4}|{_IPV6})(:[0-9]{{1,5}})?"
_PATH = r"(/[A-Za-z0-9._~%+-]*)*"


def url_re(*schemes: str) -> str:
    return rf"^({'|'.join(schemes)})://{_HOST}{_PATH}$"


# link-local (169.254.0.0/16: every cloud's metadata service), Alibaba's metadata address, IPv6
# link-local (fe80::/10), AWS's IPv6 metadata address, IPv4-mapped IPv6, and the metadata host names
BLOCKED_HOST_RE = (r"^[a-z]+://(169\.254\.[0-9.]+|100\.100\.100\.200|\[(fe[89ab][0-9a-f]*:|fd00:ec2:|[0-9a-f:]*ffff:)"
                   r"[0-9a-f:]*\]|metadata|metadata\.google\.internal|metadata\.goog|instance-data|"
                   r"instance-data\.ec2\.internal)(:[0-9]+)?(/.*)?$")
BLOCKED_HOST_MSG = ("a link-local or cloud metadata host (such as 169.254.169.254 or metadata.google.internal): "
                    "whoever fetches it would reach the node's own credentials; use the service's address")


def url_message(*schemes: str) -> str:
    starts = " or ".join(f"{s}://" for s in schemes)
    return (f"must be a URL starting with {starts}, then a lower-case host name or an IP address, an optional "
            "port and path: no user name or password (keep keys in a Secret), no query or fragment")


def url(*schemes: str, max_length: int = 500, empty: bool = False) -> Any:
    """A URL of one of ``schemes`` (``empty``: ``""`` allowed too), its host not link-local or metadata."""
    shape = url_re(*schemes)
    msg = url_message(*schemes) + (' (or "")' if empty else "")
    blocked = re.compile(BLOCKED_HOST_RE)

    def check(value: str) -> str:
        if empty and value == "":
            return value
        if not re.fullmatch(shape, value):
            raise ValueError(f"{value!r} {msg}")
        if blocked.fullmatch(value):
            raise ValueError(f"{value!r} is {BLOCKED_HOST_MSG}")
        return value

    guard = "self == '' || " if empty else ""
    schema = {"type": "string", "maxLength": max_length, "x-kubernetes-validations": [
        {"rule": guard + cel_matches(shape), "message": msg},
        {"rule": "!" + cel_matches(BLOCKED_HOST_RE), "message": f"is {BLOCKED_HOST_MSG}"},
    ]}
    return Annotated[str, AfterValidator(check), WithJsonSchema(schema)]


def _pattern(regex: str, message: str, max_length: int, min_length: int = 0) -> Any:
    """A string matching ``regex`` (CEL rule with ``message``, the planner's words the same)."""

    def check(value: str) -> str:
        if not re.fullmatch(regex, value):
            raise ValueError(f"{value!r} {message}")
        return value

    schema: dict[str, Any] = {"type": "string", "maxLength": max_length,
                              "x-kubernetes-validations": [{"rule": cel_matches(regex), "message": message}]}
    if min_length:
        schema["minLength"] = min_length
    return Annotated[str, Field(max_length=max_length, min_length=min_length), AfterValidator(check),
                     WithJsonSchema(schema)]


# ---- images ----------------------------------------------------------------------------------------

_PATH_COMPONENT = r"[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*"
_DOMAIN = r"[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*(:[0-9]{1,5})?"
IMAGE_RE = (rf"^({_DOMAIN}/)?{_PATH_COMPONENT}(/{_PATH_COMPONENT})*(:[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?"
            r"(@sha256:[a-f0-9]{64})?$")
IMAGE_MSG = ("must be an image reference such as ghcr.io/org/name:tag or name@sha256:<digest> (registry, "
             "lower-case path, optional tag and digest; at most 512 characters)")
Image = _pattern(IMAGE_RE, IMAGE_MSG, 512)
TAG_RE = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$"
Tag = _pattern(TAG_RE, "must be an image tag: letters, digits, '_', '.' and '-', not starting with '.' or '-'", 128)

# ---- Helm charts -----------------------------------------------------------------------------------

CHART_NAME_RE = r"^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$"
OCI_RE = rf"^oci://{_HOST}(/{_PATH_COMPONENT})+$"
# a component may start with one dot (/root/.cache/…: hidden directories are ordinary places), never be
# "." or ".." nor start with ".." (RE2 has no lookahead: the leading dot is optional, then a non-dot)
LOCAL_CHART_RE = r"^(/\.?[A-Za-z0-9_+-][A-Za-z0-9._+-]*)+/?$"
CHART_RE = f"({CHART_NAME_RE})|({OCI_RE})|({LOCAL_CHART_RE})"
CHART_MSG = ("must be a chart name in chartRepo (such as keystone), an oci:// reference (oci://registry/path/"
             "keystone) or an absolute path the operator can read (no '..'); never starting with '-'")


def _chart() -> Any:
    shape = _pattern(CHART_RE, CHART_MSG, 512, 1)
    blocked = re.compile(BLOCKED_HOST_RE)

    def check(value: str) -> str:
        if value.startswith("oci://") and blocked.fullmatch(value):
            raise ValueError(f"{value!r} is {BLOCKED_HOST_MSG}")
        return value

    schema = {"type": "string", "minLength": 1, "maxLength": 512, "x-kubernetes-validations": [
        {"rule": cel_matches(CHART_RE), "message": CHART_MSG},
        {"rule": "!self.startsWith('oci://') || !" + cel_matches(BLOCKED_HOST_RE), "message": f"is {BLOCKED_HOST_MSG}"},
    ]}
    return Annotated[shape, AfterValidator(check), WithJsonSchema(schema)]


Chart = _chart()
CHART_VERSION_RE = r"^v?[0-9]+(\.[0-9]+){0,2}(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$"
ChartVersion = _pattern(CHART_VERSION_RE, "must be an exact chart version such as 2025.2.0 or 1.2.3-rc.1 "
                        "(a semantic version, no range, never starting with '-')", 64, 1)
ChartRepo = url("https", empty=True)


def chart_problem(chart: str, repo: str) -> tuple[str, str] | None:
    """(field, what to do) when ``chart`` and ``chartRepo`` do not go together; None when they do."""
    if chart.startswith("oci://") and repo:
        return "chartRepo", 'an oci:// chart comes from its registry: set chartRepo: ""'
    if chart.startswith("/") and repo:
        return "chartRepo", 'a chart given by its path is read from the operator\'s disk: set chartRepo: ""'
    if not chart.startswith(("oci://", "/")) and not repo:
        return "chart", "a chart name needs chartRepo (an https:// Helm repository), or give an oci:// reference"
    return None


CHART_RULES = [
    ("!self.chart.startsWith('oci://') || self.chartRepo == ''", 'an oci:// chart comes from its registry: '
     'set chartRepo: ""', ".chartRepo"),
    ("!self.chart.startsWith('/') || self.chartRepo == ''", 'a chart given by its path is read from the '
     'operator\'s disk: set chartRepo: ""', ".chartRepo"),
    ("self.chart.startsWith('oci://') || self.chart.startsWith('/') || self.chartRepo != ''",
     "a chart name needs chartRepo (an https:// Helm repository), or give an oci:// reference", ".chart"),
]

# ---- settings written into config files -------------------------------------------------------------

GALERA_KEY_RE = r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$"
GALERA_VALUE_RE = r"^[A-Za-z0-9_.,:+*-]{1,256}$"
GALERA_MSG = ("keys such as evs.suspect_timeout (lower-case letters, digits, '_' and '.', at most 64) and values "
              "of letters, digits and _ . , : + * - (at most 256): no space, quote, '/', ';', '=' or newline, "
              "they are written into my.cnf and wsrep_provider_options")
GALERA_VALUE_HINT = ("use letters, digits and _ . , : + * - only (at most 256): no space, quote, '/', ';', '=' or "
                     "newline, the value is written into my.cnf and wsrep_provider_options")
GALERA_OPTIONS_MAX = 50


def galera_options_problem(options: dict[str, str]) -> str | None:
    for k, v in options.items():
        if not (isinstance(k, str) and len(k) <= 64 and re.fullmatch(GALERA_KEY_RE, k)):
            return f"{k!r}: {GALERA_MSG}"
        if not (isinstance(v, str) and re.fullmatch(GALERA_VALUE_RE, v)):
            return f"{k}={v!r}: {GALERA_MSG}"
    return None



# a key of a Secret or ConfigMap, as Kubernetes checks it
CONFIG_KEY_RE = r"^[-._a-zA-Z0-9]+$"
ConfigKey = _pattern(CONFIG_KEY_RE, "must be a key of a Secret or ConfigMap: letters, digits, '-', '_' and '.'",
                     253, 1)
# S3 key prefix: path components that neither start with '.' (no '..') nor hold anything but safe characters
S3_PREFIX_RE = r"^([A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*)?$"
S3Prefix = _pattern(S3_PREFIX_RE, "must be components of letters, digits, '.', '_' and '-' separated by '/', "
                    "none starting with '.' (such as wanwide or team/runs)", 200)
S3_REGION_RE = r"^[A-Za-z0-9_-]{1,64}$"
S3Region = _pattern(S3_REGION_RE, "must be a region name such as us-east-1", 64, 1)
# a local directory (lab only): any path without control characters
LOCAL_DIR_RE = r"^[^\x00-\x1f\x7f]+$"
LocalDir = _pattern(LOCAL_DIR_RE, "must be a directory path without control characters (at most 1024)", 1024, 1)
