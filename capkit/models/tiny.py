"""Tiny, randomly initialised models of each family, for tests and notebook small mode.

Each builder makes a real ``transformers`` architecture (BERT, RoBERTa, CLIP, BLIP ITM, ViLT) from a
config a few thousand times smaller than the published one, with the seed given, on the CPU, in
well under a second, plus a matching tokenizer built in memory (no download):

* WordPiece (BERT, BLIP, ViLT): special tokens, ~100 frequent caption words, single characters
  and their ``##`` continuations, so any English caption tokenises;
* byte-level BPE (CLIP with ``</w>`` word ends, RoBERTa with ``Ġ`` word starts): the 256 byte
  symbols plus merges that spell the same caption words.

These models are UNTRAINED: their scores are deterministic and exercise every code path, but
they measure nothing. ``capkit.models.presets`` labels them so in every signature.
"""
from __future__ import annotations

from capkit.models.runtime import seeded

WORDS = """a an the of in on with and is are at to his her their its while for near by from
man men woman women boy girl child children people person player dog dogs cat cats bird horse
sitting standing walking running playing holding wearing looking riding jumping eating lying
white black red blue green yellow brown orange grey large small young two three group front
water street grass field beach snow table ball food plate bike car bus train sign room shirt
hat top next down up over it that this there one some other photo depicts""".split()
CHARS = "abcdefghijklmnopqrstuvwxyz0123456789.,!?'\"-:;()&/"
HIDDEN, LAYERS, HEADS, FFN = 32, 3, 2, 64     # text towers
IMAGE_SIZE, PATCH = 32, 8                     # vision towers: 16 patches
BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def wordpiece_tokenizer(max_length: int = 64):
    """A BERT WordPiece tokenizer over WORDS + characters (lower-cased)."""
    from transformers import BertTokenizer
    pieces = BERT_SPECIALS + WORDS + list(CHARS) + [f"##{c}" for c in CHARS]
    vocab = {p: i for i, p in enumerate(dict.fromkeys(pieces))}
    return BertTokenizer(vocab=vocab, model_max_length=max_length)


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map (used by CLIP and RoBERTa)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = list(keep), 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(keep, map(chr, chars)))


def _bpe(specials: list[str], start: str = "", end: str = "") -> tuple[dict, list]:
    """Vocabulary and merges spelling WORDS out of byte symbols (``start``/``end`` markers)."""
    symbols = list(_bytes_to_unicode().values())
    vocab = symbols + ([s + end for s in symbols] if end else [])
    merges = []
    for word in WORDS:
        parts = ([start] if start else []) + list(word)
        parts[-1] += end
        while len(parts) > 1:
            merges.append((parts[0], parts[1]))
            parts = [parts[0] + parts[1]] + parts[2:]
            vocab.append(parts[0])
    vocab = list(dict.fromkeys(specials + vocab))      # specials first, as RoBERTa's <pad> = 1
    return {p: i for i, p in enumerate(vocab)}, list(dict.fromkeys(merges))


def clip_tokenizer(max_length: int = 77):
    from transformers import CLIPTokenizer
    vocab, merges = _bpe(["<|startoftext|>", "<|endoftext|>"], end="</w>")
    return CLIPTokenizer(vocab=vocab, merges=merges, model_max_length=max_length)


def roberta_tokenizer(max_length: int = 64):
    from transformers import RobertaTokenizer
    vocab, merges = _bpe(["<s>", "<pad>", "</s>", "<unk>", "<mask>"], start="Ġ")
    return RobertaTokenizer(vocab=vocab, merges=merges, model_max_length=max_length,
                            add_prefix_space=True)


def _text_config(vocab_size: int, max_positions: int, **extra) -> dict:
    return dict(vocab_size=vocab_size, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                num_attention_heads=HEADS, intermediate_size=FFN,
                max_position_embeddings=max_positions, **extra)


def _vision_config(**extra) -> dict:
    return dict(hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=HEADS,
                intermediate_size=FFN, image_size=IMAGE_SIZE, patch_size=PATCH, **extra)


def tiny_bert(seed: int = 0):
    """(BertModel, tokenizer): 3 layers, 32-d, untrained."""
    from transformers import BertConfig, BertModel
    tok = wordpiece_tokenizer()
    config = BertConfig(**_text_config(len(tok), 64, pad_token_id=tok.pad_token_id))
    with seeded(seed):
        return BertModel(config, add_pooling_layer=False), tok


def tiny_roberta(seed: int = 0):
    """(RobertaModel, tokenizer): 3 layers, 32-d, byte-level BPE, untrained."""
    from transformers import RobertaConfig, RobertaModel
    tok = roberta_tokenizer()
    config = RobertaConfig(**_text_config(len(tok), 66, pad_token_id=tok.pad_token_id,
                                          bos_token_id=tok.bos_token_id,
                                          eos_token_id=tok.eos_token_id))
    with seeded(seed):
        return RobertaModel(config, add_pooling_layer=False), tok


def tiny_clip(seed: int = 0):
    """(CLIPModel, tokenizer): 77-token context like CLIP, 32 x 32 images, untrained."""
    from transformers import CLIPConfig, CLIPModel
    tok = clip_tokenizer()
    text = _text_config(len(tok), 77, bos_token_id=tok.bos_token_id,
                        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    config = CLIPConfig(text_config=text, vision_config=_vision_config(), projection_dim=16)
    with seeded(seed):
        return CLIPModel(config), tok


def tiny_blip_itm(seed: int = 0):
    """(BlipForImageTextRetrieval, tokenizer): the ITM head of BLIP, untrained."""
    from transformers import BlipConfig, BlipForImageTextRetrieval
    tok = wordpiece_tokenizer(35)
    text = _text_config(len(tok), 64, encoder_hidden_size=HIDDEN, pad_token_id=tok.pad_token_id,
                        bos_token_id=tok.cls_token_id, sep_token_id=tok.sep_token_id)
    config = BlipConfig(text_config=text, vision_config=_vision_config(), projection_dim=16,
                        image_text_hidden_size=16)
    with seeded(seed):
        return BlipForImageTextRetrieval(config), tok


def tiny_vilt(seed: int = 0):
    """(ViltForImageAndTextRetrieval, tokenizer): ViLT's image-text score head, untrained."""
    from transformers import ViltConfig, ViltForImageAndTextRetrieval
    tok = wordpiece_tokenizer(40)
    config = ViltConfig(**_text_config(len(tok), 40), image_size=IMAGE_SIZE, patch_size=PATCH,
                        max_image_length=-1, num_images=-1)
    with seeded(seed):
        return ViltForImageAndTextRetrieval(config), tok
