"""Two small per-item costs of indexing, each against the alternative it replaced.

Run from the repository root::

    python bench/bench_handoff.py                 # 11 196 turns, the corpus's yaml files
    python bench/bench_handoff.py --corpus DIR    # workspace.yaml files from a bench corpus

- Turns handed from a reader process to the writer: a pickle round trip of
  ``Turn`` (pickled as its constructor's arguments) against the same frozen,
  slotted dataclass pickled the default way (its state, restored attribute by
  attribute).
- Copilot CLI ``workspace.yaml`` (re-read at every change to its session): PyYAML's
  C safe loader (what the reader uses where libyaml is present) against the
  pure-Python one, on every ``workspace.yaml`` under ``--corpus`` (or the sample).

Best of ``--repeat`` rounds.
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from backscroll.model import Turn
from backscroll.readers import copilot_cli

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "copilot-cli"


#: ``Turn``'s fields (derived from it), without its ``__reduce__``.
DefaultTurn: Any = dataclasses.make_dataclass(
    "DefaultTurn",
    [(f.name, f.type, dataclasses.field(default=f.default)) for f in dataclasses.fields(Turn)],
    frozen=True,
    slots=True,
)
DefaultTurn.__module__ = __name__  # (pickle finds the class here)


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=11_196)
    ap.add_argument("--corpus", type=Path, help="a bench corpus (its workspace.yaml files)")
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args(argv)

    fields = [
        (f"s{i // 40}", f"k{i}", "assistant", "a prose answer " * 25, 1.7e9 + i, i)
        for i in range(args.turns)
    ]
    ours = [Turn(*f) for f in fields]  # type: ignore[arg-type]
    plain = [DefaultTurn(*f) for f in fields]
    assert pickle.loads(pickle.dumps(ours)) == ours
    a = best(lambda: pickle.loads(pickle.dumps(plain, 5)), args.repeat)
    b = best(lambda: pickle.loads(pickle.dumps(ours, 5)), args.repeat)
    print(f"pickle round trip of {args.turns} turns: default {a * 1e3:.1f} ms, "
          f"constructor arguments {b * 1e3:.1f} ms ({a / b:.2f}x)")  # fmt: skip

    root = args.corpus or SAMPLE
    texts = [p.read_text() for p in sorted(root.rglob("*.yaml")) if "workspace" in p.name]
    if not texts:
        print(f"no workspace.yaml under {root}")
        return 1
    same = all(yaml.load(t, Loader=copilot_cli.yaml_loader()) == yaml.safe_load(t) for t in texts)
    py = best(lambda: [yaml.load(t, Loader=yaml.SafeLoader) for t in texts], args.repeat)
    fast = best(
        lambda: [yaml.load(t, Loader=copilot_cli.yaml_loader()) for t in texts], args.repeat
    )
    n = len(texts)
    print(f"workspace.yaml x{n}: SafeLoader {py / n * 1e3:.2f} ms a file, "
          f"{copilot_cli.yaml_loader().__name__} {fast / n * 1e3:.2f} ms a file "
          f"({py / fast:.1f}x), same result: {same}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
