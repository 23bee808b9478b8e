"""Hub names when the hub does not answer: one quick check, then the cache only (capkit.models.hub).

No test reaches the network: the hub endpoint is a closed port on this machine (one just bound
and released, so the connection is refused at once) or a small local HTTP server. The signal is
the number of connections a load makes; the time bound only says "no retry loop" (the loop
waited 23 s), with room for a cold import of transformers on a loaded machine."""
import http.server
import socket
import threading
import time

import pytest

from capkit.models.hub import hub_loading, probe_hub



def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PORT = _closed_port()
CLOSED = f"http://127.0.0.1:{PORT}"
QUICK = 15.0      # seconds: well under the 23 s of retries, well over a cold import
# connections to the hub that a load may make: capkit's check, and huggingface_hub's own fetch of
# a registry for its user-agent header (once a process, at the first request it builds); before
# the check, transformers made 7 or more per file, waiting 23 s in all between them
ONE_CHECK = 2


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """huggingface_hub online (as without HF_HUB_OFFLINE), its cache in ``tmp_path``, and its
    endpoint a closed local port; returns the list of connections made to that port."""
    from huggingface_hub import constants
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", CLOSED)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    tries = []
    connect = socket.socket.connect

    def counted(self, address):
        if isinstance(address, tuple) and address[1] == PORT:
            tries.append(address)
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", counted)
    return tries


def _loaders():
    from capkit.models.bridgetower import load_bridgetower
    from capkit.models.text_encoders import load_text_encoder
    from capkit.models.vision_language import load_clip, load_image_text_matcher
    from capkit.models.world_vilt import load_vilt
    return {"clip": (load_clip, "'tiny-clip'"), "text": (load_text_encoder, "'minilm'"),
            "matcher": (load_image_text_matcher, "'tiny-blip-itm'"),
            "bridgetower": (load_bridgetower, "world-vilt"), "vilt": (load_vilt, "world-vilt")}


@pytest.mark.parametrize("kind", ["clip", "text", "matcher", "bridgetower", "vilt"])
def test_a_hub_name_not_cached_fails_at_once_when_the_hub_does_not_answer(hub, kind):
    load, instead = _loaders()[kind]
    import transformers  # noqa: F401  (imported before the clock starts)
    start = time.monotonic()
    with pytest.raises(FileNotFoundError) as err:
        load("capkit-test/never-downloaded")
    took = time.monotonic() - start
    assert len(hub) <= ONE_CHECK and took < QUICK, (len(hub), took)    # none of the retries
    message = str(err.value)
    for words in (f"hub ({CLOSED}) did not answer", "`hf download capkit-test/never-downloaded`",
                  "HF_HUB_OFFLINE=1", instead):
        assert words in message, (words, message)


def test_a_cached_model_loads_from_the_cache_when_the_hub_does_not_answer(hub, tmp_path):
    """As ``hf download`` leaves it: no "missing file" markers, which transformers would
    otherwise retry one by one (minutes) before falling back to the cache."""
    from huggingface_hub import constants

    from capkit.models.presets import load_model, save_model
    from capkit.models.vision_language import load_clip
    repo = tmp_path / "hub" / "models--capkit-test--cached-clip"
    save_model(load_model("tiny-clip"), repo / "snapshots" / ("a" * 40))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    assert constants.HF_HUB_CACHE == str(tmp_path / "hub")
    import transformers  # noqa: F401  (imported before the clock starts)
    start = time.monotonic()
    enc = load_clip("capkit-test/cached-clip")
    took = time.monotonic() - start
    assert len(hub) <= ONE_CHECK and took < QUICK, (len(hub), took)
    assert enc.untrained and len(enc.embed_texts(["a dog"])) == 1


class _Hub(http.server.BaseHTTPRequestHandler):
    def do_HEAD(self):
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_when_the_hub_answers_or_is_not_asked_loading_is_as_before(hub, monkeypatch, tmp_path):
    from huggingface_hub import constants
    server = http.server.HTTPServer(("127.0.0.1", 0), _Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{server.server_port}")
        assert probe_hub() is None
        with hub_loading("capkit-test/online", "CLIP model", tiny="tiny-clip") as options:
            assert options == {}                  # from_pretrained downloads as it always did
    finally:
        server.shutdown()
        server.server_close()
    monkeypatch.setattr(constants, "ENDPOINT", CLOSED)
    with hub_loading(str(tmp_path), "CLIP model", tiny="tiny-clip") as options:
        assert options == {}                      # a folder: no check
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with hub_loading("capkit-test/offline", "CLIP model", tiny="tiny-clip") as options:
        assert options == {}                      # HF_HUB_OFFLINE=1: transformers' own rule
    assert hub == []


@pytest.mark.parametrize("env, expected", [(None, 5.0), ("10", 10.0), ("2", 2.0)])
def test_the_check_waits_as_long_as_the_users_etag_timeout(monkeypatch, env, expected):
    """HF_HUB_ETAG_TIMEOUT, when set (even to huggingface_hub's default, 10), is the wait."""
    from huggingface_hub import constants, utils
    if env is not None:
        monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", env)
        monkeypatch.setattr(constants, "HF_HUB_ETAG_TIMEOUT", int(env))
    else:
        monkeypatch.delenv("HF_HUB_ETAG_TIMEOUT", raising=False)
    waits = []

    class Session:
        def head(self, url, timeout):
            waits.append(timeout)

    monkeypatch.setattr(utils, "get_session", lambda: Session())
    assert probe_hub() is None and waits == [expected]


@pytest.mark.parametrize("kind", ["clip", "text", "matcher", "bridgetower", "vilt"])
def test_a_missing_folder_that_is_no_hub_name_is_refused_before_any_check(hub, kind, tmp_path):
    load, _ = _loaders()[kind]
    missing = tmp_path / "runs" / "model"
    with pytest.raises(FileNotFoundError, match=f"no .* folder {missing} \\(it does not exist\\), "
                       "and .* is not a hub name; give an existing folder or a hub name"):
        load(str(missing))
    assert hub == []                              # no network check for a mistyped path
