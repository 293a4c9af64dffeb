"""Changes to an object's JSON made on its bytes, where parsing and writing it again would cost more
than the answer is worth (a past day's digest listing thousands of changes is megabytes). Each gives
what assigning to the parsed dict and writing it with `api.state.dumps` gives, or None when `body`
is not in the shape that makes that so; the caller then parses it."""

from __future__ import annotations

import json
import mmap
from collections.abc import Iterable, Sequence
from typing import Any

from api.state import dumps

Body = bytes | mmap.mmap  # an object's JSON, read or mapped from its file (slices of either are bytes)


def with_new_members(body: bytes, members: Iterable[tuple[str, Any]]) -> bytes | None:
    """`body` (a non-empty JSON object as `dumps` writes it) with `members` set after its own. The
    caller knows the object has none of these keys (setting an existing key keeps its place)."""
    if not _an_object(body):
        return None
    return _joined([memoryview(body)[:-1]], members)


def _an_object(body: Body) -> bool:
    return body[:1] == b"{" and body[-1:] == b"}" and len(body) >= 3


def _joined(pieces: list[bytes | memoryview], members: Iterable[tuple[str, Any]]) -> bytes:
    """The object's pieces (its closing brace left off) with `members` and the brace after them, in one
    copy: a fresh megabytes-long bytes costs its page faults (api.process_memory maps each anew),
    ~1,000 for a 4 MB digest, more than copying it."""
    added = [b"," + dumps(key) + b":" + dumps(value) for key, value in members]
    return b"".join([*pieces, *added, b"}"])


def member_at(body: Body, key: str, keys_before: Sequence[str]) -> int | None:
    """Where the object's own member `key` starts in `body` (at its comma), where `keys_before` are
    the members ahead of it, in order: they are parsed (a few short members) to prove the match is
    not text inside a value or a nested object's key, and must be written as `dumps` writes them
    (the body is taken to be written by it throughout: what gpuprice stores and keeps is). None:
    not found, or `body` is in another shape."""
    at = body.find(b"," + dumps(key) + b":")
    if at < 0:
        return None
    ahead_json = body[:at] + b"}"
    try:
        ahead = json.loads(ahead_json)
    except ValueError:
        return None
    if not isinstance(ahead, dict) or list(ahead) != list(keys_before) or dumps(ahead) != ahead_json:
        return None
    return at


def with_member_replaced(
    body: Body, key: str, value: str, keys_before: Sequence[str], members: Iterable[tuple[str, Any]] = ()
) -> bytes | None:
    """`body` with its text member `key` (found by `member_at`) given `value`, and `members` set
    after its own as `with_new_members` sets them, in one copy of the body."""
    at = member_at(body, key, keys_before)
    if at is None or not _an_object(body):
        return None
    start = at + len(dumps(key)) + 2
    end = body.find(b'"', start + 1)
    if body[start : start + 1] != b'"' or end < 0 or b"\\" in body[start:end]:
        return None  # not text, or text with an escape (the values replaced here, moments, have none)
    view = memoryview(body)
    return _joined([view[:start], dumps(value), view[end + 1 : -1]], members)
