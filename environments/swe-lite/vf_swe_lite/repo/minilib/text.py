"""Text helpers."""


def slugify(text, max_length=40):
    """Lower-case words joined by hyphens; other characters dropped; at most max_length long."""
    words = []
    current = ""
    for ch in text.lower():
        if ch.isalnum():
            current += ch
        elif current:
            words.append(current)
            current = ""
    if current:
        words.append(current)
    slug = "-".join(words)
    if len(slug) > max_length:
        slug = slug[:max_length].rstrip("-")
    return slug


def truncate(text, limit, suffix="..."):
    """text cut to at most limit characters, ending with suffix when it was cut."""
    if len(text) <= limit:
        return text
    keep = limit - len(suffix)
    if keep < 1:
        return suffix[:limit]
    return text[:keep] + suffix


def word_count(text):
    """Number of whitespace-separated words."""
    count = 0
    in_word = False
    for ch in text:
        if ch.isspace():
            in_word = False
        elif not in_word:
            in_word = True
            count += 1
    return count


def initials(name):
    """Upper-case first letters of the name's parts, e.g. 'ada lovelace' -> 'AL'."""
    parts = [p for p in name.replace("-", " ").split(" ") if p]
    return "".join(p[0].upper() for p in parts)
