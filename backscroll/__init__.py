"""backscroll: keep every coding-agent conversation turn findable."""

__version__ = "0.1.0"
