"""A POST's form, read only after the checks a browser form must pass: exactly one Content-Type,
a urlencoded form; proof from the browser that this server's own page sent it; a body within
the form cap that parses. A form that fails one is refused with an error page; a wrong
Content-Type or origin before its body is read at all.

The proof is `Sec-Fetch-Site: same-origin`, which every current browser sets on a request to a
secure context (https, or a loopback address) and no page can forge; or, where the browser sends
no Sec-Fetch-Site (it does not to a plain-http address that is not loopback, such as a phone on
the LAN reaching `dev --host`), an Origin equal to this server's, which every browser sets on a
POST. Neither header: not a browser form of ours (a script can send anything, but holds no
signed-in cookie to send). Any Origin but ours, any Sec-Fetch-Site but same-origin: refused."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import Receive

from sessionvault.server.edge import FORM, form_problem, media_type, read_body, replaying
from sessionvault.server.oauth.consent import origin_of
from sessionvault.server.web.call import Call
from sessionvault.server.web.pages.layout import message
from sessionvault.server.web.responses import refusal


async def read_form(call: Call, receive: Receive) -> dict[str, str]:
    """The form's string fields, once it has passed the checks above."""
    headers, root = Headers(scope=call.scope), call.root
    types = headers.getlist("content-type")
    if len(types) != 1 or media_type(types[0]) != FORM:
        raise refusal(
            415,
            message(None, root, "Not a form", "Send this page's own form."),
            "validation",
            {"Accept": FORM},
            edge_check="content_type",
        )
    own = origin_of(call.base)
    origins = headers.getlist("origin")
    sites = headers.getlist("sec-fetch-site")
    if any(o != own for o in origins) or any(s != "same-origin" for s in sites):
        said = "This form was sent from another site."
        raise refusal(403, message(None, root, "Refused", said), "auth", edge_check="origin")
    if not sites and not origins:  # nothing a browser sets: no proof it came from our page
        said = "This form came without the headers a browser sends (Origin, Sec-Fetch-Site)."
        raise refusal(403, message(None, root, "Refused", said), "auth", edge_check="origin")
    body = await read_body(receive)
    if await form_problem(call.scope, body):
        raise refusal(
            400,
            message(None, root, "Unreadable form", "This form could not be read."),
            "validation",
        )
    form = await Request(call.scope, replaying(body)).form()
    return {k: v for k, v in form.items() if isinstance(v, str)}
