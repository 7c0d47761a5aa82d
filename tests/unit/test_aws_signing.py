"""SigV4 without botocore (`aws_signing`): a KMS request signed exactly as botocore signs it."""

from __future__ import annotations

import base64
import calendar
import json
import os
import time

from sessionvault.aws_signing import AwsCredentials, sigv4_headers


def test_the_kms_request_is_signed_exactly_as_botocore_signs_it() -> None:
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials as BotoCredentials

    blob = base64.b64encode(os.urandom(64)).decode()
    body = json.dumps(
        {"CiphertextBlob": blob, "EncryptionContext": {"app": "sessionvault", "user_id": "u-1"}, "KeyId": "k"}
    ).encode()
    headers = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "TrentService.Decrypt"}
    for url, region, token in (
        ("https://kms.us-east-1.amazonaws.com/", "us-east-1", "session-token"),
        ("https://kms.eu-central-1.amazonaws.com", "eu-central-1", ""),
        ("http://127.0.0.1:5123", "us-east-1", "a  token with spaces"),
    ):
        request = AWSRequest(method="POST", url=url, data=body, headers=dict(headers))
        SigV4Auth(BotoCredentials("AKIDEXAMPLE", "secret", token or None), "kms", region).add_auth(request)
        now = calendar.timegm(time.strptime(request.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ"))
        credentials = AwsCredentials("AKIDEXAMPLE", "secret", token)
        mine = sigv4_headers("POST", url, headers, body, region, "kms", credentials, now)
        assert mine["Authorization"] == request.headers["Authorization"], url
        assert {k: v for k, v in mine.items() if k != "Host"} == dict(request.headers.items())


# AWS's Signature Version 4 test suite (the "aws4_testsuite" of the AWS General Reference, as
# botocore and the AWS CRT carry it): every case signs at 20150830T123600Z in us-east-1 for
# service "service", host example.amazonaws.com, path "/", no query string (the only requests
# this signer makes), with the suite's example credentials. (case, method, headers, body,
# session token, the suite's expected signature)
SUITE_SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SUITE_TOKEN = (
    "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeo"
    "IYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VS"
    "XDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8f"
    "POLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA=="
)
SUITE = [
    ("get-vanilla", "GET", {}, b"", "", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
    ("post-vanilla", "POST", {}, b"", "", "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"),
    (
        "post-header-key-sort",
        "POST",
        {"My-Header1": "value1"},
        b"",
        "",
        "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c",
    ),
    (
        "post-header-value-case",
        "POST",
        {"My-Header1": "VALUE1"},
        b"",
        "",
        "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d",
    ),
    (
        "get-header-value-trim",
        "GET",
        {"My-Header1": " value1", "My-Header2": ' "a   b   c"'},
        b"",
        "",
        "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736",
    ),
    (
        "post-x-www-form-urlencoded",
        "POST",
        {"Content-Type": "application/x-www-form-urlencoded"},
        b"Param1=value1",
        "",
        "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a",
    ),
    (
        "post-sts-header-before",
        "POST",
        {},
        b"",
        SUITE_TOKEN,
        "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead",
    ),
]


def test_the_signer_gives_the_aws_sigv4_test_suites_signatures() -> None:
    now = calendar.timegm(time.strptime("20150830T123600Z", "%Y%m%dT%H%M%SZ"))
    for case, method, headers, body, token, signature in SUITE:
        credentials = AwsCredentials("AKIDEXAMPLE", SUITE_SECRET, token)
        signed = sigv4_headers(
            method, "https://example.amazonaws.com/", headers, body, "us-east-1", "service", credentials, now
        )
        names = ";".join(
            sorted(
                ["host", "x-amz-date", *(h.lower() for h in headers)]
                + (["x-amz-security-token"] if token else [])
            )
        )
        assert signed["Authorization"] == (
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            f"SignedHeaders={names}, Signature={signature}"
        ), case
        assert signed["X-Amz-Date"] == "20150830T123600Z" and signed["Host"] == "example.amazonaws.com", case
