"""`sessionvault deploy`: build and deploy the stack into your AWS account, make its first user
and API key, and make `connect` and `doctor` default to it. The work is in local/deploy/stack.py."""

from __future__ import annotations

import argparse

from sessionvault.names import LOCAL_USER

EPILOG = """\
first deploy, Neon (the owner's direct URL stored in Secrets Manager beforehand):
  sessionvault deploy --owner-secret sessionvault/owner --pooled-host ep-x-pooler.REGION.aws.neon.tech
first deploy, a new private RDS instance:
  sessionvault deploy --create-database --subnets subnet-a,subnet-b --security-groups sg-1
later deploys (the answers saved in samconfig.toml):
  sessionvault deploy
"""


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "deploy",
        help="deploy to your AWS account (sam build + sam deploy), then make the first API key",
        description="Check the prerequisites, run sam build and sam deploy (guided the first\n"
        "time, the saved samconfig.toml after), create the first user and API key through the\n"
        "admin function, and save the URL and key so that connect and doctor use them.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--stack-name", help="default: the saved config's, else sessionvault")
    p.add_argument("--region", help="default: the saved config's, else the AWS CLI's")
    p.add_argument("--owner-secret", help="name or ARN of the secret holding the database owner's URL")
    p.add_argument("--pooled-host", help="host the functions connect to (Neon: the -pooler host)")
    p.add_argument("--create-database", action="store_true", help="create a small private RDS instance")
    p.add_argument("--subnets", help="private subnet ids, comma-separated (RDS)")
    p.add_argument("--security-groups", help="security group ids, comma-separated (RDS)")
    p.add_argument("--embeddings", choices=["none", "openai"], help="semantic search embeddings")
    p.add_argument("--openai-key-secret", help="name of the secret holding the OpenAI key")
    p.add_argument("--alarm-email", help="e-mail for the alarms")
    p.add_argument("--public-url", help="https://host of a custom domain in front of the API (OAuth issuer)")
    p.add_argument("--user", default=LOCAL_USER, help="the first user's name (default: %(default)s)")
    p.add_argument("--guided", action="store_true", help="ask sam deploy's questions again")
    p.add_argument("--new-key", action="store_true", help="make a new API key even if one is saved")
    p.add_argument("--dry-run", action="store_true", help="print the commands; change nothing")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from sessionvault.local.deploy import stack as deploy

    return deploy.run(deploy.options(**vars(args)))
