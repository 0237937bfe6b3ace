"""Joins readers and the store: decides what changed, reads it, writes it.

Used by the daemon's writer thread and by ``backscroll index`` directly. It
imports neither watchdog nor APScheduler. Decisions are stat-only until a file
has changed; an append-only file is then read from its saved position unless it
shrank, changed inode, or its first bytes changed, in which case it is re-read
whole and its old turns replaced.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import logging
import os
import stat
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from backscroll.config import Config
from backscroll.digests import blake2b
from backscroll.errors import SourceBusy
from backscroll.files import read_range
from backscroll.indexing import parallel
from backscroll.indexing.clean import Redactor, clean, redact_state, scrub
from backscroll.indexing.parallel import Outcome
from backscroll.indexing.prefork import default_workers
from backscroll.indexing.spec import HostSpec
from backscroll.model import UNREAD_SUBAGENT, Cursor, ReaderOptions, ReadResult
from backscroll.paths import UNREACHABLE_FIX, is_under
from backscroll.readers import READERS
from backscroll.readers.base import HostEnv, is_settled
from backscroll.store import reredact
from backscroll.store.writer import FileRow, FileStat, IndexWriter, Update

log = logging.getLogger("backscroll.indexer")

HEAD_BYTES = 1024
TAIL_BYTES = 256
#: A transaction holds at most this many files / bytes of source on a cold index.
BATCH_FILES = 400
BATCH_BYTES = 64 * 1024 * 1024
PARALLEL_BATCH_BYTES = 16 * 1024 * 1024
#: A pass that reads at least this many bytes reads them in worker processes.
PARALLEL_MIN_BYTES = 16 * 1024 * 1024
#: A pass over at least this many changed files of an empty index is a bulk load.
BULK_MIN_FILES = 32
#: A bulk load read in workers builds its secondary indexes when at most this
#: part of its bytes is left to write: the workers read the rest meanwhile, so
#: the sort no longer runs alone on one core after the last file. The rows
#: written after that update the indexes as they go in (bench/RESULTS.md).
EARLY_INDEX_PART = 8


def _log(level: int, msg: str, **fields: object) -> None:
    log.log(level, msg, extra=fields)


@dataclass(frozen=True)
class Item:
    """One file to index and the host that owns it."""

    spec: HostSpec
    path: Path
    #: A sidecar of the transcript changed (workspace.yaml, history_item.json):
    #: its stat says nothing, so read it again (whole, unless the reader's
    #: ``sidecars_reread_whole`` is False).
    forced: bool = False


@dataclass
class Summary:
    files_seen: int = 0
    files_changed: int = 0
    turns_added: int = 0
    turns_deleted: int = 0
    bytes_read: int = 0
    problems: int = 0
    errors: int = 0
    seconds: float = 0.0
    last_error: str | None = None
    #: Append-only files whose last line has no newline yet and whose writer was
    #: active just now: worth a second look once they have been quiet a while.
    unsettled: list[Path] = field(default_factory=list)

    def add(self, other: Summary) -> None:
        for f in dataclasses.fields(self):
            if f.name in ("seconds", "last_error"):
                continue
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        self.last_error = other.last_error or self.last_error


Progress = Callable[[int, int, int, int], None]


def build_hosts(config: Config, env: HostEnv | None = None) -> list[HostSpec]:
    """The enabled hosts with their roots, from config and the hosts' own defaults."""
    env = env or HostEnv.current()
    specs: list[HostSpec] = []
    for reader in READERS:
        hc = config.host(reader.host)
        if not hc.enabled:
            continue
        roots = [Path(os.path.expanduser(r)) for r in hc.roots] or reader.roots(env)
        roots += [Path(os.path.expanduser(r)) for r in hc.extra_roots]
        specs.append(
            HostSpec(
                reader,
                tuple(dict.fromkeys(roots)),
                ReaderOptions(
                    include_subagents=hc.include_subagents,
                    max_line_bytes=config.index.max_line_bytes,
                    max_document_bytes=config.index.max_document_bytes,
                    stream_document_bytes=config.index.stream_document_bytes,
                ),
                exclude=tuple(os.path.expanduser(p) for p in (*hc.exclude, *config.exclude.paths)),
            )
        )
    return specs


def file_stat(path: Path, kind: str) -> FileStat:
    """Stat ``path``; a database's fingerprint includes its ``-wal``.

    Raises OSError (logged, the file skipped) for what is not a regular file: a
    FIFO would block the reader's ``open`` forever, and a dangling symlink is
    worth saying so rather than passing for a file that just vanished."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise OSError(f"a symlink to {os.readlink(path)}, which does not exist") from None
        raise
    if not stat.S_ISREG(st.st_mode):
        raise OSError("not a regular file (a directory, FIFO, socket or device)")
    size, mtime = st.st_size, st.st_mtime_ns
    if kind == "database":
        try:
            wal = os.stat(f"{path}-wal")
            size += wal.st_size
            mtime = max(mtime, wal.st_mtime_ns)
        except OSError:
            pass
    return FileStat(size=size, mtime_ns=mtime, inode=st.st_ino)


def head_hash(path: Path, length: int) -> str:
    return blake2b(read_range(path, 0, length), digest_size=12).hexdigest()


def tail_hash(path: Path, position: int) -> str:
    """Hash of the (up to) TAIL_BYTES bytes just before ``position``."""
    start = max(position - TAIL_BYTES, 0)
    data = read_range(path, start, position - start)
    return blake2b(data, digest_size=12).hexdigest()


@dataclass
class Plan:
    item: Item
    stat: FileStat
    row: FileRow | None
    prev: Cursor | None

    @property
    def fresh(self) -> bool:
        return self.prev is None


@dataclass
class Indexer:
    writer: IndexWriter
    hosts: list[HostSpec]
    config: Config
    redactor: Redactor | None = None
    #: Test hook: called with ("before_commit", path) inside a file's transaction.
    fault: Callable[[str, Path], None] | None = None
    #: Checked between batches: a long cold index stops early on shutdown.
    should_stop: Callable[[], bool] | None = None
    stats_by_host: dict[str, Summary] = field(default_factory=dict)
    #: Directories of transcripts found outside every root (Crush keeps one
    #: database per project): the daemon watches them too.
    outside_dirs: set[tuple[str, Path]] = field(default_factory=set)
    #: Roots found behind a directory that denies access (warned about once).
    _unreachable: set[Path] = field(default_factory=set)
    #: This index was told it holds text read with redaction off (store/reredact.py).
    _noted_unredacted: bool = False
    #: Reader processes started before this indexer (indexing/prefork.py), for
    #: its first pass if that is a bulk load read in workers; closed otherwise.
    prefork: parallel.Reads | None = None

    # ------------------------------------------------------------------ ownership

    def owner(self, path: Path) -> Item | None:
        """Which host's transcript ``path`` (a changed file) belongs to, if any."""
        for spec in self.hosts:
            if spec.reader.project_files and path.name in spec.reader.project_files:
                return Item(spec, path)
            extra = [d for host, d in self.outside_dirs if host == spec.host]
            for root in (*spec.roots, *extra):
                if is_under(path, root):
                    source = spec.reader.source_for(path)
                    if (
                        source is not None
                        and not self._excluded(spec, source)
                        and not _undecodable(source)
                    ):
                        sidecar = source != path and path.name != source.name + "-wal"
                        return Item(spec, source, forced=sidecar)
        return None

    def _excluded(self, spec: HostSpec, path: Path) -> bool:
        text = str(path)
        return any(fnmatch.fnmatch(text, pat) for pat in spec.exclude)

    def scan(self) -> Iterator[Item]:
        """Every transcript under every enabled root (and project-local files)."""
        seen: set[Path] = set()
        for spec in self.hosts:
            for root in spec.roots:
                if not self._reachable(spec, root):
                    continue
                for path in spec.reader.discover(root):
                    if path in seen or self._excluded(spec, path) or _undecodable(path):
                        continue
                    seen.add(path)
                    yield Item(spec, path)
        yield from self._project_files(seen)

    def _reachable(self, spec: HostSpec, root: Path) -> bool:
        """``root`` exists; a root behind a directory that denies access is
        skipped with a warning (once per process), not an error of the pass."""
        try:
            return root.exists()
        except OSError as exc:
            if root not in self._unreachable:
                self._unreachable.add(root)
                _log(logging.WARNING, "cannot look into a root; skipped", event="root_unreachable",
                     host=spec.host, path=str(root), error=str(exc),
                     fix=UNREACHABLE_FIX)  # fmt: skip
            return False

    def _project_files(self, seen: set[Path]) -> Iterator[Item]:
        specs = [s for s in self.hosts if s.reader.project_files]
        if not specs:
            return
        dirs = {Path(p) for p in self.writer.known_projects()}
        dirs |= {Path(os.path.expanduser(p)) for p in self.config.index.project_roots}
        for directory in sorted(dirs):
            for spec in specs:
                for name in spec.reader.project_files:
                    path = directory / name
                    if path not in seen and path.is_file():
                        seen.add(path)
                        yield Item(spec, path)

    # ------------------------------------------------------------------ planning

    def plan(self, item: Item, row: FileRow | None) -> Plan | None:
        """None when the file is unchanged since it was indexed (stat only)."""
        kind = item.spec.reader.kind
        st = file_stat(item.path, kind)
        version = item.spec.reader.version
        sidecar = _newest_mtime(item.spec.reader.sidecars(item.path))
        # A sidecar newer than the transcript was at its last index changed
        # since (perhaps while the daemon was down): read the transcript again.
        forced = item.forced or (row is not None and sidecar > row.mtime_ns)
        if sidecar > st.mtime_ns:
            st = dataclasses.replace(st, mtime_ns=sidecar)
        if (
            row is not None
            and row.state.get(UNREAD_SUBAGENT)
            and not item.spec.options.include_subagents
            and not forced  # (a sidecar that says what the transcript is: Grok's summary)
            and row.inode == st.inode
            and row.reader_version == version
        ):
            return None  # a sub-agent's transcript, claimed and left unread
        if (
            row is not None
            and not forced
            and not row.missing  # moved away and back: its turns follow it again
            and not row.unreadable  # made readable (chmod) changes no size or mtime
            and (row.size, row.mtime_ns, row.inode) == (st.size, st.mtime_ns, st.inode)
            and row.reader_version == version
            and not (kind == "append" and row.position < st.size and is_settled(item.path))
        ):
            return None  # (an unterminated last line, now quiet, is worth a read)
        prev: Cursor | None = None
        head_len = min(st.size, HEAD_BYTES)
        new_head = head_hash(item.path, head_len) if kind == "append" else ""
        st = dataclasses.replace(st, head_len=head_len, head_hash=new_head)
        if row is not None and row.reader_version == version and not row.error and not row.missing:
            prev = Cursor(row.position, row.state)
            if kind == "append":
                same_head = row.head_len <= head_len and (
                    head_hash(item.path, row.head_len) == row.head_hash
                )
                if row.inode != st.inode or st.size < row.position or not same_head:
                    prev = None
                elif row.tail_hash and tail_hash(item.path, row.position) != row.tail_hash:
                    prev = None  # rewritten in place behind an unchanged head
            if forced and item.spec.reader.sidecars_reread_whole:
                prev = None
        return Plan(item, st, row, prev)

    # ------------------------------------------------------------------ indexing

    def index_items(self, items: Iterable[Item], progress: Progress | None = None) -> Summary:
        """Index every changed file among ``items`` (batched transactions).

        A big pass reads its files in worker processes (in order, one result per
        file); a cold pass (nothing indexed yet) also builds the secondary
        indexes once, near its end, instead of updating them per turn."""
        started = time.monotonic()
        items = list(items)
        # A first index of many files: the reader processes start now, so that
        # they set up (the redaction patterns) while this one plans.
        early, self.prefork = self.prefork, None
        if early is not None and not self._likely_parallel(items, forked=True):
            early.close()
            early = None
        elif early is None and self._likely_parallel(items):
            early = self._start_pool()
        if early is not None:
            early.prepare(type(item.spec.reader).__module__ for item in items)
        try:
            return self._index_items(items, progress, early, started)
        finally:
            if early is not None:
                early.close()

    def _index_items(
        self,
        items: list[Item],
        progress: Progress | None,
        pool: parallel.Reads | None,
        started: float,
    ) -> Summary:
        rows = self.writer.file_rows()
        summary = Summary(files_seen=len(items))
        plans: list[Plan] = []
        for item in items:
            try:
                plan = self.plan(item, rows.get(str(item.path)))
            except FileNotFoundError:
                self._vanished(item, rows.get(str(item.path)), summary)
                continue
            except OSError as exc:
                self._failed(item, exc, summary)
                continue
            if plan is not None:
                plans.append(plan)
        total_bytes = sum(_to_read(p) for p in plans)
        done_bytes = 0
        if progress and plans:
            progress(0, len(plans), 0, total_bytes)
        bulk = len(plans) >= BULK_MIN_FILES and self.writer.is_empty()
        if bulk:
            self.writer.begin_bulk()
        retry: list[Plan] = []
        try:
            # Read in workers, a transaction is smaller: the writer writes one
            # batch while the workers read the next (up to WINDOW chunks ahead).
            batch_limit = BATCH_BYTES
            # Read in workers, a bulk load builds its secondary indexes before
            # its last batches (EARLY_INDEX_PART), while the workers still read.
            early_index = False
            if self._workers(plans, total_bytes) >= 2:
                batch_limit = PARALLEL_BATCH_BYTES
                early_index = bulk
            with self._reads(plans, total_bytes, pool) as reads:
                batch: list[tuple[Plan, Outcome | None]] = []
                batch_bytes = 0
                for n, (plan, outcome) in enumerate(reads, 1):
                    if self.should_stop is not None and self.should_stop():
                        break
                    batch.append((plan, outcome))
                    batch_bytes += plan.stat.size
                    done_bytes += _to_read(plan)
                    if len(batch) >= BATCH_FILES or batch_bytes >= batch_limit or n == len(plans):
                        retry += self._run_batch(batch, summary)
                        batch, batch_bytes = [], 0
                        if (
                            early_index
                            and (total_bytes - done_bytes) * EARLY_INDEX_PART <= total_bytes
                        ):
                            self.writer.build_indexes()
                            early_index = False
                    if progress:
                        progress(n, len(plans), min(done_bytes, total_bytes), total_bytes)
        finally:
            if bulk:
                self.writer.end_bulk()
        for plan in retry:  # lost a race with another writer: look again, alone
            self.index_item(plan.item, summary)
        summary.seconds = time.monotonic() - started
        return summary

    def _workers(self, plans: list[Plan], total_bytes: int) -> int:
        """Reader processes for this pass (below 2: read in-process)."""
        if len(plans) < 2 or total_bytes < PARALLEL_MIN_BYTES:
            return 0
        return self._max_workers()

    def _max_workers(self) -> int:
        if self.redactor is not None and not self.config.redaction.enabled:
            return 0  # (a redactor given beside a config without redaction: tests)
        return default_workers()

    def _likely_parallel(self, items: list[Item], *, forked: bool = False) -> bool:
        """A first index of many files (checked before planning them), in a
        process that forks its workers (or has them, ``forked``): started from a
        fork server (the daemon) they take long enough that a pass found small
        later would wait for them."""
        return (
            len(items) >= BULK_MIN_FILES
            and self.writer.is_empty()  # (before can_fork: it imports multiprocessing)
            and self._max_workers() >= 2
            and (forked or parallel.can_fork())
        )

    def _start_pool(self) -> parallel.ParallelReads:
        pool = parallel.ParallelReads(self._max_workers(), self.config, self.redactor is not None)
        pool.start()
        return pool

    @contextmanager
    def _reads(
        self, plans: list[Plan], total_bytes: int, pool: parallel.Reads | None = None
    ) -> Iterator[Iterator[tuple[Plan, Outcome | None]]]:
        """The plans in order, each with its worker's read (None: read in-process);
        ``pool``, started early, is used if the pass is big enough (its starter
        closes it)."""
        workers = self._workers(plans, total_bytes)
        if workers < 2:
            yield ((plan, None) for plan in plans)
            return
        _log(
            logging.INFO,
            f"reading {len(plans)} files in {workers} worker processes",
            event="parallel_read",
            workers=workers,
            files=len(plans),
            bytes=total_bytes,
        )
        opened: AbstractContextManager[parallel.Reads] = (
            nullcontext(pool)
            if pool is not None
            else parallel.ParallelReads(workers, self.config, self.redactor is not None)
        )
        with opened as reads:
            outcomes = reads.run(((p.item.spec, p.item.path, p.prev), _to_read(p)) for p in plans)

            def paired() -> Iterator[tuple[Plan, Outcome | None]]:
                for n, plan in enumerate(plans):
                    try:
                        outcome = next(outcomes)
                    except Exception as exc:  # the pool broke: read the rest here
                        _log(logging.WARNING, "reader processes failed; reading in-process",
                             event="pool_error", error=repr(exc))  # fmt: skip
                        yield from ((p, None) for p in plans[n:])
                        return
                    yield plan, outcome

            yield paired()

    def index_item(self, item: Item, summary: Summary | None = None) -> Summary:
        """Index one file (the daemon's path for a single change)."""
        summary = summary or Summary()
        for _attempt in range(3):
            try:
                plan = self.plan(item, self.writer.file_row(str(item.path)))
            except FileNotFoundError:
                self._vanished(item, self.writer.file_row(str(item.path)), summary)
                return summary
            except OSError as exc:
                self._failed(item, exc, summary)
                return summary
            if plan is None or not self._run_batch([(plan, None)], summary):
                return summary
        return summary

    def _run_batch(self, plans: list[tuple[Plan, Outcome | None]], summary: Summary) -> list[Plan]:
        """Read (unless read already) and write ``plans`` in one transaction;
        returns those that lost a race."""
        reads: list[tuple[Plan, ReadResult]] = []
        for plan, outcome in plans:
            result = self._read(plan, summary, outcome)
            if result is not None:
                reads.append((plan, result))
        if not reads:
            return []
        if self.redactor is None and not self._noted_unredacted:
            reredact.note_unredacted(self.writer)  # (never published: see daemon/team.py)
            self._noted_unredacted = True
        conflicts: list[Plan] = []
        with self.writer.transaction():
            for plan, result in reads:
                update = Update(
                    path=str(plan.item.path),
                    host=plan.item.spec.host,
                    stat=self._with_tail(plan, result),
                    reader_version=plan.item.spec.reader.version,
                    based_on=plan.row.fingerprint if plan.row else None,
                    fresh=plan.fresh,
                    result=result,
                )
                report = self.writer.apply(update)
                if self.fault:
                    self.fault("before_commit", plan.item.path)
                if report.outcome == "conflict":
                    conflicts.append(plan)
                    continue
                self._note_unsettled(plan, result, summary)
                host_stats = self.stats_by_host.setdefault(plan.item.spec.host, Summary())
                if report.outcome == "written":
                    summary.files_changed += 1
                    summary.turns_added += report.turns_written
                    summary.turns_deleted += report.turns_deleted
                    host_stats.turns_added += report.turns_written
                    host_stats.files_changed += 1
                    log.debug(
                        "indexed",
                        extra={
                            "event": "indexed",
                            "host": plan.item.spec.host,
                            "path": str(plan.item.path),
                            "turns": report.turns_written,
                            "fresh": plan.fresh,
                        },
                    )
                elif report.outcome == "unsupported" and (
                    plan.row is None or plan.row.error != result.unsupported
                ):  # (said once: a file refused as not the user's is looked at each pass)
                    log.warning(
                        "unsupported file",
                        extra={
                            "event": "unsupported_format",
                            "host": plan.item.spec.host,
                            "path": str(plan.item.path),
                            "error": result.unsupported,
                        },
                    )
        return conflicts

    @staticmethod
    def _note_unsettled(plan: Plan, result: ReadResult, summary: Summary) -> None:
        if plan.item.spec.reader.kind != "append" or result.position >= plan.stat.size:
            return
        if not is_settled(plan.item.path):
            summary.unsettled.append(plan.item.path)

    def _with_tail(self, plan: Plan, result: ReadResult) -> FileStat:
        if plan.item.spec.reader.kind != "append" or result.position <= 0:
            return plan.stat
        try:
            return dataclasses.replace(
                plan.stat, tail_hash=tail_hash(plan.item.path, result.position)
            )
        except OSError:
            return plan.stat  # gone meanwhile: no tail check next time, the head check stays

    def _read(
        self, plan: Plan, summary: Summary, outcome: Outcome | None = None
    ) -> ReadResult | None:
        """Read ``plan``'s file, or take a worker's ``outcome`` (already cleaned)."""
        spec = plan.item.spec
        try:
            if outcome is not None:
                result = outcome.get()
            else:
                result = spec.reader.read(plan.item.path, plan.prev, spec.options)
        except FileNotFoundError:
            self._vanished(plan.item, plan.row, summary)
            return None
        except SourceBusy as exc:
            _log(logging.INFO, "source busy", event="source_busy", path=str(plan.item.path),
                 host=spec.host, error=str(exc))  # fmt: skip
            return None
        except ValueError as exc:
            # A document caught mid-write: keep what is indexed, retry on the next change.
            _log(logging.INFO, "incomplete document", event="incomplete_document",
                 path=str(plan.item.path), host=spec.host, error=str(exc))  # fmt: skip
            return None
        except OSError as exc:
            self._failed(plan.item, exc, summary)
            return None
        except Exception as exc:  # a reader bug must not stop the daemon
            # (its message and traceback may quote the record: redacted like the rest)
            trace = traceback.format_exc()
            log.error("reader failed", extra={"event": "reader_error", "host": spec.host,
                      "path": str(plan.item.path), "error": self._redact(repr(exc)),
                      "traceback": self._redact(trace)})  # fmt: skip
            self._failed(plan.item, exc, summary)
            return None
        summary.bytes_read += _to_read(plan)
        if outcome is None:
            result = self._clean(result)  # (before its problems are logged: they may quote)
        if result.problems:
            summary.problems += len(result.problems)
            for problem in result.problems[:5]:
                log.warning(
                    "skipped a malformed record",
                    extra={
                        "event": "malformed_record",
                        "host": spec.host,
                        "path": str(plan.item.path),
                        "line": problem.line,
                        "error": problem.message,
                    },
                )
            if len(result.problems) > 5:
                _log(logging.WARNING, "more malformed records", event="malformed_records",
                     path=str(plan.item.path), count=len(result.problems))  # fmt: skip
        return result

    def _clean(self, result: ReadResult) -> ReadResult:
        return clean(result, self.redactor, self.config.exclude.projects)

    def _redact(self, text: str) -> str:
        return self.redactor.redact(text) if self.redactor is not None else text

    def _vanished(self, item: Item, row: FileRow | None, summary: Summary) -> None:
        if row is None:
            return
        if self.config.index.on_delete == "forget":
            n = self.writer.forget_missing_file(str(item.path))
            summary.turns_deleted += n
            log.info("source deleted, forgotten", extra={"event": "source_forgotten",
                     "path": str(item.path), "turns": n})  # fmt: skip
        elif not row.missing:
            self.writer.mark_missing(str(item.path))
            log.info("source deleted, turns kept", extra={"event": "source_missing",
                     "path": str(item.path)})  # fmt: skip

    def _failed(self, item: Item, exc: BaseException, summary: Summary) -> None:
        message = f"{type(exc).__name__}: {exc}"
        if self.redactor is not None:  # an error may quote what it failed on
            message = self.redactor.redact(message)
        summary.errors += 1
        summary.last_error = f"{item.path}: {message}"
        row = self.writer.file_row(str(item.path))
        # Tried again at every rescan: say so once, not every ten minutes.
        again = row is not None and row.error == message
        log.log(logging.DEBUG if again else logging.WARNING, "cannot read transcript",
                extra={"event": "read_error", "path": str(item.path), "host": item.spec.host,
                       "error": message})  # fmt: skip
        try:
            stat: FileStat | None = file_stat(item.path, item.spec.reader.kind)
        except OSError:
            stat = None
        self.writer.record_error(
            str(item.path), item.spec.host, message, stat, item.spec.reader.version,
            unreadable=isinstance(exc, OSError),
        )  # fmt: skip

    # ------------------------------------------------------------------ passes

    def reconcile(self, progress: Progress | None = None) -> Summary:
        """Scan every root and index what changed; note files that vanished."""
        self._redact_stored_once()
        items = list(self.scan())
        summary = self.index_items(items, progress)
        # This pass may have named projects for the first time (a first index):
        # their project-local transcripts (Aider) are found now, not a rescan later.
        late = list(self._project_files({i.path for i in items}))
        if late:
            summary.add(self.index_items(late))
            items += late
        found = {str(i.path) for i in items}
        self.outside_dirs = {
            (i.spec.host, i.path.parent)
            for i in items
            if not any(is_under(i.path, root) for root in i.spec.roots)
        }
        by_host = {s.host: s for s in self.hosts}
        for path, host, missing in self.writer.known_files():
            gone = path not in found and not missing and not os.path.exists(path)
            if gone and host in by_host:
                self._vanished(Item(by_host[host], Path(path)), self.writer.file_row(path), summary)
        return summary

    def _redact_stored_once(self) -> None:
        """An index written before titles, memos and notes were redacted is
        redacted (and scrubbed) once, when redaction is on."""
        redactor = self.redactor
        if redactor is None or not reredact.needed(self.writer):
            return
        n = reredact.run(self.writer, redactor.redact, lambda s: redact_state(s, redactor))
        if n:
            _log(logging.INFO, "redacted stored titles and memos", event="reredacted", rows=n)


def _to_read(plan: Plan) -> int:
    """Bytes of ``plan``'s file from where it is read."""
    return max(plan.stat.size - (plan.prev.position if plan.prev else 0), 0)


def _undecodable(path: Path) -> bool:
    """True (and logged) for a file name that is not valid UTF-8: the index keys
    files by their path as text, which SQLite must be able to store."""
    text = str(path)
    if scrub(text) is text:
        return False
    if text not in _TOLD_UNDECODABLE:  # once per name: each write to it comes back here
        _TOLD_UNDECODABLE.add(text)
        shown = os.fsencode(path).decode("utf-8", "backslashreplace")
        _log(logging.WARNING, "file name is not valid UTF-8; rename the file to index it",
             event="undecodable_name", path=shown)  # fmt: skip
    return True


#: File names already reported as not UTF-8 (by this process).
_TOLD_UNDECODABLE: set[str] = set()


def _newest_mtime(paths: list[Path]) -> int:
    newest = 0
    for path in paths:
        try:
            newest = max(newest, os.stat(path).st_mtime_ns)
        except OSError:
            continue
    return newest
