"""Smoke checks of the images hack/images.sh builds, each run for real with containerd.

Marker ``images`` (not in the unit, lab or cluster tiers): root, a few minutes warm,
longer on a cold cache (Debian packages, PyPI, the Go proxy).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tarfile
import textwrap
from pathlib import Path

import pytest

from .helpers import UPSTREAM, Containerd, images_sh

pytestmark = [pytest.mark.images, pytest.mark.slow]


def test_ref_is_stable_and_content_keyed(containerd: Containerd) -> None:
    ref = images_sh("ref", "pause").strip()
    assert re.fullmatch(r"wanwide\.local/pause:[0-9a-f]{12}", ref), ref
    assert images_sh("ref", "pause").strip() == ref
    assert images_sh("key", "pause").strip()[:12] == ref.rsplit(":", 1)[1]


def test_warm_build_is_a_cache_hit(containerd: Containerd) -> None:
    containerd.image("pause")
    r = subprocess.run(
        ["hack/images.sh", "build", "pause"],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "pause: cached" in r.stderr


def test_import_skips_an_image_already_present(containerd: Containerd) -> None:
    containerd.image("pause")
    r = subprocess.run(
        ["hack/images.sh", "import", "pause", "--address", containerd.sock],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "already in" in r.stderr


def test_pause_blocks_until_sigterm(containerd: Containerd) -> None:
    ref = containerd.image("pause")
    path = Path(images_sh("path", "pause").strip())
    assert path.stat().st_size < 2 * 1024 * 1024
    cid = "t-pause-block"
    containerd.ctr("run", "-d", ref, cid)
    try:
        import time

        time.sleep(1)
        assert "RUNNING" in containerd.ctr("task", "ls").stdout
        containerd.ctr("task", "kill", "-s", "SIGTERM", cid)
        for _ in range(50):
            if "STOPPED" in containerd.ctr("task", "ls").stdout:
                break
            time.sleep(0.1)
        assert "STOPPED" in containerd.ctr("task", "ls").stdout
    finally:
        containerd.ctr("task", "rm", "-f", cid, check=False)
        containerd.ctr("container", "rm", cid, check=False)


def image_config(name: str) -> dict:
    with tarfile.open(images_sh("path", name).strip()) as t:
        manifest = json.load(t.extractfile("manifest.json"))
        return json.load(t.extractfile(manifest[0]["Config"]))["config"]


def image_members(name: str, path: str) -> list[tarfile.TarInfo]:
    """The entries named PATH in any layer of image NAME."""
    out = []
    with tarfile.open(images_sh("path", name).strip()) as t:
        manifest = json.load(t.extractfile("manifest.json"))
        for layer in manifest[0]["Layers"]:
            with tarfile.open(fileobj=t.extractfile(layer), mode="r|") as lt:
                out += [m for m in lt if m.name.lstrip("./").rstrip("/") == path]
    return out


def readable_by_all(d: Path) -> None:
    """pytest's tmp dirs are 0700: the containers' non-root users must read them."""
    d.chmod(0o755)
    for f in d.iterdir():
        f.chmod(0o644)


def test_memcached(containerd: Containerd) -> None:
    r = containerd.run("memcached", "memcached", "-h")
    assert r.stdout.startswith("memcached 1.6"), r.stdout[:200]
    assert containerd.run("memcached", "id", "-u").stdout.strip() == "11211"
    cfg = image_config("memcached")
    assert cfg["Entrypoint"] == ["/usr/bin/memcached"] and cfg["User"] == "11211:11211"
    # serves: a set and a get through its text protocol
    script = textwrap.dedent(
        """
        memcached -m 16 -p 11211 -l 127.0.0.1 & sleep 1
        exec 3<>/dev/tcp/127.0.0.1/11211
        printf 'set k 0 0 2\\r\\nhi\\r\\nget k\\r\\nquit\\r\\n' >&3
        timeout 5 cat <&3
        """
    )
    out = containerd.run("memcached", "bash", "-c", script).stdout
    assert "STORED" in out and "VALUE k 0 2" in out, out


KEYSTONE_CONF = """[DEFAULT]
log_file =
[database]
connection = sqlite:////var/lib/keystone/keystone.db
[fernet_tokens]
key_repository = /etc/keystone/fernet-keys/
[credential]
key_repository = /etc/keystone/credential-keys/
"""

# openstack-helm 2026.1.0 keystone values: conf.wsgi_script and conf.wsgi_keystone
# (port 5000), which the chart mounts at these paths.
WSGI_SCRIPT = """import threading

from keystone.server import wsgi

application = None
lock = threading.Lock()
with lock:
    if application is None:
        application = wsgi.initialize_public_application()
"""
WSGI_KEYSTONE = """Listen 0.0.0.0:5000

LogFormat "%h %l %u %t \\"%r\\" %>s %b \\"%{Referer}i\\" \\"%{User-Agent}i\\"" combined
CustomLog /dev/stdout combined
ErrorLogFormat "%{cu}t %M"
ErrorLog /dev/stdout

<VirtualHost *:5000>
    WSGIDaemonProcess keystone-public processes=1 threads=1 user=keystone group=keystone display-name=%{GROUP}
    WSGIProcessGroup keystone-public
    WSGIScriptAlias / /var/www/cgi-bin/keystone/wsgi.py
    WSGIApplicationGroup %{GLOBAL}
    WSGIPassAuthorization On
    ErrorLogFormat "%{cu}t %M"
    ErrorLog /dev/stdout
</VirtualHost>
"""
# the chart's keystone-api.sh `start` (conf.software.apache2 defaults), as user 42424
API_START = """set -ex
if [ -f /etc/apache2/envvars ]; then source /etc/apache2/envvars; fi
if [ -f /var/run/apache2/apache2.pid ]; then rm -f /var/run/apache2/apache2.pid; fi
exec apache2 -DFOREGROUND
"""
KEYSTONE_TEST = """set -e
as() { setpriv --reuid 42424 --regid 42424 --clear-groups "$@"; }
cp /t/keystone.conf /etc/keystone/keystone.conf
install -d -o 42424 -g 42424 /etc/keystone/fernet-keys /etc/keystone/credential-keys
chown 42424:42424 /var/lib/keystone /var/run/apache2 /var/log/apache2
echo "version $(keystone-manage --version)"
python -c 'import pymysql, sqlalchemy, keystone; print("imports ok")'
as keystone-manage fernet_setup --keystone-user keystone --keystone-group keystone
as keystone-manage credential_setup --keystone-user keystone --keystone-group keystone
as keystone-manage --config-file=/etc/keystone/keystone.conf db_sync
as keystone-manage bootstrap --bootstrap-username admin --bootstrap-password s3cret \
  --bootstrap-project-name admin --bootstrap-public-url http://127.0.0.1:5000/v3 \
  --bootstrap-internal-url http://127.0.0.1:5000/v3 --bootstrap-admin-url http://127.0.0.1:5000/v3 \
  --bootstrap-region-id r1
as bash -c 'exec bash /t/api.sh >/tmp/api.log 2>&1' &  # the log is 42424's, as a pod's stdout is
for i in $(seq 60); do
  python -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:5000/v3")' 2>/dev/null && break
  sleep 1
done
export OS_AUTH_URL=http://127.0.0.1:5000/v3 OS_USERNAME=admin OS_PASSWORD=s3cret OS_PROJECT_NAME=admin \
  OS_USER_DOMAIN_NAME=Default OS_PROJECT_DOMAIN_NAME=Default OS_IDENTITY_API_VERSION=3
openstack token issue -f value -c project_id >/tmp/token.out 2>&1 || { cat /tmp/api.log /tmp/token.out; exit 1; }
echo "token ok"
openstack endpoint list -f value -c 'Region' | sort -u
"""


def test_keystone_versions(containerd: Containerd) -> None:
    out = containerd.run("keystone", "keystone-manage", "--version").stdout.strip()
    assert out == "30.0.0", out
    out = (
        containerd.run("keystone", "openstack", "--version").stdout
        + containerd.run("keystone", "openstack", "--version").stderr
    )
    assert "openstack 10.5.0" in out, out
    for b in ("apache2", "python", "keystone-manage", "openstack", "bash"):
        assert containerd.run("keystone", "bash", "-c", f"command -v {b}").stdout.strip(), b
    assert containerd.run("keystone", "id", "-u", "keystone").stdout.strip() == "42424"


def test_keystone_serves_tokens_as_the_chart_runs_it(
    containerd: Containerd, tmp_path: Path
) -> None:
    """The chart's layout on a read-only root: emptyDirs where the chart mounts them,
    its wsgi script and Apache site, apache2 started as keystone-api.sh does, user 42424;
    SQLite instead of MariaDB (the database is the mariadb image's test)."""
    (tmp_path / "keystone.conf").write_text(KEYSTONE_CONF)
    (tmp_path / "wsgi.py").write_text(WSGI_SCRIPT)
    (tmp_path / "wsgi-keystone.conf").write_text(WSGI_KEYSTONE)
    (tmp_path / "ports.conf").write_text("")
    (tmp_path / "api.sh").write_text(API_START)
    (tmp_path / "test.sh").write_text(KEYSTONE_TEST)
    readable_by_all(tmp_path)
    t = str(tmp_path)
    mounts = [
        f"type=bind,src={t},dst=/t,options=rbind:ro",
        f"type=bind,src={t}/wsgi.py,dst=/var/www/cgi-bin/keystone/wsgi.py,options=rbind:ro",
        f"type=bind,src={t}/wsgi-keystone.conf,dst=/etc/apache2/conf-enabled/wsgi-keystone.conf,options=rbind:ro",
        f"type=bind,src={t}/ports.conf,dst=/etc/apache2/ports.conf,options=rbind:ro",
    ]
    # the chart's emptyDirs (pod-tmp, etc-keystone, var-log/run-apache2, keys) + the db
    for d in ("/tmp", "/etc/keystone", "/var/log/apache2", "/var/run/apache2", "/var/lib/keystone"):
        mounts.append(f"type=tmpfs,src=tmpfs,dst={d},options=rw:mode=1777")
    r = containerd.run(
        "keystone", "bash", "/t/test.sh", mounts=mounts, read_only=True, timeout=240, check=False
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "version 30.0.0" in r.stdout and "imports ok" in r.stdout and "token ok" in r.stdout, (
        r.stdout
    )
    assert "r1" in r.stdout.split("token ok", 1)[1]


MARIADB_TEST = """set -e
mariadbd --version
ls /usr/lib/galera/libgalera_smm.so
command -v mariadb-backup rsync socat gosu
export MARIADB_ROOT_PASSWORD=s3cret MARIADB_DATABASE=keystone
docker-entrypoint.sh mariadbd >/tmp/mariadb.log 2>&1 &
for i in $(seq 90); do
  timeout 10 healthcheck.sh --connect --innodb_initialized 2>/dev/null && break
  sleep 1
done
mariadb -uroot -ps3cret -e 'SELECT VERSION(); SHOW DATABASES' || { cat /tmp/mariadb.log; exit 1; }
mariadb -uroot -ps3cret -e "SHOW VARIABLES LIKE 'wsrep_provider'"
"""


def test_mariadb(containerd: Containerd, tmp_path: Path) -> None:
    cfg = image_config("mariadb")
    assert cfg["Entrypoint"] == ["docker-entrypoint.sh"] and cfg["Cmd"] == ["mariadbd"]
    assert "/var/lib/mysql" in cfg["Volumes"]
    assert containerd.run("mariadb", "id", "mysql").stdout.startswith(
        "uid=999(mysql) gid=999(mysql)"
    )
    # upstream's scripts, byte for byte
    if (UPSTREAM / "mariadb-docker").is_dir():
        for f in ("docker-entrypoint.sh", "healthcheck.sh"):
            inside = containerd.run("mariadb", "cat", f"/usr/local/bin/{f}").stdout
            assert inside == (UPSTREAM / "mariadb-docker" / "10.11" / f).read_text(), f
    (tmp_path / "test.sh").write_text(MARIADB_TEST)
    # what the kubelet mounts into every container (healthcheck.sh connects to localhost)
    (tmp_path / "hosts").write_text("127.0.0.1 localhost\n::1 localhost\n")
    readable_by_all(tmp_path)
    # as mariadb-operator runs it: user and group 999, the datadir a volume
    # the image has /run/mysqld, but `ctr run` mounts a tmpfs over /run (the CRI, like
    # docker, does not): recreate it as the image has it, then run as the operator does
    assert any(
        m.name.strip("./") == "run/mysqld" and m.mode == 0o1777
        for m in image_members("mariadb", "run/mysqld")
    )
    r = containerd.run(
        "mariadb",
        "bash", "-c", "install -d -m 1777 /run/mysqld && exec setpriv --reuid 999 --regid 999 --clear-groups bash /t/test.sh",
        mounts=[
            f"type=bind,src={tmp_path},dst=/t,options=rbind:ro",
            f"type=bind,src={tmp_path}/hosts,dst=/etc/hosts,options=rbind:ro",
        ],
        timeout=240,
        check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert re.search(r"mariadbd\s+Ver 10\.11\.", r.stdout), r.stdout
    assert "keystone" in r.stdout and re.search(r"10\.11\.\d+-MariaDB", r.stdout), r.stdout


def test_dep_check(containerd: Containerd) -> None:
    cfg = image_config("dep-check")
    assert cfg["Entrypoint"] == ["/usr/local/bin/kubernetes-entrypoint"] and cfg["User"] == "65534"
    r = containerd.run("dep-check", "/usr/local/bin/kubernetes-entrypoint", check=False, timeout=60)
    out = r.stdout + r.stderr
    # started, then refused: no pod environment (POD_NAME, NAMESPACE...) and no API server
    assert r.returncode != 0 and out.strip(), out
    assert re.search(r"(?i)env|namespace|pod_name|kubernetes|config", out), out
    assert containerd.run("dep-check", "echo", "done").stdout.strip() == "done"


def test_mariadb_operator(containerd: Containerd) -> None:
    cfg = image_config("mariadb-operator")
    assert cfg["Entrypoint"] == ["/bin/mariadb-operator"] and cfg["User"] == "65532:65532"
    r = containerd.run("mariadb-operator", "/bin/mariadb-operator", "--help")
    for sub in ("agent", "init", "webhook", "cert-controller"):
        assert re.search(rf"^\s+{sub}\s", r.stdout, re.M), (sub, r.stdout)


def test_wanwide(containerd: Containerd) -> None:
    cfg = image_config("wanwide")
    assert (
        cfg["Entrypoint"] == ["wanwide"] and cfg["Cmd"] == ["operator"] and cfg["User"] == "10001"
    )
    r = containerd.run("wanwide", "wanwide", "--help")
    assert "operator" in r.stdout and "runner" in r.stdout, r.stdout
    r = containerd.run("wanwide", "rally", "--version")
    assert "5.1.1" in r.stdout + r.stderr, r.stdout + r.stderr
    # the Dockerfile's `go install helm@v3.22.0` sets no version ldflags: helm reports v3.22
    r = containerd.run("wanwide", "helm", "version", "--short")
    assert r.stdout.startswith("v3.22"), r.stdout
    assert containerd.run("wanwide", "id", "-u").stdout.strip() == "10001"
    # the Rally Job's command gets as far as its configuration (not a module the image lacks)
    r = containerd.run("wanwide", "wanwide", "runner", "run", "--config", "/etc/wanwide/runner.json", check=False)
    assert r.returncode == 2 and "/etc/wanwide/runner.json" in r.stderr, r.stderr
    assert "needs the Python module" not in r.stderr, r.stderr


# ---- issue 45's control plane: nova, placement, glance (LOCI's layout, as keystone's) and rabbitmq ----------------

SERVICE_VERSIONS = {"nova": ("nova-manage", "34.0.0"), "placement": ("placement-manage", "16.0.0"),
                    "glance": ("glance-manage", "33.0.0"), "neutron": ("neutron-rpc-server", "29.0.0")}
WSGI_MODULES = {"nova": "nova.wsgi.osapi_compute", "placement": "placement.wsgi.api", "glance": "glance.wsgi.api",
                "neutron": "neutron.wsgi.api"}
"""The ``module:`` of each chart's uwsgi ini (openstack-helm 2026.1.0 values: conf.<service>_api_uwsgi)."""


@pytest.mark.parametrize("name", sorted(SERVICE_VERSIONS))
def test_openstack_service_versions_and_layout(containerd: Containerd, name: str) -> None:
    manage, version = SERVICE_VERSIONS[name]
    r = containerd.run(name, manage, "--version")
    # its version alone, or after the program's name (neutron's oslo.config); warnings go to stderr
    assert r.stdout.strip().splitlines()[-1].split()[-1] == version, r.stdout + r.stderr
    assert containerd.run(name, "id", "-u", name).stdout.strip() == "42424"
    r = containerd.run(name, "uwsgi", "--version")
    assert re.fullmatch(r"2\.0\.\d+(\.post\d+)?", r.stdout.strip()), r.stdout
    r = containerd.run(name, "python", "-c", f"import importlib.util as u; print(u.find_spec('{WSGI_MODULES[name]}') "
                       "is not None); import pymysql, memcache; print('drivers ok')")
    assert r.stdout.split() == ["True", "drivers", "ok"], r.stdout + r.stderr
    # the charts' keystone_authtoken encrypts the tokens it caches (memcache_security_strategy: ENCRYPT), which
    # keystonemiddleware does with `cryptography`; without it every authenticated request is a 500
    # (CryptoUnavailableError: the real-node run's 4 of 4 "No valid host", placement refusing the computes)
    r = containerd.run(name, "python", "-c", "from keystonemiddleware.auth_token import _memcache_crypt as m; "
                       "k = m.derive_keys(b't', b's', 'ENCRYPT'); print(m.unprotect_data(k, m.protect_data(k, b'x')))")
    assert r.stdout.strip() == "b'x'", r.stdout + r.stderr
    for d in (f"/etc/{name}", f"/var/lib/{name}"):
        assert containerd.run(name, "stat", "-c", "%u", d).stdout.strip() == "42424", d


def test_neutron_has_what_its_chart_runs_with_no_agent(containerd: Containerd) -> None:
    """neutron-server.sh's uwsgi, neutron-rpc-server.sh's RPC workers, db-sync's neutron-db-manage, and ML2's plugin
    (the agents are off: no DaemonSet, nothing wires a port)."""
    for b in ("neutron-rpc-server", "neutron-db-manage"):
        assert containerd.run("neutron", "bash", "-c", f"command -v {b}").stdout.strip() == \
            f"/var/lib/openstack/bin/{b}", b
    r = containerd.run("neutron", "python", "-c", "from neutron.plugins.ml2 import plugin; "
                       "print(plugin.Ml2Plugin.__name__)")
    assert r.stdout.strip() == "Ml2Plugin", r.stdout + r.stderr


def test_nova_has_the_fake_driver_the_computes_run(containerd: Containerd) -> None:
    r = containerd.run("nova", "python", "-c", "from nova.virt import fake; print(fake.FakeDriver.__name__)")
    assert r.stdout.strip() == "FakeDriver", r.stdout + r.stderr
    for b in ("nova-compute", "nova-conductor", "nova-scheduler", "nova-manage"):
        assert containerd.run("nova", "bash", "-c", f"command -v {b}").stdout.strip() == \
            f"/var/lib/openstack/bin/{b}", b


PLACEMENT_CONF = """[DEFAULT]
[api]
auth_strategy = noauth2
[placement_database]
connection = sqlite:////tmp/placement.db
"""
PLACEMENT_TEST = """set -e
placement-manage db sync
uwsgi --http-socket 127.0.0.1:8778 --module placement.wsgi.api:application --master --processes 1 \
  --enable-threads --lazy-apps --die-on-term >/tmp/uwsgi.log 2>&1 &
for i in $(seq 60); do
  python -c "import urllib.request as u; print(u.urlopen('http://127.0.0.1:8778/').read().decode())" 2>/dev/null \
    && exit 0
  sleep 1
done
cat /tmp/uwsgi.log; exit 1
"""


def test_placement_serves_its_api_under_uwsgi_as_the_chart_starts_it(containerd: Containerd, tmp_path: Path) -> None:
    """placement-api.sh's `uwsgi --ini` with the chart's module, as user 42424 (SQLite instead of MariaDB: the
    database is the mariadb image's test)."""
    (tmp_path / "test.sh").write_text(PLACEMENT_TEST)
    (tmp_path / "placement.conf").write_text(PLACEMENT_CONF)
    readable_by_all(tmp_path)
    mounts = [f"type=bind,src={tmp_path},dst=/t,options=rbind:ro",
              "type=tmpfs,src=tmpfs,dst=/tmp,options=rw:mode=1777",  # the chart's pod-tmp
              # the chart mounts its placement.conf (placement-etc) as this one file
              f"type=bind,src={tmp_path}/placement.conf,dst=/etc/placement/placement.conf,options=rbind:ro"]
    r = containerd.run("placement", "setpriv", "--reuid", "42424", "--regid", "42424", "--clear-groups",
                       "bash", "/t/test.sh", mounts=mounts, timeout=240, check=False)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert '"versions"' in r.stdout and '"id": "v1.0"' in r.stdout, r.stdout


RABBITMQ_TEST = """set -e
export HOME=/var/lib/rabbitmq RABBITMQ_LOG_BASE=/tmp/log RABBITMQ_MNESIA_BASE=/var/lib/rabbitmq/mnesia
echo '[rabbitmq_management,rabbitmq_peer_discovery_k8s,rabbitmq_prometheus].' > /tmp/enabled_plugins
export RABBITMQ_ENABLED_PLUGINS_FILE=/tmp/enabled_plugins
rabbitmq-server >/tmp/server.log 2>&1 &
rabbitmqctl await_startup --timeout 150 || { cat /tmp/server.log; exit 1; }
rabbitmqctl ping
rabbitmqctl add_vhost nova
rabbitmqctl list_vhosts --silent
rabbitmq-plugins list --enabled --minimal --silent
rabbitmqctl shutdown
"""


def test_rabbitmq_serves_as_the_charts_user_with_the_charts_plugins(containerd: Containerd, tmp_path: Path) -> None:
    cfg = image_config("rabbitmq")
    assert cfg["User"] == "999:999" and cfg["Cmd"] == ["rabbitmq-server"]
    assert containerd.run("rabbitmq", "id", "-un").stdout.strip() == "rabbitmq"
    # the chart's password-hash init container (its rabbitmq_init image is this one) needs python3's stdlib
    r = containerd.run("rabbitmq", "python3", "-c", "import base64, hashlib, json, os, re; print('ok')")
    assert r.stdout.strip() == "ok"
    data = tmp_path / "rabbitmq"  # the chart's data volume (an emptyDir), the user's as its chown init leaves it
    data.mkdir()
    os.chown(data, 999, 999)
    mounts = ["type=tmpfs,src=tmpfs,dst=/tmp,options=rw:mode=1777",
              f"type=bind,src={data},dst=/var/lib/rabbitmq,options=rbind:rw"]
    r = containerd.run("rabbitmq", "bash", "-c", RABBITMQ_TEST, mounts=mounts, timeout=300, check=False)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "pong" in r.stdout.lower() or "Ping succeeded" in r.stdout, r.stdout
    assert re.search(r"^nova$", r.stdout, re.M), r.stdout
    for plugin in ("rabbitmq_management", "rabbitmq_peer_discovery_k8s", "rabbitmq_prometheus"):
        assert plugin in r.stdout, (plugin, r.stdout)
