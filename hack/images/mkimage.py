#!/usr/bin/env python3
"""Write a docker-archive image (what `docker save` writes and `ctr images import` reads).

Used by hack/images.sh; standard library only. Layers are uncompressed tars:
  --layer TAR            an existing tar (e.g. a root filesystem from mmdebstrap), used as is
  --add SRC:DEST[:MODE]  a file put into one extra layer (with --dir entries)
  --dir DEST[:MODE]      a directory in that extra layer (mode octal, default 0755)
  --symlink DEST:TARGET  a symlink in that extra layer
Config: --ref (repeatable), --entrypoint JSON, --cmd JSON, --env K=V, --user, --workdir,
--label K=V, --port N/tcp, --volume PATH. Timestamps are fixed (epoch 0): the same
inputs give the same archive.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def parent_dirs(dest: str) -> list[str]:
    parts = dest.strip("/").split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def extra_layer(path: str, adds: list[str], dirs: list[str], links: list[str]) -> None:
    seen: set[str] = set()
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:

        def add_dir(name: str, mode: int = 0o755) -> None:
            if name in seen:
                return
            seen.add(name)
            ti = tarfile.TarInfo(name)
            ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, mode, 0
            t.addfile(ti)

        for spec in dirs:
            dest, _, mode = spec.partition(":")
            for p in parent_dirs(dest):
                add_dir(p)
            add_dir(dest.strip("/"), int(mode or "755", 8))
        for spec in adds:
            src, dest, *rest = spec.split(":")
            for p in parent_dirs(dest):
                add_dir(p)
            st = os.stat(src)
            ti = tarfile.TarInfo(dest.strip("/"))
            ti.size, ti.mtime = st.st_size, 0
            ti.mode = int(rest[0], 8) if rest else st.st_mode & 0o7777
            with open(src, "rb") as f:
                t.addfile(ti, f)
        for spec in links:
            dest, target = spec.split(":", 1)
            for p in parent_dirs(dest):
                add_dir(p)
            ti = tarfile.TarInfo(dest.strip("/"))
            ti.type, ti.linkname, ti.mtime, ti.mode = tarfile.SYMTYPE, target, 0, 0o777
            t.addfile(ti)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ref", action="append", required=True)
    ap.add_argument("--layer", action="append", default=[])
    ap.add_argument("--add", action="append", default=[])
    ap.add_argument("--dir", action="append", default=[])
    ap.add_argument("--symlink", action="append", default=[])
    ap.add_argument("--entrypoint")
    ap.add_argument("--cmd")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--user")
    ap.add_argument("--workdir")
    ap.add_argument("--label", action="append", default=[])
    ap.add_argument("--port", action="append", default=[])
    ap.add_argument("--volume", action="append", default=[])
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="mkimage.", dir=os.path.dirname(os.path.abspath(a.out)))
    try:
        layers = list(a.layer)
        if a.add or a.dir or a.symlink:
            extra = os.path.join(tmp, "extra.tar")
            extra_layer(extra, a.add, a.dir, a.symlink)
            layers.append(extra)
        diff_ids = [sha256_file(p) for p in layers]
        cfg: dict = {"Env": a.env or ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
        if a.entrypoint:
            cfg["Entrypoint"] = json.loads(a.entrypoint)
        if a.cmd:
            cfg["Cmd"] = json.loads(a.cmd)
        if a.user:
            cfg["User"] = a.user
        if a.workdir:
            cfg["WorkingDir"] = a.workdir
        if a.label:
            cfg["Labels"] = dict(kv.split("=", 1) for kv in a.label)
        if a.port:
            cfg["ExposedPorts"] = {p: {} for p in a.port}
        if a.volume:
            cfg["Volumes"] = {v: {} for v in a.volume}
        config = {
            "architecture": "amd64",
            "os": "linux",
            "created": "1970-01-01T00:00:00Z",
            "config": cfg,
            "rootfs": {"type": "layers", "diff_ids": [f"sha256:{d}" for d in diff_ids]},
            "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "hack/images.sh"} for _ in layers],
        }
        config_bytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
        config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
        manifest = [{"Config": config_name, "RepoTags": a.ref, "Layers": [f"{d}/layer.tar" for d in diff_ids]}]
        part = a.out + ".part"
        with tarfile.open(part, "w", format=tarfile.PAX_FORMAT) as t:

            def put(name: str, data: bytes) -> None:
                ti = tarfile.TarInfo(name)
                ti.size, ti.mtime, ti.mode = len(data), 0, 0o644
                t.addfile(ti, io.BytesIO(data))

            put(config_name, config_bytes)
            for d, p in zip(diff_ids, layers, strict=True):
                ti = t.gettarinfo(p, arcname=f"{d}/layer.tar")
                ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname, ti.mode = 0, 0, 0, "", "", 0o644
                with open(p, "rb") as f:
                    t.addfile(ti, f)
            put("manifest.json", json.dumps(manifest).encode())
        os.replace(part, a.out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
