"""The Database custom resource's event, checked before anything is done with it: anyone allowed
to invoke the migrate function can send one, so only an event shaped like CloudFormation's, for
this resource type, whose ResponseURL is CloudFormation's own response bucket in this region, is
acted on or answered (an answer to any other URL could go to anyone)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

RESOURCE_TYPE = "Custom::SessionVaultDatabase"  # template.yaml's Database resource
REQUEST_TYPES = ("Create", "Update", "Delete")
REQUIRED_KEYS = ("StackId", "RequestId", "LogicalResourceId", "ResponseURL", "ResourceType")

# CloudFormation's presigned response URLs: its bucket cloudformation-custom-resource-response-
# <region without dashes> (AWS-owned), virtual-hosted (<bucket>.s3.amazonaws.com,
# <bucket>.s3.<region>.amazonaws.com, <bucket>.s3-<region>.amazonaws.com) or path-style
# (s3[.-<region>].amazonaws.com/<bucket>/...); .amazonaws.com.cn in the China regions.
RESPONSE_BUCKET = "cloudformation-custom-resource-response-"
S3_HOST = re.compile(
    r"(?:(?P<bucket>[a-z0-9-]+)\.)?s3(?:[.-](?P<region>[a-z]{2}(?:-[a-z]+)+-\d+))?"
    r"\.amazonaws\.com(?P<cn>\.cn)?"
)


def region_of(env: Mapping[str, str]) -> str:
    return str(env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "").strip()


def response_url_problem(url: str, region: str) -> str | None:
    """Why url is not CloudFormation's response URL for a stack in region; None when it is."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "the ResponseURL is not a URL"
    if parts.scheme != "https":
        return "the ResponseURL is not https"
    if parts.username is not None or parts.password is not None or port not in (None, 443):
        return "the ResponseURL names a user or a port"
    match = S3_HOST.fullmatch((parts.hostname or "").lower())
    if match is None:
        return "the ResponseURL is not on Amazon S3"
    bucket = match["bucket"]
    if bucket is None:  # path-style: the bucket is the first segment
        bucket, _, key = parts.path.lstrip("/").partition("/")
        if not key:
            return "the ResponseURL names no object"
    expected = RESPONSE_BUCKET + (region.replace("-", "") if region else "")
    if not (bucket == expected if region else re.fullmatch(re.escape(expected) + "[a-z0-9]+", bucket)):
        return f"the ResponseURL is not CloudFormation's response bucket{' for ' + region if region else ''}"
    if region and (match["region"] not in (None, region) or bool(match["cn"]) != region.startswith("cn-")):
        return f"the ResponseURL is not in {region}"
    return None


def event_problem(event: Any, region: str) -> str | None:
    """Why event is not a CloudFormation custom-resource request for this resource; None when it is."""
    if not isinstance(event, dict):
        return "the event is not a JSON object"
    if event.get("RequestType") not in REQUEST_TYPES:
        return "the event's RequestType is not Create, Update or Delete"
    for key in REQUIRED_KEYS:
        if not isinstance(event.get(key), str) or not event[key].strip():
            return f"the event has no {key}"
    if event["ResourceType"] != RESOURCE_TYPE:
        return f"the event's ResourceType is not {RESOURCE_TYPE}"
    for key in ("ResourceProperties", "OldResourceProperties"):
        if not isinstance(event.get(key, {}), dict):
            return f"the event's {key} is not an object"
    return response_url_problem(event["ResponseURL"], region)
