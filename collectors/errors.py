"""What can go wrong in a collector run, as one short tree.

    CollectorError            any failure of one provider's run; the runner records it and moves on
    ├── FetchError            the source could not be read: connect error, timeout, HTTP error after retries
    ├── ParseError            the source answered, but not in the shape the parser knows (page changed)
    │   └── InvalidQuote      one record read, but its values make no valid quote (names the record and why)
    ├── ImplausibleData       the shape was right but the numbers cannot be true (all quotes rejected)
    └── MissingCredentials    the source needs keys the user has not set: the run is *skipped*, not failed

Third-party exceptions (httpx, botocore, XML and JSON errors) are translated into these at one
boundary each and chained with `from`, so the original is never lost.
"""


class CollectorError(Exception):
    pass


class FetchError(CollectorError):
    """`status`, `body` and `url` are the HTTP error answer, when there was one (`Http` fills them in,
    the body and URL already redacted), so a collector can read a provider's error document whole."""

    def __init__(
        self, message: str, *, status: int | None = None, body: str | None = None, url: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.url = url


class ParseError(CollectorError):
    pass


class InvalidQuote(ParseError):
    """Raised by `Collector.quote`: `row` names the source record ("p4d.24xlarge us-east-1 spot"),
    `reason` the fields the quote model refused and why. Most sources fail the run with it; the manual
    sheet refuses that one row instead."""

    def __init__(self, url: str, row: str, reason: str) -> None:
        super().__init__(f"{url}: {row} is not a valid quote: {reason}")
        self.row = row
        self.reason = reason


class ImplausibleData(CollectorError):
    pass


class MissingCredentials(CollectorError):
    pass
