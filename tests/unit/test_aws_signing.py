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
