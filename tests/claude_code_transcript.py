"""Claude Code transcripts in their real JSONL shape, built turn by turn for tests.

One object per line: ``user`` / ``assistant`` entries with ``uuid``, ``parentUuid``
(the previous entry), ``sessionId``, ``cwd``, ``timestamp``, ``isSidechain``,
``userType``, ``version``, ``gitBranch``; ``message.content`` a string (a typed
prompt) or a list of blocks (``text``, ``thinking``, ``tool_use``,
``tool_result``, ``image``); tool results come back as ``user`` entries with
``toolUseResult``; ``summary``, ``file-history-snapshot`` and ``system`` entries
sit between them. An assistant reply with several blocks is written as one
entry per block sharing ``message.id``, as the client writes it.
"""

from __future__ import annotations

import json
import uuid as uuid_module
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any


class Transcript:
    def __init__(self, path: Path, session_id: str, cwd: str,
                 start: datetime = datetime(2026, 11, 28, 9, 0, tzinfo=timezone.utc)) -> None:
        self.path, self.session_id, self.cwd = path, session_id, cwd
        self.clock = start
        self.parent: str | None = None
        self.uuids: list[str] = []

    def _base(self, kind: str, **extra: Any) -> dict[str, Any]:
        self.clock += timedelta(seconds=7)
        entry_uuid = str(uuid_module.uuid4())
        entry = {"parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": self.cwd,
                 "sessionId": self.session_id, "version": "2.1.14", "gitBranch": "main", "type": kind,
                 "uuid": entry_uuid, "timestamp": self.clock.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z", **extra}
        self.parent = entry_uuid
        self.uuids.append(entry_uuid)
        return entry

    def write(self, *entries: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            for entry in entries:
                handle.write(json.dumps(entry) + "\n")

    def user(self, text: str | list[dict[str, Any]], **extra: Any) -> str:
        entry = self._base("user", message={"role": "user", "content": text}, **extra)
        self.write(entry)
        return entry["uuid"]

    def assistant(self, *blocks: dict[str, Any] | str, **extra: Any) -> list[str]:
        """One entry per block (a str is a text block), sharing one ``message.id``."""
        message_id = "msg_" + uuid_module.uuid4().hex[:24]
        made = []
        for block in blocks:
            block = {"type": "text", "text": block} if isinstance(block, str) else block
            entry = self._base("assistant", requestId="req_" + uuid_module.uuid4().hex[:24], message={
                "id": message_id, "type": "message", "role": "assistant", "model": "claude-opus-4-5-20251101",
                "content": [block], "stop_reason": None, "stop_sequence": None,
                "usage": {"input_tokens": 4, "output_tokens": 120}}, **extra)
            self.write(entry)
            made.append(entry["uuid"])
        return made

    def tool_round(self, name: str, tool_input: dict[str, Any], output: str) -> None:
        """An assistant ``tool_use`` and the ``user`` entry carrying its ``tool_result``."""
        tool_id = "toolu_" + uuid_module.uuid4().hex[:24]
        self.assistant({"type": "tool_use", "id": tool_id, "name": name, "input": tool_input})
        self.user([{"tool_use_id": tool_id, "type": "tool_result", "content": output}],
                  toolUseResult={"stdout": output, "stderr": "", "interrupted": False})

    def summary(self, text: str) -> None:
        self.write({"type": "summary", "summary": text, "leafUuid": self.parent})

    def snapshot(self) -> None:
        self.write({"type": "file-history-snapshot", "messageId": str(uuid_module.uuid4()),
                    "snapshot": {"trackedFileBackups": {}}, "isSnapshotUpdate": False})

    def system(self, text: str) -> None:
        self.write(self._base("system", content=text, level="info", isMeta=False))


def thinking(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": "EqQBCkYIBxgCKkB"}


def image() -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
