"""Per-rule redaction time on adversarial inputs of 256 KiB and 1 MiB (the inputs of the linear-time test).

Run: ``python tools/bench/redaction.py [--old PATH]`` — ``--old`` times another version of
``intentloop/model/redaction.py`` (e.g. ``git show REV:intentloop/model/redaction.py > /tmp/old.py``) on the same
inputs, where it has the same rule names (versions before the rule names existed: by kind, credential rules by order).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "unit" / "model"))

from test_redaction_linear import ADVERSARIAL, MIB, SMALL, _fill

from intentloop.model.redaction import run_rule


def _old_rules(path: str) -> dict[str, Any]:
    spec = importlib.util.spec_from_file_location("old_redaction", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rules: dict[str, Any] = {}
    for rule in module._PATTERN_RULES:
        if isinstance(rule, tuple):
            rules[rule[0]] = rule[-1]
        else:  # versions whose rules are objects with a lazily compiled pattern
            rules[rule.name] = rule.pattern.compiled
    names = ("credential-quoted", "credential-bare")
    for name, rule in zip(names, module._CREDENTIAL_RULES, strict=True):
        rules[name] = rule[-1] if isinstance(rule, tuple) else rule.pattern.compiled
    return rules


def _time(fn: Any, text: str, limit: float) -> float | None:
    started = time.perf_counter()
    fn(text)
    elapsed = time.perf_counter() - started
    return elapsed if elapsed <= limit else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", help="another redaction.py to time on the same inputs")
    parser.add_argument("--limit", type=float, default=120.0, help="skip the 1 MiB run when 256 KiB took longer")
    args = parser.parse_args()
    old = _old_rules(args.old) if args.old else {}
    for rule, motifs in ADVERSARIAL.items():
        worst: tuple[float, float, str] = (0.0, 0.0, "")
        for motif in motifs:
            small, big = _fill(motif, SMALL, '"'), _fill(motif, MIB, '"')
            if old:
                if rule not in old:
                    continue
                pattern = old[rule]

                def fn(text: str, pattern: Any = pattern) -> object:
                    return pattern.sub("", text)
            else:

                def fn(text: str, rule: str = rule) -> object:
                    return run_rule(rule, text)

            t_small = _time(fn, small, float("inf")) or 0.0
            t_big = _time(fn, big, float("inf")) if t_small < args.limit / 16 else float("nan")
            if t_big != t_big or (t_big or 0.0) > worst[1]:
                worst = (t_small, t_big if t_big is not None else float("nan"), motif)
            if t_big != t_big:
                break
        small_ms, big_ms = worst[0] * 1000, worst[1] * 1000
        print(f"{rule:20s} worst motif {worst[2]!r:34s} 256 KiB {small_ms:10.1f} ms  1 MiB {big_ms:10.1f} ms")


if __name__ == "__main__":
    main()
