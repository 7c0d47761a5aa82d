"""What a Client ID Metadata Document fetch costs, charged before the fetch (`cimd.Fetcher`).

Anyone can name a document URL as a client_id, and each unknown one made this server fetch it:
the database's registration caps counted only documents that were fetched and stored, so a
caller naming URLs that time out, refuse or answer nonsense made fetches without end. Now every
fetch is charged first, against the caps a registration has (per caller address, then
server-wide, in a sliding hour: `oauth_registrations_per_address`, `_per_hour`), whether it then
succeeds or not; and a URL whose fetch failed is not fetched again for `failure_s` (the same
refusal is answered from memory).

The counts live in this process (a laptop's server is one process; on Lambda each instance
keeps its own, so the fleet's total is at most instances x cap); the database's caps still bound
what is stored, across every instance."""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from sessionvault.errors import DocumentError
from sessionvault.settings import Settings

HOUR_S = 3600.0
FAILURE_S = 60.0  # how long a failed URL is answered from memory
MAX_REMEMBERED = 4096  # addresses and failed URLs kept, each (the oldest go first)


@dataclass
class FetchBudget:
    per_hour: int  # fetches, server-wide (this process)
    per_address: int  # ... and per caller address (its salted hash)
    failure_s: float = FAILURE_S
    clock: Callable[[], float] = time.monotonic
    _all: deque[float] = field(default_factory=deque)
    _by_address: OrderedDict[bytes | None, deque[float]] = field(default_factory=OrderedDict)
    _failed: OrderedDict[str, tuple[float, str]] = field(default_factory=OrderedDict)

    @classmethod
    def from_settings(cls, settings: Settings) -> FetchBudget:
        """The caps a registration has: per caller address, then server-wide, an hour."""
        return cls(settings.oauth_registrations_per_hour, settings.oauth_registrations_per_address)

    def charge(self, url: str, address: bytes | None) -> None:
        """Take one fetch of `url` for `address`, or raise DocumentError: a failure remembered
        ('failed_recently'), the address's cap ('address_cap'), the server's ('server_cap')."""
        now = self.clock()
        failed = self._failed.get(url)
        if failed is not None and failed[0] > now:
            raise DocumentError("failed_recently", f"its last fetch failed ({failed[1]}); try again later")
        self._failed.pop(url, None)
        mine = self._by_address.get(address) or deque()
        for window in (mine, self._all):
            while window and window[0] <= now - HOUR_S:
                window.popleft()
        if len(mine) >= self.per_address:
            raise DocumentError("address_cap", "too many metadata document fetches from this address")
        if len(self._all) >= self.per_hour:
            raise DocumentError("server_cap", "too many metadata document fetches this hour")
        mine.append(now)
        self._all.append(now)
        self._by_address[address] = mine
        self._by_address.move_to_end(address)
        _bound(self._by_address)

    def failed(self, url: str, code: str) -> None:
        """Remember that fetching `url` failed, with why, for `failure_s`."""
        self._failed[url] = (self.clock() + self.failure_s, code)
        self._failed.move_to_end(url)
        _bound(self._failed)


def _bound(kept: OrderedDict[bytes | None, deque[float]] | OrderedDict[str, tuple[float, str]]) -> None:
    while len(kept) > MAX_REMEMBERED:
        kept.popitem(last=False)
