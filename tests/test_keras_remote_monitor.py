"""keras.callbacks.RemoteMonitor as Keras 2's: at each epoch's end one HTTP POST of the epoch
and its logs (numpy scalars unwrapped) to ``root + path`` as the form field ``field`` or as a
JSON body, with the custom headers; requests sent by ipu_gpu's and tf-keras's callbacks to
a local server are the same; an unreachable server logs Keras's warning; without
``requests`` the epoch's end raises Keras's ImportError."""

from __future__ import annotations

import json
import logging
import socket
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from ipu_gpu.keras import callbacks, layers, optimizers
from ipu_gpu.keras.models import Sequential

pytest.importorskip("requests")


@pytest.fixture
def server():
    """A local HTTP server recording (path, content type, custom header, body) per POST."""
    received = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers["Content-Length"])).decode()
            received.append((self.path, self.headers["Content-Type"],
                             self.headers.get("X-Run"), body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", received
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def _payload(content_type, body, field="data"):
    if content_type == "application/json":
        return json.loads(body)
    assert content_type == "application/x-www-form-urlencoded"
    form = urllib.parse.parse_qs(body)
    assert list(form) == [field]
    return json.loads(form[field][0])


LOGS = {"loss": np.float32(0.25), "accuracy": np.float64(0.5), "lr": 0.125,
        "count": np.array(3, np.int64)}


@pytest.mark.parametrize("kwargs", [dict(), dict(send_as_json=True),
                                    dict(path="/runs/7/", field="payload",
                                         headers={"X-Run": "seven"})])
def test_requests_equal_tf_keras(real_tf, server, kwargs):
    tfk = pytest.importorskip("tf_keras")
    root, received = server
    callbacks.RemoteMonitor(root=root, **kwargs).on_epoch_end(2, dict(LOGS))
    tfk.callbacks.RemoteMonitor(root=root, **kwargs).on_epoch_end(2, dict(LOGS))
    assert len(received) == 2
    ours, theirs = received
    assert ours[:3] == theirs[:3]
    assert ours[0] == kwargs.get("path", "/publish/epoch/end/")
    field = kwargs.get("field", "data")
    assert _payload(ours[1], ours[3], field) == _payload(theirs[1], theirs[3], field) == {
        "epoch": 2, "loss": 0.25, "accuracy": 0.5, "lr": 0.125, "count": 3}
    assert ours[3] == theirs[3]  # the same bytes: json.dumps of the same dictionary


def test_fit_posts_each_epochs_logs(server):
    root, received = server
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 3)).astype(np.float32)
    y = rng.normal(size=(16, 1)).astype(np.float32)
    model = Sequential([layers.Dense(1, input_shape=(3,))])
    model.compile(optimizers.SGD(0.1), "mse", metrics=["mae"])
    history = model.fit(x, y, batch_size=8, epochs=3, verbose=0, shuffle=False,
                        callbacks=[callbacks.RemoteMonitor(root=root, send_as_json=True)])
    sent = [_payload(content_type, body) for _, content_type, _, body in received]
    assert [s["epoch"] for s in sent] == [0, 1, 2]
    for key in ("loss", "mae"):
        np.testing.assert_allclose([s[key] for s in sent], history.history[key], rtol=1e-6)


def test_unreachable_server_logs_kerass_warning(caplog):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    root = f"http://127.0.0.1:{port}"
    with caplog.at_level(logging.WARNING):
        callbacks.RemoteMonitor(root=root).on_epoch_end(0, {"loss": 1.0})
    assert [r.getMessage() for r in caplog.records] == [
        f"Warning: could not reach RemoteMonitor root server at {root}"]


def test_without_requests_the_epoch_end_raises(monkeypatch):
    monitor = callbacks.RemoteMonitor()  # Keras checks at the first send, not here
    monkeypatch.setitem(sys.modules, "requests", None)
    with pytest.raises(ImportError, match=r"^RemoteMonitor requires the `requests` library.$"):
        monitor.on_epoch_end(0, {})
