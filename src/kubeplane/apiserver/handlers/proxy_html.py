"""Links inside a proxied HTML page, put under the proxy path as upstream's proxy transport does:

    <a href="/metrics">  from pods/web/proxy/  ->  <a href="/api/v1/namespaces/ns/pods/web/proxy/metrics">

Only start tags and URL-valued attributes of upstream's list change (href of a, link, base and
area; src of img, script, iframe; action of form; ...); each URL is rewritten by the same rule
as a redirect's Location (proxy.rewrite_location: the backend's own host, or none, and an
absolute path). Everything else of the page is kept byte for byte (upstream re-serializes the
tags it visits; here a tag whose URLs stay as they are is kept as written too).

Bounded, unlike upstream (which reads any page whole): a page is rewritten when it is at most
MAX_REWRITE bytes; a larger one is passed on unchanged, streamed. gzip and deflate pages are
decoded and encoded again; other encodings are passed on unchanged, as upstream does.

Upstream: Transport.rewriteResponse and rewriteHTML, atomsToAttrs (apimachinery
pkg/util/proxy/transport.go).
"""
from __future__ import annotations

import asyncio
import gzip
import html
import zlib
from collections.abc import AsyncIterator, Callable
from html.parser import HTMLParser

MAX_REWRITE = 1 << 20     # bytes of HTML rewritten at most (decoded): all links, ~1-3 s of parsing (in a thread)

# Upstream: atomsToAttrs — which attributes of which tags hold URLs.
URL_ATTRS: dict[str, frozenset[str]] = {tag: frozenset(attrs.split()) for tag, attrs in {
    "a": "href", "applet": "codebase", "area": "href", "audio": "src", "base": "href", "blockquote": "cite",
    "body": "background", "button": "formaction", "command": "icon", "del": "cite", "embed": "src",
    "form": "action", "frame": "longdesc src", "head": "profile", "html": "manifest", "iframe": "longdesc src",
    "img": "longdesc src usemap", "input": "src usemap formaction", "ins": "cite", "link": "href",
    "object": "classid codebase data usemap", "q": "cite", "script": "src", "source": "src",
    "video": "poster src"}.items()}


class _Tags(HTMLParser):
    """Finds the start tags with URL attributes: (offset, raw text, tag, attributes)."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=False)
        self.found: list[tuple[int, str, str, list[tuple[str, str | None]]]] = []
        self._line_starts = [0]                 # getpos() counts lines by "\n", as this does
        i = text.find("\n")
        while i != -1:
            self._line_starts.append(i + 1)
            i = text.find("\n", i + 1)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in URL_ATTRS:
            line, col = self.getpos()
            raw = self.get_starttag_text() or ""
            self.found.append((self._line_starts[line - 1] + col, raw, tag, attrs))

    handle_startendtag = handle_starttag


def rewrite_html(page: bytes, rewrite: Callable[[str], str]) -> bytes:
    """The page with every URL attribute passed through rewrite(url)."""
    text = page.decode("utf-8", "surrogateescape")
    parser = _Tags(text)
    parser.feed(text)
    parser.close()
    out, pos = [], 0
    for offset, raw, tag, attrs in parser.found:
        if text[offset:offset + len(raw)] != raw:
            continue                                   # not where the parser said: leave it
        names = URL_ATTRS[tag]
        new_attrs = [(k, rewrite(v) if k in names and v is not None else v) for k, v in attrs]
        if new_attrs == attrs:
            continue
        out.append(text[pos:offset])
        out.append(_start_tag(tag, new_attrs, raw.rstrip().endswith("/>")))
        pos = offset + len(raw)
    out.append(text[pos:])
    return "".join(out).encode("utf-8", "surrogateescape")


def _start_tag(tag: str, attrs: list[tuple[str, str | None]], self_closing: bool) -> str:
    """Upstream: html.Token.String() of a start tag."""
    parts = [f"<{tag}"]
    for k, v in attrs:
        parts.append(f' {k}="{html.escape(v or "", quote=True)}"' if v is not None else f" {k}")
    parts.append("/>" if self_closing else ">")
    return "".join(parts)


async def rewritten(body: AsyncIterator[bytes], encoding: str, rewrite: Callable[[str], str]) -> AsyncIterator[bytes]:
    """The page rewritten, or, past MAX_REWRITE bytes or in an encoding not understood, as it is."""
    if encoding not in ("", "gzip", "deflate"):
        async for chunk in body:
            yield chunk
        return
    held: list[bytes] = []
    size = 0
    async for chunk in body:
        held.append(chunk)
        size += len(chunk)
        if size > MAX_REWRITE:                   # too large to hold: pass it on as it comes
            for c in held:
                yield c
            async for c in body:
                yield c
            return
    raw = b"".join(held)
    # Parsing a large page takes a while: in a thread, not on the event loop.
    yield await asyncio.to_thread(_rewrite_encoded, raw, encoding, rewrite)


def _rewrite_encoded(raw: bytes, encoding: str, rewrite: Callable[[str], str]) -> bytes:
    try:
        page = _decode(raw, encoding)
    except (OSError, zlib.error, EOFError):
        return raw                                # not what it says it is: unchanged
    if len(page) > MAX_REWRITE:
        return raw
    return _encode(rewrite_html(page, rewrite), encoding)


def _decode(raw: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif encoding == "deflate":
        d = zlib.decompressobj(-zlib.MAX_WBITS)      # Go's flate: raw deflate
    else:
        return raw
    page = d.decompress(raw, MAX_REWRITE + 1)        # a decompression bomb stops at the cap
    return page


def _encode(page: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return gzip.compress(page)
    if encoding == "deflate":
        c = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
        return c.compress(page) + c.flush()
    return page
