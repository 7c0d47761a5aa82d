"""The web view's pages as request handlers, one module a view: each is given the `Gate` (the
runtime, and the admission of the caller), the `Call` and the ASGI `send`, admits the caller,
does its work off the event loop and sends its page (`views.HANDLERS` routes to them)."""
