"""Wire dialects: how a provider API's requests read as v1 messages and tools, and how v1
messages are written back (``chat``: OpenAI chat completions; ``responses``: OpenAI Responses;
``anthropic``: Anthropic Messages, requests and replies)."""

from verifiers.v1.dialects.anthropic import AnthropicDialect
from verifiers.v1.dialects.chat import ChatDialect, parse_message, parse_tools
from verifiers.v1.dialects.responses import ResponsesDialect

__all__ = ["AnthropicDialect", "ChatDialect", "ResponsesDialect", "parse_message", "parse_tools"]
