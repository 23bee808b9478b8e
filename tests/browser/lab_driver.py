"""Drive JupyterLab 4 in headless Chromium as a student would: open a notebook, Run All, look.

The pieces the browser test (``test_notebooks_in_browser.py``) uses, in the spirit of Galata,
JupyterLab's own UI tests: ``lab_server`` starts ``jupyter lab`` on 127.0.0.1 with a free port and
a random token (notebook windowing off, so every cell is in the page); ``run_notebook`` opens one
notebook, runs every cell from the Run menu, waits for the kernel, moves one control of every
widget and returns a ``NotebookReport`` of what a person would see. Playwright drives Debian's
``chromium`` binary (``CAPKIT_CHROMIUM`` to use another): no browser is downloaded.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHROMIUM_ENV = "CAPKIT_CHROMIUM"
HOW_TO_GET = ("no Chromium found: install Debian's package (`sudo apt-get install chromium`) or "
              f"point ${CHROMIUM_ENV} at a Chromium/Chrome binary; Playwright comes with "
              "`pip install -e \".[browser]\"` (make test-browser does that)")
ERROR_TEXT = re.compile(r"Traceback \(most recent call last\)|^\w*(Error|Exception): ", re.M)
REPR_TEXT = re.compile(r"interactive\(children=|<Axes[:>]|<Figure size|<matplotlib\.")
# a cell running longer than this must show progress (#20); CAPKIT_SILENT_LIMIT to change it
SILENT_LIMIT = float(os.environ.get("CAPKIT_SILENT_LIMIT", "10"))
# the cell that runs now (the first "[*]" in the page: cells run in order, the rest wait) and
# whether it shows progress: a progress bar (tqdm's notebook bar is an ipywidgets progress
# widget), a <progress> element, or a text bar ("37%|###")
RUNNING_CELL = """() => {
  const cells = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')];
  const i = cells.findIndex(c => (c.querySelector('.jp-InputPrompt')?.innerText || '').includes('*'));
  if (i < 0) return null;
  const c = cells[i];
  const bar = c.querySelector('.widget-hprogress, .widget-vprogress, .widget-progress, progress, [role=progressbar]') !== null
    || /\\d+%\\|/.test(c.querySelector('.jp-OutputArea')?.innerText || '');
  return [i, bar, (c.querySelector('.jp-InputArea')?.innerText || '').slice(0, 80)];
}"""


def chromium() -> str:
    """The Chromium binary to drive, or an error that says how to get one."""
    path = os.environ.get(CHROMIUM_ENV) or shutil.which("chromium") or \
        shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not path:
        raise RuntimeError(HOW_TO_GET)
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SETTINGS = {   # every cell in the page (no windowing), never saved, no news pop-up or update check
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
}


@contextlib.contextmanager
def lab_server(root: Path = REPO, env: dict | None = None, timeout: float = 120):
    """``jupyter lab`` serving ``root`` on 127.0.0.1; yields its base URL with the token."""
    port, token = _free_port(), secrets.token_hex(16)
    with tempfile.TemporaryDirectory(prefix="capkit-lab-") as tmp:
        settings = Path(tmp) / "settings"
        for name, value in SETTINGS.items():
            path = settings / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value))
        run_env = dict(os.environ, **(env or {}))
        run_env.update(JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTER_RUNTIME_DIR=tmp,
                       JUPYTERLAB_WORKSPACES_DIR=str(Path(tmp) / "workspaces"))
        run_env.pop("CAPKIT_PROGRESS", None)         # a student's kernel: progress "auto" -> bars
        cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
               "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
               "--allow-root"]                  # CI and the course machines run as root
        log = open(Path(tmp) / "server.log", "w")
        proc = subprocess.Popen(cmd, env=run_env, stdout=log, stderr=subprocess.STDOUT,
                                cwd=root)
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_for(f"{base}/api/status?token={token}", proc, timeout, Path(tmp) / "server.log")
            yield base, token
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()


def _wait_for(url: str, proc, timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(url, timeout=2):
                return
        time.sleep(0.5)
    raise RuntimeError(f"jupyter lab did not answer in {timeout:.0f} s:\n{log.read_text()[-3000:]}")


@dataclass
class NotebookReport:
    """What a person sees after Run All (every list empty and counts equal = healthy)."""
    name: str
    seconds: float = 0.0
    cells: int = 0
    executed: int = 0
    errors: list[str] = field(default_factory=list)          # error outputs of cells
    reprs: list[str] = field(default_factory=list)           # stray reprs shown as text
    widgets: int = 0
    dead_widgets: list[str] = field(default_factory=list)    # moving a control changed nothing
    figures_expected: int = 0                                # image outputs stored in the file
    figures_shown: int = 0                                   # images drawn in the page
    silent: list[str] = field(default_factory=list)          # long cells with no progress shown
    cell_seconds: dict[int, float] = field(default_factory=dict)  # run time of each cell
    console: list[str] = field(default_factory=list)         # browser console errors
    screenshots: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        out = [f"cell error: {e[:300]}" for e in self.errors]
        out += [f"stray text: {r}" for r in self.reprs]
        out += [f"widget does not react: {w}" for w in self.dead_widgets]
        out += [f"browser console: {c[:300]}" for c in self.console]
        out += [f"no progress shown: {s}" for s in self.silent]
        if self.executed != self.cells:
            out.append(f"{self.executed} of {self.cells} code cells ran")
        if self.figures_shown < self.figures_expected:
            out.append(f"{self.figures_shown} figures drawn, the notebook stores "
                       f"{self.figures_expected}")
        return out


def stored_figures(path: Path) -> int:
    cells = json.loads(path.read_text())["cells"]
    return sum("image/png" in o.get("data", {}) for c in cells if c["cell_type"] == "code"
               for o in c.get("outputs", []))


def open_browser(playwright):
    return playwright.chromium.launch(executable_path=chromium(),
                                      args=["--no-sandbox", "--disable-gpu"])


def run_notebook(browser, base: str, token: str, relpath: str, out_dir: Path,
                 timeout: float = 900, widget_timeout: float = 90) -> NotebookReport:
    """Open ``relpath`` (relative to the server root), Run All, check it; screenshots in out_dir."""
    report = NotebookReport(Path(relpath).stem)
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.on("console", lambda m: m.type == "error" and report.console.append(m.text))
    page.on("pageerror", lambda e: report.console.append(str(e)))
    page.goto(f"{base}/lab/tree/{relpath}?reset&token={token}")   # a fresh layout each time
    page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=120_000)
    _wait_idle(page, 120)
    page.keyboard.press("Control+b")                        # hide the file browser: full width
    report.figures_expected = stored_figures(REPO / relpath) if (REPO / relpath).exists() else 0
    _menu(page, "Edit", "editmenu:clear-all")         # stored outputs must not pass for new ones
    page.wait_for_function("() => ![...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]"
                           ".some(p => /\\d/.test(p.innerText))", timeout=30_000)
    start = time.monotonic()
    _menu(page, "Run", "runmenu:run-all")
    _wait_done(page, timeout, report)
    report.seconds = time.monotonic() - start
    _inspect(page, report)
    _move_widgets(page, report, widget_timeout)
    report.screenshots = _screenshots(page, out_dir, report.name)
    page.close()
    return report


def _menu(page, menu: str, command: str) -> None:
    page.locator(".lm-MenuBar-item", has_text=menu).first.click()
    page.locator(f'.lm-Menu-item[data-command="{command}"]').click()


def _prompts(page) -> list[str]:
    return page.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()


def _wait_idle(page, timeout: float) -> None:
    """Until the kernel is connected and idle (the status bar reads "<kernel> | Idle"; the
    toolbar's indicator alone says idle before a kernel is attached)."""
    page.wait_for_function(
        "() => { const k = document.querySelector('.jp-Notebook-ExecutionIndicator');"
        " const bar = document.querySelector('.jp-StatusBar-Widget')?.innerText || '';"
        " return k && k.getAttribute('data-status') === 'idle'"
        " && /ipykernel\\) \\| Idle/.test(document.querySelector('#jp-main-statusbar')"
        "?.innerText || bar); }", timeout=timeout * 1000)


def _wait_done(page, timeout: float, report: NotebookReport | None = None) -> None:
    """Until every code cell shows ``[n]:`` (or an error stopped the run) and the kernel idles.

    Meanwhile, every half second: which cell runs, for how long, and whether it has shown
    progress; a cell that ran longer than ``SILENT_LIMIT`` seconds without any goes in
    ``report.silent`` (the first cell's time includes the kernel's start, so it is exempt)."""
    deadline = time.monotonic() + timeout
    current, since, shown, source = None, time.monotonic(), False, ""

    def close(now: float) -> None:
        if current is None or report is None:
            return
        report.cell_seconds[current] = round(now - since, 1)
        if now - since > SILENT_LIMIT and not shown and current > 0:
            report.silent.append(f"code cell {current + 1} ran {now - since:.0f} s: {source!r}")

    while time.monotonic() < deadline:
        running = page.evaluate(RUNNING_CELL)
        now = time.monotonic()
        if (running[0] if running else None) != current:
            close(now)
            current, since, shown = (running[0], now, False) if running else (None, now, False)
            source = running[2] if running else ""
        if running:
            shown = shown or running[1]
            time.sleep(0.5)
            continue
        prompts = [p.strip() for p in _prompts(page)]
        running = any("*" in p for p in prompts)
        if not running:
            with contextlib.suppress(Exception):
                _wait_idle(page, 5)
                if not any("*" in p for p in _prompts(page)):
                    return
        time.sleep(1.0)
    raise TimeoutError(f"cells still running after {timeout:.0f} s")


def _inspect(page, report: NotebookReport) -> None:
    prompts = [p.strip() for p in _prompts(page)]
    report.cells = len(prompts)
    report.executed = sum(bool(re.fullmatch(r"\[\d+\]:", p)) for p in prompts)
    outputs = page.locator(".jp-OutputArea-output")
    for text in page.locator('.jp-OutputArea-output[data-mime-type*="stderr"], '
                             '.jp-OutputArea-output[data-mime-type*="error"]').all_inner_texts():
        if ERROR_TEXT.search(text):
            report.errors.append(text.strip())
    for text in outputs.all_inner_texts():
        report.reprs += [m.group(0) for m in REPR_TEXT.finditer(text)]
    report.figures_shown = page.evaluate(
        "() => [...document.querySelectorAll('.jp-OutputArea-output img')]"
        ".filter(i => i.complete && i.naturalWidth > 0).length")


def _move_widgets(page, report: NotebookReport, timeout: float) -> None:
    boxes = page.locator(".widget-interact")
    report.widgets = boxes.count()
    for i in range(report.widgets):
        box = boxes.nth(i)
        box.scroll_into_view_if_needed()
        out = box.locator(".widget-output")
        before = _shown(out)
        moved = _move_one_control(page, box)
        if not moved:
            report.dead_widgets.append(f"widget {i + 1}: no control to move")
            continue
        if not _changed(out, before, timeout):
            report.dead_widgets.append(f"widget {i + 1}: {moved} changed nothing")


def _move_one_control(page, box) -> str:
    select = box.locator("select")
    if select.count():
        options = select.first.locator("option").all_inner_texts()
        if len(options) > 1:
            # another option than the one shown (a widget may start on its second option)
            index = 1 if select.first.evaluate("s => s.selectedIndex") != 1 else 0
            select.first.select_option(index=index)
            return f"dropdown -> {options[index]!r}"
    handle = box.locator(".noUi-handle, .ui-slider-handle")
    if handle.count():
        handle.first.focus()
        page.keyboard.press("ArrowRight")
        return "slider one step right"
    text = box.locator("input[type=text], textarea")
    if text.count():
        text.first.fill(text.first.input_value() + " and a dog")
        text.first.press("Enter")
        return "text edited"
    return ""


def _shown(out) -> str:
    """What a person sees in a widget's output: its text and its images' pixels (sources)."""
    return out.evaluate("o => o.innerText + '|' + [...o.querySelectorAll('img')]"
                        ".map(i => i.src).join('|')")


def _changed(out, before: str, timeout: float) -> bool:
    """Whether the output shows something else within ``timeout`` s (after a redraw settles)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = _shown(out)
        if now != before and now.strip("|"):
            return True
    return False


def _screenshots(page, out_dir: Path, name: str, limit: int = 12) -> list[str]:
    """Screens of the notebook from top to bottom (the notebook scrolls inside its panel)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    scroller = ".jp-NotebookPanel .jp-WindowedPanel-outer"
    height = page.evaluate(f"() => document.querySelector('{scroller}').scrollHeight")
    view = page.evaluate(f"() => document.querySelector('{scroller}').clientHeight")
    paths = []
    for k, top in enumerate(range(0, max(height, 1), max(view, 1))):
        if k == limit:
            break
        page.evaluate(f"() => document.querySelector('{scroller}').scrollTop = {top}")
        time.sleep(0.2)
        path = out_dir / f"{name}_{k + 1:02d}.png"
        page.screenshot(path=str(path))
        paths.append(str(path))
    return paths
