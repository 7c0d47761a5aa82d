"""The answer CloudFormation waits for after every accepted event, failures included: an HTTPS
PUT of the result to the event's presigned ResponseURL, never to where a redirect points,
retried briefly on network errors. Its reason is cut to fit the response's 4 KiB."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

RESPONSE_TIMEOUT_S = 10
RESPONSE_ATTEMPTS = 3
REASON_MAX = 900  # the whole response body must stay under 4 KiB


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """The answer goes to the presigned URL itself, never where a redirect points."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


OPENER = urllib.request.build_opener(_NoRedirect)


def put_response(url: str, body: bytes, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, data=body, method="PUT", headers=headers)
    with OPENER.open(request, timeout=RESPONSE_TIMEOUT_S) as answer:
        return int(answer.status)


def respond(event: dict[str, Any], status: str, reason: str, physical_id: str, data: dict[str, Any]) -> bool:
    """The answer CloudFormation waits for: a PUT of this JSON to the presigned ResponseURL,
    with an empty Content-Type (the signature covers it). Retried briefly on network errors."""
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason[:REASON_MAX],
            "PhysicalResourceId": physical_id,
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "NoEcho": False,
            "Data": data,
        }
    ).encode()
    headers = {"Content-Type": "", "Content-Length": str(len(body))}
    for attempt in range(RESPONSE_ATTEMPTS):
        try:
            if 200 <= put_response(event["ResponseURL"], body, headers) < 300:
                return True
        except Exception:  # retried, then logged by the caller
            pass
        if attempt + 1 < RESPONSE_ATTEMPTS:  # no wait after the last one
            time.sleep(0.5 * (attempt + 1))
    return False
