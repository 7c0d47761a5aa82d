"""Semantic search with the real offline model ranks the relevant session first."""

import pytest

from sessionvault.core import records

from ..conftest import make_user

SESSIONS = {
    "jwt-auth": "Added JWT login: access tokens expire after 15 minutes, refresh tokens rotate",
    "pg-pooling": "Postgres connections exhausted under load; added pgbouncer in transaction mode",
    "css-grid": "Rebuilt the dashboard layout with CSS grid; sidebar collapses on mobile",
    "flaky-ci": "CI tests fail at random because of a race in the fixture teardown",
    "s3-uploads": "Users upload avatars straight to S3 with presigned URLs, max 5 MB",
    "i18n": "Translated the checkout flow into German and French with gettext catalogs",
}

PARAPHRASES = [
    ("how do users sign in and stay logged in", "jwt-auth"),
    ("too many database connections when traffic spikes", "pg-pooling"),
    ("page layout breaks on phones", "css-grid"),
    ("intermittent test failures in the pipeline", "flaky-ci"),
    ("storing profile pictures in object storage", "s3-uploads"),
    ("supporting multiple languages in the shop", "i18n"),
]


@pytest.fixture(scope="module")
def corpus(local_runtime):
    who = make_user(local_runtime).principal
    for name, summary in SESSIONS.items():
        local_runtime.vault.save(who, records.parse(records.SaveArgs, {"name": name, "summary": summary}))
    return who


@pytest.mark.parametrize(("query", "expected"), PARAPHRASES)
def test_paraphrased_query_finds_the_right_session_first(local_runtime, corpus, query, expected):
    out = local_runtime.vault.search(corpus, records.parse(records.SearchArgs, {"query": query}))
    ranked = [hit["name"] for hit in out["results"]]
    assert ranked[0] == expected, ranked
    assert out["results"][0]["score"] > out["results"][1]["score"]


def test_repo_filter_and_max_results(local_runtime):
    who = make_user(local_runtime).principal
    for repo in ("github.com/a/one", "github.com/a/two"):
        local_runtime.vault.save(
            who, records.parse(records.SaveArgs, {"name": repo, "repo": repo, "summary": "login with JWT"})
        )
    args = {"query": "authentication tokens", "repo": "github.com/a/two", "max_results": 5}
    out = local_runtime.vault.search(who, records.parse(records.SearchArgs, args))
    assert [h["repo"] for h in out["results"]] == ["github.com/a/two"]
