"""Project-root decisions: sandbox metadata (URI or path), the argument, mismatch, client roots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from intentloop.errors import IntentLoopError
from intentloop.mcp import roots
from intentloop.model import project_id_for

from _support.mcp_memory import fake_canonicalize


def _meta(cwd: Any, key: str = roots.SANDBOX_META_KEY, **siblings: Any) -> dict[str, Any]:
    return {key: {"sandboxCwd": cwd, **siblings}}


def _code(exc: pytest.ExceptionInfo[IntentLoopError]) -> str:
    return exc.value.code


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("file:///home/u/proj", "/home/u/proj"),
        ("file://localhost/home/u/proj", "/home/u/proj"),
        ("file:/home/u/proj", "/home/u/proj"),
        ("FILE:///home/u/my%20proj", "/home/u/my proj"),
        ("file:///home/u/caf%C3%A9", "/home/u/café"),
    ],
)
def test_file_uri_to_path(uri: str, path: str) -> None:
    assert roots.path_from_file_uri(uri) == path


@pytest.mark.parametrize(
    "uri",
    [
        "file://server/share/proj",
        "https://example.com/proj",
        "file:///home/u/proj?x=1",
        "file:///home/u/proj#frag",
        "file:relative/proj",
        "file:///home/u/%FF",
        "file:///home/u/a%00b",
        "/home/u/proj",
        "",
    ],
)
def test_unusable_file_uris(uri: str) -> None:
    assert roots.path_from_file_uri(uri) is None


def test_sandbox_cwd_accepts_a_uri_and_a_plain_path_and_ignores_siblings() -> None:
    siblings = {"permissionProfile": {"x": 1}, "codexLinuxSandboxExe": None, "useLegacyLandlock": False, "new": [1]}
    assert roots.sandbox_cwd(_meta("file:///srv/p", **siblings)) == "/srv/p"
    assert roots.sandbox_cwd(_meta("/srv/p", **siblings)) == "/srv/p"


def test_sandbox_cwd_absent_means_no_declaration() -> None:
    assert roots.sandbox_cwd(None) is None
    assert roots.sandbox_cwd({}) is None
    assert roots.sandbox_cwd({"progressToken": 1, "other/key": {"sandboxCwd": "/x"}}) is None


def test_the_older_key_is_an_identical_fallback_copy() -> None:
    assert roots.sandbox_cwd(_meta("file:///srv/old", key=roots.SANDBOX_META_FALLBACK_KEY)) == "/srv/old"
    both = {**_meta("file:///srv/new"), **_meta("file:///srv/old", key=roots.SANDBOX_META_FALLBACK_KEY)}
    assert roots.sandbox_cwd(both) == "/srv/new"


@pytest.mark.parametrize(
    "meta",
    [
        {roots.SANDBOX_META_KEY: "file:///srv/p"},
        {roots.SANDBOX_META_KEY: None},
        {roots.SANDBOX_META_KEY: {}},
        {roots.SANDBOX_META_KEY: {"sandboxCwd": ""}},
        {roots.SANDBOX_META_KEY: {"sandboxCwd": "   "}},
        {roots.SANDBOX_META_KEY: {"sandboxCwd": 7}},
        {roots.SANDBOX_META_KEY: {"sandboxCwd": "relative/dir"}},
        {roots.SANDBOX_META_KEY: {"sandboxCwd": "https://example.com/p"}},
        {roots.SANDBOX_META_KEY: {"sandboxCwd": "file://remote/p"}},
        {roots.SANDBOX_META_KEY: {"sandboxCwd": "/srv/a\0b"}},
        # a malformed current key is not rescued by a good fallback copy
        {roots.SANDBOX_META_KEY: {"sandboxCwd": 7}, roots.SANDBOX_META_FALLBACK_KEY: {"sandboxCwd": "/srv/p"}},
    ],
)
def test_malformed_sandbox_metadata(meta: dict[str, Any]) -> None:
    with pytest.raises(IntentLoopError) as exc:
        roots.sandbox_cwd(meta)
    assert _code(exc) == "PROJECT_ROOT_METADATA_INVALID"


def test_resolve_uses_sandbox_uri(project: Path) -> None:
    resolved = roots.resolve_declared(_meta(project.as_uri()), {}, fake_canonicalize)
    assert resolved is not None
    assert resolved.root == str(project.resolve())
    assert resolved.project_id == project_id_for(str(project.resolve()))
    assert resolved.source == "sandbox"


def test_resolve_uses_sandbox_path_over_a_matching_argument(project: Path) -> None:
    alias = project.parent / "alias"
    alias.symlink_to(project)
    resolved = roots.resolve_declared(_meta(str(project)), {"project_root": str(alias)}, fake_canonicalize)
    assert resolved is not None and resolved.source == "sandbox"


def test_resolve_mismatch_between_sandbox_and_argument(project: Path, other_project: Path) -> None:
    with pytest.raises(IntentLoopError) as exc:
        roots.resolve_declared(_meta(project.as_uri()), {"project_root": str(other_project)}, fake_canonicalize)
    assert _code(exc) == "PROJECT_ROOT_MISMATCH"


def test_resolve_argument_that_cannot_be_resolved_beside_sandbox(project: Path, tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")
    with pytest.raises(IntentLoopError) as exc:
        roots.resolve_declared(_meta(project.as_uri()), {"project_root": missing}, fake_canonicalize)
    assert _code(exc) == "PROJECT_ROOT_INVALID"


def test_resolve_sandbox_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(IntentLoopError) as exc:
        roots.resolve_declared(_meta(str(tmp_path / "missing")), {}, fake_canonicalize)
    assert _code(exc) == "PROJECT_ROOT_INVALID"


def test_resolve_argument_alone(project: Path) -> None:
    resolved = roots.resolve_declared(None, {"project_root": str(project)}, fake_canonicalize)
    assert resolved is not None and resolved.source == "argument"
    assert roots.resolve_declared(None, {}, fake_canonicalize) is None


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (7, "Expected `str`, got `int` - at `$.project_root`"),
        (None, "Expected `str`, got `null` - at `$.project_root`"),
        (["/x"], "Expected `str`, got `array` - at `$.project_root`"),
        ("", "length >= 1 - at `$.project_root`"),
        ("/" + "a" * 1000, "length <= 1000 - at `$.project_root`"),
    ],
)
def test_project_root_type_errors_come_before_any_resolution(value: Any, fragment: str) -> None:
    calls: list[str] = []

    def spy(raw: str) -> str:
        calls.append(raw)
        return raw

    with pytest.raises(IntentLoopError) as exc:
        roots.resolve_declared(_meta("/srv/p"), {"project_root": value}, spy)
    assert _code(exc) == "INVALID_ARGUMENTS"
    assert fragment in exc.value.message
    assert calls == []


def test_canonicalizer_os_errors_become_project_root_invalid() -> None:
    def broken(raw: str) -> str:
        raise PermissionError(13, "denied")

    with pytest.raises(IntentLoopError) as exc:
        roots.canonical("/srv/p", broken, "argument")
    assert _code(exc) == "PROJECT_ROOT_INVALID"
    assert isinstance(exc.value.__cause__, PermissionError)


def test_single_local_root() -> None:
    assert roots.single_local_root(["file:///srv/p"]) == "/srv/p"
    assert roots.single_local_root(["file:///srv/p", "https://example.com/x"]) == "/srv/p"
    assert roots.single_local_root(["file:///srv/p", "file:///srv/p"]) == "/srv/p"
    assert roots.single_local_root(["file:///srv/p", "file:///srv/q"]) is None
    assert roots.single_local_root([]) is None
    assert roots.single_local_root(["file://remote/srv/p"]) is None
