"""The web view's HTML, one module a page: server-rendered, no script, no external resource.
Every value that comes from saved data, a query or the database goes through `html.escape`
(attributes included) and nothing else builds markup (`layout` holds the rule and the shared
parts). Keyboard and assistive technology: a skip link, one <main> with an <h1>, landmarks
named, every control labelled (a <label for> or an aria-label naming what it acts on), tables
with headers and captions, the current page marked with aria-current, diffs spelled out
("Added:", "Removed:") for screen readers, and a visible focus ring."""
