"""Images in: file lookup, opening, checksums, and model preprocessing with PIL + numpy only.

torchvision does not import beside the pinned torch here, so each model's preprocessing is spelled
out as an ``ImagePreprocess`` (resize rule, crop, pixel scale, mean, std) and applied with PIL:

* CLIP (as the openai ``clip`` package, the CLIPScore paper's code): shorter side -> 224 bicubic,
  centre crop 224 (torchvision's rounding), RGB, x / 255, CLIP mean / std.
* EfficientNet-Lite0: shorter side -> 256, centre crop 224, (x - 127) / 128.
* BLIP: 384 x 384 bicubic, CLIP mean / std.  ViLT: shorter side 384 (longer <= 640), both sides
  rounded down to a multiple of 32, mean = std = 0.5, padded per batch with a pixel mask.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp")


@dataclass(frozen=True)
class ImagePreprocess:
    """How one model turns a picture into a (3, H, W) float32 array."""
    size: int                                  # shorter side after resizing (or both, "square")
    crop: int | None = None                    # centre crop (square) after resizing
    mean: tuple[float, float, float] = CLIP_MEAN
    std: tuple[float, float, float] = CLIP_STD
    scale: float = 1 / 255                     # applied to 0..255 pixels before mean / std
    resize: str = "shortest"                   # shortest | square | vilt
    max_size: int = 640                        # vilt: longest side bound
    divisor: int = 32                          # vilt: sides rounded down to a multiple

    @property
    def signature(self) -> str:
        crop = f"-crop{self.crop}" if self.crop else ""
        return f"{self.resize}{self.size}{crop}"

    def __call__(self, image) -> np.ndarray:
        img = open_image(image)
        img = img.resize(self._new_size(*img.size), _bicubic())
        if self.crop:
            w, h = img.size
            top, left = int(round((h - self.crop) / 2.0)), int(round((w - self.crop) / 2.0))
            img = img.crop((left, top, left + self.crop, top + self.crop))
        x = np.asarray(img, dtype=np.float32) * np.float32(self.scale)       # (H, W, 3)
        x = (x - np.asarray(self.mean, np.float32)) / np.asarray(self.std, np.float32)
        return np.ascontiguousarray(x.transpose(2, 0, 1))                    # (3, H, W)

    def _new_size(self, w: int, h: int) -> tuple[int, int]:
        if self.resize == "square":
            return self.size, self.size
        if self.resize == "shortest":       # torchvision.transforms.Resize(int)
            short, long = (w, h) if w <= h else (h, w)
            new_long = int(self.size * long / short)
            return (self.size, new_long) if w <= h else (new_long, self.size)
        if self.resize == "vilt":           # transformers' ViltImageProcessor
            scale = self.size / min(h, w)
            nh, nw = (self.size, scale * w) if h < w else (scale * h, self.size)
            if max(nh, nw) > self.max_size:
                shrink = self.max_size / max(nh, nw)
                nh, nw = nh * shrink, nw * shrink
            nh, nw = int(nh + 0.5) // self.divisor * self.divisor, \
                int(nw + 0.5) // self.divisor * self.divisor
            return nw, nh
        raise ValueError(f"unknown resize rule {self.resize!r}; use shortest, square or vilt")

    def batch(self, images: Sequence) -> tuple[np.ndarray, np.ndarray]:
        """(B, 3, H, W) pixels and a (B, H, W) mask of real pixels (zero-padded to the largest)."""
        arrays = [self(im) for im in images]
        h = max(a.shape[1] for a in arrays)
        w = max(a.shape[2] for a in arrays)
        pixels = np.zeros((len(arrays), 3, h, w), np.float32)
        mask = np.zeros((len(arrays), h, w), np.int64)
        for i, a in enumerate(arrays):
            pixels[i, :, :a.shape[1], :a.shape[2]] = a
            mask[i, :a.shape[1], :a.shape[2]] = 1
        return pixels, mask


def _bicubic():
    from PIL import Image
    return Image.Resampling.BICUBIC


_ACCEPTED = "a file path, a PIL image or an (H, W, 3) uint8 numpy array"
_READABLE = "an image file PIL can read (JPEG, PNG, WebP, BMP, ...)"


def open_image(image):
    """A PIL RGB image from a path (``str`` or ``os.PathLike``), a PIL image or an (H, W, 3)
    uint8 array.

    Nothing else is guessed at, since a wrong guess would be scored without a word: a float
    array (pixels in [0, 1], or 0..255 as floats) or another dtype is a ValueError saying how
    to convert it; a torch tensor or any other object is a TypeError naming what is accepted; a
    file PIL cannot read (not an image, truncated) is a ValueError naming the file.
    """
    from PIL import Image, UnidentifiedImageError
    if isinstance(image, Image.Image):
        return image.convert("RGB")
    if isinstance(image, np.ndarray):
        return Image.fromarray(uint8_pixels(image), "RGB")
    if not isinstance(image, (str, os.PathLike)):
        raise TypeError(f"an image must be {_ACCEPTED}; got {_kind(image)}{_tensor_hint(image)}")
    path = _existing(image)
    try:
        with Image.open(path) as img:
            return img.convert("RGB")
    except PermissionError:
        raise
    except (OSError, ValueError, SyntaxError) as err:   # not an image, truncated, damaged
        why = "not a format PIL recognises" if isinstance(err, UnidentifiedImageError) else err
        raise ValueError(f"image file {str(path)!r} cannot be read as an image ({why}); give "
                         f"{_READABLE}, or pass the picture as a PIL image or an (H, W, 3) uint8 "
                         "array") from None


def _kind(image) -> str:
    kind = f"{type(image).__module__}.{type(image).__qualname__}".removeprefix("builtins.")
    shape, dtype = getattr(image, "shape", None), getattr(image, "dtype", None)
    return kind + (f" of shape {tuple(shape)} and dtype {dtype}" if shape is not None else "")


def _tensor_hint(image) -> str:
    if type(image).__module__.split(".")[0] != "torch":
        return ""
    return ("; convert an (H, W, 3) uint8 tensor with t.cpu().numpy(), a (3, H, W) one with "
            "t.permute(1, 2, 0).cpu().numpy(), first (t * 255).round().to(torch.uint8) if its "
            "values are floats in [0, 1]")


def uint8_pixels(array: np.ndarray) -> np.ndarray:
    """``array`` itself if it is an (H, W, 3) uint8 array; else a ValueError saying what to do."""
    if array.ndim != 3 or array.shape[2] != 3:
        hint = ""
        if array.ndim == 3 and array.shape[0] == 3:
            hint = "; it looks channels-first: pass array.transpose(1, 2, 0)"
        elif array.ndim == 3 and array.shape[2] == 4:
            hint = "; drop the alpha channel with array[..., :3]"
        elif array.ndim == 2:
            hint = "; repeat a grey image over three channels: np.stack([array] * 3, axis=-1)"
        raise ValueError(f"an image array must have shape (H, W, 3), got {array.shape}{hint}")
    if array.dtype == np.uint8:
        return array
    if np.issubdtype(array.dtype, np.floating):
        low, high = (float(array.min()), float(array.max())) if array.size else (0.0, 0.0)
        raise ValueError(
            f"an image array must be uint8 (0..255), got {array.dtype} with values in "
            f"[{low:.3g}, {high:.3g}]; convert pixels in [0, 1] with "
            "(img * 255).round().astype(np.uint8), pixels in 0..255 with "
            "img.round().astype(np.uint8)")
    raise ValueError(f"an image array must be uint8 (0..255), got {array.dtype}; convert it "
                     "with img.astype(np.uint8) once its values lie in 0..255")


def _existing(image) -> Path:
    path = Path(image).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"image file {str(path)!r} does not exist; give an existing "
                                "file, a PIL image or an (H, W, 3) uint8 array")
    return path


def image_checksum(image) -> str:
    """sha256 of a file's bytes, or of an in-memory image's pixels (the feature-cache key)."""
    from PIL import Image
    if isinstance(image, (str, Path)):
        return hashlib.sha256(_existing(image).read_bytes()).hexdigest()
    img = image if isinstance(image, Image.Image) else open_image(image)
    head = f"{img.mode}:{img.size}:".encode()
    return hashlib.sha256(head + img.tobytes()).hexdigest()


def find_image_files(ids: Sequence[str], folder: str | Path) -> list[Path]:
    """The image file of each id in ``folder``.

    Looked up as ``<id>``, ``<id>.jpg`` (and .jpeg/.png/.webp/.bmp), and for numeric COCO ids
    the names COCO's own archives use: ``COCO_val2014_<12 digits>.jpg``,
    ``COCO_train2014_<12 digits>.jpg`` (COCO 2014) and ``<12 digits>.jpg`` (COCO 2017); capkit's
    COCO data keys images by ``str(image id)``.
    """
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(f"image folder {str(folder)!r} does not exist; give the folder "
                                "that holds the images (files named <id>.jpg)")
    out, missing = [], []
    for key in ids:
        names = [key] + [key + s for s in IMAGE_SUFFIXES]
        if key.isdigit():
            names += [f"COCO_{split}2014_{int(key):012d}.jpg" for split in ("val", "train")]
            names.append(f"{int(key):012d}.jpg")
        found = next((folder / n for n in names if (folder / n).is_file()), None)
        (out if found is not None else missing).append(found or key)
    if missing:
        raise FileNotFoundError(
            f"{len(missing)} of {len(ids)} ids have no image in {folder} (first: {missing[:5]}); "
            "name the files <id>.jpg (COCO ids may keep COCO's names: COCO_train2014_ or "
            "COCO_val2014_<12 digits>.jpg, or <12 digits>.jpg), or score "
            "only the ids whose images you have")
    return out


def align_images(candidates, images) -> list:
    """One image (path, PIL image or (H, W, 3) uint8 array) per candidate, in the candidates'
    order.

    ``candidates`` keyed by id take ``images`` as ``{id: image}`` or a folder; a list of
    candidates takes a list of images of the same length.
    """
    if images is None:
        raise ValueError("this metric scores a caption against its image: pass images= (a list "
                         "aligned with the candidates, {id: image}, or a folder of <id>.jpg)")
    if isinstance(candidates, Mapping):
        ids = [str(i) for i in candidates]
        if isinstance(images, (str, Path)):
            return find_image_files(ids, images)
        if not isinstance(images, Mapping):
            raise TypeError("candidates are keyed by id, so images must be {id: image} or a "
                            "folder of <id>.jpg files")
        keyed = {str(k): v for k, v in images.items()}
        missing = [i for i in ids if i not in keyed]
        if missing:
            raise ValueError(f"{len(missing)} candidate id(s) have no image (first: "
                             f"{missing[:5]}); give an image for every candidate")
        return [keyed[i] for i in ids]
    if isinstance(images, (str, Path, Mapping)) or not isinstance(images, Sequence):
        raise TypeError("candidates are a list, so images must be a list aligned with them (key "
                        "both by id to use {id: image} or a folder)")
    if len(images) != len(candidates):
        raise ValueError(f"got {len(candidates)} candidates but {len(images)} images; they must "
                         "be aligned one to one")
    return list(images)
