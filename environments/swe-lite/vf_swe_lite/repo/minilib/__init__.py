"""minilib: small utilities for text, numbers, sequences and dates."""

from minilib.dates import day_of_year, days_in_month, is_leap_year
from minilib.numbers import clamp, is_prime, mean, median, percent_change
from minilib.seqs import chunked, dedupe, group_by, running_total, window
from minilib.text import initials, slugify, truncate, word_count

__all__ = [
    "chunked",
    "clamp",
    "day_of_year",
    "days_in_month",
    "dedupe",
    "group_by",
    "initials",
    "is_leap_year",
    "is_prime",
    "mean",
    "median",
    "percent_change",
    "running_total",
    "slugify",
    "truncate",
    "window",
    "word_count",
]
