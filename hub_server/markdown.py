"""READMEs from untrusted uploads, rendered to safe HTML.

markdown-it-py with raw HTML disabled (any ``<script>``, ``<img onerror=...>`` in the source
comes out as escaped text), plus a scheme allowlist for every link and image: relative URLs,
fragments, ``http``, ``https`` and (links only) ``mailto``. Anything else (``javascript:``,
``data:``, ``vbscript:``, obfuscated with entities, case or control characters) is dropped.
External links get ``rel="nofollow noopener noreferrer"``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = ["render_readme", "safe_url"]

_LINK_SCHEMES = frozenset({"http", "https", "mailto"})
_IMAGE_SCHEMES = frozenset({"http", "https"})
_CONTROL = re.compile(r"[\x00-\x20\x7f]+")
MAX_README_CHARS = 512 * 1024


def safe_url(url: str, *, image: bool = False) -> bool:
    """Whether ``url`` (already entity-decoded by the parser) may appear in a page."""
    cleaned = _CONTROL.sub("", url)
    if not cleaned:
        return False
    if cleaned.startswith(("#", "/", "./", "../", "?")) and not cleaned.startswith("//"):
        return True
    try:
        scheme = urlsplit(cleaned).scheme.lower()
    except ValueError:
        return False
    if not scheme:  # a relative path such as docs/usage.md (no colon before the first slash)
        return ":" not in cleaned.split("/", 1)[0]
    return scheme in (_IMAGE_SCHEMES if image else _LINK_SCHEMES)


def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable("table").enable("strikethrough")
    md.validateLink = lambda url: safe_url(url)  # type: ignore[method-assign]
    renderer: Any = md.renderer
    default_link = renderer.rules.get("link_open")
    default_image = renderer.rules.get("image")

    def link_open(_self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        tok = tokens[idx]
        href = str(tok.attrGet("href") or "")
        if not safe_url(href):
            tok.attrSet("href", "#")
        elif urlsplit(_CONTROL.sub("", href)).scheme:
            tok.attrSet("rel", "nofollow noopener noreferrer")
        if default_link is not None:
            return str(default_link(tokens, idx, options, env))
        return str(renderer.renderToken(tokens, idx, options, env))

    def image(_self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        tok = tokens[idx]
        if not safe_url(str(tok.attrGet("src") or ""), image=True):
            tok.attrSet("src", "")
        tok.attrSet("loading", "lazy")
        tok.attrSet("referrerpolicy", "no-referrer")
        if default_image is not None:
            return str(default_image(tokens, idx, options, env))
        return str(renderer.renderToken(tokens, idx, options, env))

    md.add_render_rule("link_open", link_open)
    md.add_render_rule("image", image)
    return md


def render_readme(text: str | None) -> str:
    """Sanitised HTML for a Markdown README (empty string for none)."""
    if not text:
        return ""
    if len(text) > MAX_README_CHARS:
        text = text[:MAX_README_CHARS] + "\n\n*(README truncated)*"
    return str(_parser().render(text))
