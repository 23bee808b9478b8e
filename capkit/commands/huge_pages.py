"""Large memory pages for the heap of a short ``capkit score`` process (Linux, glibc).

A ``capkit score`` of one COCO system (5,000 captions, 25,010 references) touches ~120 MB of new
memory in under a second: token strings, then n-gram tables built and joined with numpy. The
kernel hands it over one 4 KiB page at a time, ~28,000 page faults on a repeated run and ~40,000
on a first one, which cost ~0.05 s of a ~0.4 s run on the 2-core machine of docs/speed.md.
``use_huge_pages`` asks glibc's malloc to keep arrays up to 32 MiB in its heap and not to give
freed memory back (so the process reuses it), grows the heap once by 256 MiB of address space
and marks that range for transparent huge pages (``madvise(MADV_HUGEPAGE)``): the same memory
then comes in 2 MiB pages, ~7,000 faults in all. This is what glibc's own tunable
``GLIBC_TUNABLES=glibc.malloc.hugetlb=1`` does, which only works when set before the process
starts. Nothing else changes: the same arrays, the same numbers.

Only the command line calls it, for ``capkit score`` (a library user's process is left alone),
and only on Linux with glibc and transparent huge pages set to ``always`` or ``madvise``; it
does nothing when the user set glibc's malloc options (``MALLOC_*_`` or ``GLIBC_TUNABLES``)
or ``CAPKIT_HUGE_PAGES=0`` (or off, false, no). Address space is reserved, not memory: pages
count once touched.
"""
from __future__ import annotations

import os
import sys

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3     # glibc's mallopt parameters
MADV_HUGEPAGE = 14
HEAP_ARRAYS = 32 << 20     # arrays up to this size come from the heap (glibc's largest setting)
HEAP_GROWTH = 256 << 20    # address space the heap grows by at once, marked for huge pages
HUGE_PAGE = 2 << 20
_THP_SETTING = "/sys/kernel/mm/transparent_hugepage/enabled"


def wanted(environ=os.environ) -> bool:
    """Whether this process should set up its heap: Linux, the kernel's transparent huge pages
    on (``always`` or ``madvise``), no malloc options of the user's, not turned off."""
    off = environ.get("CAPKIT_HUGE_PAGES", "").strip().lower() in {"0", "off", "false", "no"}
    if off or not sys.platform.startswith("linux"):
        return False
    if "glibc.malloc" in environ.get("GLIBC_TUNABLES", "") or any(
            name.startswith("MALLOC_") and name.endswith("_") for name in environ):
        return False
    try:
        with open(_THP_SETTING) as f:
            setting = f.read()
    except OSError:
        return False
    return "[always]" in setting or "[madvise]" in setting


def use_huge_pages() -> bool:
    """Set up the heap as the module docstring says; True if it was, False if not (then the
    process runs as it would have, only without the large pages)."""
    if not wanted():
        return False
    import ctypes
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        mallopt, malloc, free, sbrk, madvise = (libc.mallopt, libc.malloc, libc.free,
                                                libc.sbrk, libc.madvise)
        libc.gnu_get_libc_version      # (glibc's: another C library's mallopt means otherwise)
    except (OSError, AttributeError):
        return False
    malloc.restype = sbrk.restype = ctypes.c_void_p
    free.argtypes = [ctypes.c_void_p]
    sbrk.argtypes = [ctypes.c_ssize_t]
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    if not (mallopt(M_MMAP_THRESHOLD, HEAP_ARRAYS) and mallopt(M_TRIM_THRESHOLD, 2 * HEAP_GROWTH)
            and mallopt(M_TOP_PAD, HEAP_GROWTH)):
        return False
    block = malloc(1 << 20)            # more than the heap has free: it grows by HEAP_GROWTH
    if not block:
        return False
    free(block)
    start = (block + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1)
    end = (sbrk(0) or 0) & ~(HUGE_PAGE - 1)
    return end - start >= HUGE_PAGE and madvise(start, end - start, MADV_HUGEPAGE) == 0
