"""TC3-HMAC-SHA256 against Tencent's documented worked example ("Signature v3", CVM API docs).

The example: POST https://cvm.tencentcloudapi.com/, DescribeInstances, version 2017-03-12,
ap-guangzhou, X-TC-Timestamp 1551113065, body
`{"Limit": 1, "Filters": [{"Values": ["\\u672a\\u547d\\u540d"], "Name": "instance-name"}]}`,
SecretKey `Gu5t9xGARNpq86cd98joQYCN3EXAMPLE`. The page publishes the payload hash, the canonical
request, its hash, the string to sign, the signature and the Authorization header; each is checked.
"""

from __future__ import annotations

import httpx
from pydantic import SecretStr

from collectors.tencent import tc3

TIMESTAMP = 1551113065
BODY = b'{"Limit": 1, "Filters": [{"Values": ["\\u672a\\u547d\\u540d"], "Name": "instance-name"}]}'
SECRET_ID = "AKID**********************0123456789EXAMPLE"
SECRET_KEY = SecretStr("Gu5t9xGARNpq86cd98joQYCN3EXAMPLE")
CONTENT_TYPE = "application/json; charset=utf-8"

DOC_PAYLOAD_HASH = "35e9c5b0e3ae67532d3c9f17ead6c90222632e5b1ff7f6e89887f1398934f064"
DOC_CANONICAL_REQUEST = (
    "POST\n/\n\ncontent-type:application/json; charset=utf-8\nhost:cvm.tencentcloudapi.com\n\n"
    f"content-type;host\n{DOC_PAYLOAD_HASH}"
)
DOC_CANONICAL_HASH = "5ffe6a04c0664d6b969fab9a13bdab201d63ee709638e2749d62a09ca18d7031"
DOC_STRING_TO_SIGN = f"TC3-HMAC-SHA256\n1551113065\n2019-02-25/cvm/tc3_request\n{DOC_CANONICAL_HASH}"
DOC_SIGNATURE = "72e494ea809ad7a8c8f7a4507b9bddcbaa8e581f516e8da2f66e2c5a96525168"
DOC_AUTHORIZATION = (
    f"TC3-HMAC-SHA256 Credential={SECRET_ID}/2019-02-25/cvm/tc3_request, "
    f"SignedHeaders=content-type;host, Signature={DOC_SIGNATURE}"
)


def example_request() -> httpx.Request:
    return httpx.Request(
        "POST",
        "https://cvm.tencentcloudapi.com/",
        content=BODY,
        headers={
            "Content-Type": CONTENT_TYPE,
            "X-TC-Action": "DescribeInstances",
            "X-TC-Version": "2017-03-12",
            "X-TC-Region": "ap-guangzhou",
        },
    )


def test_each_documented_step_is_reproduced() -> None:
    canonical = tc3.canonical_request("POST", "/", "", CONTENT_TYPE, "cvm.tencentcloudapi.com", BODY)
    assert canonical == DOC_CANONICAL_REQUEST
    to_sign = tc3.string_to_sign(TIMESTAMP, "cvm", canonical)
    assert to_sign == DOC_STRING_TO_SIGN
    assert tc3.signature(SECRET_KEY, TIMESTAMP, "cvm", to_sign) == DOC_SIGNATURE


def test_signing_an_httpx_request_gives_the_documented_authorization() -> None:
    request = example_request()
    tc3.sign(request, tc3.Tc3Credentials(SECRET_ID, SECRET_KEY), "cvm", timestamp=TIMESTAMP)
    assert request.headers["Authorization"] == DOC_AUTHORIZATION
    assert request.headers["X-TC-Timestamp"] == "1551113065"
    assert request.headers["Host"] == "cvm.tencentcloudapi.com"
    assert SECRET_KEY.get_secret_value() not in str(request.headers)


def test_the_credential_date_is_the_utc_date_not_the_local_one() -> None:
    # 1551113065 is 2019-02-26 00:44:25 in UTC+8 but 2019-02-25 in UTC (the page's own warning).
    assert tc3.utc_date(TIMESTAMP) == "2019-02-25"


def test_the_signature_covers_host_body_and_content_type() -> None:
    base = example_request()
    tc3.sign(base, tc3.Tc3Credentials(SECRET_ID, SECRET_KEY), "cvm", timestamp=TIMESTAMP)
    url = "https://cvm.tencentcloudapi.com/"
    variants = [
        httpx.Request("POST", "http://127.0.0.1:8080/", content=BODY, headers={"Content-Type": CONTENT_TYPE}),
        httpx.Request("POST", url, content=BODY + b" ", headers={"Content-Type": CONTENT_TYPE}),
        httpx.Request("POST", url, content=BODY, headers={"Content-Type": "application/json"}),
    ]
    for variant in variants:
        tc3.sign(variant, tc3.Tc3Credentials(SECRET_ID, SECRET_KEY), "cvm", timestamp=TIMESTAMP)
        assert variant.headers["Authorization"] != base.headers["Authorization"]
    assert variants[0].headers["Host"] == "127.0.0.1:8080"
