"""Rally's command logs (part of every bundle) never hold the passwords given to `rally env create`."""

from __future__ import annotations

import json

from wanwide.core.contracts import KeystoneSettings
from wanwide.pipeline.runner.rally import REDACTED, Rally

# What `rally env create --spec FILE` does that matters here: it prints the spec it stored.
ECHO_SPEC = """#!/usr/bin/env python3
import json, sys
spec = json.load(open(sys.argv[sys.argv.index("--spec") + 1]))
print("| platform: openstack |", json.dumps(spec["existing@openstack"], indent=2).replace("\\n", "\\n|    |"))
"""


def test_env_create_log_has_no_password(tmp_path):
    exe = tmp_path / "rally"
    exe.write_text(ECHO_SPEC)
    exe.chmod(0o755)
    rally = Rally(exe=exe, workdir=tmp_path / "work", logdir=tmp_path / "logs")
    ks = KeystoneSettings(url="http://127.0.0.1:5000/v3", region_name="r1", username="admin",
                          password_env="X", project_name="admin", user_domain_name="Default",
                          project_domain_name="Default")
    users = [{"username": "wanwide-rally-r1", "password": "u-Secret-0123456789", "user_domain_name": "Default",
              "project_name": "wanwide-rally-r1", "project_domain_name": "Default"}]
    rally.env_create(ks, "a-Secret-0123456789", users=users)
    (log,) = (tmp_path / "logs").glob("*-env-create.log")
    text = log.read_text()
    assert '"username": "admin"' in text and '"username": "wanwide-rally-r1"' in text  # the spec was printed
    assert "a-Secret-0123456789" not in text and "u-Secret-0123456789" not in text
    assert text.count(REDACTED) == 2
    # the spec Rally reads still holds them (0600, in the work dir, never in the bundle)
    spec = json.loads((tmp_path / "work" / "env-spec.json").read_text())
    assert spec["existing@openstack"]["admin"]["password"] == "a-Secret-0123456789"
