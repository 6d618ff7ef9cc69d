"""Domain patterns: validation, matching and rule priority.

Lyra's domain rules (categories, politeness, the denylist, human blocks) name domains in one of two forms:

* exact, ``example.com``: matches that host name and nothing else;
* suffix glob, ``*.example.com``: matches every host *below* ``example.com`` (``a.example.com``,
  ``a.b.example.com``) but **not** ``example.com`` itself. To cover a site and all its subdomains, add two
  rules: ``example.com`` and ``*.example.com``.

No other wildcard is supported (``*``, ``*.*``, ``ex*ample.com``, ``example.*``, ``*.*.example.com``...).

A pattern whose domain part is itself a public suffix (``com``, ``co.jp``, and private suffixes such as
``github.io``) would reach domains owned by unrelated parties, so :func:`validate_pattern` refuses it unless the
caller passes ``allow_public_suffix=True`` (the category table does, because ``*.edu`` only sets a category).
Public suffixes come from the Public Suffix List snapshot bundled with the ``publicsuffixlist`` package; it is
read from the installed package and never downloaded at run time.

Matching has one implementation, :class:`PatternIndex`: an exact pattern beats every suffix glob, and among suffix
globs the longest suffix wins (for one domain, two different matching suffixes always differ in length). The domain
policy (categories, politeness, denylist) looks domains up in such an index, and :func:`choose_rule` builds one over
the human override rules, whose equally specific rules are ordered by the most recent ``updated_at``
(decision record 0006). :func:`pattern_matches` and :func:`pattern_specificity` state the same rule one pattern at
a time; the unit tests check the index against them.
"""

from __future__ import annotations

import ipaddress
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Generic, TypeVar

from publicsuffixlist import PublicSuffixList

from lyra.core.errors import InvalidInputError
from lyra.core.net import domain_char_problem

__all__ = [
    "PatternIndex",
    "choose_rule",
    "is_public_suffix",
    "lift_host",
    "normalise_domain",
    "pattern_matches",
    "pattern_specificity",
    "validate_pattern",
]

R = TypeVar("R")
T = TypeVar("T")

MAX_DOMAIN_LENGTH = 253
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_PATTERN_HINT = "use an exact domain (example.com) or a suffix glob (*.example.com)"

_psl_lock = threading.Lock()
_psl_instance: PublicSuffixList | None = None


def _psl() -> PublicSuffixList:
    """The Public Suffix List, parsed once from the snapshot inside the installed package.

    ``PublicSuffixList()`` with no ``source`` reads the bundled ``public_suffix_list.dat``; nothing is fetched.
    Private suffixes (``github.io``...) are kept (``only_icann=False``), and an unknown top-level label counts as a
    public suffix (``accept_unknown=True``, the list's implicit ``*`` rule).
    """
    global _psl_instance
    if _psl_instance is None:
        with _psl_lock:
            if _psl_instance is None:
                _psl_instance = PublicSuffixList(source=None, accept_unknown=True, only_icann=False)
    return _psl_instance


def normalise_domain(domain: str) -> str:
    """Lowercase, trim whitespace and one trailing dot; encode a non-ASCII (IDN) name to punycode.

    ``www.`` is kept: patterns name hosts as written. Raises ``ValueError`` when an IDN cannot be encoded (an
    empty or over-long label, characters IDNA forbids).
    """
    value = domain.strip().lower()
    if value.endswith("."):
        value = value[:-1]
    if not value.isascii():
        try:
            value = value.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise ValueError(f"{domain!r} cannot be encoded as an internationalised domain name: {exc}") from None
    return value


def is_public_suffix(domain: str) -> bool:
    """True when ``domain`` is itself a public suffix (``com``, ``co.jp``, ``github.io``), per the bundled PSL.

    ``example.com`` and ``example.github.io`` are not. Unknown top-level labels count as public suffixes.
    Raises ``ValueError`` when the name cannot be normalised (see :func:`normalise_domain`).
    """
    value = normalise_domain(domain)
    if not value:
        return False
    return _psl().is_public(value)


def _looks_like_ip(value: str) -> bool:
    candidate = value.removeprefix("[").removesuffix("]")
    try:
        ipaddress.ip_address(candidate)
    except ValueError:
        return False
    return True


def validate_pattern(pattern: str, field: str = "args.domain_pattern", *, allow_public_suffix: bool = False) -> str:
    """Check a domain pattern and return its normalised form (``example.com`` or ``*.example.com``).

    Raises :class:`~lyra.core.errors.InvalidInputError` for ``field`` with a specific reason. Refused: empty
    input; any space, line break, control or invisible character (named, with its position: never trimmed or
    dropped); ``*``, ``*.*``, ``**`` and any ``*`` other than one leading ``*.``; URLs, paths, ports and other
    non-hostname characters; IP addresses (Lyra's rules are about domain names); invalid host labels (letters,
    digits and inner hyphens, 1-63 characters each, 253 in total); fewer than two labels; and — unless
    ``allow_public_suffix`` — a pattern whose domain part is a public suffix (``*.com``, ``co.jp``, ``*.github.io``).

    With ``allow_public_suffix=True`` single-label names are accepted too (``*.edu``, or the pseudo-host
    ``local`` that local files carry), since such rules only label domains and never grant or deny access.
    """

    def refuse(message: str) -> InvalidInputError:
        return InvalidInputError(field, message, hint=_PATTERN_HINT)

    problem = domain_char_problem(pattern)
    if problem is not None:  # refused, never trimmed: "example.org\n" and "exa\u200bmple.org" are not example.org
        raise refuse(f"{pattern!r} {problem}")
    raw = pattern
    if not raw:
        raise refuse("a domain pattern must not be empty")
    if "://" in raw:
        raise refuse(f"{raw!r} is a URL; give only the domain name, without scheme or path")
    if "/" in raw:
        raise refuse(f"{raw!r} contains a path; give only the domain name")
    if _looks_like_ip(raw):
        raise refuse(f"{raw!r} is an IP address; domain rules apply to domain names only")
    if ":" in raw:
        raise refuse(f"{raw!r} contains a port; give only the domain name, without ':port'")
    if any(ch.isspace() for ch in raw) or any(ch in raw for ch in "@?#[]\\"):
        raise refuse(f"{raw!r} contains characters that cannot appear in a domain name")

    if raw == "*":
        raise refuse("'*' alone would match every domain")
    if "**" in raw:
        raise refuse(f"{raw!r}: '**' is not supported; the only wildcard is a leading '*.'")
    wildcard = raw.startswith("*.")
    host = raw[2:] if wildcard else raw
    if host == "*":
        raise refuse("'*.*' would match every domain")
    if "*" in host:
        if wildcard:
            raise refuse(f"{raw!r}: only one leading '*.' is allowed (e.g. *.example.com)")
        raise refuse(f"{raw!r}: '*' is only allowed as a leading '*.' (e.g. *.example.com), not inside a name")

    try:
        host = normalise_domain(host)
    except ValueError as exc:
        raise refuse(str(exc)) from None
    if not host:
        raise refuse(f"{raw!r} has no domain name after '*.'")
    if _looks_like_ip(host):
        raise refuse(f"{raw!r} names an IP address; domain rules apply to domain names only")
    if len(host) > MAX_DOMAIN_LENGTH:
        raise refuse(f"{raw!r} is longer than {MAX_DOMAIN_LENGTH} characters")
    labels = host.split(".")
    for label in labels:
        if not label:
            raise refuse(f"{raw!r} has an empty label (a leading, trailing or doubled dot)")
        if len(label) > 63:
            raise refuse(f"{raw!r}: the label {label[:20]!r}... is longer than 63 characters")
        if not _LABEL.fullmatch(label):
            raise refuse(
                f"{raw!r}: the label {label!r} is not a valid host name label "
                "(letters, digits and hyphens, not starting or ending with a hyphen)"
            )
    if labels[-1].isdigit():
        raise refuse(f"{raw!r} looks like an IP address; domain rules apply to domain names only")

    if not allow_public_suffix:
        if _psl().is_public(host):
            if wildcard:
                raise refuse(
                    f"{raw!r} would cover every domain under the public suffix {host!r} (Public Suffix List); "
                    f"name a registered domain, e.g. *.example.{host}"
                )
            raise refuse(f"{host!r} is a public suffix (Public Suffix List), not a domain that one party owns")
        if len(labels) < 2:
            raise refuse(f"{raw!r} needs at least two labels (e.g. example.com)")

    return f"*.{host}" if wildcard else host


def lift_host(value: str) -> str | None:
    """The one exact host ``value`` names when :func:`validate_pattern` refuses it only for what it names — an IPv4
    address, a single-label name (``localhost``, an intranet host) or a public suffix — normalised as the gate keys
    domains (lowercase, no trailing dot, no leading ``www.``); None for anything else (a wildcard, a URL, a port,
    invalid labels, hidden characters). A block on such a host (a page of it carried a dangerous pattern) can always
    be lifted and cleared, although no rule may block it."""
    if domain_char_problem(value) is not None or "*" in value or any(ch in value for ch in "/:@?#[]\\"):
        return None
    try:
        host = normalise_domain(value)
    except ValueError:
        return None
    if not host or len(host) > MAX_DOMAIN_LENGTH:
        return None
    if _looks_like_ip(host):
        return host
    if not all(_LABEL.fullmatch(label) for label in host.split(".")):
        return None
    return host.removeprefix("www.")


def _split(pattern: str) -> tuple[bool, str]:
    """(is_exact, domain part) of an already validated pattern."""
    if pattern.startswith("*."):
        return False, pattern[2:]
    return True, pattern


def pattern_matches(pattern: str, domain: str) -> bool:
    """Whether ``domain`` falls under ``pattern``.

    ``example.com`` matches only ``example.com``; ``*.example.com`` matches ``a.example.com`` and
    ``a.b.example.com`` but not ``example.com`` itself (add both rules to cover both). Both sides are compared
    after :func:`normalise_domain`; a domain that cannot be normalised matches nothing.
    """
    try:
        target = normalise_domain(domain)
        exact, host = _split(normalise_domain(pattern))
    except ValueError:
        return False
    if not target or not host:
        return False
    if exact:
        return target == host
    return target.endswith("." + host)


def pattern_specificity(pattern: str) -> tuple[int, int]:
    """Sort key, larger is more specific: ``(1 if exact else 0, length of the domain part)``.

    Any exact pattern outranks every suffix glob; among suffix globs the longest suffix wins. For two suffixes
    that both match one domain, the longer one in characters is also the one with more labels.
    """
    exact, host = _split(pattern.strip().lower())
    return (1 if exact else 0, len(host))


class PatternIndex(Generic[T]):
    """Values keyed by domain pattern; :meth:`find` answers exact first, then the longest matching suffix glob.

    Keys are used as given, so add patterns in their normalised form (what :func:`validate_pattern` returns) and
    look up normalised domains (:func:`normalise_domain`); any further key rule, such as dropping ``www.``, belongs
    to the caller. A lookup costs one dictionary probe for the exact entry and one per dot of the domain for the
    suffix globs, whatever the number of entries.

    Adding a pattern that is already present replaces its value, unless ``merge`` is given: then the stored value
    becomes ``merge(stored, new)``.
    """

    __slots__ = ("_exact", "_merge", "_suffix")

    def __init__(self, entries: Iterable[tuple[str, T]] = (), *, merge: Callable[[T, T], T] | None = None) -> None:
        self._exact: dict[str, T] = {}
        self._suffix: dict[str, T] = {}  # keyed by the domain part of ``*.domain``
        self._merge = merge
        for pattern, value in entries:
            self.add(pattern, value)

    def add(self, pattern: str, value: T) -> None:
        """Store ``value`` under ``pattern`` (``example.com`` or ``*.example.com``); ``ValueError`` if no domain."""
        exact, host = _split(pattern)
        if not host:
            raise ValueError(f"{pattern!r} names no domain")
        table = self._exact if exact else self._suffix
        if self._merge is not None and host in table:
            value = self._merge(table[host], value)
        table[host] = value

    def lookup(self, domain: str) -> tuple[str, T] | None:
        """The winning ``(pattern, value)`` for the normalised ``domain``, or ``None`` when no pattern matches.

        The exact entry first; otherwise the suffix globs of the domain's proper suffixes, longest first:
        ``a.b.example.com`` tries ``*.b.example.com``, ``*.example.com``, ``*.com``. The domain itself is never tried
        as a suffix, so ``*.example.com`` does not match ``example.com``.
        """
        if not domain:
            return None
        if domain in self._exact:
            return domain, self._exact[domain]
        if self._suffix:
            dot = domain.find(".")
            while dot != -1:
                suffix = domain[dot + 1 :]
                if suffix in self._suffix:
                    return f"*.{suffix}", self._suffix[suffix]
                dot = domain.find(".", dot + 1)
        return None

    def find(self, domain: str) -> T | None:
        """The value of the winning pattern for the normalised ``domain`` (see :meth:`lookup`), or ``None``."""
        hit = self.lookup(domain)
        return None if hit is None else hit[1]


def choose_rule(
    domain: str,
    rules: Sequence[R],
    pattern: Callable[[R], str],
    updated_at: Callable[[R], str],
) -> R | None:
    """The rule that applies to ``domain``, or ``None`` when no rule's pattern matches it.

    Priority (decision record 0006):

    1. an exact rule beats any suffix rule, however recent the suffix rule is;
    2. among suffix rules the longest suffix wins (``*.b.example.com`` over ``*.example.com``);
    3. between equally specific rules the newest ``updated_at`` wins. ISO-8601 timestamps written the same way
       (same timezone and precision) order correctly as strings.

    On a complete tie the earlier rule in ``rules`` wins. Patterns and the domain are compared after
    :func:`normalise_domain`, as in :func:`pattern_matches`; a pattern that cannot be normalised matches nothing.
    Two matching rules are equally specific exactly when their normalised patterns are equal, so the index groups
    the rules by pattern (keeping the newest of each group) and then picks the most specific pattern.
    """
    try:
        target = normalise_domain(domain)
    except ValueError:
        return None

    def newer(kept: R, candidate: R) -> R:
        return candidate if updated_at(candidate) > updated_at(kept) else kept

    index: PatternIndex[R] = PatternIndex(merge=newer)
    for rule in rules:
        try:
            index.add(normalise_domain(pattern(rule)), rule)
        except ValueError:  # cannot be normalised, or names no domain: it matches nothing
            continue
    return index.find(target)
