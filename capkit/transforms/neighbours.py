"""Which images are alike: the neighbour ranking behind RC and HN.

Cui et al. (2018, eq. 7) draw RC captions from the "top gamma percent nearest neighbours" of an
image, with neighbours from image features (their ResNet-152). UMIC takes hard negatives from
the 3 most similar images by an image-text retrieval model (VSE++).

* ``feature_vectors``: any (N, d) image features, compared by cosine; ``image_features`` computes
  them from a folder of the images with capkit's offline ImageNet CNN (EfficientNet-Lite0, the
  spatial average of its last feature map, the analogue of the paper's pooled ResNet-152).
* ``tfidf_vectors``: the proxy capkit uses when it has no images (the COCO Karpathy test has
  12 of its 5,000): each image is the tf-idf vector of its concatenated reference captions
  (tf = raw count, idf = ln((1 + N) / (1 + df)) + 1, rows L2-normalised), compared by cosine.
  Text neighbours are *textually* similar by construction, so a reference-based metric scores
  RC captions from them higher than it would score captions of visually similar images: RC
  curves on the proxy are an upper bound on what image neighbours give (stated in the notebook).

``neighbour_order`` ranks, for every image, all other images from most to least similar (ties
by position), as an (N, N - 1) array of the smallest integer type that holds N (50 MB for the
5,000 COCO images).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

BLOCK = 512   # rows of the similarity matrix held at once


def tfidf_vectors(captions_by_image: Sequence[Sequence[Sequence[str]]]):
    """(N, V) scipy CSR matrix: tf-idf of each image's concatenated caption words, unit rows.

    ``captions_by_image[i]`` is the list of word lists of image i's captions.
    """
    from scipy.sparse import csr_matrix
    vocab: dict[str, int] = {}
    rows, cols, vals = [], [], []
    for i, captions in enumerate(captions_by_image):
        counts = Counter(w for ws in captions for w in ws)
        for w, c in counts.items():
            rows.append(i)
            cols.append(vocab.setdefault(w, len(vocab)))
            vals.append(c)
    n = len(captions_by_image)
    tf = csr_matrix((np.asarray(vals, np.float64), (rows, cols)), shape=(n, len(vocab)))
    df = np.bincount(np.asarray(cols, np.int64), minlength=len(vocab))
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
    x = tf.multiply(idf[None, :]).tocsr()
    norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
    return csr_matrix(x.multiply(1.0 / np.where(norms > 0, norms, 1.0)[:, None]))


def feature_vectors(features) -> np.ndarray:
    """(N, d) float32 image features with unit rows (cosine similarity by dot product)."""
    x = np.asarray(features, dtype=np.float32)
    if x.ndim != 2 or len(x) < 2:
        raise ValueError(f"image features must be an (N, d) array with N >= 2 images, got shape "
                         f"{x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("image features contain NaN or infinite values; recompute or drop them")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def image_features(ids: Sequence[str], folder, *, encoder=None,
                   progress: bool | str = "auto") -> np.ndarray:
    """(N, d) features of the image of each id in ``folder`` (every image must be there).

    ``encoder``: anything with ``embed_images(paths)`` (default: ``efficientnet_lite0()`` from
    ``capkit.models.image_encoders``, which needs its offline bundle).
    """
    from capkit.models.images import find_image_files
    paths = find_image_files([str(i) for i in ids], folder)
    if encoder is None:
        from capkit.models.image_encoders import efficientnet_lite0
        encoder = efficientnet_lite0()
    return np.asarray(encoder.embed_images(paths, progress=progress), dtype=np.float32)


def neighbour_order(vectors) -> np.ndarray:
    """(N, N - 1): for each row, the other rows from most to least cosine-similar."""
    n = vectors.shape[0]
    if n < 2:
        raise ValueError("neighbours need at least 2 images")
    dtype = np.min_scalar_type(n)
    order = np.empty((n, n - 1), dtype=dtype)
    for start in range(0, n, BLOCK):
        block = vectors[start:start + BLOCK] @ vectors.T
        sims = block.toarray() if hasattr(block, "toarray") else np.asarray(block)
        sims = sims.astype(np.float64)                                   # (B, N)
        rows = np.arange(start, start + len(sims))
        sims[rows - start, rows] = -np.inf                               # self sorts last
        order[start:start + len(sims)] = np.argsort(-sims, axis=1, kind="stable")[:, :n - 1]
    return order
