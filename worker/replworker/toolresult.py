"""ToolResult: what a downstream tool call returns in a cell (docs/contract.md §7.5). It is
the complete CallToolResult envelope, a dict, so code written for the envelope keeps
working, with the parts a cell usually wants as attributes."""

import binascii

from .bridge import ToolError
from .common import type_name
from .deepjson import loads
from .limits import TOOL_ERROR_CHARS
from .messages import MCP_IMAGE_NOT_BASE64, MCP_MALFORMED, MCP_TEXT_NOT_ENVELOPE, TOOL_FAILED


class ToolResult(dict):
    """The complete CallToolResult envelope of one call (a dict: `content`,
    `structuredContent`, `isError`, `_meta` as the server sent them), with:

    .text      the text of every `text` block, joined with newlines
    .data      structuredContent when the server sent it, else the text parsed as JSON
               when it is JSON, else None
    .images    the image blocks as ToolImage values, which display() shows
    .is_error  the envelope's isError, as a bool

    Awaiting it gives the envelope itself, so `await mcp.call(...)` works after its
    single dispatch."""

    __slots__ = ()

    def __await__(self):
        return self
        yield  # a generator: awaiting it finishes at once

    @property
    def text(self):
        return envelope_text(self)

    @property
    def data(self):
        structured = self.get('structuredContent')
        if structured is not None:
            return structured
        text = self.text
        if not text.strip():
            return None
        try:
            return loads(text)
        except ValueError:
            return None

    @property
    def images(self):
        content = self.get('content')
        images = []
        for index, block in enumerate(content if isinstance(content, list) else ()):
            if not isinstance(block, dict) or block.get('type') != 'image' or not isinstance(block.get('data'), str):
                continue
            try:
                data = binascii.a2b_base64(block['data'])
            except binascii.Error:
                raise ValueError(MCP_IMAGE_NOT_BASE64.format(index)) from None
            mime = block.get('mimeType')
            images.append(ToolImage(data, mime if isinstance(mime, str) else ''))
        return images

    @property
    def is_error(self):
        return self.get('isError') is True


class ToolImage:
    """One image block of a ToolResult: .data (the decoded bytes) and .mime_type.
    display(image) shows it; anything that is not PNG, JPEG, GIF or WebP is refused there."""

    __slots__ = ('data', 'mime_type')

    def __init__(self, data, mime_type):
        self.data = data
        self.mime_type = mime_type

    def __repr__(self):
        return f'<ToolImage {self.mime_type or "unknown type"}, {len(self.data)} bytes; display() shows it>'

    def _repr_png_(self):
        return None if self.mime_type == 'image/jpeg' else self.data

    def _repr_jpeg_(self):
        return self.data if self.mime_type == 'image/jpeg' else None


def envelope_text(envelope):
    """The text of every `text` block of an envelope, joined with newlines (mcp.text)."""
    if not isinstance(envelope, dict):
        raise TypeError(MCP_TEXT_NOT_ENVELOPE.format(type_name(type(envelope))))
    content = envelope.get('content')
    blocks = content if isinstance(content, list) else []
    return '\n'.join(
        block['text'] for block in blocks
        if isinstance(block, dict) and block.get('type') == 'text' and isinstance(block.get('text'), str)
    )


def to_envelope(result):
    """A `call` result as the envelope mcp.call returns; a tool error raises ToolError."""
    if type(result) is not dict:
        raise ToolError(MCP_MALFORMED.format('call'))
    envelope = ToolResult(result)
    if envelope.get('isError') is True:
        raise ToolError(TOOL_FAILED.format(envelope_text(envelope)[:TOOL_ERROR_CHARS]), result=envelope)
    return envelope
