"""A scripted model server for the end-to-end host runs: OpenAI Responses (Codex), Anthropic Messages (Claude Code)
and the Gemini API's ``streamGenerateContent`` (Gemini CLI).

The "model" is a fixed script driven by the conversation it is sent, so it needs no state beyond the request: a
prompt containing ``E2E-START`` makes it call ``intent_start_task`` (passing the ``host_session_id`` the SessionStart
hook offered, when one is in the request), then ``intent_add_explicit`` with the task id from the tool's answer, then
it finishes (with ``E2E-PROJECT`` in the prompt the claim has scope ``project``, so it travels with ``intentloop
sync``); a prompt containing ``E2E-LINK`` makes it only start a task linked to the session; a prompt containing
``E2E-SECOND`` makes the Gemini script read the linked task with
``intent_get_snapshot`` (the task id from the hook context) before it answers; a prompt containing ``E2E-PEERS`` makes
it read the linked task with ``include_peers`` and answer ``E2E-PEERS <JSON>``: what the snapshot the host sent back
says of the claim stating ``STATEMENT`` (:func:`snapshot_finding`); any other prompt gets a plain answer.
Every request is logged (path, tool names, all its text) so the runner can check afterwards what the host really
sent — e.g. that a hook's ``additionalContext`` reached the model.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

START_MARK = "E2E-START"
STATEMENT = "The final report must be written in French."
SESSION_RE = re.compile(r'host_session_id="([^"]+)"')
OK_RE = re.compile(r'\\*"ok\\*"\s*:\s*true')
SECOND_MARK = "E2E-SECOND"
PROJECT_MARK = "E2E-PROJECT"
LINK_MARK = "E2E-LINK"
PEERS_MARK = "E2E-PEERS"
LINKED_RE = re.compile(r"\[Intent Loop linked task_id=([0-9a-f-]{36})")
TASK_RE = re.compile(r'task_id\\*"\s*:\s*\\*"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})')


def strings(node: Any) -> Iterator[str]:
    """Every string inside a decoded JSON document, depth first."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)


class Script:
    """The scripted decisions, shared by both wire formats; ``project_root`` is passed to the tools when set."""

    def __init__(self, project_root: str | None) -> None:
        self.project_root = project_root

    def start_args(self, context_text: str) -> dict[str, Any]:
        args: dict[str, Any] = {"label": "e2e host run", "request_id": "e2e-start-1"}
        found = SESSION_RE.search(context_text)
        if found:
            args["host_session_id"] = found.group(1)
        if self.project_root:
            args["project_root"] = self.project_root
        return args

    def explicit_args(self, task_id: str, scope: str = "task") -> dict[str, Any]:
        args: dict[str, Any] = {
            "scope": scope,
            "task_id": task_id,
            "request_id": "e2e-explicit-1",
            "statement": STATEMENT,
            "source_ref": {"kind": "user_event", "event_id": "e2e-user-turn-1"},
            "facets": ["hard_constraint"],
            "confirmation_reason": "direct_statement",
        }
        if self.project_root:
            args["project_root"] = self.project_root
        return args

    def decide(self, prompt: str, outputs: dict[str, str], context_text: str) -> tuple[str, Any]:
        """``("call", (tool, args))`` or ``("say", text)`` for a turn whose prompt and tool outputs are given."""
        if PEERS_MARK in prompt:
            return self.decide_peers(outputs, context_text)
        if LINK_MARK in prompt:
            if "intent_start_task" not in outputs:
                return "call", ("intent_start_task", self.start_args(context_text))
            ok = OK_RE.search(outputs["intent_start_task"])
            return "say", "E2E-LINKED: task started." if ok else "E2E-FAILED: " + outputs["intent_start_task"][:500]
        if START_MARK not in prompt:
            return "say", "E2E-ACK: nothing to do."
        if "intent_add_explicit" in outputs:
            if not OK_RE.search(outputs["intent_add_explicit"]):
                return "say", "E2E-FAILED: " + outputs["intent_add_explicit"][:500]
            return "say", "E2E-DONE: task started and the constraint recorded."
        if "intent_start_task" in outputs:
            found = TASK_RE.search(outputs["intent_start_task"])
            if not found or not OK_RE.search(outputs["intent_start_task"]):
                return "say", "E2E-FAILED: no task_id in " + outputs["intent_start_task"][:500]
            scope = "project" if PROJECT_MARK in prompt else "task"
            return "call", ("intent_add_explicit", self.explicit_args(found.group(1), scope))
        return "call", ("intent_start_task", self.start_args(context_text))

    def decide_second(self, outputs: dict[str, str], context_text: str) -> tuple[str, Any]:
        """The resumed turn: read the task the hook context names with ``intent_get_snapshot``, then answer."""
        if "intent_get_snapshot" in outputs:
            snapshot = outputs["intent_get_snapshot"]
            ok = OK_RE.search(snapshot) and STATEMENT in snapshot
            return "say", "E2E-SNAPSHOT: " + ("the constraint is there." if ok else snapshot[:500])
        found = LINKED_RE.search(context_text)
        if found is None:
            return "say", "E2E-FAILED: no linked task in the hook context"
        args: dict[str, Any] = {"task_id": found.group(1)}
        if self.project_root:
            args["project_root"] = self.project_root
        return "call", ("intent_get_snapshot", args)

    def decide_peers(self, outputs: dict[str, str], context_text: str) -> tuple[str, Any]:
        """Read the task the hook context names with ``include_peers``, then answer with :func:`snapshot_finding`."""
        if "intent_get_snapshot" in outputs:
            return "say", f"{PEERS_MARK} {json.dumps(snapshot_finding(outputs['intent_get_snapshot']))}"
        found = LINKED_RE.search(context_text)
        if found is None:
            return "say", "E2E-FAILED: no linked task in the hook context"
        args: dict[str, Any] = {"task_id": found.group(1), "include_peers": True}
        if self.project_root:
            args["project_root"] = self.project_root
        return "call", ("intent_get_snapshot", args)


def snapshot_finding(output: str) -> dict[str, Any]:
    """What an ``intent_get_snapshot`` answer, as a host sent the tool's output back (JSON holding the envelope's
    text), says of the claims stating ``STATEMENT``: how many are among ``peer_claims`` and ``active_claims``, and
    the first peer claim's ``origin``, ``epistemic_status``, ``facets`` and ``scope``; ``{"error": …}`` when no
    successful snapshot is in it."""
    try:
        texts = list(strings(json.loads(output)))
    except ValueError:
        texts = [output]
    for text in texts:
        try:
            envelope = json.loads(text)
        except ValueError:
            continue
        if isinstance(envelope, dict) and envelope.get("operation") == "intent_get_snapshot":
            break
    else:
        return {"error": output[:500]}
    if envelope.get("ok") is not True:
        return {"error": json.dumps(envelope.get("error"))[:500]}
    result = envelope.get("result") or {}
    peers = [c for c in result.get("peer_claims", []) if c.get("statement") == STATEMENT]
    first = peers[0] if peers else {}
    return {
        "peer_claims": len(peers),
        "active_claims": sum(c.get("statement") == STATEMENT for c in result.get("active_claims", [])),
        "origin": first.get("origin"),
        "epistemic_status": first.get("epistemic_status"),
        "facets": first.get("facets"),
        "scope": first.get("scope"),
    }


def _tool_short_name(name: str) -> str:
    return name.rsplit("__", 1)[-1]


# --------------------------------------------------------------------------------------------- OpenAI Responses


def responses_turn(body: dict[str, Any], script: Script) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Output items for one ``POST /v1/responses`` plus a summary for the log."""
    items: list[dict[str, Any]] = [i for i in body.get("input", []) if isinstance(i, dict)]
    start = 0
    prompt = ""
    for idx, item in enumerate(items):
        if item.get("type", "message") == "message" and item.get("role") == "user":
            text = "\n".join(strings(item.get("content")))
            if "E2E-" in text:
                start, prompt = idx, text
    names: dict[str, str] = {}
    outputs: dict[str, str] = {}
    for item in items[start:]:
        if item.get("type") == "function_call":
            names[str(item.get("call_id"))] = _tool_short_name(str(item.get("name")))
        elif item.get("type") == "function_call_output":
            name = names.get(str(item.get("call_id")), "?")
            outputs[name] = json.dumps(item.get("output"))
    namespace = None
    for tool in body.get("tools", []):
        if isinstance(tool, dict) and tool.get("name") == "mcp__intent_loop":
            namespace = "mcp__intent_loop"
    kind, what = script.decide(prompt, outputs, "\n".join(strings(body.get("input"))))
    if kind == "call":
        tool, args = what
        item = {"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:12]}", "call_id": f"call_{tool}_{start}"}
        item.update({"name": tool, "arguments": json.dumps(args)})
        if namespace:
            item["namespace"] = namespace
        else:
            item["name"] = f"mcp__intent_loop__{tool}"
        out = [item]
    else:
        out = [
            {
                "type": "message",
                "role": "assistant",
                "id": f"msg_{uuid.uuid4().hex[:12]}",
                "content": [{"type": "output_text", "text": what}],
            }
        ]
    return out, {"decision": kind, "detail": what, "namespace": namespace}


def responses_tool_names(body: dict[str, Any]) -> list[str]:
    """Tool names offered in a Responses request; a namespace's tools as ``<namespace>/<tool>``."""
    names: list[str] = []
    for tool in body.get("tools", []):
        if not isinstance(tool, dict):
            continue
        names.append(str(tool.get("name", tool.get("type"))))
        for sub in tool.get("tools", []) if tool.get("type") == "namespace" else []:
            if isinstance(sub, dict):
                names.append(f"{tool.get('name')}/{sub.get('name')}")
    return names


def responses_sse(out: list[dict[str, Any]]) -> bytes:
    rid = f"resp_{uuid.uuid4().hex[:12]}"
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": rid}}]
    events += [{"type": "response.output_item.done", "output_index": n, "item": item} for n, item in enumerate(out)]
    usage = {
        "input_tokens": 100,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 10,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 110,
    }
    events.append({"type": "response.completed", "response": {"id": rid, "usage": usage}})
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


# --------------------------------------------------------------------------------------------- Anthropic Messages


def messages_turn(body: dict[str, Any], script: Script) -> tuple[list[dict[str, Any]], str, dict[str, Any]]:
    """Content blocks and stop reason for one ``POST /v1/messages`` plus a summary for the log."""
    tools = [str(t.get("name")) for t in body.get("tools", []) if isinstance(t, dict)]
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    start, prompt = 0, ""
    for idx, msg in enumerate(messages):
        if msg.get("role") != "user":
            continue
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        text = "\n".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        if "E2E-" in text:
            start, prompt = idx, text
    names: dict[str, str] = {}
    outputs: dict[str, str] = {}
    for msg in messages[start:]:
        content = msg.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                names[str(block.get("id"))] = _tool_short_name(str(block.get("name")))
            elif block.get("type") == "tool_result":
                outputs[names.get(str(block.get("tool_use_id")), "?")] = json.dumps(block.get("content"))
    if not any(t.endswith("intent_start_task") for t in tools):
        # A side request (title, summary, quota probe): answer plainly, never drive the script from it.
        return [{"type": "text", "text": "E2E side answer."}], "end_turn", {"decision": "side", "detail": None}
    context_text = "\n".join(strings(body.get("messages"))) + "\n" + "\n".join(strings(body.get("system")))
    kind, what = script.decide(prompt, outputs, context_text)
    if kind == "call":
        tool, args = what
        # mcp__intent_loop__ (user-scope server) or mcp__plugin_intent-loop_intent_loop__ (a plugin's server)
        prefix = next(t for t in tools if t.endswith("__intent_start_task"))[: -len("intent_start_task")]
        block = {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:16]}", "name": f"{prefix}{tool}"}
        block["input"] = args
        return [block], "tool_use", {"decision": kind, "detail": what}
    return [{"type": "text", "text": what}], "end_turn", {"decision": kind, "detail": what}


def messages_sse(blocks: list[dict[str, Any]], stop: str, model: str) -> bytes:
    mid = f"msg_{uuid.uuid4().hex[:12]}"
    start_msg: dict[str, Any] = {"id": mid, "type": "message", "role": "assistant", "model": model, "content": []}
    start_msg.update({"stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 1}})
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start_msg}]
    for n, block in enumerate(blocks):
        if block["type"] == "text":
            events.append({"type": "content_block_start", "index": n, "content_block": {"type": "text", "text": ""}})
            delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        else:
            head = {k: block[k] for k in ("type", "id", "name")} | {"input": {}}
            events.append({"type": "content_block_start", "index": n, "content_block": head})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events.append({"type": "content_block_delta", "index": n, "delta": delta})
        events.append({"type": "content_block_stop", "index": n})
    events.append(
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 10}}
    )
    events.append({"type": "message_stop"})
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


# --------------------------------------------------------------------------------------------- Gemini API

#: How Gemini CLI names the tools of the MCP server ``intent_loop``.
GEMINI_PREFIX = "mcp_intent_loop_"


def gemini_tool_names(body: dict[str, Any]) -> list[str]:
    """The function declarations offered in a ``generateContent`` request."""
    names: list[str] = []
    for tool in body.get("tools", []):
        for decl in tool.get("functionDeclarations", []) if isinstance(tool, dict) else []:
            if isinstance(decl, dict):
                names.append(str(decl.get("name")))
    return names


def gemini_turn(body: dict[str, Any], script: Script) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The parts of the model's answer to one ``streamGenerateContent`` request plus a summary for the log."""
    contents = [c for c in body.get("contents", []) if isinstance(c, dict)]
    start, prompt = 0, ""
    for idx, content in enumerate(contents):
        parts = [p for p in content.get("parts", []) if isinstance(p, dict)]
        text = "\n".join(str(p.get("text", "")) for p in parts if "text" in p)
        if content.get("role") == "user" and "E2E-" in text:
            start, prompt = idx, text
    outputs: dict[str, str] = {}
    for content in contents[start:]:
        for part in content.get("parts", []):
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if isinstance(response, dict):
                outputs[str(response.get("name")).removeprefix(GEMINI_PREFIX)] = json.dumps(response.get("response"))
    if not any(name.startswith(GEMINI_PREFIX) for name in gemini_tool_names(body)):
        return [{"text": "E2E side answer."}], {"decision": "side", "detail": None}
    context_text = "\n".join(strings(body.get("contents"))) + "\n" + "\n".join(strings(body.get("systemInstruction")))
    if SECOND_MARK in prompt:
        kind, what = script.decide_second(outputs, context_text)
    else:
        kind, what = script.decide(prompt, outputs, context_text)
    if kind == "call":
        tool, args = what
        return [{"functionCall": {"name": f"{GEMINI_PREFIX}{tool}", "args": args}}], {"decision": kind, "detail": what}
    return [{"text": what}], {"decision": kind, "detail": what}


def gemini_answer(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One ``GenerateContentResponse`` holding ``parts``."""
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
    usage = {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}
    return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "e2e-scripted"}


def gemini_side_json(body: dict[str, Any]) -> dict[str, Any]:
    """The answer to a request that asks for JSON (Gemini CLI's own checks: the next speaker, the model router)."""
    text = json.dumps(
        {
            "reasoning": "e2e",
            "next_speaker": "user",
            "model_choice": "flash",
            "complexity_reasoning": "e2e",
            "complexity_score": 1,
        }
    )
    return gemini_answer([{"text": text}])


# ---------------------------------------------------------------------------------------------------- server


class FakeModel:
    """Serve both APIs on 127.0.0.1 in a background thread; every request is appended to ``log_path`` as JSON."""

    def __init__(self, log_path: Path, project_root: str | None = None) -> None:
        self.log_path = log_path
        self.script = Script(project_root)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def log(self, entry: dict[str, Any]) -> None:
        with self._lock, self.log_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")

    def requests(self) -> list[dict[str, Any]]:
        """Every logged request so far."""
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text(encoding="utf-8").splitlines() if line]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send(self, status: int, ctype: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                owner.log({"t": time.time(), "method": "GET", "path": self.path})
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, "application/json", b'{"object":"list","data":[],"models":[]}')
                else:
                    self._send(404, "application/json", b'{"error":"not found"}')

            def do_HEAD(self) -> None:
                self._send(200, "text/plain", b"")

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                path = self.path.split("?", 1)[0]
                entry: dict[str, Any] = {"t": time.time(), "method": "POST", "path": path}
                entry["text"] = "\n".join(strings(body))
                wants_json = (body.get("generationConfig") or {}).get("responseMimeType") == "application/json"
                if path.endswith(":countTokens"):
                    owner.log(entry)
                    self._send(200, "application/json", b'{"totalTokens": 100}')
                elif path.endswith((":streamGenerateContent", ":generateContent")):
                    entry["tools"] = gemini_tool_names(body)
                    if wants_json:
                        answer, summary = gemini_side_json(body), {"decision": "side", "detail": "json"}
                    else:
                        parts, summary = gemini_turn(body, owner.script)
                        answer = gemini_answer(parts)
                    entry.update(summary)
                    owner.log(entry)
                    if path.endswith(":streamGenerateContent"):
                        self._send(200, "text/event-stream", f"data: {json.dumps(answer)}\r\n\r\n".encode())
                    else:
                        self._send(200, "application/json", json.dumps(answer).encode())
                elif path.endswith("/responses"):
                    out, summary = responses_turn(body, owner.script)
                    entry["tools"] = responses_tool_names(body)
                    entry.update(summary)
                    owner.log(entry)
                    self._send(200, "text/event-stream", responses_sse(out))
                elif path.endswith("/messages/count_tokens"):
                    owner.log(entry)
                    self._send(200, "application/json", b'{"input_tokens": 100}')
                elif path.endswith("/messages"):
                    blocks, stop, summary = messages_turn(body, owner.script)
                    entry["tools"] = [str(t.get("name")) for t in body.get("tools", []) if isinstance(t, dict)]
                    entry.update(summary)
                    owner.log(entry)
                    model = str(body.get("model", "e2e-scripted"))
                    if body.get("stream"):
                        self._send(200, "text/event-stream", messages_sse(blocks, stop, model))
                    else:
                        msg: dict[str, Any] = {
                            "id": f"msg_{uuid.uuid4().hex[:12]}",
                            "type": "message",
                            "role": "assistant",
                        }
                        msg.update({"model": model, "content": blocks, "stop_reason": stop, "stop_sequence": None})
                        msg["usage"] = {"input_tokens": 100, "output_tokens": 10}
                        self._send(200, "application/json", json.dumps(msg).encode())
                else:
                    owner.log(entry)
                    self._send(404, "application/json", b'{"error":"not found"}')

        return Handler
