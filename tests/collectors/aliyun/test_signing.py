"""Alibaba Cloud signing and credentials: the documented V3 example, what a signed request carries,
where the keys come from, and that the secret never leaves the signature."""

from __future__ import annotations

import hashlib
import re

import httpx
import pytest
from pydantic import SecretStr

from collectors.aliyun.signing import OFFLINE_CREDENTIALS, Credentials, resolve_credentials, signer
from collectors.errors import MissingCredentials
from pricedb.settings import Settings
from tests.support.aliyun_server import AUTHORIZATION, acs3_signature, check

# The worked example of Alibaba Cloud's "V3版本请求体&签名机制" (RunInstances on ecs.cn-shanghai, fixed
# date and nonce, AccessKey "YourAccessKeyId" / "YourAccessKeySecret", POST without a body).
DOC_URL = (
    "https://ecs.cn-shanghai.aliyuncs.com/"
    "?ImageId=win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd&RegionId=cn-shanghai"
)
DOC_DATE, DOC_NONCE = "2023-10-26T09:01:01Z", "d410180a5abf7fe235dd9b74aca91fc0"
DOC_SIGNATURE = "e521358f7776c97df52e6b2891a8bc73026794a071b50c3323388c4e0df64804"
DOC_CREDENTIALS = Credentials("YourAccessKeyId", SecretStr("YourAccessKeySecret"))
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

KEY, SECRET = "LTAI5tTESTKEYEXAMPLE01", "TestSecretExampleDoNotUse0123456789"


def signed(request: httpx.Request, credentials: Credentials = DOC_CREDENTIALS, action: str = "RunInstances"):
    signer(credentials, action, now=lambda: DOC_DATE, nonce=lambda: DOC_NONCE)(request)
    return request


def test_the_documented_v3_example_is_reproduced_exactly() -> None:
    request = signed(httpx.Request("POST", DOC_URL))
    assert request.headers["Authorization"] == (
        "ACS3-HMAC-SHA256 Credential=YourAccessKeyId,"
        "SignedHeaders=host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version,"
        f"Signature={DOC_SIGNATURE}"
    )
    assert request.headers["x-acs-content-sha256"] == EMPTY_SHA256
    assert (request.headers["x-acs-action"], request.headers["x-acs-version"]) == ("RunInstances", "2014-05-26")


def test_the_independent_verifier_agrees_with_the_documented_example() -> None:
    """The test server's own implementation (not Alibaba's library) gives the documented signature."""
    headers = {
        "host": "ecs.cn-shanghai.aliyuncs.com",
        "x-acs-action": "RunInstances",
        "x-acs-content-sha256": EMPTY_SHA256,
        "x-acs-date": DOC_DATE,
        "x-acs-signature-nonce": DOC_NONCE,
        "x-acs-version": "2014-05-26",
    }
    query = {"ImageId": "win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd", "RegionId": "cn-shanghai"}
    assert acs3_signature("POST", query, headers, sorted(headers), "YourAccessKeySecret") == DOC_SIGNATURE
    assert acs3_signature("POST", query, headers, sorted(headers), "another-secret") != DOC_SIGNATURE


def test_a_signed_get_carries_fresh_headers_and_covers_the_rewritten_host() -> None:
    credentials = Credentials(KEY, SecretStr(SECRET))
    url = "http://127.0.0.1:8123/?RegionId=cn-beijing&ResourceType=instance&InstanceType=ecs.gn7e-c16g1.4xlarge"
    first = httpx.Request("GET", url)
    signer(credentials, "DescribePrice")(first)
    second = httpx.Request("GET", url)
    signer(credentials, "DescribePrice")(second)
    auth = AUTHORIZATION.match(first.headers["Authorization"])
    assert auth and auth["key"] == KEY
    assert auth["signed"] == "host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", first.headers["x-acs-date"])
    assert first.headers["x-acs-signature-nonce"] != second.headers["x-acs-signature-nonce"]
    assert first.headers["x-acs-content-sha256"] == hashlib.sha256(b"").hexdigest()
    headers = {k.lower(): v for k, v in first.headers.items()}
    assert headers["host"] == "127.0.0.1:8123"
    path = "/?" + url.split("?", 1)[1]
    assert check("GET", path, headers, b"", KEY, SECRET, "DescribePrice") == "ok"
    assert check("GET", path, headers, b"", KEY, "wrong-secret", "DescribePrice") == "signature mismatch"
    tampered = path.replace("4xlarge", "8xlarge")
    assert check("GET", tampered, headers, b"", KEY, SECRET, "DescribePrice") == "signature mismatch"
    assert "action" in check("GET", path, headers, b"", KEY, SECRET, "DescribeInstanceTypes")
    assert SECRET not in str(first.headers) and SECRET not in str(first.url)


def test_an_sts_token_is_sent_and_signed() -> None:
    credentials = Credentials(KEY, SecretStr(SECRET), SecretStr("CAIS-sts-token-example"))
    request = httpx.Request("GET", "https://ecs.cn-beijing.aliyuncs.com/?RegionId=cn-beijing")
    signer(credentials, "DescribeAvailableResource")(request)
    assert request.headers["x-acs-security-token"] == "CAIS-sts-token-example"
    assert "x-acs-security-token" in AUTHORIZATION.match(request.headers["Authorization"])["signed"].split(";")


# ----- credentials -------------------------------------------------------------------------------
def test_no_keys_means_missing_credentials_naming_the_settings(settings: Settings) -> None:
    with pytest.raises(MissingCredentials) as caught:
        resolve_credentials(settings)
    message = str(caught.value)
    for name in ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "GPUPRICE_ALIYUN_ACCESS_KEY_ID"):
        assert name in message


def test_half_a_key_pair_names_the_missing_half(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", KEY)
    with pytest.raises(MissingCredentials, match="ALIBABA_CLOUD_ACCESS_KEY_SECRET"):
        resolve_credentials(Settings(db=tmp_path / "x.duckdb"))


@pytest.mark.parametrize("prefix", ["ALIBABA_CLOUD_", "GPUPRICE_ALIYUN_"])
def test_keys_come_from_the_standard_or_the_gpuprice_variables(
    monkeypatch: pytest.MonkeyPatch, tmp_path, prefix: str
) -> None:
    monkeypatch.setenv(f"{prefix}ACCESS_KEY_ID", KEY)
    monkeypatch.setenv(f"{prefix}ACCESS_KEY_SECRET", SECRET)
    settings = Settings(db=tmp_path / "x.duckdb")
    credentials = resolve_credentials(settings)
    assert credentials.access_key_id == KEY
    assert credentials.access_key_secret.get_secret_value() == SECRET
    assert SECRET not in repr(credentials) and SECRET not in repr(settings) and SECRET not in str(settings.model_dump())


def test_offline_signs_with_the_placeholder_pair(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", SECRET)
    assert resolve_credentials(settings.model_copy(update={"offline": True})) is OFFLINE_CREDENTIALS
