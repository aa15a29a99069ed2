"""How the bench/*.sh reports write their figures (their Python is inline; this is what they
share): numbers, shares, medians over runs and verdicts against targets."""
import statistics


def fmt(x, digits=1):
    """A figure to `digits` decimals, or "n/a"."""
    return "n/a" if x is None else f"{x:.{digits}f}"


def pct(x):
    """A share as a percentage to one decimal, or "n/a"."""
    return "n/a" if x is None else f"{100 * x:.1f}%"


def verdict(ok):
    return "met" if ok else "**not met**"


def medof(runs, key):
    """The median of `key` over the runs that have it, or None."""
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None
