"""An event localmem does not answer is refused by the hook client before anything is opened or started."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from daemon_helpers import Warm
from localmem.hooks import client, events
from localmem.hooks.event_names import EVENTS

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the warm process needs Linux")


def test_the_client_and_the_answering_code_know_the_same_events():
    assert set(client.PROMPT_EVENTS) | set(client.CAPTURE_EVENTS) == set(events.EVENTS) == set(EVENTS)


@pytest.mark.parametrize("daemon", ["0", "1"])
def test_an_unknown_event_is_refused_without_opening_the_store_or_starting_a_warm_process(tmp_path: Path,
                                                                                           daemon: str):
    warm = Warm(tmp_path / "memory.db")
    try:
        payload = {"session_id": "s1", "hook_event_name": "Notification", "message": "waiting for input"}
        proc = warm.localmem("hook", "Notification", "-v", stdin=json.dumps(payload), LOCALMEM_DAEMON=daemon)
        assert proc.returncode == 0 and proc.stdout == "", proc.stderr
        assert not warm.db.exists()  # the store was never opened, so never created
        assert "'Notification' is not an event localmem answers" in proc.stderr
        assert "UserPromptSubmit" in proc.stderr  # the known events are named
        assert not warm.folder.exists() or not any(warm.folder.iterdir())  # and no warm process was started
        known = warm.localmem("hook", "Stop", "-v", stdin=json.dumps({"session_id": "s1"}), LOCALMEM_DAEMON="0")
        assert known.returncode == 0 and "is not an event" not in known.stderr  # a known event goes on as before
    finally:
        warm.close()
