"""A new, empty database to migrate in a test: on the embedded PostgreSQL 18 (its owner a
superuser) or on a password-protected PostgreSQL 16 whose owner is no superuser, only
CREATEROLE (Neon's and RDS's shape)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from .cluster import Cluster


@dataclass
class Fresh:
    """A new database: `owner` migrates it, `superuser` reads past row security."""

    owner: str
    superuser: str

    def url_as(self, role: str) -> str:
        return make_conninfo(self.owner, user=role, password="")


def with_db(url: str, dbname: str) -> str:
    return make_conninfo("", **{**conninfo_to_dict(url), "dbname": dbname})


def fresh_embedded(pg: Any) -> Fresh:
    name = f"sv_fresh_{secrets.token_hex(4)}"
    with psycopg.connect(pg.owner_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    with psycopg.connect(with_db(pg.owner_url, name), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    url = with_db(pg.owner_url, name)
    return Fresh(url, url)


def fresh_16(cluster: Cluster) -> Fresh:
    name = cluster.fresh_database()
    socket = {"host": str(cluster.pgdata), "port": str(cluster.port)}
    return Fresh(cluster.owner_url(name), make_conninfo("", **socket, user="postgres", dbname=name))
