"""Private copies of a check's inputs, and whether a function changed the copy it was given.

:func:`capkit.course.check` hands the student's function (and the library's) copies of each
case's arguments, never the notebook's own objects: a function that sorts, appends to or edits
its argument in place must not change the expected value, the input the check's message shows,
or the data that later cells of the notebook read (Exercise 11.2's input is ``cf_all.images``).

What is copied: lists, tuples, dicts (``Counter``, ``defaultdict``...), sets, bytearrays, numpy
arrays, torch tensors, PIL images and dataclass instances (frozen ones too: their fields can still
be mutable, e.g. ``DocumentFrequencies.counts``), recursively. Not handled: the elements of an
object-dtype array are shared, and a container that holds itself is not supported (no exercise
passes one). What is shared: immutable values
(numbers, strings, numpy scalars, frozensets), read-only numpy arrays (a ``Scores``'s: writing to
one raises), and every other object (a model, an encoder, a function): copying a model is slow
and a check never needs it, so a change to one goes unseen.

Cost: one :class:`Copies` serves a whole check, so an object that several cases share (exercise
1.3's 300,000-entry table of document frequencies) is copied once, not once per case; a container
of immutable values is copied with one C-level ``copy()``. Copying that table takes ~10 ms where
``copy.deepcopy`` takes ~0.5 s; checking that it is unchanged after a case takes ~3 ms.
"""
from __future__ import annotations

import copy
import dataclasses
import sys
from typing import Any

import numpy as np

__all__ = ["Copies"]

# values that cannot be changed in place: shared between the original and its copy
ATOMS = frozenset({type(None), bool, int, float, complex, str, bytes, range, frozenset,
                   type(Ellipsis), type(NotImplemented)})


def _is_atom(value: Any) -> bool:
    return type(value) in ATOMS or isinstance(value, np.generic)


def _all_atoms(values) -> bool:
    """Whether every item is an atom: one pass in C (``map``), then a few type lookups."""
    return all(t in ATOMS or issubclass(t, np.generic) for t in set(map(type, values)))


def _tensor_type():
    torch = sys.modules.get("torch")          # never import torch here: only if the case has one
    return torch.Tensor if torch is not None else None


def _image_type():
    image = sys.modules.get("PIL.Image")
    return image.Image if image is not None else None


class Copies:
    """Copies of the objects of one check's cases, one copy per original (aliases kept).

    ``copy(value)`` returns the private copy of ``value`` (the same copy every time it is asked
    for the same object); ``unchanged(value)`` says whether that copy still equals ``value``.
    The originals must stay alive and untouched while this object is in use (the check holds
    them in its list of cases and gives them to no one).
    """

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Any, Any, bool]] = {}    # id -> (original, copy, all atoms)

    def copy(self, value: Any) -> Any:
        if _is_atom(value):
            return value
        hit = self._memo.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        mine, atoms = self._make(value)
        self._memo[id(value)] = (value, mine, atoms)
        return mine

    def _make(self, value: Any) -> tuple[Any, bool]:
        """(the copy, whether ``value``'s items are all atoms, so ``==`` compares them)."""
        if isinstance(value, np.ndarray):                     # a read-only one is shared
            return (value.copy() if value.flags.writeable else value), False
        if isinstance(value, dict):
            mine = value.copy() if type(value) is dict else copy.copy(value)   # keeps the type
            if _all_atoms(value.values()):
                return mine, True
            for key, item in value.items():      # dict's own method: a subclass may refuse
                dict.__setitem__(mine, key, self.copy(item))    # changes (scores.ReadOnlyDict)
            return mine, False
        if isinstance(value, list):
            atoms = _all_atoms(value)
            mine = value.copy() if type(value) is list else copy.copy(value)
            if not atoms:
                list.__setitem__(mine, slice(None), [self.copy(item) for item in value])
            return mine, atoms
        if isinstance(value, tuple):
            items = [self.copy(item) for item in value]
            if all(a is b for a, b in zip(items, value)):
                return value, False                           # nothing inside can change
            return _tuple_like(value, items), False
        if isinstance(value, (set, bytearray)):
            return copy.copy(value), True                     # a set's items are hashable
        tensor, image = _tensor_type(), _image_type()
        if tensor is not None and isinstance(value, tensor):
            return value.detach().clone().requires_grad_(value.requires_grad), False
        if image is not None and isinstance(value, image):
            return value.copy(), False
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self._dataclass(value), False
        return value, False                                   # a model, a function...: shared

    def _dataclass(self, value: Any) -> Any:
        fields = [f.name for f in dataclasses.fields(value)]
        items = {name: self.copy(getattr(value, name)) for name in fields}
        if type(value).__dataclass_params__.frozen and \
                all(items[name] is getattr(value, name) for name in fields):
            return value                       # immutable all through (a plain one is not)
        mine = copy.copy(value)                               # no __init__: no validation rerun
        for name, item in items.items():
            object.__setattr__(mine, name, item)              # frozen dataclasses too
        return mine

    def unchanged(self, value: Any) -> bool:
        """Whether the copy of ``value`` still equals it (True for what was shared, not copied)."""
        if _is_atom(value):
            return True
        hit = self._memo.get(id(value))
        if hit is None or hit[0] is not value:
            return True                                       # never copied: nobody had it
        _, mine, atoms = hit
        return mine is value or _equal(mine, value, atoms, self)

    def first_changed(self, cases: list[tuple]) -> tuple[int, int] | None:
        """(case index, 1-based argument) of the first argument whose copy changed, or None.

        An object that several cases hold is compared once: a case's arguments share the copy.
        """
        seen: set[int] = set()
        for i, case in enumerate(cases):
            for k, value in enumerate(case, start=1):
                if id(value) in seen:
                    continue
                seen.add(id(value))
                if not self.unchanged(value):
                    return i, k
        return None


def _tuple_like(value: tuple, items: list) -> tuple:
    """A tuple of ``items`` of ``value``'s own type (a namedtuple, or a subclass built from an
    iterable); ``value`` itself, shared, for a subclass that cannot be built that way."""
    if hasattr(value, "_make"):
        return type(value)._make(items)
    if type(value) is tuple:
        return tuple(items)
    try:
        mine = type(value)(items)
    except Exception:                    # a constructor of its own: not copied, not compared
        return value
    return mine if type(mine) is type(value) and len(mine) == len(value) else value


def _equal(mine: Any, value: Any, atoms: bool, copies: Copies) -> bool:
    image = _image_type()
    if image is not None and isinstance(value, image):     # a file's image copies to an Image
        return isinstance(mine, image) and (mine.mode, mine.size) == (value.mode, value.size) \
            and mine.tobytes() == value.tobytes()
    tensor = _tensor_type()
    if tensor is not None and isinstance(value, tensor):    # a Parameter copies to a Tensor
        if not isinstance(mine, tensor) or (mine.shape, mine.dtype) != (value.shape, value.dtype):
            return False
        same = mine == value
        if value.is_floating_point() or value.is_complex():
            same = same | (mine.isnan() & value.isnan())
        return bool(same.all())
    if type(mine) is not type(value):
        return False
    if isinstance(value, np.ndarray):
        return (mine.shape, mine.dtype) == (value.shape, value.dtype) and \
            _arrays_equal(mine, value)
    if isinstance(value, dict):
        if list(mine) != list(value):                         # same keys, same order
            return False
        if atoms:                                             # identical objects: a fast ==
            return list(mine.values()) == list(value.values())
        return all(_same_item(mine[k], item, copies) for k, item in value.items())
    if isinstance(value, (list, tuple)):
        if len(mine) != len(value):
            return False
        if atoms:
            return mine == value
        return all(_same_item(a, b, copies) for a, b in zip(mine, value))
    if isinstance(value, (set, bytearray)):
        return mine == value
    if dataclasses.is_dataclass(value):
        return all(_same_item(getattr(mine, f.name), getattr(value, f.name), copies)
                   for f in dataclasses.fields(value))
    return True


def _same_item(mine: Any, value: Any, copies: Copies) -> bool:
    """An item of a copied container: its own copy is in the memo (or it was shared)."""
    if mine is value:
        return copies.unchanged(value)        # shared: unchanged unless it is a copied object
    hit = copies._memo.get(id(value))
    if hit is None or hit[1] is not mine:     # the container now holds some other object
        return False
    return copies.unchanged(value)


def _arrays_equal(a: np.ndarray, b: np.ndarray) -> bool:
    try:
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    except (TypeError, ValueError):           # object arrays of things without a plain ==
        return all(x is y for x, y in zip(a.ravel(), b.ravel()))
