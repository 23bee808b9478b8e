"""Where and how encoders run: the device, seeded construction, quiet loading, length batching.

Rules (the house style): the device is chosen by the caller (``device=``) or by the
environment variable ``CAPKIT_DEVICE``; it is never picked silently from CUDA availability, and the
default is the CPU in fp32. Seeding never touches the caller's global RNG: tiny models are built
inside ``torch.random.fork_rng``.

Nothing here imports torch at module import time; each function imports it when called.
"""
from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator, Sequence

import numpy as np

DEVICE_ENV = "CAPKIT_DEVICE"


class DeviceUnavailable(ValueError):
    """CUDA was asked for on a machine without it (the command line words it for --device)."""


def resolve_device(device: str | None = None) -> str:
    """``device`` if given, else ``$CAPKIT_DEVICE``, else ``"cpu"`` (never guessed from CUDA)."""
    name = device or os.environ.get(DEVICE_ENV) or "cpu"
    import torch
    try:
        torch.device(name)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"device {name!r} is not a torch device ({err}); give 'cpu', 'cuda', "
                         f"'cuda:1' or 'mps', or unset {DEVICE_ENV}") from None
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise DeviceUnavailable(f"device {name!r} was asked for but CUDA is not available here; "
                                f"use device='cpu' (or unset {DEVICE_ENV})")
    return name


@contextlib.contextmanager
def float32_kernels(device: object) -> Iterator[None]:
    """float32 arithmetic on CUDA, as on the CPU, restoring the caller's settings afterwards.

    cuDNN runs float32 convolutions in TF32 (a 10-bit mantissa) unless told not to, and a user
    may have allowed TF32 matrix products too. On an H200, world-ViLT's patch convolution in TF32
    moved ``umic_world``'s scores by up to 3e-4 from the CPU's; with TF32 off, by at most 9e-7
    (``benchmarks/gpu_check.py``, docs/learned_metrics.md). A no-op off CUDA."""
    if not str(device).startswith("cuda"):
        yield
        return
    import torch
    conv, matmul = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32 = conv
        torch.backends.cuda.matmul.allow_tf32 = matmul


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run a block with torch's RNG seeded, restoring the caller's RNG state afterwards."""
    import torch
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        yield


@contextlib.contextmanager
def quiet_loading() -> Iterator[None]:
    """Hide the progress bars and prints that weight loaders emit (restored afterwards)."""
    from transformers.utils import logging as hf_logging
    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        with contextlib.redirect_stdout(io.StringIO()):   # efficientnet_lite_pytorch prints
            yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()


def length_batches(lengths: Sequence[int], batch_size: int) -> Iterator[np.ndarray]:
    """Indices in batches of similar length (longest first), so padding stays small.

    The order inside each batch changes no result beyond float32 rounding: every text is
    encoded with its own attention mask (tests/test_models.py checks batch-size invariance to
    1e-5), but on some CPUs (AVX2 without AVX-512) a row's last bits depend on its place in the
    batch (~7e-7 on world-CLIP's text features). The same texts in the same order always give
    the same bits.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")
    for start in range(0, len(order), batch_size):
        yield order[start:start + batch_size]


def progress_bar(total: int, desc: str, progress: bool | str = "auto"):
    """An encoder's bar (``capkit.progress``: ``"auto"`` draws it where a person watches)."""
    from capkit.progress import bar
    return bar(total=total, desc=desc, progress=progress)
