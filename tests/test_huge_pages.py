"""capkit.commands.huge_pages: the heap of `capkit score` in 2 MiB pages, nothing else changed."""
import json
import os
import subprocess
import sys

from capkit.commands import huge_pages

SETUP_AND_REPORT = r"""
import json, re, sys
from capkit.commands.huge_pages import use_huge_pages
done = use_huge_pages()
import numpy as np
a = np.arange(3_000_000, dtype=np.int64)      # 24 MB: from the heap now, not its own mapping
b = (a * 7) % 1000
try:
    with open("/proc/self/smaps") as f:
        maps = re.split(r"\n(?=[0-9a-f]+-[0-9a-f]+ )", f.read())
except OSError:                                  # not Linux: no such file, and no set-up
    maps = []
heap = [line for block in maps if block.split("\n")[0].endswith("[heap]")
        for line in block.split("\n") if line.startswith("VmFlags")]
print(json.dumps({"done": done, "heap": heap, "sum": int(b.sum())}))
"""


def _run(env_changes: dict) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("MALLOC_") or k in ("GLIBC_TUNABLES", "CAPKIT_HUGE_PAGES"))}
    env.update(env_changes)
    out = subprocess.run([sys.executable, "-c", SETUP_AND_REPORT], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def test_user_malloc_settings_and_the_switch_turn_it_off():
    env = {"PATH": "/usr/bin"}
    for off in ("0", "off", "False", " no "):
        assert not huge_pages.wanted({**env, "CAPKIT_HUGE_PAGES": off})
    assert not huge_pages.wanted({**env, "MALLOC_TOP_PAD_": "0"})
    assert not huge_pages.wanted({**env, "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"})


def test_unknown_systems_are_left_alone(monkeypatch, tmp_path):
    monkeypatch.setattr(huge_pages, "_THP_SETTING", str(tmp_path / "missing"))
    assert not huge_pages.wanted({})
    (tmp_path / "never").write_text("always madvise [never]\n")
    monkeypatch.setattr(huge_pages, "_THP_SETTING", str(tmp_path / "never"))
    assert not huge_pages.wanted({})
    (tmp_path / "madvise").write_text("always [madvise] never\n")
    monkeypatch.setattr(huge_pages, "_THP_SETTING", str(tmp_path / "madvise"))
    assert huge_pages.wanted({}) == sys.platform.startswith("linux")


def test_the_heap_is_marked_for_huge_pages_where_the_kernel_offers_them():
    """Where the kernel has transparent huge pages on, the set-up runs and the heap mapping
    carries the kernel's "hg" flag (MADV_HUGEPAGE); where they are off, it does nothing. Either
    way the process computes the same numbers."""
    on, off = _run({}), _run({"CAPKIT_HUGE_PAGES": "0"})
    assert on["sum"] == off["sum"]
    assert off["done"] is False
    assert on["done"] is huge_pages.wanted({})
    assert any(" hg" in flags for flags in on["heap"]) is on["done"], on["heap"]
    assert not any(" hg" in flags for flags in off["heap"]), off["heap"]


def test_capkit_score_prints_the_same_either_way(tmp_path):
    cands = {str(i): f"a man riding a horse number {i % 7} on the beach" for i in range(40)}
    refs = {str(i): [f"a person rides a horse on the beach {i % 3}", "a horse on sand"]
            for i in range(40)}
    c, r = tmp_path / "c.json", tmp_path / "r.json"
    c.write_text(json.dumps(cands))
    r.write_text(json.dumps(refs))
    outputs = []
    for switch in ("1", "0"):
        env = {**os.environ, "CAPKIT_HUGE_PAGES": switch, "CAPKIT_TOKEN_CACHE": "0"}
        outputs.append(subprocess.run(
            [sys.executable, "-m", "capkit", "score", "--candidates", str(c), "--references",
             str(r), "--metrics", "bleu_4,rouge_l,cider_d", "--format", "json"],
            env=env, check=True, capture_output=True, text=True).stdout)
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0])["metrics"]["cider_d"]["corpus"] > 0
