"""I2CE: the auto-encoder (shapes, masks, attention), checkpoints, training, the no-leakage split,
the metric and B@1*."""
import dataclasses
import functools

import numpy as np
import pytest
import torch

from capkit.metrics.bleu import bleu
from capkit.metrics.bleu_nostop import bleu_1_nostop, bleu_nostop
from capkit.metrics.i2ce import i2ce
from capkit.models.glove import GloVe
from capkit.models.i2ce import (
    AutoEncoder, I2CE, get_config, load_i2ce, pad_batch, read_checkpoint, shipped_path,
)
from capkit.models.i2ce_vocab import (
    BOS, EOS, PAD, SPECIALS, UNK, Vocabulary, build_vocabulary, embedding_matrix,
)

WORDS = ("a man dog woman child runs sits on the grass beach street red blue ball plays "
         "with in black white big small young old holds rides bike horse water snow jumps "
         "near two three people").split()


def toy_glove(dim: int = 8) -> GloVe:
    rng = np.random.default_rng(0)
    return GloVe(list(WORDS) + ["zebra"], rng.normal(size=(len(WORDS) + 1, dim)))


def toy_model(seed: int = 0, preset: str = "tiny"):
    glove = toy_glove()
    vocab = build_vocabulary([WORDS], glove, min_count=1)
    cfg = get_config(preset, vocab_size=len(vocab), embed_dim=glove.dim)
    torch.manual_seed(seed)
    return AutoEncoder(cfg, embedding_matrix(vocab, glove, seed)), vocab


def toy_sentences(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS[:20], size=rng.integers(3, 8))) for _ in range(n)]


# ----------------------------------------------------------------------------- the model

def test_vocabulary_and_embedding_rows():
    glove = toy_glove()
    vocab = build_vocabulary([["dog", "dog", "man", "qwerty"], ["man", "zebra"]], glove,
                             min_count=2)
    assert vocab.words == SPECIALS + ("dog", "man")          # frequent, known to GloVe
    assert vocab.ids(["dog", "zebra", "qwerty"]) == [4, UNK, UNK]
    assert vocab.ids([]) == [UNK]
    table = embedding_matrix(vocab, glove)
    assert np.allclose(table[4], glove.vector("dog")) and np.allclose(table[PAD], 0)
    assert np.allclose(table[UNK], table[4:].mean(axis=0))
    with pytest.raises(ValueError, match="min_count"):
        build_vocabulary([["dog"]], glove, min_count=0)


def test_shapes_masks_and_intrinsic_vector_is_last_real_state():
    model, vocab = toy_model()
    ids = [vocab.ids(s.split()) for s in ["a man runs", "the dog plays with a red ball", "dog"]]
    src, lengths = pad_batch(ids)                                         # (3, 7)
    states, intrinsic, mask = model.encode(src, lengths)
    H = model.cfg.hidden
    assert states.shape == (3, 7, H) and intrinsic.shape == (3, H) and mask.shape == (3, 7)
    assert mask.sum(1).tolist() == [3, 7, 1]
    for i, n in enumerate(lengths.tolist()):
        assert torch.allclose(states[i, n - 1], intrinsic[i], atol=1e-6)
        assert torch.all(states[i, n:] == 0)
    noisy = src.clone()
    noisy[~mask] = 5                                      # garbage where the padding was
    assert torch.allclose(model.encode(noisy, lengths)[1], intrinsic, atol=1e-6)
    alone = model.encode(*pad_batch(ids[:1]))[1]           # batching does not change a vector
    assert torch.allclose(alone[0], intrinsic[0], atol=1e-5)


def test_attention_sums_to_one_over_non_padding_positions():
    model, vocab = toy_model()
    ids = [vocab.ids(s.split()) for s in ["a man runs on the beach", "dog", "two people"]]
    src, lengths = pad_batch(ids)
    tgt_in = torch.cat([torch.full((3, 1), BOS), src], 1)
    states, attn = model(src, lengths, tgt_in)
    assert states.shape == (3, 7, model.cfg.hidden) and attn.shape == (3, 7, 6)
    assert model.decoder.out(states).shape == (3, 7, model.cfg.n_out)
    mask = torch.arange(6)[None] < lengths[:, None]                      # (B, S)
    assert torch.allclose(attn.sum(-1), torch.ones(3, 7), atol=1e-6)
    assert torch.all(attn.masked_select(~mask[:, None, :].expand_as(attn)) == 0)
    ids_out, attn_greedy = model.greedy(src, lengths, max_len=5)
    assert ids_out.shape == (3, 6) and torch.allclose(attn_greedy.sum(-1), torch.ones(3, 6))


def test_no_attention_ablation_reads_only_the_intrinsic_vector():
    glove = toy_glove()
    vocab = build_vocabulary([WORDS], glove, min_count=1)
    cfg = get_config("tiny", vocab_size=len(vocab), embed_dim=glove.dim, attention=0)
    torch.manual_seed(0)
    model = AutoEncoder(cfg, embedding_matrix(vocab, glove))
    assert model.decoder.attention is None
    src, lengths = pad_batch([vocab.ids("a man runs on the beach".split())])
    tgt_in = torch.cat([torch.full((1, 1), BOS), src], 1)
    states, attn = model(src, lengths, tgt_in)
    assert states.shape == (1, 7, cfg.hidden) and torch.all(attn == 0)
    # the decoder sees the input only through I(x): same I(x), same decoding
    _, intrinsic, mask = model.encode(src, lengths)
    memory = model.decoder.memory(torch.zeros_like(model.encode(src, lengths)[0]), mask,
                                  intrinsic)
    again, _ = model.decoder(model.embedding(tgt_in), intrinsic, memory)
    assert torch.allclose(again, states)


def test_decoder_targets_beyond_out_vocab_are_unk():
    model, _ = toy_model()
    model.cfg = dataclasses.replace(model.cfg, out_vocab=10)
    assert model.targets(torch.tensor([3, 9, 10, 25])).tolist() == [EOS, 9, UNK, UNK]
    with pytest.raises(ValueError, match="vocabulary"):
        AutoEncoder(get_config("tiny"))
    with pytest.raises(ValueError, match="preset"):
        get_config("huge")


# ----------------------------------------------------------------------------- checkpoints

def test_save_load_round_trip(tmp_path):
    model, vocab = toy_model()
    enc = I2CE(model, vocab, {"preset": "tiny", "seed": 0})
    sha = enc.save(tmp_path / "m.safetensors", {"note": "x"})
    assert not (tmp_path / "m.safetensors.tmp").exists()
    back = read_checkpoint(tmp_path / "m.safetensors")
    assert back.sha256 == sha and back.vocab == vocab and back.meta["note"] == "x"
    assert back.model.cfg == model.cfg
    texts = ["a man rides a horse", "two dogs play in the snow", "!!"]
    assert np.allclose(back.encode(texts), enc.encode(texts), atol=0)
    assert back.save(tmp_path / "again.safetensors") == sha           # same bytes
    assert load_i2ce(tmp_path / "m.safetensors").sha256 == sha
    with pytest.raises(FileNotFoundError, match="capkit train i2ce"):
        read_checkpoint(tmp_path / "missing.safetensors")


def test_oov_glove_reads_words_outside_the_vocabulary(monkeypatch):
    model, vocab = toy_model()
    enc = I2CE(model, vocab, {"preset": "tiny"})
    monkeypatch.setattr(enc, "_glove", toy_glove)
    assert "zebra" not in vocab.index
    assert enc.ids(["a zebra"]) == [[vocab.index["a"], UNK]]
    assert enc.ids(["a zebra"], oov="glove") == [[vocab.index["a"], len(vocab)]]
    closed, open_ = enc.encode(["a zebra"]), enc.encode(["a zebra"], oov="glove")
    assert not np.allclose(closed, open_)
    with pytest.raises(ValueError, match="oov"):
        enc.ids(["a"], oov="skip")


# ----------------------------------------------------------------------------- the metric

def test_i2ce_metric_aggregates_and_errors():
    model, vocab = toy_model()
    enc = I2CE(model, vocab, {"preset": "tiny"})
    cands = ["a man runs on the beach", "a dog plays with a ball"]
    refs = [["a man runs on the beach", "two people sit"], ["a big dog plays", "snow", "a horse"]]
    s = i2ce(cands, refs, model=enc)
    assert s.metric == "i2ce" and "aggregate:max" in s.signature and "tiny@" in s.signature
    assert s.per_caption[0] == pytest.approx(1.0)                     # identical reference
    assert np.all(s.parts["max"] >= s.parts["mean"] - 1e-12)
    assert [len(x) for x in s.parts["per_reference"]] == [2, 3]
    assert np.allclose(s.parts["per_reference"][1].max(), s.per_caption[1])
    mean = i2ce(cands, refs, model=enc, aggregate="mean")
    assert mean.metric == "i2ce_mean" and np.allclose(mean.per_caption, s.parts["mean"])
    keyed = i2ce(dict(enumerate(cands)), dict(enumerate(refs)), model=enc)
    assert keyed.ids == ("0", "1") and np.allclose(keyed.per_caption, s.per_caption)
    with pytest.raises(ValueError, match="aggregate"):
        i2ce(cands, refs, model=enc, aggregate="median")
    with pytest.raises(ValueError, match="aligned"):
        i2ce(cands, refs[:1], model=enc)
    with pytest.raises(FileNotFoundError, match="capkit train i2ce"):
        i2ce(cands, refs, model="/nonexistent/i2ce.safetensors")


def test_captions_that_read_the_same_get_the_same_vector_to_the_bit():
    """"A man runs." and "a man runs" are the same word ids: encoded once, so their scores tie
    on every CPU (in one batch a row's place can change its last bits without AVX-512); the
    others keep the vectors they get when encoded alone."""
    model, vocab = toy_model()
    enc = I2CE(model, vocab, {"preset": "tiny"})
    texts = ["A man runs.", "a dog plays with a ball", "a man runs", "two people sit",
             "A dog plays with a ball"]
    v = enc.encode(texts, batch_size=2)
    np.testing.assert_array_equal(v[0], v[2])
    np.testing.assert_array_equal(v[1], v[4])
    np.testing.assert_allclose(enc.encode(["two people sit"]), v[3:4], atol=1e-6)
    s = i2ce(["A man runs.", "a man runs"], [["two people sit", "a dog plays"]] * 2, model=enc)
    assert s.per_caption[0] == s.per_caption[1]
    s = i2ce(texts, [["a man runs", "snow"]] * len(texts), model=enc)     # equal to a reference:
    assert s.per_caption[0] == s.per_caption[2] == 1.0                 # 1, not 1 +- an ulp
    assert (s.per_caption[[1, 3, 4]] < 1).all()


def test_shipped_checkpoint_is_small_and_documented():
    path = shipped_path()
    assert path.is_file(), (f"the shipped checkpoint {path} is missing: it is part of the "
                            "repository (git checkout -- capkit/models/weights) and of the wheel")
    assert path.stat().st_size < 20_000_000
    enc = load_i2ce()
    assert enc.meta["preset"] == "small" and enc.meta["seed"] == 0
    assert enc.meta["command"].startswith("capkit train i2ce --preset small")
    assert enc.meta["history"][-1]["token_accuracy"] > 0.8
    s = i2ce(["a dog runs on the grass"], [["a dog is running on grass", "a cat"]])
    assert 0.5 < s.per_caption[0] <= 1.0


# ----------------------------------------------------------------------------- B@1*

def test_bleu_1_nostop_is_bleu_on_filtered_tokens():
    cands = ["a dog is running on the grass", "it is a", "the man's hat isn't red"]
    refs = [["a dog runs on grass", "the dog is running"], ["a man", "there is a man"],
            ["a man with a red hat", "red hat"]]
    s = bleu_1_nostop(cands, refs)
    by_hand = bleu(["dog running grass", "zzz", "man hat red"],
                   [["dog runs grass", "dog running"], ["man", "man"], ["man red hat", "red hat"]],
                   n=1)
    assert s.metric == "bleu_1_nostop" and "stopwords:nltk(179)" in s.signature
    assert np.allclose(s.per_caption[[0, 2]], by_hand.per_caption[[0, 2]])
    assert s.per_caption[1] < 1e-5                                  # only stop words left nothing
    assert bleu_nostop(cands, refs, stopwords="none").corpus == pytest.approx(
        bleu(cands, refs, n=1).corpus)
    with pytest.raises(ValueError, match="stop-word list"):
        bleu_1_nostop(cands, refs, stopwords="french")


# ----------------------------------------------------------------------------- training

def _synthetic_corpus():
    from capkit.training.corpus import TrainingCorpus
    texts = {"stage1": {"train": toy_sentences(480, 1), "val": toy_sentences(40, 2)},
             "stage2": {"train": toy_sentences(160, 3), "val": toy_sentences(40, 4)}}
    images = {s: {k: () for k in d} for s, d in texts.items()}
    return TrainingCorpus(texts, images, {})


def test_training_lowers_the_loss_is_reproducible_and_resumes(tmp_path, monkeypatch):
    from capkit.models import glove as glove_module
    from capkit.training import i2ce as training
    monkeypatch.setattr(glove_module, "load_glove", lambda path=None: toy_glove())
    schedule = training.Schedule(epochs=(3, 1), batch_size=32, lr=1e-2, max_val=40)
    run = functools.partial(training.train_i2ce, "tiny", seed=0, schedule=schedule,
                            corpus=_synthetic_corpus())
    first = run(out=tmp_path / "a.safetensors")
    losses = [h["train_loss"] for h in first.history]
    assert len(first.history) == 4 and losses[2] < 0.8 * losses[0]
    assert first.history[2]["val_loss"] < first.history[0]["val_loss"]
    assert 0 <= first.final["exact_match"] <= first.final["token_accuracy"] <= 1
    assert run(out=tmp_path / "b.safetensors").sha256 == first.sha256      # same seed, same bytes
    assert run(out=tmp_path / "c.safetensors", seed=1).sha256 != first.sha256

    real, calls = training.reconstruction, []

    def interrupted(*args, **kwargs):                # dies while evaluating epoch 3
        calls.append(1)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real(*args, **kwargs)
    monkeypatch.setattr(training, "reconstruction", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(out=tmp_path / "d.safetensors", workdir=tmp_path / "work")
    monkeypatch.setattr(training, "reconstruction", real)
    resumed = run(out=tmp_path / "d.safetensors", workdir=tmp_path / "work", resume=True)
    assert resumed.sha256 == first.sha256 and resumed.history == first.history
    with pytest.raises(ValueError, match="recipe"):
        run(out=tmp_path / "e.safetensors", workdir=tmp_path / "work", resume=True, seed=3)


# ----------------------------------------------------------------------------- no leakage

@pytest.mark.slow
def test_no_leakage(shared_data):
    from capkit.data import load
    from capkit.data.corpora import coco_id
    from capkit.training.corpus import (
        STAGES, benchmark_images, benchmark_texts, normalise, training_corpus,
    )
    corpus = training_corpus(seed=0)
    held, texts = benchmark_images(), benchmark_texts()
    test_split = set((shared_data / "flickr8k" / "Flickr_8k.testImages.txt").read_text().split())
    assert test_split <= held["flickr8k"] and len(held["flickr8k"]) == 1000
    expert = load("flickr8k_expert", drop_self=False)
    assert set(expert.images) <= test_split
    assert {normalise(c) for c in expert.candidates} <= texts
    composite = load("composite")
    assert {coco_id(i) for i, s in zip(composite.images, composite.item_extra["subset"])
            if s == "coco"} <= held["coco"]
    assert {coco_id(i) for i in load("thumb").images} <= held["coco"]
    assert len({coco_id(i) for i in load("capeval1k", exact_only=False).images}) == 250
    used = set()
    for stage in STAGES:
        train, val = (set(corpus.images[stage][k]) for k in ("train", "val"))
        assert train and val and not train & val
        used |= train | val
        for split in ("train", "val"):
            assert not {normalise(t) for t in corpus.texts[stage][split]} & texts
    assert not used & (held["flickr8k"] | held["coco"] | held["flickr30k"])
    assert not used & test_split
    assert len(corpus.texts["stage1"]["train"]) > 25_000
    assert len(corpus.texts["stage2"]["train"]) > 9_000
    with pytest.raises(ValueError, match="val_fraction"):
        training_corpus(val_fraction=1.5)


def test_train_command(tmp_path, monkeypatch, capsys):
    import argparse

    from capkit.commands import train as command
    from capkit.models import glove as glove_module
    from capkit.training import i2ce as training
    monkeypatch.setattr(glove_module, "load_glove", lambda path=None: toy_glove())
    monkeypatch.setattr(training, "training_corpus", lambda seed=0: _synthetic_corpus())
    parser = argparse.ArgumentParser(prog="capkit")
    command.register(parser.add_subparsers(dest="command", required=True))
    out = tmp_path / "m.safetensors"
    args = parser.parse_args(["train", "i2ce", "--preset", "tiny", "--epochs", "1,1",
                              "--out", str(out)])
    assert args.func(args) == 0
    text = capsys.readouterr().out
    assert "held-out reconstruction (stage2)" in text and "sha256" in text
    assert read_checkpoint(out).meta["schedule"]["epochs"] == [1, 1]
    with pytest.raises(SystemExit):
        parser.parse_args(["train", "i2ce", "--epochs", "3"])
    assert "N,M" in capsys.readouterr().err


def test_user_errors_say_what_to_do(tmp_path):
    from safetensors.torch import save_file

    from capkit.training.i2ce import train_i2ce
    with pytest.raises(ValueError, match="workdir"):
        train_i2ce("tiny", resume=True)
    with pytest.raises(ValueError, match="threads"):
        train_i2ce("tiny", threads=0)
    if not shipped_path("tiny").is_file():
        with pytest.raises(FileNotFoundError, match="--preset tiny"):
            load_i2ce("tiny")
    save_file({"x": torch.zeros(2)}, str(tmp_path / "other.safetensors"))
    with pytest.raises(ValueError, match="not an I2CE checkpoint"):
        read_checkpoint(tmp_path / "other.safetensors")
    model, vocab = toy_model()
    enc = I2CE(model, vocab, {"preset": "tiny"})        # 8-d toy vectors, bundle GloVe is 50-d
    with pytest.raises(ValueError, match="needs the GloVe"):
        enc.encode(["a zebra"], oov="glove")


# ----------------------------------------------------------------------------- unsafe state files

class _RunsACommand:
    """Unpickling this runs a shell command that creates a marker file."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os
        return os.system, (f"touch {self.marker}",)


@pytest.mark.parametrize("how", ["pickle", "torch.save"])
def test_resume_refuses_a_crafted_state_file_before_it_runs(tmp_path, monkeypatch, capsys, how):
    import pickle

    from capkit.cli import main
    from capkit.training import i2ce as training
    work, marker = tmp_path / "work", tmp_path / "pwned"
    work.mkdir()
    state = work / "state.pt"
    if how == "pickle":
        state.write_bytes(pickle.dumps(_RunsACommand(marker), protocol=2))
    else:
        torch.save({"model": _RunsACommand(marker), "optimizer": {}}, state)
    monkeypatch.setattr(training, "training_corpus", lambda seed=0: pytest.fail("did work"))
    with pytest.raises(ValueError, match="state.pt.*delete .* to start over, or point "
                       "--workdir") as err:
        training.train_i2ce("tiny", workdir=work, resume=True)
    assert str(state) in str(err.value)
    assert not marker.exists()
    assert main(["train", "i2ce", "--preset", "tiny", "--workdir", str(work), "--resume",
                 "--out", str(tmp_path / "m.safetensors")]) == 2
    assert str(state) in capsys.readouterr().err and not marker.exists()
    assert not (tmp_path / "m.safetensors").exists()


def test_state_is_tensors_plus_json_and_a_torn_pair_is_named(tmp_path, monkeypatch):
    import json

    from capkit.models import glove as glove_module
    from capkit.training import i2ce as training
    monkeypatch.setattr(glove_module, "load_glove", lambda path=None: toy_glove())
    schedule = training.Schedule(epochs=(1, 1), batch_size=32, lr=1e-2, max_val=20)
    work = tmp_path / "work"
    training.train_i2ce("tiny", workdir=work, schedule=schedule, corpus=_synthetic_corpus())
    assert sorted(p.name for p in work.iterdir()) == ["state.json", "state.pt"]  # no temporaries
    tensors = torch.load(work / "state.pt", weights_only=True)
    assert set(tensors) == {"model", "optimizer"}
    info = json.loads((work / "state.json").read_text())
    assert info["done"] == 2 and len(info["history"]) == 2 and info["recipe"]["preset"] == "tiny"
    torch.save({"model": {}, "optimizer": {}}, work / "state.pt")      # another run's tensors
    with pytest.raises(ValueError, match=r"state\.pt: it is not the file state\.json describes"):
        training.train_i2ce("tiny", workdir=work, resume=True)
    (work / "state.json").write_text('{"recipe": {}, "recipe": {}}')
    with pytest.raises(ValueError, match=r"state\.json: it cannot be read .*'recipe' appears"):
        training.train_i2ce("tiny", workdir=work, resume=True)
    (work / "state.pt").unlink()
    with pytest.raises(ValueError, match=r"state\.json: state\.pt is missing beside it"):
        training.train_i2ce("tiny", workdir=work, resume=True)


def test_a_damaged_checkpoint_is_named(tmp_path):
    bad = tmp_path / "broken.safetensors"
    bad.write_bytes(b"\x00" * 40)
    with pytest.raises(ValueError, match=f"{bad}.*capkit train i2ce"):
        read_checkpoint(bad)


def test_deterministic_sets_a_cublas_workspace_only_while_it_runs(monkeypatch):
    """use_deterministic_algorithms on CUDA needs CUBLAS_WORKSPACE_CONFIG (else cuBLAS raises);
    the context sets it when unset, keeps a user's value, and restores the environment."""
    import os

    import torch

    from capkit.training.i2ce import deterministic
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    with deterministic(1):
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
        assert torch.are_deterministic_algorithms_enabled()
    assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")
    with deterministic(1):
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":16:8"
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":16:8"
