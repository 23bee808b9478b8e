"""The browser tests import their driver (``lab_driver.py``) from this folder; no data fixtures.

These tests are run by ``make test-browser`` only (``make test`` leaves this folder out)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
