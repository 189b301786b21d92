"""After `wanwide lab run`, its passwords, Keystone keys and S3 keys are in no output, log or state file.

The lab's passwords are fixed (``wanwide.providers.lab.run``: admin, Keystone's database
user, MariaDB root); its fernet and credential keys are generated per deployment
under ``$WANWIDE_LAB_WORK/<benchmark>-<tag>/keystone-keys`` and removed with it,
so they are read while the run goes on. The S3 keys are this test's own. Looked
for (plain and base64) in: everything under the output dir (bundles, runner logs
and configs, network records, report), the run's stdout/stderr, the lab state
dir, every object uploaded to S3. Not covered: the password of the Rally user
the runner makes (it lives in the runner process and Rally's database only).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from tests.lab.test_lab_run import QUICK_GATE, WANWIDE, _spec
from tests.ports import free_port
from tests.secrets_scan import needles, scan, scan_tree
from wanwide.providers.lab import paths, services
from wanwide.providers.lab.bringup import ADMIN_PASSWORD, DB_PASSWORD, ROOT_PASSWORD

pytestmark = [pytest.mark.lab, pytest.mark.slow]


class KeyWatcher(threading.Thread):
    """Copies the Keystone key repositories' contents while the deployment exists."""

    def __init__(self, work: Path):
        super().__init__(daemon=True)
        self.work, self.keys, self.stop = work, {}, threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.5):
            for f in self.work.glob("*/keystone-keys/*/*"):
                with contextlib.suppress(OSError):
                    self.keys[f"{f.parent.name}/{f.name}"] = f.read_text().strip()


def test_lab_run_leaves_no_secret_behind(tmp_path, lab_state_dir, need_services):
    boto3 = pytest.importorskip("boto3")
    if not paths.versitygw().exists():
        pytest.skip("versitygw not built (hack/install-lab.sh without WANWIDE_LAB_SKIP_S3)")
    out, work = tmp_path / "out", Path("/var/tmp") / f"wanwide-secrets-{os.getpid()}"
    access, secret = f"ak{secrets.token_hex(8)}", secrets.token_urlsafe(24)
    s3dir = Path("/var/tmp") / f"wanwide-secrets-s3-{os.getpid()}"
    s3svc = services.Services(None, s3dir)
    s3 = s3svc.start_s3(port=free_port(), access_key=access, secret_key=secret)
    client = boto3.client("s3", endpoint_url=s3.info["url"], aws_access_key_id=access, aws_secret_access_key=secret,
                          region_name="us-east-1", config=boto3.session.Config(s3={"addressing_style": "path"}))
    client.create_bucket(Bucket="lab-secrets")
    f = _spec(tmp_path, results={"s3": {"endpoint": s3.info["url"], "bucket": "lab-secrets", "prefix": "sec",
                                        "secretRef": {"name": "lab-keys"}}})
    f.write_text(f.read_text().replace("ci-lab", "secrets-lab"))  # distinct from other lab runs
    env = dict(os.environ, WANWIDE_LAB_WORK=str(work), AWS_ACCESS_KEY_ID=access, AWS_SECRET_ACCESS_KEY=secret)
    watcher = KeyWatcher(work)
    watcher.start()
    try:
        p = subprocess.run([WANWIDE, "lab", "run", "-f", str(f), "-o", str(out), *QUICK_GATE], capture_output=True,
                           text=True, timeout=1500, env=env)
        watcher.stop.set()
        watcher.join()
        uploaded = {o["Key"]: client.get_object(Bucket="lab-secrets", Key=o["Key"])["Body"].read()
                    for o in client.list_objects_v2(Bucket="lab-secrets").get("Contents", [])}
    finally:
        s3svc.stop_all()
        shutil.rmtree(s3dir, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert {k.split("/")[0] for k in watcher.keys} == {"fernet-keys", "credential-keys"}, watcher.keys
    found = needles({"admin password": ADMIN_PASSWORD, "keystone db password": DB_PASSWORD,
                     "root password": ROOT_PASSWORD, "S3 access key": access, "S3 secret key": secret,
                     **{f"keystone key {k}": v for k, v in watcher.keys.items()}})
    hits = scan("stdout", p.stdout, found) + scan("stderr", p.stderr, found)
    n_out, more = scan_tree(out, found)
    hits += more
    assert n_out >= 5 and list(out.rglob("manifest.json")) and list(out.rglob("runner-*.log"))
    n_state, more = scan_tree(lab_state_dir, found)
    hits += more
    assert uploaded
    for k, body in uploaded.items():
        hits += scan(f"s3 {k}", body, found)
    assert hits == [], f"{len(hits)} hit(s) in {n_out} output, {n_state} state file(s), {len(uploaded)} object(s)"
