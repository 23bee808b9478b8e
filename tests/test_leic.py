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


# ----------------------------------------------------------------------------- the metric

def test_mean_over_references_is_the_mean_of_single_reference_scores():
    from capkit.metrics.leic import leic
    critic = toy_critic()
    cands = ["a man rides a horse", "two dogs play in the snow"]
    refs = [["a man on a horse", "a person rides", "a horse and a man"], ["dogs in snow"]]
    s = leic(cands, refs, model=critic)
    singles = [[leic([c], [[r]], model=critic).per_caption[0] for r in rs]
               for c, rs in zip(cands, refs)]
    assert np.allclose(s.per_caption, [np.mean(x) for x in singles], atol=1e-12)
    assert np.allclose(np.concatenate(s.parts["per_reference"]), sum(singles, []), atol=1e-12)
    assert "reference:mean" in s.signature and s.metric == "toy"
    one = leic(cands, refs, model=critic, reference="random", seed=3)
    assert all(any(np.isclose(v, x) for x in row) for v, row in zip(one.per_caption, singles))
    assert "reference:random" in one.signature and "seed:3" in one.signature
    with pytest.raises(ValueError, match="reference must be one of"):
        leic(cands, refs, model=critic, reference="max")


# ----------------------------------------------------------------------------- training

def _synthetic_corpus():
    """Images whose human captions share a subject and a place; systems say something generic."""
    from capkit.training.leic_data import CriticCorpus
    rng = np.random.default_rng(0)
    subjects, places = WORDS[1:5], ["grass", "beach", "street", "water", "snow"]
    verbs = ["runs", "sits", "plays", "jumps"]

    def image(i):
        s, p = subjects[i % 4], places[(i // 4) % 5]
        return [f"a {s} {verbs[rng.integers(4)]} on the {p} near a {w}"
                for w in rng.choice(WORDS[10:20], 4)]
    caps = {f"img{i}": image(i) for i in range(160)}
    systems = {f"img{i}": {"sys": "a man on the street", "other": "a big white ball"}
               for i in range(0, 160, 2)}
    train = {k: v for k, v in caps.items() if int(k[3:]) < 120}
    val = {k: v for k, v in caps.items() if int(k[3:]) >= 120}
    return CriticCorpus(train, val, systems, {"synthetic": "test"})


def test_training_lowers_the_loss_is_reproducible_and_resumes(tmp_path, monkeypatch):
    import functools

    from capkit.models import glove as glove_module
    from capkit.training import leic as training
    monkeypatch.setattr(glove_module, "load_glove", lambda path=None: toy_glove())
    schedule = training.Schedule(epochs=4, images_per_step=20, lr=2e-2, max_val_images=40)
    run = functools.partial(training.train_leic, "leic", "tiny", seed=0, schedule=schedule,
                            corpus=_synthetic_corpus(), model_config={"dropout": 0.1})
    first = run(out=tmp_path / "a.safetensors")
    losses = [h["train_loss"] for h in first.history]
    assert len(losses) == 4 and losses[-1] < 0.8 * losses[0]
    assert first.final["val_loss"] < first.history[0]["val_loss"]
    assert first.final["p_human_human"] > first.final["p_human_RC"]
    assert run(out=tmp_path / "b.safetensors").sha256 == first.sha256      # same seed, same bytes
    assert run(out=tmp_path / "c.safetensors", seed=1).sha256 != first.sha256
    real, calls = training.evaluate, []

    def interrupted(*args, **kwargs):                # dies while evaluating epoch 3
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)
    monkeypatch.setattr(training, "evaluate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(out=tmp_path / "d.safetensors", workdir=tmp_path / "work")
    monkeypatch.setattr(training, "evaluate", real)
    resumed = run(out=tmp_path / "d.safetensors", workdir=tmp_path / "work", resume=True)
    assert resumed.sha256 == first.sha256 and resumed.history == first.history
    with pytest.raises(ValueError, match="another recipe"):
        run(out=tmp_path / "e.safetensors", workdir=tmp_path / "work", resume=True, seed=2)


def test_no_da_uses_system_captions_only_and_negatives_follow_the_code():
    from capkit.training.leic_data import Negatives
    human = [[[4, 5, 6, 7, 8]] * 2, [[9, 10, 11]] * 2, [[12, 13, 14, 15]] * 2]
    systems = [[[20, 21]], [], []]
    no_da = Negatives(human, systems, 30, ("system",), 14)
    assert [no_da.usable(i) for i in range(3)] == [True, False, False]
    rng = np.random.default_rng(0)
    assert {no_da.draw(0, human[0][0], rng)[0] for _ in range(20)} == {"system"}
    da = Negatives(human, systems, 30, ("system", "RC", "WP", "RW"), 14)
    kinds = [da.draw(0, human[0][0], rng)[0] for _ in range(400)]
    assert 150 < kinds.count("system") < 250                      # half machine, half pathology
    assert {"RC", "WP", "RW"} <= set(kinds)
    for _ in range(50):
        kind, ids = da.pathological("WP", 0, human[0][0], rng)
        assert sorted(ids) == human[0][0] and ids != human[0][0]
        kind, ids = da.pathological("RW", 0, human[0][0], rng)
        changed = sum(a != b for a, b in zip(ids, human[0][0]))
        assert len(ids) == 5 and 2 <= changed <= 4 and min(ids) >= 4      # no special tokens
        kind, ids = da.pathological("RC", 0, human[0][0], rng)
        assert ids in human[1] + human[2]
    with pytest.raises(ValueError, match="negative kinds"):
        Negatives(human, systems, 30, ("GAN",), 14)
    with pytest.raises(ValueError, match="need a non-empty monte_carlo pool"):
        Negatives(human, systems, 30, ("MC",), 14)
    mc = Negatives(human, systems, 30, ("system", "MC", "RC", "WP", "RW"), 14, [[25, 26, 27]])
    kinds = [mc.draw(0, human[0][0], rng)[0] for _ in range(600)]
    assert all(150 < kinds.count(k) < 250 for k in ("system", "MC"))   # a third each, as the paper
    assert [ids for k, ids in (mc.draw(1, human[1][0], rng) for _ in range(60)) if k == "MC"][0] \
        == [25, 26, 27]


def test_no_leakage_and_two_folds(shared_data):
    from capkit.data import load
    from capkit.data.corpora import coco_id
    from capkit.training.corpus import benchmark_images, benchmark_texts, normalise
    from capkit.training.leic_data import critic_corpus
    held, texts = benchmark_images(), benchmark_texts()
    folds = [critic_corpus(seed=0, fold=f) for f in (0, 1)]
    test_split = set((shared_data / "flickr8k" / "Flickr_8k.testImages.txt").read_text().split())
    coco = [{k[5:] for k in c.train if k.startswith("coco:")} for c in folds]
    assert coco[0] and coco[1] and not coco[0] & coco[1]                  # two folds by image
    assert coco[0] == {k[5:] for k in folds[1].val if k.startswith("coco:")}
    for corpus in folds:
        images = set(corpus.train) | set(corpus.val)
        assert not set(corpus.train) & set(corpus.val)
        flickr = {k[9:] for k in images if k.startswith("flickr8k:")}
        assert flickr and not flickr & (held["flickr8k"] | test_split)
        cocos = {k[5:] for k in images if k.startswith("coco:")}
        assert not cocos & held["coco"]
        captions = [c for part in (corpus.train, corpus.val) for caps in part.values()
                    for c in caps] + [c for v in corpus.systems.values() for c in v.values()]
        assert not {normalise(c) for c in captions} & texts
        assert set(corpus.systems) <= {f"coco:{k}" for k in cocos}
        assert len({s for v in corpus.systems.values() for s in v}) == 9
    thumb = {coco_id(i) for i in load("thumb").images}
    assert thumb <= held["coco"]
    with pytest.raises(ValueError, match="fold"):
        critic_corpus(fold=2)


def test_train_command(tmp_path, monkeypatch, capsys):
    from capkit.cli import main
    from capkit.models import glove as glove_module
    from capkit.training import leic as training
    monkeypatch.setattr(glove_module, "load_glove", lambda path=None: toy_glove())
    monkeypatch.setattr(training, "critic_corpus", lambda seed=0, fold=0: _synthetic_corpus())
    out = tmp_path / "m.safetensors"
    assert main(["train", "leic", "--preset", "tiny", "--epochs", "1", "--combine", "cbp",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "p_human_RC" in text and "sha256" in text
    back = read_checkpoint(out)
    assert back.cfg.combine == "cbp" and back.meta["command"].startswith("capkit train leic")
    assert back.meta["command"].endswith("--combine cbp --epochs 1")     # reproduces this one
    assert main(["train", "leic", "--context", "image", "--out", str(tmp_path / "x.st")]) != 0
    assert "add --world" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["train", "leic", "--fold", "3"])
    assert "--fold is 0, 1 or both" in capsys.readouterr().err


def test_image_context_training_reads_the_features(monkeypatch):
    import dataclasses

    from capkit.models import glove as glove_module
    from capkit.training import leic as training
    monkeypatch.setattr(glove_module, "load_glove", lambda path=None: toy_glove())
    corpus = _synthetic_corpus()
    feats = {k: np.eye(20)[int(k[3:]) % 20] for k in list(corpus.train) + list(corpus.val)}
    corpus = dataclasses.replace(corpus, features=feats)
    schedule = training.Schedule(epochs=1, images_per_step=20, max_val_images=20)
    result = training.train_leic("leic", "tiny", schedule=schedule, corpus=corpus,
                                 model_config={"context": "both", "combine": "cbp"})
    critic = result.model
    assert critic.cfg.image_dim == 20 and critic.cfg.context == "both"
    p = critic.score_pairs(["a man runs"] * 2, ["a dog sits"] * 2, np.eye(20)[:2])
    assert p[0] != p[1]                                        # the image changes the score
    with pytest.raises(ValueError, match="features"):
        training.train_leic("leic", "tiny", schedule=schedule, corpus=_synthetic_corpus(),
                            model_config={"context": "image"})


def test_world_corpus_uses_train_scenes_true_references_and_erring_systems():
    from capkit.training.leic_world import world_corpus
    from capkit.world.captioners import SYSTEMS
    from capkit.world.check import check
    from capkit.world.splits import split_scenes
    corpus = world_corpus(seed=0, n_train=12, n_val=4)
    scenes = split_scenes("train", 12, 0)
    assert list(corpus.train) == [f"train/{i:05d}" for i in range(12)]
    assert list(corpus.val) == [f"val/{i:05d}" for i in range(4)]
    for key, scene in zip(corpus.train, scenes):
        assert len(corpus.train[key]) == 5
        assert all(check(scene, c).true for c in corpus.train[key])
        assert set(corpus.systems[key]) == set(SYSTEMS) - {"correct"}
    feats = np.stack([corpus.features[k] for k in corpus.train])
    assert feats.shape[0] == 12 and np.isfinite(feats).all()
    assert corpus.protocol["image_encoder"] == "world-clip"
    with pytest.raises(ValueError, match="training scenes"):
        world_corpus(n_train=1)


def test_metric_errors_say_what_to_do(tmp_path):
    from capkit.metrics.leic import leic
    critic = toy_critic(context="both", image_dim=4)
    with pytest.raises(ValueError, match="pass images="):
        leic(["a dog"], [["a dog runs"]], model=critic)
    critic.meta["image_encoder"] = "resnet-152"
    with pytest.raises(ValueError, match="world-clip"):
        leic(["a dog"], [["a dog runs"]], [np.zeros((8, 8, 3), np.uint8)], model=critic)
    with pytest.raises(ValueError, match="ships LEIC checkpoints"):
        from capkit.models.leic_critic import shipped_path
        shipped_path("leic_huge")


# ----------------------------------------------------------------------------- Monte Carlo negatives

def test_caption_language_model_learns_and_samples_are_seeded_words():
    import torch

    from capkit.training.caption_lm import LMSchedule, monte_carlo_pool, train_caption_lm
    captions = [[4, 5, 6, 7]] * 150 + [[8, 9]] * 50
    embeddings = np.random.default_rng(0).normal(size=(12, 6)).astype(np.float32)
    s = LMSchedule(epochs=25, batch_size=50, lr=1e-2, hidden=32)
    lm, losses = train_caption_lm(captions, 12, embeddings, max_words=6, seed=0, schedule=s)
    assert losses[-1] < 0.5 * losses[0]
    pool = monte_carlo_pool(lm, 400, 6, seed=0)
    assert pool == monte_carlo_pool(lm, 400, 6, seed=0) != monte_carlo_pool(lm, 400, 6, seed=1)
    assert all(1 <= len(c) <= 6 and min(c) >= 4 for c in pool)          # words only, no specials
    share = [pool.count(c) / len(pool) for c in ([4, 5, 6, 7], [8, 9])]
    assert share[0] > 0.6 and 0.1 < share[1] < 0.4                      # the corpus's 3 : 1
    with pytest.raises(ValueError, match="temperature must be positive"):
        lm.sample(2, 6, torch.Generator(), temperature=0)


def test_leic_mc_trains_with_monte_carlo_fakes_reproducibly(monkeypatch):
    import dataclasses

    from capkit.models import glove as glove_module
    from capkit.training import caption_lm
    from capkit.training import leic as training
    monkeypatch.setattr(glove_module, "load_glove", lambda path=None: toy_glove())
    monkeypatch.setitem(caption_lm.LM_SCHEDULES, "tiny", dataclasses.replace(
        caption_lm.LM_SCHEDULES["tiny"], pool=50, val_pool=20))
    schedule = training.Schedule(epochs=1, images_per_step=20, max_val_images=40)
    runs = [training.train_leic("leic_mc", "tiny", schedule=schedule, corpus=_synthetic_corpus(),
                                out=None) for _ in range(2)]
    meta = runs[0].model.meta
    assert meta["negatives"] == ["system", "MC", "RC", "WP", "RW"]
    assert meta["monte_carlo"]["schedule"]["pool"] == 50 and meta["monte_carlo"]["train_loss"]
    assert "p_human_MC" in runs[0].final
    assert runs[0].history == runs[1].history


def test_every_shipped_critic_loads_is_small_and_names_its_command(tmp_path, monkeypatch):
    from capkit.models import leic_critic
    for name, file in leic_critic.SHIPPED.items():
        path = leic_critic.shipped_path(name)
        assert path.stat().st_size < 20_000_000, name
        critic = leic_critic.load_leic(name)
        command = critic.meta["command"]
        assert command.startswith("capkit train leic --variant leic"), name
        assert ("--world" in command) == name.startswith("leic_world"), name
        for suffix, option in (("_cbp", "--combine cbp"), ("_concat", "--combine concat"),
                               ("_caption", "--context caption"), ("_image", "--context image")):
            assert (option in command) == name.endswith(suffix), name
    monkeypatch.setattr(leic_critic, "WEIGHTS_DIR", tmp_path)
    with pytest.raises(FileNotFoundError, match="--variant leic --combine cbp --out"):
        leic_critic.load_leic("leic_cbp")
    with pytest.raises(FileNotFoundError, match="--variant leic --world --context image --out"):
        leic_critic.load_leic("leic_world_image")


def test_world_critic_signature_names_the_world_clip_that_made_its_features(monkeypatch):
    """leic_world reads world-CLIP image features: a retrained world-CLIP changes its scores, so
    its signature carries world-CLIP's checkpoint digest, not only the encoder's name."""
    from capkit import world
    from capkit.metrics.leic import leic
    from capkit.models import world_clip
    scenes = world.make_scenes(2, seed=0)
    cands = {str(i): world.describe(s, seed=0)[0] for i, s in enumerate(scenes)}
    refs = {str(i): world.describe(s, seed=1)[:2] for i, s in enumerate(scenes)}
    images = {str(i): s.render(64) for i, s in enumerate(scenes)}
    s = leic(cands, refs, images=images, model="leic_world")
    shipped = world_clip.load_world_clip().signature
    assert shipped.startswith("world-clip@") and f"image:{shipped}" in s.signature
    monkeypatch.setattr(world_clip, "checkpoint_sha256", lambda folder: "f" * 64)
    other = leic(cands, refs, images=images, model="leic_world").signature
    assert "image:world-clip@ffffffffffff~world" in other and other != s.signature
