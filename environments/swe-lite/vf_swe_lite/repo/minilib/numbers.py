"""Number helpers."""


def clamp(value, low, high):
    """value limited to the closed range [low, high]."""
    if low > high:
        raise ValueError("low must not exceed high")
    if value < low:
        return low
    if value > high:
        return high
    return value


def mean(values):
    """Arithmetic mean of a non-empty sequence."""
    if len(values) == 0:
        raise ValueError("mean of an empty sequence")
    total = 0
    for v in values:
        total += v
    return total / len(values)


def median(values):
    """Middle value of a non-empty sequence (mean of the two middle values when even)."""
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        raise ValueError("median of an empty sequence")
    mid = n // 2
    if n % 2 == 1:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2


def is_prime(n):
    """True for prime numbers."""
    if n < 2:
        return False
    d = 2
    while d * d <= n:
        if n % d == 0:
            return False
        d += 1
    return True


def percent_change(old, new):
    """Change from old to new in percent, rounded to 2 decimals."""
    if old == 0:
        raise ZeroDivisionError("percent change from zero")
    return round((new - old) / abs(old) * 100, 2)
