"""The cross-engine `kv_hints` envelope (vLLM `vllm/v1/kv_hints/protocol.py`, SGLang's
`KvHints`: protocol_version "0.1", message_id, actions of action_id / action_type /
action_version / payload) carries an orchestrator's cache intent with a request. TempoKV
reads one action type of its own and leaves the others to their consumers:

    {"action_id": "...", "action_type": "tempokv.ttu", "action_version": "1.0",
     "payload": {"ttu_seconds": 2.5}}

the time from the request's admission until its KV is used (a request an orchestrator sends
ahead of when it is due, a tool call whose end it knows). It becomes the TTU of the
request's claims, in place of the engine's estimate. An action that does not parse is
rejected on its own (logged), as the engines' dispatchers do; the request runs unhinted."""

from __future__ import annotations

import logging
import math
from typing import Any

PROTOCOL_VERSION = "0.1"
TTU_ACTION = "tempokv.ttu"
TTU_ACTION_MAJOR = "1"

log = logging.getLogger("tempokv.kv_hints")


def _field(obj: Any, name: str) -> Any:
    """A field of the envelope as a msgspec Struct (an attribute) or a decoded dict."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def hinted_ttu_ns(envelope: Any, request_id: str) -> int | None:
    """The TTU the envelope's tempokv.ttu action gives, in ns, or None (no envelope, no such
    action, or one that does not parse: logged)."""
    if envelope is None:
        return None
    version = _field(envelope, "protocol_version")
    if version != PROTOCOL_VERSION:
        log.warning("request %s: kv_hints protocol_version %r is not %s: ignored", request_id,
                    version, PROTOCOL_VERSION)
        return None
    ttu = None
    for action in _field(envelope, "actions") or []:
        if _field(action, "action_type") != TTU_ACTION:
            continue  # another consumer's action
        action_id = _field(action, "action_id")
        action_version = str(_field(action, "action_version") or "")
        payload = _field(action, "payload")
        seconds = payload.get("ttu_seconds") if isinstance(payload, dict) else None
        if action_version.split(".")[0] != TTU_ACTION_MAJOR:
            log.warning("request %s: kv hint %r: %s version %r unsupported (want %s.x): "
                        "rejected", request_id, action_id, TTU_ACTION, action_version,
                        TTU_ACTION_MAJOR)
        elif isinstance(seconds, bool) or not isinstance(seconds, (int, float)) \
                or not math.isfinite(seconds) or seconds < 0:
            log.warning("request %s: kv hint %r: payload.ttu_seconds must be a finite number "
                        ">= 0, not %r: rejected", request_id, action_id, seconds)
        else:
            ttu = int(seconds * 1e9)  # the last valid action of the envelope wins
    return ttu
