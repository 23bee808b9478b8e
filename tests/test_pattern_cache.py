"""capkit.text.pattern_cache: the PTB lexer's compiled pattern, kept on disk between processes.

A pattern read from the cache must be the one ``re.compile`` makes (``Pattern.__eq__`` compares
the text, the flags and the whole program), read without compiling; a damaged file, another
Python's file or a program the matcher rejects must never be used; a folder that cannot be
written costs a warning and nothing else; and the tokenizer must give the same tokens from a
cached lexer as from a freshly compiled one."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings

import pytest

from capkit.cache_files import CacheWarning
from capkit.text import pattern_cache, ptb_cache, ptb_lexer

NAMED = r"(?P<word>[a-z]+)(?:-(?P<rest>\w+))?|(\d+)"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(ptb_cache.ENV, raising=False)
    return tmp_path / "cache" / "patterns"


@pytest.fixture(scope="module")
def lexer_pattern() -> str:
    return ptb_lexer.build_lexer()[1].pattern


def _no_compiling(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("compiled again: the cache was not read")
    monkeypatch.setattr(pattern_cache.re, "compile", refuse)


def _same(a: re.Pattern, b: re.Pattern) -> None:
    assert a == b                    # text, flags and program
    assert (a.groups, a.groupindex, a.flags) == (b.groups, b.groupindex, b.flags)


def _files(cache):
    return sorted(cache.glob("sre-*.bin"))


@pytest.mark.parametrize("flags", [0, re.IGNORECASE | re.ASCII | re.DOTALL])
def test_a_saved_pattern_is_read_back_equal_to_re_compile_without_compiling(cache, monkeypatch,
                                                                             lexer_pattern, flags):
    patterns = [lexer_pattern, NAMED]
    expected = [re.compile(p, flags) for p in patterns]
    for pattern, want in zip(patterns, expected):
        _same(pattern_cache.compile(pattern, flags), want)
    assert len(_files(cache)) == 2
    _no_compiling(monkeypatch)
    for pattern, want in zip(patterns, expected):
        _same(pattern_cache.compile(pattern, flags), want)
    assert pattern_cache.compile(NAMED, flags).match("dog-3x").group("rest") == "3x"


def test_each_pattern_flag_and_python_has_its_own_file(cache, monkeypatch):
    paths = {pattern_cache.path_of(NAMED), pattern_cache.path_of(NAMED, re.I),
             pattern_cache.path_of(NAMED + "|x")}
    monkeypatch.setattr(sys, "version", sys.version + " (another build)")
    paths.add(pattern_cache.path_of(NAMED))
    assert len(paths) == 4 and all(p.parent == cache for p in paths)


@pytest.mark.parametrize("damage", ["truncated", "a byte changed", "another format", "empty"])
def test_a_damaged_file_is_reported_and_rewritten(cache, damage):
    want = re.compile(NAMED)
    pattern_cache.compile(NAMED)
    [path] = _files(cache)
    data = path.read_bytes()
    path.write_bytes({"truncated": data[:-7], "a byte changed": data[:-5] + b"\x01" + data[-4:],
                      "another format": data.replace(pattern_cache.MAGIC, b"capkit-xyz", 1),
                      "empty": b""}[damage])
    with pytest.warns(CacheWarning, match="could not be read"):
        _same(pattern_cache.compile(NAMED), want)
    assert path.read_bytes() == data        # written anew
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _same(pattern_cache.compile(NAMED), want)


def test_a_program_the_matcher_rejects_is_never_used(cache):
    """A file with a valid digest whose code is not a program (say, written by a buggy writer):
    ``_sre.compile`` rejects it, and the pattern is compiled instead."""
    want = re.compile(NAMED)
    pattern_cache.compile(NAMED)
    [path] = _files(cache)
    flags, groups, groupindex, code = pattern_cache.decode(path.read_bytes())
    path.write_bytes(pattern_cache.encode((flags, groups, groupindex, [99999] * len(code))))
    with pytest.warns(CacheWarning, match="rejected"):
        _same(pattern_cache.compile(NAMED), want)


def test_this_python_caches_and_one_without_re_internals_compiles_plainly(cache, monkeypatch):
    """capkit's Python (3.11, environment.yml) has what the cache needs; where re lacks it
    (3.10: no re._compiler), compile is re.compile and writes nothing."""
    assert pattern_cache._internals() is not None
    monkeypatch.setattr(pattern_cache, "_internals", lambda: None)
    _same(pattern_cache.compile(NAMED), re.compile(NAMED))
    assert not cache.exists()


def test_nothing_is_cached_with_the_token_cache_off(cache, monkeypatch):
    monkeypatch.setenv(ptb_cache.ENV, "0")
    _same(pattern_cache.compile(NAMED), re.compile(NAMED))
    assert not cache.exists()


def test_a_folder_that_cannot_be_written_costs_a_warning(tmp_path, monkeypatch):
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(blocker))
    monkeypatch.delenv(ptb_cache.ENV, raising=False)
    with pytest.warns(CacheWarning, match="cannot write"):
        _same(pattern_cache.compile(NAMED), re.compile(NAMED))


def test_the_tokenizer_gives_the_same_tokens_with_a_lexer_read_from_the_cache(tmp_path):
    """Fresh processes on captions that need the full lexer: the first compiles the lexer and
    saves it, the second reads it (compiling is refused there), the third has the cache off;
    all three give the same tokens."""
    captions = ["Mr. Smith's dog", "a 5 1/2 ft. pole", "rock'n'roll at 3:00 p.m.", "dogs--cats",
                "the 'quoted' word", "e-mail me at a@b.com", "U.S.A. flag", "caf\u00e9 na\u00efve"]
    script = ("import json, sys, types; from capkit.text import pattern_cache, ptb_tokenize\n"
              "if sys.argv[1] == 'refuse':\n"
              "    pattern_cache.re = types.SimpleNamespace(compile=None)  # a call would fail\n"
              f"print(json.dumps(ptb_tokenize({captions!r})))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPKIT_")}
    env["CAPKIT_CACHE_DIR"] = str(tmp_path / "cache")
    runs = [subprocess.run([sys.executable, "-c", script, mode], capture_output=True, text=True,
                           check=True, env={**env, **extra}).stdout
            for mode, extra in [("compile", {}), ("refuse", {}), ("compile", {ptb_cache.ENV: "0"})]]
    assert len(list((tmp_path / "cache" / "patterns").glob("sre-*.bin"))) == 1
    first, cached, uncached = map(json.loads, runs)
    assert first == cached == uncached
    assert first[0] == "mr. smith 's dog"


def test_the_folder_keeps_the_newest_files(cache, monkeypatch):
    """Each write prunes: with room for 3, the two oldest of five are gone."""
    monkeypatch.setattr(pattern_cache, "MAX_FILES", 3)
    for i in range(5):
        pattern_cache.compile(f"{NAMED}|x{i}")
        [newest] = [p for p in cache.glob("sre-*.bin") if p == pattern_cache.path_of(f"{NAMED}|x{i}")]
        os.utime(newest, (1_000_000 + i, 1_000_000 + i))     # written in this order
    assert sorted(cache.glob("sre-*.bin")) == sorted(pattern_cache.path_of(f"{NAMED}|x{i}")
                                                     for i in (2, 3, 4))


def test_a_named_group_out_of_range_is_never_used(cache):
    want = re.compile(NAMED)
    pattern_cache.compile(NAMED)
    [path] = _files(cache)
    flags, groups, _names, code = pattern_cache.decode(path.read_bytes())
    path.write_bytes(pattern_cache.encode((flags, groups, {"word": 99}, code)))
    with pytest.warns(CacheWarning, match="rejected"):
        _same(pattern_cache.compile(NAMED), want)
