#!/usr/bin/env python3
"""An HTML report opens in headless Chromium with every plot drawn and nothing logged (issue 23).

Usage: report_browser_test.py [--expect-plots N] [--expect-missing ID,ID] -- PRODUCER ARG... 
PRODUCER ARG... is the command that writes the page, with {html} where the output path goes, e.g.
    orrery plan SCENARIO --tokens 15e12 --report {html}
    orrery predict SCENARIO --report {html}

Invariants checked, each a failure when it does not hold:
- the producer exits 0 and writes the page; the page loads nothing from elsewhere (no <script src>, <link href> or
  <img src> that is not a data: URL), so it opens with no network;
- after loading (Chromium's --dump-dom with a virtual-time budget), <body data-plots> says "drawn:M/M", where M is
  the number of plot containers on the page (html_report.h), and M is --expect-plots when given; data-failed is
  empty; each container holds an <svg> or a <canvas>;
- the figures not drawn are exactly --expect-missing when given (each says why in a <p class="missing">);
- nothing reached the console: <html data-problems> (the page's own record of console errors and warnings,
  uncaught exceptions and rejections) is absent, and Chromium's log (--enable-logging=stderr) has no console line;
- the embedded report JSON parses, and each drawn figure's CSV link is a data: URL whose CSV has a header and as
  many rows of that width as the link says;
- the screenshot (--screenshot, 1400x4000) is a PNG of that size whose pixels are not all one colour: more than 2%
  of them differ from the page's background and more than 20 colours occur;
- the check can fail: the same page with its first figure's mark made invalid reports drawn:(M-1)/M, names that
  figure in data-failed and records a problem.
Exit 77 (ctest's SKIP_RETURN_CODE) when no Chromium is installed: tools/setup.sh --test installs Debian's."""
import argparse
import csv
import html.parser
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import urllib.parse
import zlib

WIDTH, HEIGHT = 1400, 4000
BUDGET_MS = "30000"  # virtual time: the page draws in about 1 s of it
problems = []


def check(ok, message):
    if not ok:
        problems.append(message)
    return ok


class Page(html.parser.HTMLParser):
    """What the checks read from a page: attributes of <html> and <body>, plot containers and what they hold,
    missing-figure notes, CSV links, external resources and the embedded JSON blocks."""

    def __init__(self):
        super().__init__()
        self.html_attrs, self.body_attrs = {}, {}
        self.plots = {}  # container id -> names of the tags inside it
        self.open_plots = []  # (id, depth) of containers being read
        self.depth = 0
        self.figure = None
        self.missing = []
        self.in_missing = False
        self.csv_links = []  # (figure id, href, link text)
        self.link = None
        self.external = []
        self.script_id = None
        self.scripts = {}

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "html":
            self.html_attrs = a
        elif tag == "body":
            self.body_attrs = a
        elif tag == "figure":
            self.figure = (a.get("id") or "").removeprefix("figure-")
        elif tag == "p" and "missing" in (a.get("class") or "") and self.figure:
            self.missing.append(self.figure)
        elif tag == "a" and "csv" in (a.get("class") or "").split():
            self.link = [self.figure, a.get("href") or "", ""]
        elif tag == "script":
            self.script_id = a.get("id")
            if a.get("src"):
                self.external.append(f"<script src={a['src']}>")
        for attr in ("src", "href"):
            if tag in ("img", "link", "iframe", "audio", "video") and a.get(attr) and not a[attr].startswith("data:"):
                self.external.append(f"<{tag} {attr}={a[attr]}>")
        for plot_id, _ in self.open_plots:
            self.plots[plot_id].append(tag)
        if tag == "div" and "plot" in (a.get("class") or "").split():
            self.plots[a.get("id")] = []
            self.open_plots.append((a.get("id"), self.depth))
        if tag not in self.VOID:
            self.depth += 1

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        self.depth -= 1
        while self.open_plots and self.open_plots[-1][1] >= self.depth:
            self.open_plots.pop()
        if tag == "a" and self.link:
            self.csv_links.append(tuple(self.link))
            self.link = None
        elif tag == "script":
            self.script_id = None

    def handle_data(self, data):
        if self.link:
            self.link[2] += data
        if self.script_id:
            self.scripts[self.script_id] = self.scripts.get(self.script_id, "") + data


def chromium_binary():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run_chromium(chromium, workdir, url, *mode):
    args = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            f"--user-data-dir={workdir}/profile", "--enable-logging=stderr", "--v=0",
            f"--window-size={WIDTH},{HEIGHT}", f"--virtual-time-budget={BUDGET_MS}", *mode, url]
    return subprocess.run(args, capture_output=True, text=True, timeout=180)


def console_lines(stderr):
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def check_dom(dom, expect_plots, expect_missing):
    page = Page()
    page.feed(dom)
    plots = page.plots
    status = page.body_attrs.get("data-plots")
    check(status == f"drawn:{len(plots)}/{len(plots)}",
          f"<body data-plots> is {status!r}, expected 'drawn:{len(plots)}/{len(plots)}' (data-failed: "
          f"{page.body_attrs.get('data-failed')!r})")
    check(not page.body_attrs.get("data-failed"), f"plots failed: {page.body_attrs.get('data-failed')!r}")
    if expect_plots is not None:
        check(len(plots) == expect_plots, f"{len(plots)} plot containers, expected {expect_plots}")
    for plot_id, tags in plots.items():
        check("svg" in tags or "canvas" in tags, f"{plot_id} holds no <svg> or <canvas> (holds {tags[:5]})")
    if expect_missing is not None:
        check(sorted(page.missing) == sorted(expect_missing),
              f"figures not drawn: {page.missing}, expected {expect_missing}")
    check("data-problems" not in page.html_attrs,
          f"the page recorded console problems:\n{page.html_attrs.get('data-problems')}")
    try:
        json.loads(page.scripts.get("orrery-report", ""))
    except ValueError as e:
        problems.append(f"the embedded report JSON (script#orrery-report) does not parse: {e}")
    check_csv_links(page, plots)
    return page


def check_csv_links(page, plots):
    drawn = {plot_id.removeprefix("plot-") for plot_id in plots}
    linked = {figure for figure, _, _ in page.csv_links}
    check(linked == drawn, f"CSV links for {sorted(linked)}, plots {sorted(drawn)}")
    for figure, href, text in page.csv_links:
        prefix = "data:text/csv;charset=utf-8,"
        if not check(href.startswith(prefix), f"{figure}: CSV link is not a data: URL ({href[:40]})"):
            continue
        rows = list(csv.reader(io.StringIO(urllib.parse.unquote(href[len(prefix):]), newline="")))
        said = re.search(r"\((\d+) rows\)", text)
        check(said is not None and len(rows) - 1 == int(said.group(1)),
              f"{figure}: the CSV has {len(rows) - 1} rows, its link says {text!r}")
        check(len(rows) > 1 and all(len(r) == len(rows[0]) for r in rows) and all(rows[0]),
              f"{figure}: the CSV lacks a header or rows of its width: {rows[:3]}")


def png_pixels(data):
    """(width, height, rows of RGB(A) tuples) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG signature")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError(f"unexpected PNG format: depth {depth}, colour type {colour}, interlace {interlace}")
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    previous, rows = bytearray(stride), []
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):  # undo the scanline filter (PNG spec, section 9)
            a = line[i - bpp] if i >= bpp else 0
            b = previous[i]
            c = previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, bpp, rows


def check_screenshot(path):
    if not check(os.path.exists(path) and os.path.getsize(path) > 20000,
                 f"no screenshot, or under 20 kB: {path}"):
        return
    try:
        width, height, bpp, rows = png_pixels(open(path, "rb").read())
    except (ValueError, zlib.error, struct.error, TypeError) as e:
        problems.append(f"the screenshot is not a readable PNG: {e}")
        return
    check((width, height) == (WIDTH, HEIGHT), f"screenshot is {width}x{height}, expected {WIDTH}x{HEIGHT}")
    background = rows[0][:bpp]
    colours, other, total = set(), 0, 0
    for row in rows[::4]:  # every fourth row and column: enough to see plots, quick in Python
        for x in range(0, len(row), 4 * bpp):
            pixel = row[x:x + bpp]
            colours.add(pixel)
            other += pixel != background
            total += 1
    check(other > 0.02 * total, f"only {other} of {total} sampled pixels differ from the background")
    check(len(colours) > 20, f"only {len(colours)} colours in the screenshot")


def check_broken_copy(chromium, workdir, page_html, plots):
    """The status can fail: a copy whose first figure has an invalid mark must report it."""
    marker = '<script type="application/json" id="orrery-figures">'
    start = page_html.find(marker)
    end = page_html.find("</script>", start)
    try:
        figures = json.loads(page_html[start + len(marker):end]) if start >= 0 else None
    except ValueError:
        figures = None
    if not check(isinstance(figures, list), "the page has no readable script#orrery-figures block"):
        return
    if not figures:
        return
    start += len(marker)
    spec = figures[0]["spec"]
    (spec["layer"][0] if "layer" in spec else spec)["mark"] = "no-such-mark"
    broken = os.path.join(workdir, "broken.html")
    with open(broken, "w", encoding="utf-8") as f:
        f.write(page_html[:start] + json.dumps(figures).replace("<", "\\u003c") + page_html[end:])
    result = run_chromium(chromium, workdir, "file://" + broken, "--dump-dom")
    page = Page()
    page.feed(result.stdout)
    n = len(plots)
    check(page.body_attrs.get("data-plots") == f"drawn:{n - 1}/{n}"
          and page.body_attrs.get("data-failed") == figures[0]["id"]
          and page.html_attrs.get("data-problems"),
          f"a page with an invalid mark in {figures[0]['id']} was not reported as failed: data-plots "
          f"{page.body_attrs.get('data-plots')!r}, data-failed {page.body_attrs.get('data-failed')!r}, "
          f"data-problems {page.html_attrs.get('data-problems')!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--expect-plots", type=int)
    parser.add_argument("--expect-missing", type=lambda s: [x for x in s.split(",") if x])
    parser.add_argument("--keep", help="copy the page and the screenshot into this folder")
    parser.add_argument("producer", nargs="+")
    args = parser.parse_args()
    chromium = chromium_binary()
    if not chromium:
        print("SKIP: no chromium on PATH (tools/setup.sh --test installs Debian's chromium)")
        return 77
    with tempfile.TemporaryDirectory(prefix="orrery-report-") as workdir:
        page_path = os.path.join(workdir, "report.html")
        command = [a.replace("{html}", page_path) for a in args.producer]
        made = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if made.returncode != 0 or not os.path.exists(page_path):
            print(f"FAIL: {' '.join(command)} exited {made.returncode} without a page:\n{made.stderr[-2000:]}")
            return 1
        page_html = open(page_path, encoding="utf-8").read()
        url = "file://" + page_path
        dom_run = run_chromium(chromium, workdir, url, "--dump-dom")
        page = check_dom(dom_run.stdout, args.expect_plots, args.expect_missing)
        check(not page.external, f"the page loads resources from elsewhere: {page.external[:5]}")
        logged = console_lines(dom_run.stderr)
        check(not logged, "the console logged:\n" + "\n".join(logged[:20]))
        shot = os.path.join(workdir, "report.png")
        run_chromium(chromium, workdir, url, f"--screenshot={shot}")
        check_screenshot(shot)
        check_broken_copy(chromium, workdir, page_html, page.plots)
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            for path in (page_path, shot):
                if os.path.exists(path):
                    shutil.copy(path, args.keep)
        summary = f"{len(page.plots)} plots, {len(page.missing)} not drawn ({', '.join(page.missing) or 'none'})"
    if problems:
        print(f"FAIL ({summary}):\n- " + "\n- ".join(problems))
        return 1
    print(f"OK: {summary}; console clean; screenshot {WIDTH}x{HEIGHT} checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
