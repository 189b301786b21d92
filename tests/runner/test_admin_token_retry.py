"""The runner's admin login tries a 5xx again: on a new Galera deployment the same admin logging
in from every region at once makes all but one region's ``last_active_at`` write fail
certification (Keystone answers 500; seen in the delay study at 300 ms RTT). A 4xx is an answer."""

from __future__ import annotations

import http.server
import threading

import pytest

from wanwide.core.contracts import KeystoneSettings
from wanwide.pipeline.runner.users import TOKEN_TRIES, KeystoneError, admin_token


@pytest.fixture
def keystone():
    """A loopback server answering POST /v3/auth/tokens from a list of status codes."""
    answers: list[int] = []
    seen: list[int] = []

    class H(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            code = answers.pop(0) if answers else 201
            seen.append(code)
            self.send_response(code)
            if code == 201:
                self.send_header("X-Subject-Token", "tok")
            self.end_headers()
            self.wfile.write(b"{}" if code == 201 else b"<html>Internal Server Error</html>")

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield KeystoneSettings(url=f"http://127.0.0.1:{srv.server_port}/v3", region_name="r1"), answers, seen
    srv.shutdown()


def test_a_500_is_tried_again_and_said(keystone, capsys):
    ks, answers, seen = keystone
    answers += [500, 500]
    slept: list[float] = []
    assert admin_token(ks, "pw", sleep=slept.append) == "tok"
    assert seen == [500, 500, 201] and slept == [1.0, 2.0]
    assert "HTTP 500" in capsys.readouterr().err


def test_a_4xx_is_not_tried_again(keystone):
    ks, answers, seen = keystone
    answers += [401]
    with pytest.raises(KeystoneError, match="HTTP 401"):
        admin_token(ks, "pw", sleep=lambda s: None)
    assert seen == [401]


def test_a_lasting_500_ends_in_the_error(keystone):
    ks, answers, seen = keystone
    answers += [500] * 10
    with pytest.raises(KeystoneError, match="HTTP 500") as e:
        admin_token(ks, "pw", sleep=lambda s: None)
    assert e.value.status == 500 and seen == [500] * TOKEN_TRIES
