"""Whether a cluster is configured and answers, before a command that needs one starts (``wanwide operator``,
``wanwide doctor``): one line naming what was looked for and the fix, instead of the Kubernetes client's
``ConfigException`` traceback or kopf's five ``LoginError`` ones.

Looked for, in the Kubernetes client's own order: ``--kubeconfig``; in a pod, its ServiceAccount
(``KUBERNETES_SERVICE_HOST`` and the token file); the files of ``$KUBECONFIG``; ``~/.kube/config``.
A kubeconfig found is loaded and its API server asked for ``/version`` (a few seconds at most); in a pod
nothing is asked (the API server may be starting; kopf retries).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from wanwide.core.errors import UserError, one_line

TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")
FIX = "give --kubeconfig FILE or set KUBECONFIG (hack/testcluster.sh up writes one: hack/testcluster.sh env)"


class NoCluster(UserError):
    """No cluster configured, or the one configured does not answer."""


def in_pod(env: Mapping[str, str], token: Path = TOKEN) -> bool:
    return bool(env.get("KUBERNETES_SERVICE_HOST") and env.get("KUBERNETES_SERVICE_PORT")) and token.is_file()


def kubeconfig_files(kubeconfig: str | None, env: Mapping[str, str], home: Path | None = None) -> list[Path]:
    """The kubeconfig files looked for, in order: ``--kubeconfig``, else ``$KUBECONFIG``'s, else ~/.kube/config."""
    if kubeconfig:
        return [Path(kubeconfig).expanduser()]
    if env.get("KUBECONFIG"):
        return [Path(p).expanduser() for p in env["KUBECONFIG"].split(os.pathsep) if p]
    return [(home or Path.home()) / ".kube" / "config"]


def missing(command: str, kubeconfig: str | None, env: Mapping[str, str], home: Path | None = None,
            token: Path = TOKEN) -> str | None:
    """Why no cluster is configured for ``command`` (None: one is, or it runs in a pod). Pure but for stat()."""
    if not kubeconfig and in_pod(env, token):
        return None
    files = kubeconfig_files(kubeconfig, env, home)
    if any(f.is_file() for f in files):
        return None
    where = ("--kubeconfig" if kubeconfig else "$KUBECONFIG" if env.get("KUBECONFIG") else "the default") + " " + \
        ", ".join(str(f) for f in files)
    pod = "" if kubeconfig else "not in a pod (KUBERNETES_SERVICE_HOST unset), "
    return f"{command}: no cluster configured: {pod}no kubeconfig at {where}: {FIX}"


def check(command: str, kubeconfig: str | None, env: Mapping[str, str] | None = None, timeout_s: float = 5.0) -> None:
    """NoCluster (one line, with the fix) unless a cluster is configured and, through a kubeconfig, answers."""
    env = os.environ if env is None else env
    why = missing(command, kubeconfig, env)
    if why:
        raise NoCluster(why)
    if not kubeconfig and in_pod(env):
        return
    from kubernetes import client, config

    files = [f for f in kubeconfig_files(kubeconfig, env) if f.is_file()]
    for f in files:
        shape = _shape(f)
        if shape:
            raise NoCluster(f"{command}: kubeconfig {f} {shape}: fix it, or {FIX}")
    cfg = client.Configuration()
    try:
        config.load_kube_config(config_file=str(files[0]) if kubeconfig else None, client_configuration=cfg)
    except (config.ConfigException, OSError, ValueError, TypeError) as e:
        raise NoCluster(f"{command}: kubeconfig {', '.join(map(str, files))} cannot be used: {one_line(str(e))}: "
                        f"fix it, or {FIX}") from None
    cfg.retries = 0
    try:
        client.VersionApi(client.ApiClient(cfg)).get_code(_request_timeout=timeout_s)
    except client.ApiException as e:  # it answers, and refuses
        raise NoCluster(f"{command}: the cluster of kubeconfig {', '.join(map(str, files))} ({cfg.host}) refused "
                        f"/version: {e.status} {e.reason}: check the kubeconfig's credentials, or {FIX}") from None
    except Exception as e:  # noqa: BLE001 - whatever it is, the cluster did not answer
        reason = getattr(e, "reason", None) or type(e).__name__
        raise NoCluster(f"{command}: the cluster of kubeconfig {', '.join(map(str, files))} ({cfg.host}) does not "
                        f"answer: {one_line(str(reason))[:200]}: start it, or {FIX}") from None


def _shape(path: Path) -> str | None:
    """What is wrong with a kubeconfig file's shape (None: a mapping, the client says the rest)."""
    import yaml

    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        return f"cannot be read as YAML ({one_line(str(e))[:160]})"
    if not isinstance(doc, dict):
        return "is not a kubeconfig (no YAML mapping with clusters, contexts and users)"
    return None
