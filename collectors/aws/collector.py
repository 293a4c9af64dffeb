"""The AWS collector: every EC2 GPU instance type whose GPUs collectors.aws.instance_types knows
(p6-b200 B200, p5 H100, p5e/p5en H200, p4d/p4de A100, p3/p3dn V100, g7e RTX PRO 6000, g6e L40S,
g6/gr6 L4, g5 A10G, g5g T4G, g4dn T4, g4ad Radeon Pro V520, g3 M60, p2 K80).

- scope `list` (daily): on-demand and standard No Upfront reserved 1yr/3yr from the Price List bulk
  file of each region, https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/{region}/index.csv
  (no key; hundreds of MB each, streamed and pre-filtered), see collectors.aws.bulk;
  with them, the zones each type is sold in (EC2 DescribeInstanceTypeOfferings, credentials needed),
  see collectors.aws.zones;
- scope `spot` (hourly): EC2 DescribeSpotPriceHistory at https://ec2.{region}.amazonaws.com/ (SigV4, AWS
  credentials from botocore's chain), cheapest zone per region, see collectors.aws.spot.

Quirks (details in those modules): the 5-line preamble before the CSV header; Capacity Reservation rows
(Unused/Allocated) beside the Used ones; Capacity Blocks for ML listed as OnDemand terms with
MarketOption CapacityBlock; AWS's API misreports p4de's GPU memory (the family table has it as 80GB);
fractional sizes (g6f, gr6f: a share of one L4) stored as slices; unknown GPU families counted
per instance type, not stored, and listed in the run's notes. Without credentials spot is reported
as not covered and the list prices are still collected.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import ClassVar

from collectors.aws import bulk, spot, zones
from collectors.aws.common import PROVIDER
from collectors.aws.instance_types import GPU_TYPES
from collectors.base import Collector, Fetched, RawResponse, Scope, unknown_gpus
from collectors.errors import CollectorError, FetchError, MissingCredentials, ParseError
from collectors.http import Http
from pricedb.models import Pricing, Quote

# Regions that sell both p4d.24xlarge and p4de.24xlarge (and most other GPU families), spread over
# the three continents users rent from: us-east-1 (N. Virginia, AWS's largest and usually cheapest
# region), us-west-2 (Oregon, the other large US GPU region), eu-central-1 (Frankfurt) and
# ap-northeast-1 (Tokyo), the nearest p4de region to mainland China. Each costs one bulk file
# (hundreds of MB) a day and one spot call an hour; widen with GPUPRICE_AWS_REGIONS=us-east-1,us-east-2,… as needed.
DEFAULT_REGIONS = ("us-east-1", "us-west-2", "eu-central-1", "ap-northeast-1")

LIST_PRICINGS = frozenset({Pricing.ON_DEMAND, Pricing.RESERVED_1Y, Pricing.RESERVED_3Y})
SPOT_PRICINGS = frozenset({Pricing.SPOT})


class AwsCollector(Collector):
    name: ClassVar[str] = PROVIDER
    title: ClassVar[str] = "Amazon Web Services (EC2)"
    source_urls: ClassVar[tuple[str, ...]] = (bulk.PRICE_LIST_URL, spot.EC2_ENDPOINT)
    pricings: ClassVar[frozenset[Pricing]] = LIST_PRICINGS | SPOT_PRICINGS
    scopes: ClassVar[tuple[Scope, ...]] = (
        Scope("list", LIST_PRICINGS, 24 * 60),
        Scope("spot", SPOT_PRICINGS, 60),
    )
    # Linux instances are billed per second with a 60-second minimum (on-demand, spot and reserved alike).
    billing_increment_s: ClassVar[int] = 1
    billing_minimum_s: ClassVar[int] = 60
    # The list prices are one streamed price file of hundreds of MB per region.
    deadline_s: ClassVar[float] = 45 * 60.0

    def regions(self) -> list[str]:
        return self.settings.regions_for(PROVIDER, list(DEFAULT_REGIONS))

    async def fetch(self, http: Http, scope: Scope) -> Fetched:
        fetched = Fetched([])
        try:
            if scope.pricings & LIST_PRICINGS:
                for region in self.regions():
                    raw = await http.download(
                        bulk.price_list_url(region), label=f"list:{region}", keep_line=bulk.KeepGpuLines()
                    )
                    fetched.responses.append(raw)
                await self._fetch_zones(http, fetched)
            if Pricing.SPOT in scope.pricings:
                await self._fetch_spot(http, fetched, alone=not scope.pricings & LIST_PRICINGS)
        except BaseException:
            fetched.remove_files()  # a failed fetch leaves no half-used temp files behind
            raise
        return fetched

    async def _fetch_zones(self, http: Http, fetched: Fetched) -> None:
        """The zones each instance type is sold in (collectors.aws.zones), with the list prices: only
        SkyPilot's catalog needs them, so without credentials or on failure the run only says so."""
        try:
            credentials, why = await asyncio.to_thread(spot.resolve_credentials, self.settings)
        except CollectorError as exc:
            credentials, why = None, str(exc)
        if credentials is None:
            fetched.notes.append(f"availability zones not collected (SkyPilot's AWS catalog needs them): {why}")
            return
        for region in self.regions():
            try:
                fetched.zones[region] = await zones.fetch_region(http, region, credentials, GPU_TYPES)
            except CollectorError as exc:
                fetched.notes.append(f"availability zones for {region} not collected: {exc}")

    async def _fetch_spot(self, http: Http, fetched: Fetched, alone: bool) -> None:
        """Spot for every region. Without credentials, or when every region fails, a spot-only run
        is skipped or fails; a run that also brings list prices keeps those and says why spot is missing."""
        credentials, why = await asyncio.to_thread(spot.resolve_credentials, self.settings)
        if credentials is None:
            if alone:
                raise MissingCredentials(f"spot prices need AWS credentials: {why}")
            fetched.not_covered[Pricing.SPOT] = why
            return
        regions = self.regions()
        results = await asyncio.gather(
            *(spot.fetch_region(http, region, credentials) for region in regions), return_exceptions=True
        )
        failures: list[tuple[str, CollectorError]] = []
        for region, result in zip(regions, results, strict=True):
            if isinstance(result, CollectorError):
                failures.append((region, result))
            elif isinstance(result, BaseException):
                raise result
            else:
                fetched.responses.extend(result)
                if not any(spot.item_count(raw) for raw in result):
                    fetched.notes.append(f"DescribeSpotPriceHistory returned no spot prices for {region}")
        if failures and len(failures) == len(regions):
            first = failures[0][1]
            if alone:
                if len(failures) == 1:
                    raise first
                raise FetchError("; ".join(f"{region}: {exc}" for region, exc in failures)) from first
            fetched.not_covered[Pricing.SPOT] = f"DescribeSpotPriceHistory failed: {first}"
        else:
            fetched.notes.extend(f"spot prices for {region} not collected: {exc}" for region, exc in failures)

    def parse(self, fetched: Fetched) -> list[Quote]:
        return self.parse_report(fetched)[0]

    def parse_report(self, fetched: Fetched) -> tuple[list[Quote], list[dict[str, str]]]:
        """The quotes, and each GPU instance type whose card is unknown, with how many region files
        and spot pages listed it (for the run's notes)."""
        quotes: list[Quote] = []
        spot_pages: list[RawResponse] = []
        skipped: Counter[str] = Counter()  # "instance type: why its GPUs are unknown" → times met
        for raw in fetched.responses:
            kind, _, rest = raw.label.partition(":")
            if kind == "list":
                quotes.extend(bulk.parse_price_list(raw, self.quote, region=rest or None, skipped=skipped))
            elif kind == "spot":
                spot_pages.append(raw)
            else:
                raise ParseError(f"{raw.url}: unexpected response label {raw.label!r}")
        quotes.extend(spot.parse_spot(spot_pages, self.quote, skipped=skipped))
        return quotes, unknown_gpus(skipped)
