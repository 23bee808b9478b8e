"""The one progress setting (capkit.progress): "auto" draws a bar where a person watches."""
import io
import os
import sys

import pytest

from capkit.progress import PROGRESS_ENV, bar, enabled


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_explicit_settings_win(monkeypatch):
    monkeypatch.setenv(PROGRESS_ENV, "1")
    assert enabled(False) is False
    monkeypatch.setenv(PROGRESS_ENV, "0")
    assert enabled(True) is True


@pytest.mark.parametrize("env,tty,want", [("", False, False), ("", True, True), ("0", True, False),
                                          ("1", False, True), ("auto", True, True)])
def test_auto_follows_the_environment_then_the_terminal(monkeypatch, env, tty, want):
    monkeypatch.setenv(PROGRESS_ENV, env)
    monkeypatch.setattr(sys, "stderr", _Terminal() if tty else io.StringIO())
    assert enabled("auto") is want


def test_bad_settings_say_what_to_give(monkeypatch):
    with pytest.raises(ValueError, match="True, False or 'auto'"):
        enabled("yes please")
    monkeypatch.setenv(PROGRESS_ENV, "sometimes")
    with pytest.raises(ValueError, match="set it to 1, 0 or auto"):
        enabled("auto")


def test_a_disabled_bar_still_iterates_and_draws_nothing(monkeypatch):
    monkeypatch.setenv(PROGRESS_ENV, "0")
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    assert list(bar(range(4), desc="x")) == [0, 1, 2, 3]
    assert err.getvalue() == ""


def test_on_in_a_jupyter_kernel_off_under_nbval_setting():
    """A real kernel (as JupyterLab and nbval start one): auto is on, CAPKIT_PROGRESS=0 turns it
    off. Runs the check inside ipykernel through jupyter_client."""
    from jupyter_client.manager import start_new_kernel     # a dev dependency (nbval's)
    results = {}
    for env in ("", "0"):
        extra = dict(os.environ, **{PROGRESS_ENV: env})
        km, kc = start_new_kernel(kernel_name="python3", env=extra)
        try:
            msg_id = kc.execute("from capkit.progress import enabled; print(enabled('auto'))")
            out = ""
            while True:
                msg = kc.get_iopub_msg(timeout=60)
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                if msg["msg_type"] == "stream":
                    out += msg["content"]["text"]
                if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                    break
            results[env] = out.strip()
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    assert results == {"": "True", "0": "False"}
