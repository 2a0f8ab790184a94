"""Images in v1 messages: :func:`image_data_url` turns an image into the ``data:`` URL an
``ImageUrlContentPart`` carries; the content-part types are re-exported here."""

from __future__ import annotations

import base64
from io import BytesIO
from typing import Any

from verifiers.v1.types import (
    ContentPart,
    ImageUrlContentPart,
    ImageUrlSource,
    MessageContent,
    TextContentPart,
)

__all__ = [
    "ContentPart",
    "ImageUrlContentPart",
    "ImageUrlSource",
    "MessageContent",
    "TextContentPart",
    "image_data_url",
]


def image_data_url(image: Any) -> str:
    """A base64 PNG ``data:`` URL of ``image`` (anything with a PIL-style
    ``save(buffer, format="PNG")``)."""
    buffer = BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
