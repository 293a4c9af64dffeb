"""A source's own words when it refuses a request, for the run's error: the code and message of its
error document (JSON, nested however the provider nests it, or XML), else a short excerpt of the
text. Read with regexes, so a cut copy of a body works too.

Callers pass text that has already been through `pricedb.redact` (`Http` does), so the words can
never carry a credential the error body echoed.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

DEFAULT_KEYS = ("code", "message")
# Where providers put the code and the message of an error (Google, Lambda, RunPod, Vast, Feishu,
# DingTalk, Alibaba Cloud and Tencent Cloud use some of these names each), first match wins.
CODE_KEYS = ("code", "errcode", "error_code", "errorcode", "error", "status")
MESSAGE_KEYS = ("message", "msg", "errmsg", "error_description", "detail", "title")
WORD_CHARS = 200
SNIPPET_CHARS = 160

_XML_CODE = re.compile(r"<Code>\s*([^<]+?)\s*</Code>")
_XML_MESSAGE = re.compile(r"<Message>\s*([^<]*?)\s*(?:</Message>|…|$)")


def _string_value(text: str, key: str, flags: int = 0) -> str | None:
    match = re.search(rf'"{re.escape(key)}"\s*:\s*"((?:[^"\\]|\\.)*)"', text, flags)
    return match.group(1).replace('\\"', '"') if match else None


def error_detail(text: str, keys: Sequence[str] = DEFAULT_KEYS) -> str | None:
    """`"code": "x"`, `"message": "y"` → "x: y" (the keys found, in the order given), or None."""
    found = [value for key in keys if (value := _string_value(text, key)) is not None]
    return ": ".join(found) or None


def _first(text: str, keys: Sequence[str]) -> str | None:
    for key in keys:
        value = _string_value(text, key, re.IGNORECASE)
        if value:
            return _cut(value, WORD_CHARS)
    return None


def answer_words(text: str) -> str | None:
    """ "code: message" from a JSON or XML error document, or None when it has neither."""
    code, message = _first(text, CODE_KEYS), _first(text, MESSAGE_KEYS)
    if code is None and message is None:
        xml_code = _XML_CODE.search(text)
        if xml_code is None:
            return None
        xml_message = _XML_MESSAGE.search(text, xml_code.end())
        code, message = html.unescape(xml_code.group(1)), html.unescape(xml_message.group(1)) if xml_message else None
    return ": ".join(part for part in (code, message) if part)


def excerpt(text: str, limit: int = SNIPPET_CHARS) -> str:
    """The text of a body that is no error document (an HTML page, a plain sentence), tags dropped."""
    return _cut(" ".join(re.sub(r"<[^>]*>", " ", text).split()), limit)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def words_of(text: str) -> str:
    return answer_words(text) or excerpt(text)
