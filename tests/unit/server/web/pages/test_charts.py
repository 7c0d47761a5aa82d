"""The server-drawn pictures: a hostile client name stays text inside the SVG (the picture still
parses as XML, with no element or attribute of the name's making), arrows carry their counts,
and bars scale to the busiest day."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from sessionvault.server.web.pages import charts

HOSTILE = "\"><script>alert(1)</script></svg><svg onload=alert(1)>'&"
SVG = "{http://www.w3.org/2000/svg}"


def parsed(svg: str) -> ET.Element:
    return ET.fromstring(svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1))


def test_a_hostile_client_name_cannot_break_the_flow_picture() -> None:
    svg = charts.flow({(HOSTILE, "codex"): 3, ("codex", HOSTILE): 1}, HOSTILE)
    root = parsed(svg)  # well-formed: the name closed no tag and opened none
    tags = {el.tag.removeprefix(SVG) for el in root.iter()}
    assert tags <= {"svg", "title", "defs", "marker", "path", "g", "circle", "text"}
    assert "script" not in tags and all("onload" not in el.attrib for el in root.iter())
    assert sum(1 for el in root.iter(SVG + "svg")) == 1
    titles = [el.text for el in root.iter(SVG + "title")]
    assert HOSTILE in titles and f"{HOSTILE} to codex: 3" in titles


def test_the_flow_draws_each_client_once_and_each_pair_with_its_count() -> None:
    root = parsed(charts.flow({("claude-code", "codex"): 2, ("codex", "gemini-cli"): 5}, "flow"))
    nodes = [g for g in root.iter(SVG + "g") if g.get("class") == "node"]
    arrows = [g for g in root.iter(SVG + "g") if g.get("class") == "edge"]
    assert [n.findtext(SVG + "title") for n in nodes] == ["claude-code", "codex", "gemini-cli"]
    assert sorted(a.findtext(SVG + "text") or "" for a in arrows) == ["2", "5"]
    assert charts.flow({}, "nothing") == ""


def test_a_long_name_is_shortened_on_its_node_and_whole_in_its_title() -> None:
    name = "a-very-long-client-name-indeed"
    root = parsed(charts.flow({(name, name): 1}, "loop"))
    node = next(g for g in root.iter(SVG + "g") if g.get("class") == "node")
    assert node.findtext(SVG + "title") == name
    shown = node.findtext(SVG + "text") or ""
    assert shown.endswith("…") and len(shown) == charts.LABEL


def test_bars_scale_to_the_busiest_day_and_escape_their_labels() -> None:
    root = parsed(charts.bars([("2026-11-30", 2), ("2026-12-01", 0), (HOSTILE, 4)], HOSTILE))
    heights = [int(r.get("height") or 0) for r in root.iter(SVG + "rect")]
    assert heights == [30, 1, 60]  # an empty day still shows as a hairline
    assert f"{HOSTILE}: 4" in [el.text for el in root.iter(SVG + "title")]
    assert charts.bars([], "none") == ""
