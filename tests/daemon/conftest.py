"""The real-daemon fixture lives in tests/conftest.py; its type is re-exported here."""

from tests.conftest import DaemonFactory

__all__ = ["DaemonFactory"]
