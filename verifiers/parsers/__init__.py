"""Parsers: read the answer (and check the format) of a model's completion."""

from verifiers.parsers.extract import extract_boxed_answer, extract_hash_answer, strip_think
from verifiers.parsers.maybe_think_parser import MaybeThinkParser
from verifiers.parsers.parser import Parser
from verifiers.parsers.think_parser import ThinkParser
from verifiers.parsers.xml_parser import XMLParser

__all__ = [
    "MaybeThinkParser",
    "Parser",
    "ThinkParser",
    "XMLParser",
    "extract_boxed_answer",
    "extract_hash_answer",
    "strip_think",
]


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder

__getattr__ = _forwarder(__name__)
