"""Members written around an object's JSON (api.json_members) are what setting them on the parsed
object and writing it again gives, and a body in another shape is refused, never mangled."""

from __future__ import annotations

import json
import mmap
from pathlib import Path

from api.json_members import member_at, with_member_replaced, with_new_members
from api.state import dumps

DIGEST_LIKE = {
    "date": "2026-06-26",
    "window": {"from": "a", "to": "b"},
    "built_at": "2026-12-02T10:19:30Z",
    "changes": [{"sku": '智星云 "A100", \\ ,"built_at":"x"', "built_at": "nested"}],
}


def test_members_set_on_the_bytes_are_those_set_on_the_parsed_object() -> None:
    body = dumps(DIGEST_LIKE)
    replaced = with_member_replaced(body, "built_at", "2027-01-01T00:00:00Z", ("date", "window"))
    assert replaced == dumps({**DIGEST_LIKE, "built_at": "2027-01-01T00:00:00Z"})
    added = [("stored", False), ("note", '注 "n"'), ("deliveries", [{"target": "t", "error": None}])]
    assert with_new_members(body, added) == dumps({**DIGEST_LIKE, **dict(added)})
    both = with_member_replaced(body, "built_at", "2027-01-01T00:00:00Z", ("date", "window"), added)
    assert both == dumps({**DIGEST_LIKE, "built_at": "2027-01-01T00:00:00Z", **dict(added)})


def test_a_body_in_another_shape_is_refused() -> None:
    body = dumps(DIGEST_LIKE)
    assert member_at(body, "built_at", ("date",)) is None  # other members ahead
    assert member_at(json.dumps(DIGEST_LIKE).encode(), "built_at", ("date", "window")) is None  # spaced
    # the first match is a nested object's key: what is ahead of it does not parse as the members ahead
    nested_first = dumps({"window": {"to": "b", "built_at": "n"}, "built_at": "old"})
    assert member_at(nested_first, "built_at", ("window",)) is None
    assert with_member_replaced(dumps({"date": "d", "built_at": 5}), "built_at", "x", ("date",)) is None
    assert with_member_replaced(dumps({"date": "d", "built_at": 'a"b'}), "built_at", "x", ("date",)) is None
    assert with_new_members(b"{}", [("a", 1)]) is None
    assert with_new_members(b"[1]", [("a", 1)]) is None


def test_a_body_mapped_from_its_file_is_edited_as_its_bytes(tmp_path: Path) -> None:
    """A kept digest is mapped from its file (pricedb.day_answers.map_day_answer), not read."""
    body = dumps(DIGEST_LIKE)
    kept = tmp_path / "kept.json"
    kept.write_bytes(body)
    added = [("stored", False), ("deliveries", [])]
    with kept.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        assert member_at(mapped, "built_at", ("date", "window")) == member_at(body, "built_at", ("date", "window"))
        replaced = with_member_replaced(mapped, "built_at", "2027-01-01T00:00:00Z", ("date", "window"), added)
    assert replaced == with_member_replaced(body, "built_at", "2027-01-01T00:00:00Z", ("date", "window"), added)
    assert replaced == dumps({**DIGEST_LIKE, "built_at": "2027-01-01T00:00:00Z", **dict(added)})
