"""The migrate function's own configuration: its environment, as template.yaml sets it, never
the event. The Database resource's properties carry the same values only so that changing one
makes CloudFormation send an Update; `Config.differing` names the properties of an event that
are not this configuration, so such an event can be refused before any secret is read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sessionvault.db import roles
from sessionvault.errors import ProvisionFailed

# The Database resource's properties and the migrate function's environment variables holding
# the same values (template.yaml sets both from the same expressions). The function reads only
# the environment.
SETTINGS = {
    "OwnerSecret": "SESSIONVAULT_OWNER_SECRET",
    "Host": "SESSIONVAULT_OWNER_HOST",  # the RDS instance the stack created (its secret has no host)
    "Port": "SESSIONVAULT_OWNER_PORT",
    "DbName": "SESSIONVAULT_OWNER_DBNAME",
    "PooledHost": "SESSIONVAULT_POOLED_HOST",  # the functions' host (Neon: -pooler); "" = the owner's
    "DatabaseCaBundle": "SESSIONVAULT_OWNER_SSLROOTCERT",  # "" = the system CAs
    "AppRoleSecret": "SESSIONVAULT_APP_ROLE_SECRET",
    "AdminRoleSecret": "SESSIONVAULT_ADMIN_ROLE_SECRET",
    "MaintRoleSecret": "SESSIONVAULT_MAINT_ROLE_SECRET",
    "AppDatabaseUrlSecret": "SESSIONVAULT_APP_DATABASE_URL_SECRET",
    "AdminDatabaseUrlSecret": "SESSIONVAULT_ADMIN_DATABASE_URL_SECRET",
    "MaintDatabaseUrlSecret": "SESSIONVAULT_MAINT_DATABASE_URL_SECRET",
}
SLOTS = (("App", roles.APP_ROLE), ("Admin", roles.ADMIN_ROLE), ("Maint", roles.MAINT_ROLE))
REQUIRED_SETTINGS = (
    "OwnerSecret",
    *(f"{slot}{kind}" for slot, _ in SLOTS for kind in ("RoleSecret", "DatabaseUrlSecret")),
)

# TLS to the owner's host: verify-full unless this says otherwise. The template sets require
# only for an RDS instance it created when no DatabaseCaBundle is given (the RDS CA is not a
# system CA); the tests set disable for their embedded server, which has no TLS.
SSLMODE_SETTING = "SESSIONVAULT_OWNER_SSLMODE"
SSLMODES = ("verify-full", "require", "disable")


@dataclass(frozen=True)
class Login:
    """A login role, the stack secret holding its password, the secret the functions read."""

    role: str
    role_secret: str
    url_secret: str


@dataclass(frozen=True)
class Config:
    """The migrate function's own configuration: its environment, as template.yaml sets it."""

    owner_secret: str
    host: str  # overrides the owner secret's host (the RDS instance the stack created)
    port: str
    dbname: str
    pooled_host: str
    logins: tuple[Login, ...]
    sslmode: str
    sslrootcert: str  # "" = the system CAs; else a PEM file, relative to the function's code
    values: dict[str, str] = field(default_factory=dict)  # property -> value, to compare events

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Config:
        values = {key: str(env.get(var) or "").strip() for key, var in SETTINGS.items()}
        for key in REQUIRED_SETTINGS:
            if not values[key]:
                raise ProvisionFailed(f"the migrate function is missing its {SETTINGS[key]} setting")
        sslmode = str(env.get(SSLMODE_SETTING) or "verify-full").strip()
        if sslmode not in SSLMODES:
            raise ProvisionFailed(f"{SSLMODE_SETTING} must be one of {', '.join(SSLMODES)}")
        logins = tuple(
            Login(role, values[f"{slot}RoleSecret"], values[f"{slot}DatabaseUrlSecret"])
            for slot, role in SLOTS
        )
        return cls(
            owner_secret=values["OwnerSecret"],
            host=values["Host"],
            port=values["Port"],
            dbname=values["DbName"],
            pooled_host=values["PooledHost"],
            logins=logins,
            sslmode=sslmode,
            sslrootcert=values["DatabaseCaBundle"],
            values=values,
        )

    def differing(self, props: Mapping[str, Any]) -> list[str]:
        """The properties of an event that are not this configuration (absent = empty)."""
        return [key for key in SETTINGS if str(props.get(key) or "").strip() != self.values[key]]
