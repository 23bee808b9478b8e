"""METEOR 1.5's English resources, read from the files pycocoevalcap 1.2 ships, cached in binary.

Sources (the very files the reference jar reads):

* ``meteor-1.5.jar``: ``function/english.words`` (function words), ``synonym/english.synsets``
  (WordNet 3.0 word -> synset ids), ``synonym/english.exceptions`` (irregular forms -> base
  forms), ``nonbreaking/english.prefixes`` (abbreviations for the normaliser). The jar loads
  ``english.relations`` too but never uses it (``LOAD_DATA = false``), so neither do we.
* ``meteor/data/paraphrase-en.gz``: 5.27 M (phrase, paraphrase) pairs over 1-7 words.

Parsing the 62 MB paraphrase table (and stemming its 43 k words) takes ~20 s, so the first
call writes everything as one ``.npz`` (50 MB) into capkit's cache folder
(``$CAPKIT_CACHE_DIR``, else ``~/.cache/capkit``), atomically (temporary file + rename); later
processes load it in ~0.1 s, and ``load_resources`` keeps it for the life of the process. The
file, ``meteor/meteor-1.5-en-v<FORMAT_VERSION>-<16 hex>.npz``, is named by its format and a key
of the format, the stemmer's version and the source files' content, so a stale cache is never
read; the folder can be deleted at any time. Processes that miss at once build it once (a lock
beside the file); a damaged file is rebuilt with one warning naming it, and a read-only folder
means building in memory (``capkit.cache_files``). Writing it deletes the files of older
formats beside it (``stale_cache_files``) but those another process is building at that moment.
A file of this format under the name used before formats were named is read as it is.

Phrases are stored as 64-bit hashes of their word ids (``phrase_hash``): two different phrases
would have to collide in 64 bits to be confused (odds ~1e-7 over a whole corpus).
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.util
import itertools
import os
import re
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from capkit.cache_files import (CacheWarning, cache_dir, open_npz, read_or_rebuild,
                                remove_unused)
from capkit.metrics.meteor.normalize import english_stemmer, java_hash, parse_nonbreaking

FORMAT_VERSION = 5
MAX_PHRASE = 7                        # longest phrase in paraphrase-en.gz
_MIX = np.uint64(0x9E3779B97F4A7C15)  # odd multipliers and seed of the rolling phrase hash
_MIX2 = np.uint64(0xC2B2AE3D27D4EB4F)
HASH_SEED = np.uint64(0x165667B19E3779F9)
_JAR_FILES = ("function/english.words", "synonym/english.synsets",
              "synonym/english.exceptions", "nonbreaking/english.prefixes")
_CACHED = ("function_words", "nonbreaking", "syn_words", "syn_ptr", "syn_ids", "exc_form",
           "exc_base", "vocab", "word_hash", "word_stem", "ref_hash", "ref_ptr", "entry_par",
           "par_hash")                 # the arrays of the cache file (_read_jar, _read_paraphrases)
# A cache file's name; group 1 is its format, absent in the names used up to format 5
_CACHE_NAME = re.compile(r"meteor-1\.5-en-(?:v(\d+)-)?[0-9a-f]{16}\.npz")
UNNAMED_FORMAT = 5              # a name without a format: format 5 at most (5 is still read)


@dataclass(frozen=True)
class ParaphraseTable:
    """``ParaphraseTransducer`` as sorted arrays.

    Entry e pairs phrase ``entry_ref[e]`` with paraphrase ``entry_par[e]``; entries are grouped
    by phrase in file order (``ref_ptr``), which is the order the jar's transducer emits them.
    """
    vocab: dict[str, int]        # word -> id
    word_hash: np.ndarray        # (V,) Java hash code of each word
    word_stem: np.ndarray        # (V,) Java hash code of its Snowball stem
    ref_hash: np.ndarray         # (R,) uint64 sorted hashes of the phrases ("reference" side)
    ref_ptr: np.ndarray          # (R+1,) int64: entries of phrase r are ref_ptr[r]:ref_ptr[r+1]
    entry_par: np.ndarray        # (E,) int32 paraphrase id of each entry
    par_hash: np.ndarray         # (P,) uint64 sorted hashes of the paraphrases


@dataclass(frozen=True)
class MeteorResources:
    function_words: frozenset[str]
    nonbreaking: dict[str, int]
    syn_index: dict[str, int]    # word -> row of syn_ptr
    syn_ptr: np.ndarray          # (W+1,) int64
    syn_ids: np.ndarray          # (S,) int32 synset ids
    exceptions: dict[str, tuple[str, ...]]   # inflected form -> base forms
    paraphrase: ParaphraseTable
    source: str                  # where the files came from

    def synsets(self, word: str) -> frozenset[int]:
        """``SynonymDictionary.getSynSets``."""
        row = self.syn_index.get(word)
        if row is None:
            return frozenset()
        return frozenset(self.syn_ids[self.syn_ptr[row]:self.syn_ptr[row + 1]].tolist())


def hash_step(state: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Extend phrase-hash states by one word id each (ids >= 0)."""
    with np.errstate(over="ignore"):
        state = (state ^ (ids.astype(np.uint64) + np.uint64(1))) * _MIX
        return state ^ (state >> np.uint64(29))


def hash_final(state: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Close phrase-hash states of phrases of the given lengths."""
    with np.errstate(over="ignore"):
        h = (state + lengths.astype(np.uint64) * _MIX2) * _MIX
        return h ^ (h >> np.uint64(32))


def phrase_hash(ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """(N, L) word ids (padded with anything) and (N,) lengths -> (N,) uint64 hashes."""
    state = np.full(len(lengths), HASH_SEED, dtype=np.uint64)
    for k in range(ids.shape[1]):
        state = np.where(k < lengths, hash_step(state, ids[:, k]), state)
    return hash_final(state, lengths)


def meteor_files(meteor_dir: str | os.PathLike | None = None) -> tuple[Path, Path]:
    """(jar, paraphrase table) from ``meteor_dir`` or the installed pycocoevalcap 1.2."""
    if meteor_dir is None:
        spec = importlib.util.find_spec("pycocoevalcap")
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(
                "METEOR needs the resources shipped in pycocoevalcap 1.2 (meteor-1.5.jar and "
                "paraphrase-en.gz): pip install pycocoevalcap==1.2, or pass meteor_dir= a folder "
                "holding meteor-1.5.jar and data/paraphrase-en.gz")
        meteor_dir = Path(list(spec.submodule_search_locations)[0]) / "meteor"
    folder = Path(meteor_dir)
    jar, table = folder / "meteor-1.5.jar", folder / "data" / "paraphrase-en.gz"
    for path in (jar, table):
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing; reinstall pycocoevalcap==1.2 or pass "
                                    "meteor_dir= a folder with meteor-1.5.jar and "
                                    "data/paraphrase-en.gz")
    return jar, table


def _cache_path(jar: Path, table: Path) -> Path:
    """The cache file of these resources, ``meteor-1.5-en-v<FORMAT_VERSION>-<key>.npz``: the
    key hashes the format, the stemmer's version and their content (``content_key``), so every
    installation of the same files (one venv per project, per CI run, per student) shares one
    cache file, and changed files get another; the format shows which files are outdated
    (``stale_cache_files``)."""
    try:
        from importlib.metadata import version
        stemmer = version("snowballstemmer")
    except Exception:                  # not installed: english_stemmer() will say so
        stemmer = "none"
    stamp = "|".join(map(str, [FORMAT_VERSION, stemmer, *content_key(jar, table)]))
    key = hashlib.sha256(stamp.encode()).hexdigest()[:16]
    path = cache_dir() / "meteor" / f"meteor-1.5-en-v{FORMAT_VERSION}-{key}.npz"
    # the same file under its name from before formats were named (the key hashes the format,
    # so this is one of this format): read it rather than build it again, e.g. in a read-only
    # shared cache warmed by an older capkit, which may still read that name
    unnamed = path.with_name(f"meteor-1.5-en-{key}.npz")
    return unnamed if not path.exists() and unnamed.is_file() else path


def stale_cache_files(folder: Path) -> list[Path]:
    """The cache files in ``folder`` that are certainly outdated, found by the file or its lock
    file alone: an older format's. A name without a format (``meteor-1.5-en-<16 hex>.npz``, as
    written up to format 5) counts as ``UNNAMED_FORMAT``: such files go once the format passes
    5. Never one of this format with another key (other resource files or stemmer: another
    venv's, in use now perhaps), nor a newer format's (a newer capkit's beside this one:
    deleting it would make the two rebuild in turn)."""
    names = {p.name.removesuffix(".lock") for p in folder.glob("meteor-1.5-en-*")}
    return sorted(folder / name for name in names if (match := _CACHE_NAME.fullmatch(name))
                  and int(match[1] or UNNAMED_FORMAT) < FORMAT_VERSION)


def _remove_stale(path: Path) -> None:
    """Once ``path`` is written: delete the ``stale_cache_files`` beside it, but those another
    process is building now (``remove_unused``; left for the next rebuild). Never raises: files
    that cannot be deleted (no permission) cost one ``CacheWarning`` naming them."""
    try:
        stale = stale_cache_files(path.parent)
    except OSError:                    # a folder that cannot be listed: nothing seen to delete
        return
    failed: list[str] = []
    for old in stale:
        try:
            remove_unused(old)
        except OSError as err:
            failed.append(f"{old.name} ({type(err).__name__}: {err.strerror or err})")
    if failed:
        warnings.warn(f"capkit could not delete {len(failed)} outdated METEOR cache file(s) in "
                      f"{path.parent}, which nothing reads any more: {'; '.join(failed)}. "
                      "Delete them and their .lock files by hand to free the space.",
                      CacheWarning, stacklevel=3)


def content_key(jar: Path, table: Path) -> list[object]:
    """What identifies the content read from the two files, read in a millisecond: the CRC-32 and
    size the jar's zip directory records for each file capkit reads, and the paraphrase table's
    size and gzip trailer (CRC-32 and length of the uncompressed text). An unreadable jar or
    table gives its size and modification time instead; building the cache then says why."""
    try:
        with zipfile.ZipFile(jar) as z:
            jar_key: object = [(n, z.getinfo(n).CRC, z.getinfo(n).file_size) for n in _JAR_FILES]
    except (OSError, KeyError, zipfile.BadZipFile):
        jar_key = (jar.stat().st_size, jar.stat().st_mtime_ns)
    try:
        with open(table, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(size - 8, 0))
            table_key: object = (size, f.read(8).hex())
    except OSError:
        table_key = (table.stat().st_size, table.stat().st_mtime_ns)
    return [jar_key, table_key]


def _pack_strings(words: list[str]) -> np.ndarray:
    return np.frombuffer("\n".join(words).encode("utf-8"), dtype=np.uint8)


def _unpack_strings(arr: np.ndarray) -> list[str]:
    return arr.tobytes().decode("utf-8").split("\n") if len(arr) else []


def _java_lines(text: str) -> list[str]:
    """``BufferedReader.readLine`` over a whole file (these files use plain \\n endings)."""
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _read_jar(jar: Path) -> dict[str, np.ndarray]:
    with zipfile.ZipFile(jar) as z:
        text = {name: z.read(name).decode("utf-8") for name in _JAR_FILES}
    syn_lines = _java_lines(text["synonym/english.synsets"])
    words, ids = syn_lines[0::2], syn_lines[1::2]
    lists = [[int(t) for t in line.split()] for line in ids]
    exc_lines = _java_lines(text["synonym/english.exceptions"])
    bases, forms = exc_lines[0::2], exc_lines[1::2]
    exc_form, exc_base = [], []
    for base, line in zip(bases, forms):
        for form in line.split():
            exc_form.append(form)
            exc_base.append(base)
    return {
        "function_words": _pack_strings(_java_lines(text["function/english.words"])),
        "nonbreaking": _pack_strings(_java_lines(text["nonbreaking/english.prefixes"])),
        "syn_words": _pack_strings(words),
        "syn_ptr": np.cumsum([0] + [len(x) for x in lists]).astype(np.int64),
        "syn_ids": np.fromiter((i for x in lists for i in x), dtype=np.int32),
        "exc_form": _pack_strings(exc_form),
        "exc_base": _pack_strings(exc_base),
    }


def _encode_phrases(lines: list[str], vocab: dict[str, int]) -> np.ndarray:
    """Hash each whitespace-separated phrase (``StringTokenizer`` words) -> (N,) uint64.

    ``vocab`` grows with the new words, numbered in order of first appearance.
    """
    words = " ".join(lines).split()                   # one C-level split for the whole chunk
    lengths = np.fromiter((line.count(" ") + 1 for line in lines), dtype=np.int64,
                          count=len(lines))
    if int(lengths.sum()) != len(words):              # irregular spacing: count word by word
        lengths = np.fromiter((len(line.split()) for line in lines), dtype=np.int64,
                              count=len(lines))
    for w in dict.fromkeys(words):
        if w not in vocab:
            vocab[w] = len(vocab)
    flat = np.fromiter(map(vocab.__getitem__, words), dtype=np.int64, count=len(words))
    ids = np.zeros((len(lines), MAX_PHRASE), dtype=np.int64)
    rows = np.repeat(np.arange(len(lines)), lengths)
    cols = np.arange(len(flat)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    ids[rows, cols] = flat
    return phrase_hash(ids, lengths)


def _read_paraphrases(table: Path) -> dict[str, np.ndarray]:
    """Stream the table (probability / phrase / paraphrase, three lines an entry) into hashes."""
    from capkit.progress import bar
    vocab: dict[str, int] = {}
    refs, pars = [], []
    with open(table, "rb") as raw, gzip.open(raw, "rt", encoding="utf-8", newline="\n") as f, \
            bar(total=table.stat().st_size, desc="METEOR paraphrases (first use only)",
                unit="B", unit_scale=True) as shown:      # the bytes of the .gz read so far
        while True:
            lines = list(itertools.islice(f, 600_000))     # "\n" kept: split() drops it
            n = len(lines) // 3
            if n == 0:
                break
            refs.append(_encode_phrases(lines[1:3 * n:3], vocab))
            pars.append(_encode_phrases(lines[2:3 * n:3], vocab))
            shown.update(raw.tell() - shown.n)
    ref_hash, ref_id = np.unique(np.concatenate(refs), return_inverse=True)
    par_hash, par_id = np.unique(np.concatenate(pars), return_inverse=True)
    order = np.argsort(ref_id, kind="stable")          # group by phrase, keep file order
    entry_par = par_id[order]
    words = sorted(vocab, key=vocab.__getitem__)
    stemmer = english_stemmer()
    return {
        "vocab": _pack_strings(words),
        "word_hash": np.fromiter(map(java_hash, words), dtype=np.int64, count=len(words)),
        "word_stem": np.fromiter((java_hash(w) for w in stemmer.stemWords(words)),
                                 dtype=np.int64, count=len(words)),
        "ref_hash": ref_hash,
        "ref_ptr": np.searchsorted(ref_id[order], np.arange(len(ref_hash) + 1)).astype(np.int64),
        "entry_par": entry_par.astype(np.int32),
        "par_hash": par_hash,
    }


def _read_cache(path: Path) -> dict[str, np.ndarray]:
    """The cached arrays; KeyError if one is missing (another format), zip errors if damaged."""
    with open_npz(path) as z:
        return {k: z[k] for k in _CACHED}


def _write_cache(f, arrays: dict[str, np.ndarray]) -> None:
    np.savez(f, **arrays)


def _build(arrays: dict[str, np.ndarray], source: str) -> MeteorResources:
    syn_words = _unpack_strings(arrays["syn_words"])
    exceptions: dict[str, list[str]] = {}
    for form, base in zip(_unpack_strings(arrays["exc_form"]), _unpack_strings(arrays["exc_base"])):
        exceptions.setdefault(form, []).append(base)
    vocab = _unpack_strings(arrays["vocab"])
    para = ParaphraseTable(dict(zip(vocab, range(len(vocab)))), arrays["word_hash"],
                           arrays["word_stem"], arrays["ref_hash"],
                           arrays["ref_ptr"], arrays["entry_par"], arrays["par_hash"])
    return MeteorResources(
        function_words=frozenset(_unpack_strings(arrays["function_words"])),
        nonbreaking=parse_nonbreaking(_unpack_strings(arrays["nonbreaking"])),
        syn_index=dict(zip(syn_words, range(len(syn_words)))),
        syn_ptr=arrays["syn_ptr"], syn_ids=arrays["syn_ids"],
        exceptions={k: tuple(v) for k, v in exceptions.items()},
        paraphrase=para, source=source)


@functools.lru_cache(maxsize=4)
def load_resources(meteor_dir: str | None = None, use_cache: bool = True) -> MeteorResources:
    """All METEOR resources, from the binary cache when it exists (built on first use, ~20 s)."""
    jar, table = meteor_files(meteor_dir)

    def build() -> dict[str, np.ndarray]:
        return {**_read_jar(jar), **_read_paraphrases(table)}

    if not use_cache:
        return _build(build(), str(jar.parent))
    arrays = read_or_rebuild(_cache_path(jar, table), _read_cache, build, _write_cache,
                             what="METEOR's resources (~20 s)", on_written=_remove_stale)
    return _build(arrays, str(jar.parent))
