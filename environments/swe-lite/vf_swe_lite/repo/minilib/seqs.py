"""Sequence helpers."""


def chunked(items, size):
    """Consecutive lists of size items (the last may be shorter)."""
    if size < 1:
        raise ValueError("size must be at least 1")
    out = []
    for start in range(0, len(items), size):
        out.append(list(items[start : start + size]))
    return out


def dedupe(items):
    """items without repeats, first occurrences kept in order."""
    seen = set()
    out = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def group_by(items, key):
    """dict of key(item) -> list of items, in input order."""
    groups = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups


def running_total(values):
    """Prefix sums: [a, a + b, a + b + c, ...]."""
    out = []
    total = 0
    for v in values:
        total = total + v
        out.append(total)
    return out


def window(items, width):
    """All consecutive slices of length width, as tuples."""
    if width < 1:
        raise ValueError("width must be at least 1")
    return [tuple(items[i : i + width]) for i in range(len(items) - width + 1)]
