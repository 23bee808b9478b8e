"""Stored notebook figures as 256-colour palette PNGs (``make notebooks`` runs this after
executing), so a notebook with a dozen figures stays under ~300 kB at a readable size and dpi.

matplotlib's figures are flat colours and antialiased edges: a palette of 256 colours keeps them
visually the same at a third of the bytes. nbval does not compare image outputs, so the stored
text outputs it checks are untouched. Every ``image/png`` in a notebook is converted, including
those in saved widget state; an image is replaced only when the palette version is smaller.
"""
from __future__ import annotations

import base64
import io
import json
from pathlib import Path

__all__ = ["palette_png", "compress_figures"]


def palette_png(data: bytes, min_saving: float = 0.2) -> bytes | None:
    """``data`` (a PNG) as a 256-colour palette PNG, or None when that saves < ``min_saving``."""
    from PIL import Image
    img = Image.open(io.BytesIO(data))
    if img.mode == "RGBA":
        small = img.quantize(256, method=Image.Quantize.FASTOCTREE)
    elif img.mode == "RGB":
        small = img.quantize(256)
    else:
        return None                                   # already a palette or grey image
    out = io.BytesIO()
    small.save(out, "PNG", optimize=True)
    new = out.getvalue()
    return new if len(new) < (1 - min_saving) * len(data) else None


def _walk(node) -> int:
    done = 0
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "image/png" and isinstance(value, str):
                new = palette_png(base64.b64decode(value))
                if new is not None:
                    node[key] = base64.b64encode(new).decode() + "\n"
                    done += 1
            else:
                done += _walk(value)
    elif isinstance(node, list):
        done += sum(_walk(v) for v in node)
    return done


def compress_figures(path: str | Path) -> int:
    """Rewrite the notebook at ``path`` with palette PNGs; returns how many images changed."""
    path = Path(path)
    nb = json.loads(path.read_text(encoding="utf-8"))
    done = _walk(nb)
    if done:                    # atomic: an interrupted run leaves the notebook as it was
        from capkit.cache_files import write_output
        write_output(path, json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return done


if __name__ == "__main__":
    import sys
    for name in sys.argv[1:]:
        print(f"{name}: {compress_figures(name)} figures as palette PNGs")
