"""Rendering a page: the Jinja2 templates and static assets inside this package, the request's
language and query, and the response every page gets.

Every page carries `Content-Security-Policy: default-src 'self'`, so a browser refuses anything
from another origin (and inline scripts and styles): the pages need nothing but gpuprice. Static
assets are named with a hash of their bytes (`/static/app.js?v=…`), so they can be cached for a
day and still change at once when gpuprice does. HTML is sent compressed to clients that take it
(every browser), which keeps the market page of thousands of offers small: zstd (RFC 8878, the
`zstandard` package, level 3) when the request's Accept-Encoding takes it (Chromium and Firefox send
`gzip, deflate, br, zstd`), else brotli (RFC 7932, the `brotli` package, quality 4, 3 for pages
over 500 KB; Safari sends `br` over HTTPS, curl built with brotli sends it), else gzip, else the
page as it is. zstd's window holds the whole page and brotli's a megabyte of it, where gzip's holds
32 KB, so the rows' repeats far apart count: the 37-column market of 2,000 offers (1.9 MB of HTML)
is ~165 KB as zstd (~3-4 ms), ~176 KB as brotli (~8-10 ms), ~185 KB as gzip. A page is compressed
for an encoding the first time a client asks for it, and kept beside its plain bytes (`Rendered`).
The gzip is zlib-ng's (the `zlib-ng` package), level 3: for the market page of 2,000 offers of every
card it writes ~145 KB, faster than zlib at a level that small (benchmarks/pages.py prints the
table); every column of that market (1.32 MB since its rows lost their end tags, worded cells their
`data-v` and most rows their `data-k`) 179 KB on the default sort by price, in ~0.8× the time level 4
took on the 1.61 MB it was (183 KB). Pages over 1.5 MB take level 4 (level 3 wrote 197 KB for that
1.61 MB page; level 5 was needed while it was 1.9 MB: level 4 wrote 203 KB). From 512 KB zlib-ng
writes a page in pieces at once, one per core, as one gzip member (api.web.gzip_pieces): as much
CPU and a few bytes more, about half the wait where a core is free. Pages over 500 KB that a fast
setting writes small enough go at it instead (`fast_if_small`: brotli quality 1, ISA-L's igzip
level 2, the `isal` package)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property, lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus, urlencode

import brotli
from fastapi import Request
from fastapi.responses import Response
from isal import igzip
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from api.accept_encoding import preferred
from api.kept_zstd import KeptZstd
from api.web.gzip_pieces import gzip_in_pieces
from api.web.i18n import HTML_LANG, LANGUAGE_NAMES, LANGUAGES, Words, negotiate
from api.web.money import amount
from api.web.offer_id import LinkIds, offer_id
from api.web.table import moment, number, plain
from pricedb.version import VERSION

HERE = Path(__file__).parent
CSP = "default-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Vary": "Accept, Accept-Encoding, Accept-Language",
}
STATIC_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
GZIP_LEVEL = 3  # zlib-ng: 3 keeps a market of 2,000 offers under 200 KB; 4 is 5% smaller and slower
LARGE_PAGE_BYTES = 1_500_000
GZIP_LEVEL_LARGE = 4  # pages over 1.5 MB: level 3 wrote 197 KB for the 37-column market when it was 1.61 MB
ZSTD_LEVEL = 3  # zstd's default; level 1 is ~5% larger for ~0.6 ms less on that page
BROTLI_QUALITY = 4  # ~15% smaller than zstd 3 in ~3× its time; 5 is 6-10% smaller again, twice as slow
# Pages over 500 KB (the market of 2,000 offers in a few chosen columns, 0.76 MB, its default 13 columns,
# 1.13 MB, and up) take quality 3: 20-25% less time (brotli is most of a brotli view's time) for 8-24%
# more bytes, still under the budget (chosen columns 97 KB where 4 writes 90 KB; default columns 122 KB
# where 4 writes 104 KB; all 37 columns, the worst, 176 KB where 4 writes 141 KB). Quality 2 is barely
# faster than 3 and writes 203 KB for all 37 columns; 1 writes 207 KB. Smaller pages take 4 in < 5 ms.
BROTLI_LARGE_PAGE_BYTES = 500_000
BROTLI_QUALITY_LARGE = 3
# 1 MB: a thousand rows of the market back, so its repeats far apart count. On the 37-column market
# (1.9 MB) a window of the whole page (2**21 and up, to 16 MB) writes 20 bytes less, ~25% slower; 2**18: 3% larger.
BROTLI_WINDOW = 20
SMALLEST_COMPRESSED = 512  # smaller pages go as they are: compressing saves nothing worth a header
# Pages over 500 KB go at a fast setting where it writes them small enough (`fast_if_small`): brotli
# quality 1 and ISA-L's igzip level 2 take a fifth to a third of quality 3's and zlib-ng's time and
# write 8-25% more. The 37-column market of 2,000 offers sorted by region (rows of one provider
# together, 1.6 MB since round 9) is then 144 KB as brotli quality 1 and 168 KB as igzip 2; sorted by
# price (providers interleaved) 179 KB as brotli quality 1 (~5 ms, where quality 3 takes ~12 ms) but
# 223 KB as igzip, so gzip takes the strong setting there (measured on a host at 2/3 of its best speed).
FAST_FROM_BYTES = 500_000
BROTLI_FAST_QUALITY = 1
GZIP_FAST_LEVEL = 2  # igzip's levels are 0-3; 3 is as slow as zlib-ng's 5 and writes more
PROBE_SHARE = 8  # the share of a page compressed to tell whether the fast setting writes it small enough
# The probe reads 0.93-1.17× what the fast setting writes for the whole page on the market's views of
# 2,000 offers: over where providers interleave (sorted by price, ¥/GB·h, card: rows alike lie farther
# apart than an eighth), under where a provider's rows come together. Brotli quality 1 writes the
# all-columns view sorted by price in 179-183 KB, which a probe of 206-212 KB must let through;
# igzip's 223-230 KB (probe 246-255 KB) must not. A page the probe lets through in vain costs one fast
# compression more (brotli ~5 ms, igzip ~3 ms for 1.6 MB): its result is checked against `most`.
FAST_ENOUGH_BYTES = 215_000  # what the probe may predict for the fast setting
FAST_MOST_BYTES = 190_000  # what the fast setting may write (the budget is 200 KB)


@dataclass(frozen=True)
class Asset:
    body: bytes
    media_type: str
    etag: str


@cache  # no arguments: the package's static files, read once
def assets() -> dict[str, Asset]:
    found = {}
    for path in sorted((HERE / "static").iterdir()):
        if path.suffix in STATIC_TYPES:
            body = path.read_bytes()
            found[path.name] = Asset(body, STATIC_TYPES[path.suffix], hashlib.sha256(body).hexdigest()[:16])
    return found


def static_url(name: str) -> str:
    return f"/static/{name}?v={assets()[name].etag}"


@cache  # no arguments: one template environment
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(["html", "svg"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
    )
    env.filters.update(moment=moment, number=number, amount=amount, plain=plain)
    env.globals.update(static=static_url, version=VERSION, languages=LANGUAGES, language_names=LANGUAGE_NAMES)
    return env


@lru_cache(maxsize=8192)  # bounded by the data: called with column keys only (a few dozen)
def quoted(value: str) -> str:
    """A query value as query_string writes it (commas kept)."""
    return quote_plus(value, safe=",")


def query_string(params: Iterable[tuple[str, Any]]) -> str:
    """A query string of the given pairs, leaving out empty values (an empty value means "not given")."""
    kept = [(k, v) for k, v in params if v is not None and v != ""]
    return ("?" + urlencode(kept, safe=",")) if kept else ""  # commas stay readable: lists are comma lists


@dataclass
class Page:
    """One request for a page: its path and query (as given, repeated keys kept), its language."""

    path: str
    items: list[tuple[str, str]]
    lang: str
    lang_given: bool  # the URL named the language, so links keep naming it
    offline: bool = False
    # Where the id each offer is linked by comes from (the state's: api.web.offer_id.link_ids), asked on
    # the first link written: a page that links no offer never reads the data for it.
    link_source: Callable[[], LinkIds] = lambda: offer_id
    words: Words = field(init=False)

    def __post_init__(self) -> None:
        self.words = Words(self.lang)

    @classmethod
    def of(cls, request: Request, offline: bool = False) -> Page:
        items = list(request.query_params.multi_items())
        asked = next((v for k, v in reversed(items) if k == "lang"), None)
        lang = negotiate(asked, request.headers.get("accept-language"))
        return cls(request.url.path, items, lang, bool(asked) and asked.strip().lower() == lang, offline)

    @property
    def cache_key(self) -> tuple[Any, ...]:
        """What the page is kept under in the answer cache (api.routes.pages)."""
        return ("page", self.path, tuple(self.items), self.lang)

    def values(self) -> dict[str, list[str]]:
        """Each parameter's values in order (a checkbox group sends one per box)."""
        found: dict[str, list[str]] = {}
        for key, value in self.items:
            found.setdefault(key, []).append(value)
        return found

    def link(self, path: str, params: Iterable[tuple[str, Any]] = ()) -> str:
        """A link to another page (or this one), keeping the language if the URL named it."""
        pairs = [(k, v) for k, v in params if k != "lang"]
        if self.lang_given:
            pairs.append(("lang", self.lang))
        return path + query_string(pairs)

    @cached_property
    def links(self) -> LinkIds:
        return self.link_source()

    def offer_link(self, row: Mapping[str, Any]) -> str:
        """The offer page of an answer's row (an offer, an option, a digest's line), by the offer's
        id (`links`: api.web.offer_id); quick, as the market page makes thousands."""
        link = f"/offer?id={self.links(row['provider'], row['region'], row['sku'], row['pricing'])}"
        return link + (f"&lang={self.lang}" if self.lang_given else "")

    def here(self, **changes: Any) -> str:
        """This page with some parameters replaced (None: removed)."""
        pairs = [(k, v) for k, v in self.items if k not in changes]
        pairs += [(k, v) for k, v in changes.items() if v is not None]
        return self.path + query_string(pairs)

    def language_links(self) -> list[tuple[str, str, bool]]:
        return [(code, self.here(lang=code), code == self.lang) for code in LANGUAGES]

    def context(self, **values: Any) -> dict[str, Any]:
        return {"page": self, "t": self.words, "lang_tag": HTML_LANG[self.lang], **values}


def render(page: Page, template: str, **values: Any) -> str:
    return environment().get_template(template).render(page.context(**values))


def fast_if_small(
    body: bytes,
    fast: Callable[[bytes], bytes],
    strong: Callable[[bytes], bytes],
    enough: int = FAST_ENOUGH_BYTES,
    most: int = FAST_MOST_BYTES,
) -> bytes:
    """`body` compressed by `fast` where that is small enough, else by `strong`. Its middle eighth
    compressed by `fast` (an eighth of its time) tells: over `enough` for the whole page, `strong`
    (an eighth predicts 7% less to 17% more than the whole gets); else `fast`, unless it wrote `most`
    or more."""
    share = len(body) // PROBE_SHARE
    start = (len(body) - share) // 2
    if share == 0 or len(fast(body[start : start + share])) * len(body) > enough * share:
        return strong(body)
    found = fast(body)
    return found if len(found) < most else strong(body)


def _gzip_fast(body: bytes) -> bytes:
    return igzip.compress(body, GZIP_FAST_LEVEL, mtime=0)


def _gzip_strong(body: bytes) -> bytes:
    # in pieces at once from 512 KB where the host has cores to spare (gzip_pieces.pieces_for), else one stream
    return gzip_in_pieces(body, GZIP_LEVEL_LARGE if len(body) > LARGE_PAGE_BYTES else GZIP_LEVEL)


def gzipped(body: bytes) -> bytes:
    """`body` as a gzip member (no timestamp, so the same page is the same bytes): over 500 KB, by
    ISA-L's igzip where that is small enough (`fast_if_small`), else by zlib-ng."""
    if len(body) > FAST_FROM_BYTES:
        return fast_if_small(body, _gzip_fast, _gzip_strong)
    return _gzip_strong(body)


_zstd = KeptZstd(ZSTD_LEVEL)


def zstd_compressed(body: bytes) -> bytes:
    """`body` as one zstd frame (with its size, no checksum: the same page is the same bytes)."""
    return _zstd.compress(body)


def brotli_quality(size: int) -> int:
    """The brotli quality a page of `size` bytes is compressed at (quality 3 over 500 KB)."""
    return BROTLI_QUALITY_LARGE if size > BROTLI_LARGE_PAGE_BYTES else BROTLI_QUALITY


def _brotli_at(quality: int) -> Callable[[bytes], bytes]:
    return lambda body: brotli.compress(body, mode=brotli.MODE_TEXT, quality=quality, lgwin=BROTLI_WINDOW)


def brotli_compressed(body: bytes) -> bytes:
    """`body` as a brotli stream, its window a megabyte (the same page is the same bytes): over 500 KB
    at quality 1 where that is small enough (`fast_if_small`), else at brotli_quality's."""
    strong = _brotli_at(brotli_quality(len(body)))
    return fast_if_small(body, _brotli_at(BROTLI_FAST_QUALITY), strong) if len(body) > FAST_FROM_BYTES else strong(body)


# In the order preferred when the client weighs them the same: zstd first, as it writes a page under
# the size budget in a third of brotli's time (both windows hold most of the page); brotli next, as it
# still sees a thousand rows of the market back where gzip's 32 KB window sees a few dozen.
COMPRESSORS = {"zstd": zstd_compressed, "br": brotli_compressed, "gzip": gzipped}


@dataclass(frozen=True)
class Rendered:
    """A page's plain bytes, and its bytes in each encoding a client has asked for (kept together in
    the answer cache, which charges them all: `cache_size`)."""

    body: bytes
    encoded: dict[str, bytes] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, text: str | bytes) -> Rendered:
        return cls(text.encode() if isinstance(text, str) else text)

    @property
    def cache_size(self) -> int:
        return len(self.body) + sum(len(body) for body in list(self.encoded.values()))

    def has(self, encoding: str | None) -> bool:
        return encoding is None or encoding in self.encoded

    def encoded_as(self, encoding: str | None) -> bytes:
        """The page in `encoding` (None: as it is), compressed on the first ask and kept."""
        if encoding is None:
            return self.body
        found = self.encoded.get(encoding)
        if found is None:
            found = self.encoded[encoding] = COMPRESSORS[encoding](self.body)
        return found

    @property
    def compressed(self) -> bytes:
        """As gzip (every client that compresses takes it)."""
        return self.encoded_as("gzip")


def chosen_encoding(request: Request, size: int) -> str | None:
    """The encoding a page of `size` bytes goes in: the one the client weighs highest among those
    gpuprice writes (zstd, then br, then gzip when equal; `*` stands for any not named), None for none."""
    if size <= SMALLEST_COMPRESSED:
        return None
    return preferred(request.headers.get("accept-encoding", ""), COMPRESSORS)


def page_response(
    request: Request,
    rendered: Rendered | str,
    status: int = 200,
    media_type: str = "text/html; charset=utf-8",
    headers: Mapping[str, str] | None = None,
) -> Response:
    """The page with the headers every page gets; compressed as the client takes it (chosen_encoding)."""
    all_headers = {**PAGE_HEADERS, **(headers or {})}
    if isinstance(rendered, str):
        rendered = Rendered.of(rendered)
    encoding = chosen_encoding(request, len(rendered.body))
    if encoding is not None:
        all_headers["Content-Encoding"] = encoding
    return Response(rendered.encoded_as(encoding), status_code=status, media_type=media_type, headers=all_headers)
