"""Per-rule redaction time on adversarial inputs of 256 KiB and 1 MiB (the inputs of the linear-time test).

Run: ``python tools/bench/redaction.py [--old PATH]`` — ``--old`` times another version of
``intentloop/model/redaction.py`` (e.g. ``git show REV:intentloop/model/redaction.py > /tmp/old.py``) on the same
inputs, where it has the same rule names (versions before the rule names existed: by kind, credential rules by order).
``--statement`` instead times ``redact`` on a 500-character statement, median of 200 runs, with the own rules and then
with the rule catalog as the second layer (``--catalog-cache DIR``: its rule cache; compiled there first when cold).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
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


#: 500 characters of what an agent stores: prose with paths, an id, a digest and one credential-like assignment.
STATEMENT = (
    "The user wants the deploy script in scripts/deploy.sh to read DATABASE_URL from the environment instead of "
    "config/prod.yaml, keep the retry budget at three attempts, and log each failure with its request id "
    "3f2a9c1e-7b4d-4e8a-9c2f-1a2b3c4d5e6f; the build pinned by sha256 9b74c9897bac770ffc029102a200c5de0d6e1c5f "
    "must stay, the staging token is API_TOKEN=placeholder until rotation, and the README section on rollbacks "
    "should say that v2.14.0-rc.1 is the last release with the old migration order, per the review on Tuesday."
)


def _statement(cache: str | None) -> None:
    from intentloop.model import redact

    text = STATEMENT[:500]
    # the same length with a token only the catalog knows (a Harness personal access token): the catalog's rules'
    # patterns find it (without the library, as for any one-line text of at most 1,000 characters)
    secret = "pat.u8jzPde0IgxLd6GncfBAep.2d1371c17149d439536b3216.FRIBXuDL7DxtpYlSXpfK"
    with_secret = f"deploy with {secret}; {STATEMENT}"[:500]

    def median_ms(text: str) -> float:
        times = []
        for _ in range(200):
            started = time.perf_counter()
            redact(text)
            times.append(time.perf_counter() - started)
        return statistics.median(times) * 1000

    print(f"500-character statement, own rules:             {median_ms(text):.3f} ms median")
    if cache is None:
        return
    from intentloop.store.catalog import load_catalog

    outcome = load_catalog({"INTENT_LOOP_CATALOG": "on", "INTENT_LOOP_CATALOG_CACHE": cache}, cold_ok=True)
    print(f"500-character statement, own rules + catalog:   {median_ms(text):.3f} ms median (catalog {outcome})")
    print(f"the same holding a catalog-only token:          {median_ms(with_secret):.3f} ms median")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--statement", action="store_true", help="time redact() on a 500-character statement")
    parser.add_argument("--catalog-cache", help="with --statement: also time it with the rule catalog on")
    parser.add_argument("--old", help="another redaction.py to time on the same inputs")
    parser.add_argument("--limit", type=float, default=120.0, help="skip the 1 MiB run when 256 KiB took longer")
    args = parser.parse_args()
    if args.statement:
        _statement(args.catalog_cache)
        return
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
