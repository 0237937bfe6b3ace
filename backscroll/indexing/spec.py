"""One enabled host as a pass sees it: its reader, roots and options.

Apart from the indexer because every task sent to a reader process names it:
unpickling a task imports this module, and a reader process that imported the
indexer would import the store with it (~25 ms in each process, before its first
file; bench/RESULTS.md, Cold index, fifteenth pass)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from backscroll.model import ReaderOptions
    from backscroll.readers.base import Reader


@dataclass(frozen=True)
class HostSpec:
    """An enabled host: its reader, the roots it is looked for under (its own
    defaults or the configuration's), the options its reads get, and the paths
    the configuration leaves out."""

    reader: Reader
    roots: tuple[Path, ...]
    options: ReaderOptions
    exclude: tuple[str, ...] = ()

    @property
    def host(self) -> str:
        return self.reader.host
