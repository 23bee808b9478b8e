"""LEIC (Cui et al. 2018): compact bilinear pooling, masks, checkpoints, reference averaging,
training, the no-leakage split and the metric."""
import numpy as np
import pytest
import torch

from capkit.models.glove import GloVe
from capkit.models.i2ce_vocab import EOS, PAD, embedding_matrix, tokenize
from capkit.models.leic import (
    CompactBilinearPooling, Critic, LEICConfig, count_sketch_hashes, encode_ids, get_config,
)
from capkit.models.leic_critic import LEIC, critic_vocabulary, load_leic, read_checkpoint

WORDS = ("a man dog woman child runs sits on the grass beach street red blue ball plays "
         "with in black white big small young old holds rides bike horse water snow jumps "
         "near two three people").split()


def toy_glove(dim: int = 8) -> GloVe:
    return GloVe(list(WORDS), np.random.default_rng(0).normal(size=(len(WORDS), dim)))


def toy_critic(seed: int = 0, **changes) -> LEIC:
    glove = toy_glove()
    vocab = critic_vocabulary([WORDS], glove)
    cfg = get_config("tiny", vocab_size=len(vocab), embed_dim=glove.dim, **changes)
    torch.manual_seed(seed)
    return LEIC(Critic(cfg, embedding_matrix(vocab, glove, seed)), vocab, {"name": "toy"})


# ----------------------------------------------------------------------------- CBP

@pytest.mark.parametrize("dx, dy, out", [(5, 3, 7), (4, 6, 16), (3, 3, 2)])
def test_cbp_is_the_count_sketch_of_the_outer_product(dx, dy, out):
    """Sketch identity (exact, not in expectation): CBP(x, y) = sum_ik s1_i s2_k x_i y_k placed
    in bin (h1_i + h2_k) mod D."""
    cbp = CompactBilinearPooling(dx, dy, out)
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(2, dx)), rng.normal(size=(2, dy))
    got = cbp(torch.tensor(x, dtype=torch.float64), torch.tensor(y, dtype=torch.float64))
    h1, s1 = (t.numpy() for t in count_sketch_hashes(dx, out, 1, 3))
    h2, s2 = (t.numpy() for t in count_sketch_hashes(dy, out, 5, 7))
    for b in range(2):
        outer = np.outer(x[b] * s1, y[b] * s2)                               # (dx, dy)
        want = np.zeros(out)
        np.add.at(want, (h1[:, None] + h2[None, :]) % out, outer)
        assert np.allclose(got[b].numpy(), want, atol=1e-10)


def test_cbp_hashes_are_the_authors_fixed_seeds():
    h, s = count_sketch_hashes(10, 8192, 1, 3)
    assert h.tolist() == np.random.RandomState(1).randint(8192, size=10).tolist()
    assert set(s.tolist()) <= {-1.0, 1.0}
    assert torch.equal(CompactBilinearPooling(10, 4, 8192).h1, h)


# ----------------------------------------------------------------------------- masks and shapes

def test_sentence_vector_is_the_output_at_eos_and_ignores_padding():
    critic = toy_critic()
    model, cfg = critic.model, critic.cfg
    ids = critic.ids(["a man runs", "the dog plays with a red ball on the grass", "dog"])
    rows = encode_ids(ids, cfg)
    assert rows.shape == (3, 11) and (rows == EOS).sum(1).tolist() == [1, 1, 1]
    vec = model.sentence(rows)
    out, _ = model.lstm(model.embedding(rows))
    for i, x in enumerate(ids):
        assert torch.allclose(vec[i], out[i, len(x)], atol=1e-6)
    noisy = rows.clone()
    noisy[rows == PAD] = 5                                  # garbage after <eos> changes nothing
    assert torch.allclose(model.sentence(noisy), vec, atol=1e-6)
    assert torch.allclose(model.sentence(rows[2:]), vec[2:], atol=1e-6)   # batch-independent


def test_truncation_quirk_gives_long_captions_a_zero_vector():
    long = " ".join(["a", "man"] * 10)                                       # 20 words
    plain, quirk = toy_critic(), toy_critic(truncation_quirk=True)
    rows = encode_ids(plain.ids([long, "a man"]), plain.cfg)
    assert rows.shape[1] == 15 and rows[0, 14] == EOS                       # 14 words + <eos>
    q = encode_ids(quirk.ids([long, "a man"]), quirk.cfg)
    assert q.shape[1] == 15 and not (q[0] == EOS).any()
    vec = quirk.model.sentence(q)
    assert torch.all(vec[0] == 0) and vec[1].abs().sum() > 0
    assert plain.model.sentence(rows)[0].abs().sum() > 0


@pytest.mark.parametrize("context, combine", [("caption", "concat"), ("caption", "cbp"),
                                              ("caption", "mlp"), ("image", "mlp"),
                                              ("both", "cbp"), ("both", "concat")])
def test_heads_and_contexts(context, combine):
    image_dim = 0 if context == "caption" else 6
    critic = toy_critic(context=context, combine=combine, image_dim=image_dim)
    refs, cands = ["a man runs", "a dog"], ["a man sits", "two people on the beach"]
    images = None if context == "caption" else np.ones((2, 6))
    p = critic.score_pairs(None if context == "image" else refs, cands, images)
    assert p.shape == (2,) and np.all((p > 0) & (p < 1))
    logits = critic.model(encode_ids(critic.ids(refs), critic.cfg),
                          encode_ids(critic.ids(cands), critic.cfg),
                          None if images is None else torch.ones(2, 6))
    assert np.allclose(logits.softmax(-1)[:, 0].detach().numpy(), p, atol=1e-6)


def test_config_errors():
    with pytest.raises(ValueError, match="image_dim"):
        LEICConfig(context="both")
    with pytest.raises(ValueError, match="combine"):
        LEICConfig(combine="sum")
    with pytest.raises(ValueError, match="preset"):
        get_config("huge")
    with pytest.raises(ValueError, match="vocabulary"):
        Critic(get_config("tiny"))
    critic = toy_critic(context="both", image_dim=4)
    with pytest.raises(ValueError, match="image feature"):
        critic.score_pairs(["a man"], ["a dog"])
    with pytest.raises(ValueError, match="one reference per candidate"):
        toy_critic().score_pairs(["a"], ["a", "b"])


# ----------------------------------------------------------------------------- checkpoints

def test_save_load_round_trip(tmp_path):
    critic = toy_critic(combine="cbp")
    sha = critic.save(tmp_path / "c.safetensors", {"note": "x"})
    back = read_checkpoint(tmp_path / "c.safetensors")
    assert back.sha256 == sha and back.vocab == critic.vocab and back.meta["note"] == "x"
    assert back.cfg == critic.cfg
    refs, cands = ["a man rides a horse", "dog"], ["two dogs play in the snow", "!!"]
    assert np.array_equal(back.score_pairs(refs, cands), critic.score_pairs(refs, cands))
    assert back.save(tmp_path / "again.safetensors") == sha                 # same bytes
    assert load_leic(tmp_path / "c.safetensors").sha256 == sha
    with pytest.raises(FileNotFoundError, match="capkit train leic"):
        read_checkpoint(tmp_path / "missing.safetensors")
    (tmp_path / "bad.safetensors").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="cannot be read"):
        read_checkpoint(tmp_path / "bad.safetensors")


def test_vocabulary_keeps_the_most_frequent_glove_words():
    glove = toy_glove()
    vocab = critic_vocabulary(tokenize(["a dog a dog a man", "qwerty man"]), glove, max_size=2)
    assert vocab.words[4:] == ("a", "dog")
