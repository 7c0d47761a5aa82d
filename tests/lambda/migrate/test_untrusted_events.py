"""The event is not trusted: one naming another host or other secrets is refused before any secret
is read, a rollback changes nothing, and only events shaped like CloudFormation's, with a response
URL on its bucket, get an answer."""

from __future__ import annotations

from typing import Any

import pytest

from ...support.lambda_events import (
    RESPONSE_HOST,
)
from .conftest import (
    assert_untouched,
    event,
    run,
)

# ---------------------------------------------------------------- the event is not trusted


@pytest.mark.parametrize("request_type", ["Create", "Update"])
def test_an_event_naming_another_owner_host_never_connects_there_nor_reads_the_owner_secret(
    cluster, cfn, stack, seen, listener, request_type
):
    dbname = cluster.fresh_database()
    stack.set_owner(cluster.owner_url(dbname))
    props = {**stack.props, "Host": "127.0.0.1", "Port": str(listener.port), "DbName": dbname}
    run(event(request_type, cfn, props, old=props, physical_id="sessionvault-database"))

    answer = cfn.last()
    assert answer["Status"] == "FAILED"
    assert answer["Reason"] == (
        "refused: the event's Host, Port, DbName differ from the migrate function's own "
        "configuration (template.yaml sets both; the function uses only its own)"
    )
    assert listener.accepted == []
    assert_untouched(stack, seen)


def test_an_event_naming_another_pooled_host_writes_no_url_there(cluster, cfn, stack, seen, listener):
    """The pooled host is where the functions would send the role passwords: never the event's."""
    dbname = cluster.fresh_database()
    stack.set_owner(cluster.owner_url(dbname))
    run(event("Create", cfn, {**stack.props, "PooledHost": "db.attacker.example"}))
    assert cfn.last()["Status"] == "FAILED"
    assert "PooledHost" in cfn.last()["Reason"]
    assert_untouched(stack, seen)


def test_an_event_naming_other_secrets_is_refused_before_any_is_read(cluster, cfn, stack, seen):
    """Swapping two URL secrets would make the MCP function connect as the admin role."""
    dbname = cluster.fresh_database()
    stack.set_owner(cluster.owner_url(dbname))
    swapped = {
        **stack.props,
        "AppDatabaseUrlSecret": stack.props["AdminDatabaseUrlSecret"],
        "AdminDatabaseUrlSecret": stack.props["AppDatabaseUrlSecret"],
    }
    run(event("Create", cfn, swapped))
    assert cfn.last()["Status"] == "FAILED"
    assert "AppDatabaseUrlSecret, AdminDatabaseUrlSecret" in cfn.last()["Reason"]
    assert_untouched(stack, seen)


def test_a_rollback_with_the_previous_properties_changes_nothing_and_succeeds(cluster, cfn, stack, seen):
    """A failed update can roll the Database resource back before its function: the old
    properties arrive while the function still has the new configuration (the event's old ones).
    Nothing is undone (migrations never are), so nothing is read and the rollback goes on."""
    dbname = cluster.fresh_database()
    stack.set_owner(cluster.owner_url(dbname))
    previous = {**stack.props, "PooledHost": "old-pooler.example"}
    run(event("Update", cfn, previous, old=stack.props, physical_id="sessionvault-database"))
    answer = cfn.last()
    assert (answer["Status"], answer["PhysicalResourceId"]) == ("SUCCESS", "sessionvault-database")
    assert "rollback" in answer["Reason"]
    assert_untouched(stack, seen)


# ---------------------------------------------------------------- only CloudFormation's events


def _shapes() -> dict[str, Any]:
    def drop(key: str) -> Any:
        return lambda e: {k: v for k, v in e.items() if k != key}

    def put(key: str, value: Any) -> Any:
        return lambda e: {**e, key: value}

    return {
        "unknown-request-type": put("RequestType", "Bogus"),
        "no-request-type": drop("RequestType"),
        "no-stack-id": drop("StackId"),
        "no-request-id": drop("RequestId"),
        "no-logical-id": drop("LogicalResourceId"),
        "no-resource-type": drop("ResourceType"),
        "another-resource-type": put("ResourceType", "Custom::Other"),
        "no-response-url": drop("ResponseURL"),
        "properties-not-a-map": put("ResourceProperties", "OwnerSecret"),
        "not-a-map": lambda e: ["RequestType", "Create"],
    }


SHAPES = _shapes()


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_an_event_not_shaped_like_cloudformations_gets_no_answer_and_reads_nothing(
    cluster, cfn, stack, seen, listener, shape
):
    stack.set_owner(cluster.owner_url("sessionvault", port=listener.port))
    outcome = run(shape(event("Create", cfn, stack.props)))
    assert outcome["status"] == "REFUSED"
    assert cfn.attempted == [] and cfn.received == []
    assert listener.accepted == []
    assert_untouched(stack, seen)


NOT_CLOUDFORMATION = {
    "local-http": "{base}/cloudformation-custom-resource-response-useast1/abc",
    "another-host": "https://collector.attacker.example/cloudformation-custom-resource-response-useast1/abc",
    "plain-http": f"http://{RESPONSE_HOST}/abc",
    "suffix-trick": f"https://{RESPONSE_HOST}.attacker.example/abc",
    "userinfo-trick": f"https://{RESPONSE_HOST}@attacker.example/abc",
    "another-port": f"https://{RESPONSE_HOST}:8443/abc",
    "another-bucket": "https://my-bucket.s3.amazonaws.com/abc",
    "another-region": "https://cloudformation-custom-resource-response-euwest1.s3.amazonaws.com/abc",
    "region-mismatch": "https://cloudformation-custom-resource-response-useast1.s3.eu-west-1.amazonaws.com/a",
    "path-style-another-bucket": "https://s3.amazonaws.com/my-bucket/abc",
    "not-s3": "https://cloudformation-custom-resource-response-useast1.amazonaws.com/abc",
    "not-a-url": "cloudformation-custom-resource-response-useast1",
}


@pytest.mark.parametrize("url", NOT_CLOUDFORMATION.values(), ids=NOT_CLOUDFORMATION.keys())
def test_a_response_url_off_cloudformations_bucket_gets_no_put_and_nothing_is_read(
    cluster, cfn, stack, seen, listener, url
):
    stack.set_owner(cluster.owner_url("sessionvault", port=listener.port))
    for request_type in ("Create", "Delete"):
        request = {**event(request_type, cfn, stack.props), "ResponseURL": url.format(base=cfn.base)}
        outcome = run(request)
        assert outcome["status"] == "REFUSED"
        assert "ResponseURL" in outcome["reason"]
    assert cfn.attempted == [] and cfn.received == []
    assert listener.accepted == []
    assert_untouched(stack, seen)


CLOUDFORMATION = {
    "virtual-hosted": (RESPONSE_HOST, ""),
    "virtual-hosted-regional": (
        "cloudformation-custom-resource-response-useast1.s3.us-east-1.amazonaws.com",
        "",
    ),
    "virtual-hosted-legacy-regional": (
        "cloudformation-custom-resource-response-useast1.s3-us-east-1.amazonaws.com",
        "",
    ),
    "path-style": ("s3.amazonaws.com", "/cloudformation-custom-resource-response-useast1"),
    "path-style-regional": ("s3.us-east-1.amazonaws.com", "/cloudformation-custom-resource-response-useast1"),
}


@pytest.mark.parametrize(("host", "prefix"), CLOUDFORMATION.values(), ids=CLOUDFORMATION.keys())
def test_each_spelling_of_cloudformations_response_url_is_answered(cfn, stack, seen, host, prefix):
    url = cfn.url(host, prefix)
    run({**event("Delete", cfn, stack.props, physical_id="sessionvault-database"), "ResponseURL": url})
    assert cfn.attempted == [url]
    assert cfn.last()["Status"] == "SUCCESS"
    assert_untouched(stack, seen)
