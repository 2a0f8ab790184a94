"""Calendar helpers (proleptic Gregorian calendar)."""

_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def is_leap_year(year):
    """True for leap years."""
    if year % 400 == 0:
        return True
    if year % 100 == 0:
        return False
    return year % 4 == 0


def days_in_month(year, month):
    """Number of days of month (1-12) in year."""
    if month < 1 or month > 12:
        raise ValueError("month must be 1-12")
    if month == 2 and is_leap_year(year):
        return 29
    return _DAYS[month - 1]


def day_of_year(year, month, day):
    """1 for January 1st, up to 365 or 366."""
    if day < 1 or day > days_in_month(year, month):
        raise ValueError("no such day")
    total = day
    for m in range(1, month):
        total += days_in_month(year, m)
    return total
