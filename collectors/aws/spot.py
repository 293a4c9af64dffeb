"""Spot prices from EC2 `DescribeSpotPriceHistory`, one region at a time, SigV4-signed.

Source: the EC2 Query API, `POST https://ec2.{region}.amazonaws.com/` with a form body
`Action=DescribeSpotPriceHistory&Version=2016-11-15&Filter.1.Name=availability-zone&
Filter.1.Value.1={region}*&InstanceType.1=g4dn.12xlarge&…&InstanceType.N=…&MaxResults=1000&
ProductDescription.1=Linux/UNIX[&NextToken=…]&StartTime={now}`. With StartTime = now, EC2 returns,
for each zone, the price in force at that moment. The instance types asked for are every whole-GPU
type of collectors.aws.instance_types (about 70), in batches of `BATCH` per request so no request
grows without bound; each batch is paged on its own (`MaxResults` 1000, the API's largest page, so
one page usually holds a batch's every zone). The answer is XML
(`DescribeSpotPriceHistoryResponse/spotPriceHistorySet/item{instanceType, productDescription,
spotPrice, timestamp, availabilityZone[, availabilityZoneId]}` in namespace
`http://ec2.amazonaws.com/doc/2016-11-15/`), paged with `nextToken` (empty on the last page).

Taken: the latest price per zone, then the cheapest zone per region and instance type, which the
quote's notes name ("cheapest of 4 zones: us-east-1d").

Why POST with a form body (what botocore itself sends for EC2) and why the zone filter: recorded
answers (`--offline`, `fixtures/aws/replay.json`) and local stand-ins reached through
`GPUPRICE_AWS_BASE_URL` see the path, query and body but not the regional host, and StartTime changes
on every run. With the parameters in the body in a fixed order and StartTime last, a replay route can
match everything but StartTime (`body_contains`), and the `availability-zone` filter (`us-east-1*`,
wildcards are supported by EC2 filters) names the region inside the request itself. It also
guarantees that every zone returned belongs to the region asked for, which `parse` checks.

Credentials come from botocore's chain (environment, `~/.aws` profiles, SSO, container and instance
roles), or from `GPUPRICE_AWS_ACCESS_KEY_ID`/`GPUPRICE_AWS_SECRET_ACCESS_KEY`; none means no spot
(`resolve_credentials` says why). Offline, fixed placeholder keys sign the replayed requests, so the
signing path runs end to end without real keys. The signature is computed by botocore's `SigV4Auth`
on the final request (after base-URL rewriting), on every attempt, via `Http.request(sign=…)`.
Errors answered as EC2 error XML (`<Response><Errors><Error><Code>…<Message>…`) become FetchErrors
naming the code and message.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from urllib.parse import urlencode
from xml.etree import ElementTree

import botocore.session
import httpx
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials
from botocore.exceptions import BotoCoreError, ProfileNotFound

from collectors.aws.common import instance_quote
from collectors.aws.instance_types import WHOLE_GPU_TYPES, InstanceGpus, NotStored, gpus_of
from collectors.base import QuoteMaker, RawResponse
from collectors.errors import FetchError, ParseError
from collectors.http import Http, Signer
from pricedb import clock, redact
from pricedb.models import Pricing, Quote
from pricedb.settings import Settings

EC2_ENDPOINT = "https://ec2.{region}.amazonaws.com/"
API_VERSION = "2016-11-15"
PRODUCT_DESCRIPTION = "Linux/UNIX"
FORM_CONTENT_TYPE = "application/x-www-form-urlencoded; charset=utf-8"
MAX_PAGES = 50  # per batch
BATCH = 100  # instance types per request: the whole table (~70) in one today, more split
PAGE_SIZE = 1000  # MaxResults: the largest the API allows
NO_CREDENTIALS = "no AWS credentials found (environment, ~/.aws profile or role)"
# Offline only: replayed answers do not check signatures, but the request is signed all the same.
OFFLINE_CREDENTIALS = ReadOnlyCredentials("AKIAGPUPRICEOFFLINE0", "offline-replay-placeholder-secret", None)

_ERROR_CODE = re.compile(r"<Code>\s*([^<]+?)\s*</Code>")
_ERROR_MESSAGE = re.compile(r"<Message>\s*([^<]*?)\s*(?:</Message>|…|$)")


def endpoint(region: str) -> str:
    return EC2_ENDPOINT.format(region=region)


def source_url(region: str) -> str:
    return endpoint(region) + "?Action=DescribeSpotPriceHistory"


# ----- credentials and signing ---------------------------------------------------------------
def resolve_credentials(settings: Settings) -> tuple[ReadOnlyCredentials | None, str]:
    """(credentials, where they came from) or (None, why there are none). Blocking: botocore may
    read files or ask a metadata endpoint, so call it in a thread."""
    if settings.offline:
        return OFFLINE_CREDENTIALS, "offline placeholder"
    if settings.aws_access_key_id and settings.aws_secret_access_key:
        key, secret = settings.aws_access_key_id, settings.aws_secret_access_key
        return ReadOnlyCredentials(key.get_secret_value(), secret.get_secret_value(), None), "GPUPRICE_AWS_* settings"
    try:
        session = botocore.session.Session(profile=settings.aws_profile)
        found = session.get_credentials()
        frozen = found.get_frozen_credentials() if found is not None else None
    except ProfileNotFound:
        return None, f"AWS profile {settings.aws_profile!r} not found"
    except BotoCoreError as exc:
        raise FetchError(f"could not read AWS credentials: {exc}") from exc
    if frozen is None or not frozen.access_key or not frozen.secret_key:
        return None, NO_CREDENTIALS
    redact.learn(frozen.access_key, frozen.secret_key, frozen.token)  # from ~/.aws or a role: no setting knows them
    return frozen, found.method


def signer(credentials: ReadOnlyCredentials, region: str) -> Signer:
    """Sign an httpx request in place with SigV4 for EC2 in `region`."""

    def sign(request: httpx.Request) -> None:
        headers = {"Host": request.headers["host"]}
        if "content-type" in request.headers:
            headers["Content-Type"] = request.headers["content-type"]
        aws = AWSRequest(method=request.method, url=str(request.url), data=request.content, headers=headers)
        try:
            SigV4Auth(credentials, "ec2", region).add_auth(aws)
        except BotoCoreError as exc:
            raise FetchError(f"could not sign the EC2 request for {region}: {exc}") from exc
        for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
            value = aws.headers.get(name)
            if value is not None:
                request.headers[name] = value

    return sign


# ----- fetch -----------------------------------------------------------------------------------
def batches(instance_types: tuple[str, ...] = WHOLE_GPU_TYPES, size: int | None = None) -> list[tuple[str, ...]]:
    """The instance types asked for, `size` (default `BATCH`) per request, in a fixed order."""
    size = size or BATCH
    ordered = tuple(sorted(instance_types))
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


def request_body(
    region: str, start_time: datetime, instance_types: tuple[str, ...], next_token: str | None = None
) -> str:
    params = [
        ("Action", "DescribeSpotPriceHistory"),
        ("Version", API_VERSION),
        ("Filter.1.Name", "availability-zone"),
        ("Filter.1.Value.1", f"{region}*"),
    ]
    params += [(f"InstanceType.{n}", t) for n, t in enumerate(instance_types, start=1)]
    params.append(("MaxResults", str(PAGE_SIZE)))
    params.append(("ProductDescription.1", PRODUCT_DESCRIPTION))
    if next_token:
        params.append(("NextToken", next_token))
    params.append(("StartTime", start_time.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")))  # always last
    return urlencode(params)


def ec2_error(text: str) -> tuple[str, str] | None:
    """(code, message) of an EC2 error document, also when cut short inside a FetchError message."""
    code = _ERROR_CODE.search(text)
    if code is None or "<Errors>" not in text:
        return None
    message = _ERROR_MESSAGE.search(text, code.end())
    return html.unescape(code.group(1)), html.unescape(message.group(1)) if message else ""


async def fetch_region(
    http: Http, region: str, credentials: ReadOnlyCredentials, instance_types: tuple[str, ...] = WHOLE_GPU_TYPES
) -> list[RawResponse]:
    """Every page of one region's answers: each batch of instance types, following `nextToken`."""
    start_time = clock.now()
    pages: list[RawResponse] = []
    for batch in batches(instance_types):
        token: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            body = request_body(region, start_time, batch, token).encode()
            label = f"spot:{region}:{len(pages) + 1}"
            raw = await post_ec2(http, region, credentials, "DescribeSpotPriceHistory", body, label)
            pages.append(raw)
            token = next_token(raw)
            if not token:
                break
            if token in seen:
                raise FetchError(f"EC2 DescribeSpotPriceHistory in {region}: nextToken repeats; giving up")
            seen.add(token)
        else:
            raise FetchError(f"EC2 DescribeSpotPriceHistory in {region}: more than {MAX_PAGES} pages")
    return pages


async def post_ec2(
    http: Http, region: str, credentials: ReadOnlyCredentials, action: str, body: bytes, label: str
) -> RawResponse:
    """One signed EC2 Query API request (`action` is for the error text): EC2's own error code and
    message, from a 4xx/5xx or from an error document inside a 200, fail it."""
    try:
        raw = await http.fetch(
            "POST",
            endpoint(region),
            label=label,
            sign=signer(credentials, region),
            content=body,
            headers={"Content-Type": FORM_CONTENT_TYPE},
        )
    except FetchError as exc:
        error = ec2_error(exc.body or str(exc))
        if error is None:
            raise
        raise FetchError(f"EC2 {action} in {region}: {error[0]}: {error[1]}") from exc
    error = ec2_error(raw.body.decode("utf-8", "replace"))
    if error is not None:
        raise FetchError(f"EC2 {action} in {region}: {error[0]}: {error[1]}")
    return raw


def item_count(raw: RawResponse) -> int:
    """How many prices (any instance type or product) one page holds."""
    return len(_items(raw))


def next_token(raw: RawResponse) -> str | None:
    root = _root(raw)
    for child in root:
        if _local(child.tag) == "nextToken":
            return (child.text or "").strip() or None
    return None


# ----- parse -----------------------------------------------------------------------------------
def parse_spot(raws: Iterable[RawResponse], quote: QuoteMaker, skipped: Counter[str] | None = None) -> list[Quote]:
    """Cheapest zone per region and instance type, from every page of every region. Instance types
    whose GPUs cannot be stored (collectors.aws.instance_types.NotStored) are counted in `skipped`."""
    # (region, instance type, zone) -> (timestamp, price, zone id, page)
    latest: dict[tuple[str, str, str], tuple[datetime, float, str | None, RawResponse]] = {}
    gpus: dict[str, InstanceGpus | NotStored] = {}
    for raw in raws:
        region = region_of(raw)
        for item in _items(raw):
            sku, zone = item.get("instanceType", ""), item.get("availabilityZone") or item.get("availabilityZoneId")
            if item.get("productDescription") != PRODUCT_DESCRIPTION:
                continue
            if sku not in gpus:
                try:
                    gpus[sku] = gpus_of(sku)
                except NotStored as why:
                    gpus[sku] = why
            if isinstance(gpus[sku], NotStored):
                continue
            if not zone:
                raise ParseError(f"{raw.url}: a {sku} spot price without its availability zone")
            if "availabilityZone" in item and not zone.startswith(region):
                raise ParseError(f"{raw.url}: zone {zone} answered for region {region}")
            when, price = _timestamp(item, raw), _price(item, raw)
            key = (region, sku, zone)
            if key not in latest or when > latest[key][0]:
                latest[key] = (when, price, item.get("availabilityZoneId"), raw)
    cheapest: dict[tuple[str, str], tuple[float, str, str | None, RawResponse]] = {}
    zones: dict[tuple[str, str], int] = {}
    for (region, sku, zone), (_, price, zone_id, raw) in latest.items():
        zones[(region, sku)] = zones.get((region, sku), 0) + 1
        best = cheapest.get((region, sku))
        if best is None or (price, zone) < (best[0], best[1]):
            cheapest[(region, sku)] = (price, zone, zone_id, raw)
    if skipped is not None:
        skipped.update(str(why) for why in gpus.values() if isinstance(why, NotStored))
    quotes = []
    for (region, sku), (price, zone, zone_id, raw) in sorted(cheapest.items()):
        where = f"{zone} ({zone_id})" if zone_id and zone_id != zone else zone
        count = zones[(region, sku)]
        notes = f"cheapest of {count} zones: {where}" if count > 1 else f"only zone: {where}"
        quotes.append(
            instance_quote(
                quote,
                raw,
                region=region,
                sku=sku,
                gpus=gpus[sku],  # type: ignore[arg-type]  # NotStored ones never reach `latest`
                pricing=Pricing.SPOT,
                price=price,
                source_url=source_url(region),
                notes=notes,
            )
        )
    return quotes


def region_of(raw: RawResponse) -> str:
    parts = raw.label.split(":")
    if len(parts) < 2 or parts[0] != "spot" or not parts[1]:
        raise ParseError(f"{raw.url}: spot answer labelled {raw.label!r}, expected 'spot:<region>[:<page>]'")
    return parts[1]


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _root(raw: RawResponse) -> ElementTree.Element:
    try:
        root = ElementTree.fromstring(raw.body if raw.path is None else raw.path.read_bytes())
    except ElementTree.ParseError as exc:
        raise ParseError(f"{raw.url}: the spot price answer is not XML ({exc})") from exc
    name = _local(root.tag)
    if name == "DescribeSpotPriceHistoryResponse":
        return root
    error = ec2_error(raw.text()) if name == "Response" else None
    if error is not None:
        raise ParseError(f"{raw.url}: an EC2 error, not spot prices: {error[0]}: {error[1]}")
    raise ParseError(f"{raw.url}: expected DescribeSpotPriceHistoryResponse, got <{name}>")


def _items(raw: RawResponse) -> list[dict[str, str]]:
    root = _root(raw)
    history = next((child for child in root if _local(child.tag) == "spotPriceHistorySet"), None)
    if history is None:
        raise ParseError(f"{raw.url}: no spotPriceHistorySet in the answer")
    return [
        {_local(field.tag): (field.text or "").strip() for field in item}
        for item in history
        if _local(item.tag) == "item"
    ]


def _price(item: dict[str, str], raw: RawResponse) -> float:
    try:
        return float(item["spotPrice"])
    except (KeyError, ValueError) as exc:
        raise ParseError(f"{raw.url}: bad spotPrice {item.get('spotPrice')!r} for {item.get('instanceType')}") from exc


def _timestamp(item: dict[str, str], raw: RawResponse) -> datetime:
    try:
        when = datetime.fromisoformat(item["timestamp"])
    except (KeyError, ValueError) as exc:
        raise ParseError(f"{raw.url}: bad timestamp {item.get('timestamp')!r} for {item.get('instanceType')}") from exc
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
