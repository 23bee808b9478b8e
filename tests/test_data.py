"""capkit.data loaders: exact counts on the real files, protocol rules on tiny hand-made files."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import capkit.data as D
from capkit.data import paths
from capkit.data.composite import match_key
from capkit.data.schema import CaptionJudgments, PairJudgments, SystemCaptions


@pytest.fixture
def real(shared_data, monkeypatch):
    """The real datasets: conftest's session fixture fetches them once from the mirror."""
    monkeypatch.setenv(paths.DATA_DIR_ENV, str(shared_data))
    return shared_data


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A data directory of hand-written datasets: fake(name, {path: text}) writes and marks one."""
    monkeypatch.setenv(paths.DATA_DIR_ENV, str(tmp_path))

    def write(dataset: str, files: dict[str, str]) -> Path:
        for rel, text in files.items():
            (tmp_path / dataset / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / dataset / rel).write_text(text, encoding="utf-8")
        paths.marker_path(dataset).write_text("{}")
        return tmp_path / dataset
    return write


# ---- real files: exact counts (SOURCE.md / BENCHMARKS.md) ----------------------------------------

def test_flickr8k_expert(real):
    d = D.load_flickr8k_expert()
    assert isinstance(d, CaptionJudgments) and d.name == "flickr8k_expert"
    assert len(d.candidates) == 5664 and len(d) == 16992
    np.testing.assert_array_equal(d.item_of_rating, np.repeat(np.arange(5664), 3))
    assert Counter(d.human.tolist()) == {1.0: 9796, 2.0: 4997, 3.0: 1686, 4.0: 513}
    assert all(len(r) == 5 for r in d.references)
    own = [cid.split("#")[0] == img for cid, img in zip(d.item_extra["caption_id"], d.images)]
    assert not any(own)
    assert d.protocol["statistic"] == "kendall_tau_c"
    assert {"rows", "references", "target", "statistic", "notes"} <= set(d.protocol)
    assert d.candidates[0][0].isupper()  # raw text, not lower-cased
    kept = D.load_flickr8k_expert(drop_self=False)
    assert len(kept.candidates) == 5822 and len(kept) == 17466


def test_flickr8k_cf(real):
    d = D.load_flickr8k_cf()
    assert d.name == "flickr8k_cf" and len(d.candidates) == len(d) == 47830
    assert d.protocol["statistic"] == "kendall_tau_b"
    assert Counter(map(len, d.references)) == {4: 36190, 5: 11640}  # 721 images lose one caption
    assert sum(d.item_extra["n_yes"]) + sum(d.item_extra["n_no"]) == 144860
    assert 0 <= d.human.min() and d.human.max() <= 1
    kept = D.load_flickr8k_cf(remove_judged_from_refs=False)
    assert Counter(map(len, kept.references)) == {5: 47830}


def test_composite(real):
    d = D.load_composite()
    assert d.name == "composite" and len(d.candidates) == len(d) == 11985
    assert Counter(d.item_extra["subset"]) == {"flickr8k": 2991, "flickr30k": 2973, "coco": 6021}
    assert Counter(d.human.tolist()) == {1.0: 3387, 2.0: 1436, 3.0: 1401, 4.0: 1454, 5.0: 4307}
    full = D.load_composite(remove_rated_from_refs=False)
    lost = [len(a) - len(b) for a, b in zip(full.references, d.references)]
    assert lost == d.item_extra["candidate_in_refs"] and sum(lost) == 3958
    still = sum(match_key(c) in map(match_key, r) for c, r in zip(d.candidates, d.references))
    assert still == 3  # the 3 rows whose rated caption appears twice among the references
    assert d.protocol["statistic"] == "kendall_tau_c"


def test_pascal50s(real):
    d = D.load_pascal50s()
    assert isinstance(d, PairJudgments) and d.name == "pascal50s" and len(d) == 4000
    assert Counter(d.category.tolist()) == {"HC": 1000, "HI": 1000, "HM": 1000, "MM": 1000}
    assert set(d.label.tolist()) == {0, 1} and all(len(r) == 5 for r in d.references)
    refs50 = D.pascal50s_references()
    assert len(refs50) == 1000 and all(len(v) == 50 for v in refs50.values())
    assert all(set(r) <= set(refs50[img]) for r, img in zip(d.references, d.images))


def test_pascal50s_random_draws_of_five_of_the_fifty(real):
    refs50 = D.pascal50s_references()
    d0, again, d1 = (D.load_pascal50s(references="draw", draw_seed=k) for k in (0, 0, 1))
    fixed = D.load_pascal50s()
    assert d0.references == again.references and d0.caption_a == fixed.caption_a
    for refs, img in zip(d0.references, d0.images):
        assert len(refs) == 5 and Counter(refs) <= Counter(refs50[img])   # 5 of the 50 (some repeat)
    by_image = {}
    for refs, img in zip(d0.references, d0.images):   # one draw per image, for all its pairs
        assert by_image.setdefault(img, refs) == refs
    assert sum(a != b for a, b in zip(d0.references, d1.references)) > 3900
    assert sum(a != b for a, b in zip(d0.references, fixed.references)) > 3900
    assert "draw 1" in d1.protocol["references"] and "refs5" in fixed.protocol["references"]
    with pytest.raises(ValueError, match="non-negative integer"):
        D.load_pascal50s(references="draw", draw_seed=-1)
    with pytest.raises(ValueError, match="choose one of"):
        D.load_pascal50s(references="all50")


def test_thumb(real):
    d = D.load_thumb()
    assert d.name == "thumb" and len(d) == 2500 and all(len(r) == 4 for r in d.references)
    systems = ("Up-Down", "Unified-VLP", "VinVL-base", "VinVL-large", "Human")
    assert Counter(d.item_extra["system"]) == {s: 500 for s in systems}
    assert d.protocol["statistic"] == "kendall_tau_c"
    assert {"system", "P", "R"} <= set(d.item_extra)
    machines = D.load_thumb(include_human=False)
    assert len(machines) == 2000 and "Human" not in machines.item_extra["system"]
    k5 = D.load_thumb(include_human=False, references="karpathy5")
    assert len(k5) == 2000 and all(len(r) >= 5 for r in k5.references)
    with pytest.raises(ValueError, match="include_human=False"):
        D.load_thumb(references="karpathy5")
    with pytest.raises(ValueError, match="choose one of"):
        D.load_thumb(references="coco")


def test_thumb_human_copies(real):
    """COCO's duplicate captions: 39 Human captions occur among their own 4 references; the
    protocol says so, and drop_human_copies=True leaves exactly those copies out."""
    from capkit.data.thumb import _same_words
    kept, dropped = D.load_thumb(), D.load_thumb(drop_human_copies=True)
    assert kept.candidates == dropped.candidates
    human = [i for i, s in enumerate(kept.item_extra["system"]) if s == "Human"]
    copied = [i for i in human
              if any(_same_words(r) == _same_words(kept.candidates[i]) for r in kept.references[i])]
    assert len(copied) == 39 and "39 Human captions" in kept.protocol["references"]
    assert "kept" in kept.protocol["references"] and "left out" in dropped.protocol["references"]
    for i in range(len(kept)):
        gone = [r for r in kept.references[i] if r not in dropped.references[i]]
        assert dropped.references[i] == [r for r in kept.references[i] if r not in gone]
        assert (i in copied) == bool(gone)    # only the copied Human items lose references
        assert all(_same_words(r) == _same_words(kept.candidates[i]) for r in gone)
    assert _same_words("A man, riding a Horse.") == _same_words("a man riding a horse")


def test_nebula(real):
    d = D.load_nebula()
    assert d.name == "nebula" and len(d) == 3298
    assert Counter(map(len, d.references)) == {5: 2935, 10: 356, 6: 7}
    assert d.protocol["statistic"] == "kendall_tau_c"


def test_capeval1k(real):
    d = D.load_capeval1k()
    assert d.name == "capeval1k" and len(d) == 700 and all(d.item_extra["decoded_fully"])
    assert not any("<id" in c for c in d.candidates)
    assert "undecodable" in d.protocol["rows"] and d.protocol["statistic"] == "kendall_tau_b"
    everything = D.load_capeval1k(exact_only=False)
    assert len(everything) == 1000 and sum("<id" in c for c in everything.candidates) == 300


def test_coco_karpathy_test(real):
    d = D.load_coco_karpathy_test()
    assert isinstance(d, SystemCaptions) and d.name == "coco_karpathy_test"
    assert len(d.references) == 5000 and "42" in d.references and "391895" in d.references
    assert Counter(map(len, d.references.values())) == {5: 4990, 6: 10}
    counts = {s: len(c) for s, c in d.systems.items()}
    assert len(counts) == 9 and counts.pop("zs_magic") == counts.pop("zs_clipre") == 4982
    assert set(counts.values()) == {5000}
    assert all(set(c) <= set(d.references) for c in d.systems.values())
    assert len(list(d.images_dir.glob("COCO_val2014_*.jpg"))) == 12


def test_other_corpora(real):
    f30k = D.load_flickr30k_test()
    assert len(f30k.references) == 1000 and len(f30k.systems) == 6
    assert all(len(c) == 1000 for c in f30k.systems.values())
    assert "1007129816.jpg" in f30k.references
    div = D.load_diversity_set()
    assert len(div) == 5000 and all(len(c) == 10 for c in div.values()) and "546933" in div
    ex = D.load_clipscore_example()
    assert set(ex.systems) == {"good", "bad"} and set(ex.references) == {"image1", "image2"}
    assert all((ex.images_dir / f"{k}.jpg").is_file() for k in ex.references)


@pytest.mark.parametrize("name", list(D.LOADERS))
def test_registry_loads_every_dataset_by_name(real, name):
    data = D.load(name)
    if name == "diversity_wang_chan":
        assert isinstance(data, dict)
    else:
        assert data.name == name


def test_registry_errors(real):
    with pytest.raises(ValueError, match="Unknown dataset 'flickr8k'.*flickr8k_expert"):
        D.load("flickr8k")
    with pytest.raises(ValueError, match="has no option drop_selfie.*drop_self"):
        D.load("flickr8k_expert", drop_selfie=True)
    assert len(D.load("flickr8k_expert", drop_self=False)) == 17466


def test_import_reads_nothing(tmp_path):
    code = "import sys, capkit.data; print('scipy.io' in sys.modules)"
    env = {**os.environ, paths.DATA_DIR_ENV: str(tmp_path / "absent")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True)
    assert out.stdout.strip() == "False" and not (tmp_path / "absent").exists()


# ---- missing data ----------------------------------------------------------------------------

def test_missing_dataset_names_the_fetch_command(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.DATA_DIR_ENV, str(tmp_path))
    command = "capkit data fetch composite --mirror ../shared/data"
    with pytest.raises(FileNotFoundError, match=re.escape(command)):
        D.load_composite()
    with pytest.raises(FileNotFoundError, match=re.escape("capkit data fetch thumb)")):
        D.load_thumb()  # public: the command without --mirror is offered too
    with pytest.raises(ValueError, match="Unknown dataset"):
        paths.require("coco")


# ---- protocol rules on hand-made files ---------------------------------------------------------

def token_file(images: dict[str, list[str]]) -> str:
    return "".join(f"{img}#{i}\t{c}\n" for img, caps in images.items() for i, c in enumerate(caps))


CAPTIONS = {img: [f"Caption {i} of {img} ." for i in range(5)]
            for img in ("a.jpg", "b.jpg", "c.jpg")}


def test_expert_drops_self_captions_and_keeps_three_ratings(fake):
    fake("flickr8k", {
        "Flickr8k.token.txt": token_file(CAPTIONS),
        "ExpertAnnotations.txt": ("a.jpg\tb.jpg#0\t1\t2\t2\n"
                                  "a.jpg\ta.jpg#2\t4\t4\t4\n"  # a caption of the judged image
                                  "b.jpg\tc.jpg#1\t3\t1\t4\n"),
    })
    d = D.load_flickr8k_expert()
    assert d.candidates == ["Caption 0 of b.jpg .", "Caption 1 of c.jpg ."]
    assert d.references == [CAPTIONS["a.jpg"], CAPTIONS["b.jpg"]] and d.images == ["a.jpg", "b.jpg"]
    np.testing.assert_array_equal(d.item_of_rating, [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(d.human, [1, 2, 2, 3, 1, 4])  # not averaged, item-major
    assert "1 rows whose candidate" in d.protocol["rows"]
    kept = D.load_flickr8k_expert(drop_self=False)
    assert kept.item_extra["caption_id"] == ["b.jpg#0", "a.jpg#2", "c.jpg#1"] and len(kept) == 9


def test_cf_removes_judged_own_captions_from_the_whole_image(fake):
    fake("flickr8k", {
        "Flickr8k.token.txt": token_file(CAPTIONS),
        "CrowdFlowerAnnotations.txt": ("a.jpg\tb.jpg#0\t0\t0\t3\n"
                                       "a.jpg\ta.jpg#1\t1\t3\t0\n"    # a's own #1 judged for a
                                       "b.jpg\ta.jpg#3\t0.25\t1\t3\n"  # a's #3 judged for b only
                                       "b.jpg\tb.jpg#0\t1\t3\t0\n"
                                       "b.jpg\tb.jpg#4\t0.5\t2\t2\n"),
    })
    d = D.load_flickr8k_cf()
    a_refs = [c for i, c in enumerate(CAPTIONS["a.jpg"]) if i != 1]
    b_refs = [c for i, c in enumerate(CAPTIONS["b.jpg"]) if i not in (0, 4)]
    assert d.references == [a_refs, a_refs, b_refs, b_refs, b_refs]  # every row of the image
    np.testing.assert_allclose(d.human, [0, 1, 0.25, 1, 0.5])
    assert all(len(r) == 5 for r in D.load_flickr8k_cf(remove_judged_from_refs=False).references)


def test_cf_raises_when_no_reference_would_be_left(fake):
    rows = "".join(f"c.jpg\tc.jpg#{i}\t1\t3\t0\n" for i in range(5))
    fake("flickr8k", {"Flickr8k.token.txt": token_file(CAPTIONS),
                      "CrowdFlowerAnnotations.txt": rows})
    with pytest.raises(ValueError, match="no reference of 'c.jpg' is left"):
        D.load_flickr8k_cf()
    assert len(D.load_flickr8k_cf(remove_judged_from_refs=False)) == 5


def test_flickr8k_malformed_files_are_named(fake):
    root = fake("flickr8k", {"Flickr8k.token.txt": token_file(CAPTIONS),
                             "ExpertAnnotations.txt": "a.jpg\tb.jpg#0\t1\t2\n"})
    with pytest.raises(ValueError, match=r"ExpertAnnotations\.txt \(line 1\).*5 tab-separated"):
        D.load_flickr8k_expert()
    (root / "ExpertAnnotations.txt").write_text("a.jpg\tz.jpg#0\t1\t2\t2\n")
    with pytest.raises(ValueError, match="'z.jpg#0' is not in Flickr8k.token.txt"):
        D.load_flickr8k_expert()
    (root / "ExpertAnnotations.txt").write_text("a.jpg\tb.jpg#0\t1\t7\t2\n")
    with pytest.raises(ValueError, match=r"outside \[1, 4\].*--force"):
        D.load_flickr8k_expert()


COMPOSITE_HEADER = ("subset,image,candidate,human_correctness,candidate_in_refs,fleur_score,"
                    "fleur_raw_score\n")


def composite_files(rows: list[str], refs: dict[str, list[str]]) -> dict[str, str]:
    return {"composite_correctness.csv": COMPOSITE_HEADER + "".join(r + "\n" for r in rows),
            "composite_references.json": json.dumps(refs)}


def test_composite_removes_the_rated_caption_from_its_own_row_only(fake):
    refs = {"1.jpg": ["A dog runs on the grass.", "A brown dog outside", "Dog's run"],
            "2.jpg": ["Two cats.", "Two cats.", "A cat pair"]}
    fake("composite", composite_files([
        "flickr8k,1.jpg,a dog runs on the grass .,5,1,0.9,0.9",   # flagged: its own refs lose it
        "flickr8k,1.jpg,a cat sleeps,1,0,0.1,0.1",                # same image, not flagged
        "coco,2.jpg,two cats .,5,1,0.8,0.8",                      # duplicate refs: one copy goes
        'coco,2.jpg,"dogs run",2,0,0.3,0.3',
    ], refs))
    d = D.load_composite()
    assert d.references == [["A brown dog outside", "Dog's run"], refs["1.jpg"],
                            ["Two cats.", "A cat pair"], refs["2.jpg"]]
    assert d.item_extra["subset"] == ["flickr8k", "flickr8k", "coco", "coco"]
    assert "1 flagged rows have the rated caption twice" in d.protocol["notes"]
    full = D.load_composite(remove_rated_from_refs=False)
    assert full.references == [refs["1.jpg"]] * 2 + [refs["2.jpg"]] * 2


def test_composite_raises_when_a_flagged_caption_is_not_among_the_references(fake):
    fake("composite", composite_files(["flickr8k,1.jpg,a dog walks,5,1,0.9,0.9"],
                                      {"1.jpg": ["A dog runs.", "A dog"]}))
    with pytest.raises(ValueError, match=r"line 2.*'a dog walks' is flagged candidate_in_refs=1"):
        D.load_composite()


def test_match_key_is_lowercase_alphanumeric_words():
    assert match_key("A dog, running  fast!") == match_key("a dog running fast .")
    assert match_key("a dog running fast .") == "a dog running fast"
    assert match_key("children's") == "children s" != match_key("childrens")


def test_empty_reference_list_is_rejected(fake):
    fake("nebula", {"nebula_test.json": json.dumps([{"imgid": "x", "mt": "a cat", "refs": [],
                                                     "score": 0.5}])})
    with pytest.raises(ValueError, match=r"nebula_test\.json \(entry 0\).*non-empty list"):
        D.load_nebula()


def test_a_key_given_twice_in_a_data_file_is_named(tmp_path):
    from capkit.data.readers import read_json, read_jsonl
    path = tmp_path / "composite" / "refs.json"
    path.parent.mkdir()
    path.write_text('{"1.jpg": ["a dog"], "1.jpg": ["a cat"]}')
    with pytest.raises(ValueError, match=r"refs\.json .*the key '1\.jpg' appears twice.*--force"):
        read_json(path)
    path.write_text('{"seg_id": "1", "refs": ["a"]}\n{"seg_id": "2", "seg_id": "3"}\n')
    with pytest.raises(ValueError, match=r"refs\.json \(line 2\).*'seg_id' appears twice"):
        read_jsonl(path)
