"""The one decision "may Lyra fetch / use this domain, and why" (decision records 0006 and 0008).

Every fetch path (the ingest pipeline today; the web and academic sources later), ``check_domain`` and
``get_status`` call :meth:`DomainGate.decide`. Order: a human override rule first (``feedback`` domain_block /
domain_unblock; exact pattern > longest suffix > newest), then the denylist of ``config/domains.yaml``, then the
dynamic blocks kept on Domain nodes (dangerous_pattern, high_rejection_rate). An unblock lifts any of those, but the
block's ``domain_unblock_risk`` stays visible.

A page with a dangerous pattern (:meth:`DomainGate.record_dangerous_document`) blocks that page for every task
(``PageBlock``, until ``feedback`` page_unblock) and its domain for the task that met it (``SKIPS_DOMAIN``, until
``feedback`` domain_unblock on that task, or the task's clean-up); other tasks keep using the domain. Findings on one
domain from ``LYRA_INJECTION_DOMAIN_BLOCK_TASKS`` distinct tasks block the domain for every task (dangerous_pattern).

Categories come from the (hot-reloaded) policy file; they weight ranking and are reported, never used for confidence
(decision record 0007). The one thing they decide is what a high claim
rejection rate does (L6 source verification): an unverified/low domain is blocked, a higher one only marked.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from lyra.core.errors import InvalidInputError
from lyra.core.ids import new_id
from lyra.core.net import normalise_url
from lyra.core.settings import TrustSettings
from lyra.graph.store import GraphStore, to_plain
from lyra.models.api import BlockedDomain, BlockedPage, DomainOverride, DomainOverrideState, SkippedDomain
from lyra.models.trust import DomainDecision, MatchedRule
from lyra.sources.domain_patterns import choose_rule, normalise_domain, pattern_matches
from lyra.sources.domain_policy import ReloadingDomainPolicy

log = logging.getLogger(__name__)
UNBLOCK_RISK = {
    "dangerous_pattern": "high",
    "unknown": "high",
    "high_rejection_rate": "low",
    "denylist": "low",
    "manual": "low",
}
RESTORE_VIA = (
    "feedback(domain_unblock) with this domain or a *.suffix pattern; for the denylist also config/domains.yaml"
)
LOCAL_DOMAIN = "local"
PAGE_RESTORE_VIA = "feedback(page_unblock) with the page's url (any task id)"
SKIP_RESTORE_VIA = "feedback(domain_unblock) on this task with this domain (or a *.suffix pattern)"
MAX_BLOCKED_PAGES_SHOWN = 50
# Categories blocked automatically for a high combined claim rejection rate (decision record 0008:
# "domain_claim_combined_rejection_rate > 30% (UNVERIFIED/LOW) → BLOCKED"; "TRUSTED以上: REJECTED マークのみ").
AUTO_BLOCK_CATEGORIES = frozenset({"unverified", "low"})


@dataclass
class RejectionCheck:
    """What :meth:`DomainGate.check_rejection_rates` did: domains newly blocked, domains newly marked."""

    blocked: list[str] = field(default_factory=list)
    flagged: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def page_key(url: str) -> str:
    """The key a page block is kept under: an http(s) URL's canonical form (lowercase host without ``www.`` and the
    default port, no fragment, no trailing slash, no tracking parameters: :func:`lyra.core.net.normalise_url`), any
    other URL (``file://``) as given."""
    value = url.strip()
    if urlsplit(value).scheme.lower() in ("http", "https"):
        try:
            return normalise_url(value)
        except ValueError:  # a bad port: kept as given
            return value
    return value


def skip_notice(domain: str, url: str, kinds: list[str]) -> str:
    """What a task is told when it stops using ``domain`` because ``url`` carried a dangerous pattern."""
    return (
        f"domain {domain} skipped for this task: page {url} carried instructions to an AI ({', '.join(kinds)}); the "
        f"page is blocked for every task ({PAGE_RESTORE_VIA} clears it); other tasks still use {domain}; "
        f"{SKIP_RESTORE_VIA} lifts the skip"
    )


@dataclass
class DangerousPage:
    """What :meth:`DomainGate.record_dangerous_document` did."""

    finding_id: str
    domain: str
    url: str
    kinds: list[str]
    notice: str
    task_skips_domain: bool = False  # the task stopped using the domain now (False: it had already, or `local`)
    tasks: int = 0  # distinct tasks with a finding on the domain, this one included
    domain_blocked: bool = False  # the findings reached LYRA_INJECTION_DOMAIN_BLOCK_TASKS: blocked now for every task


def _rule(row: dict[str, Any]) -> MatchedRule:
    return MatchedRule(
        rule_id=row["rule_id"],
        domain_pattern=row["domain_pattern"],
        decision=row["decision"],
        reason=row["reason"],
        updated_at=row["updated_at"],
    )


class DomainGate:
    def __init__(self, store: GraphStore, policy: ReloadingDomainPolicy, settings: TrustSettings) -> None:
        self.store = store
        self.policy = policy
        self.settings = settings

    # ------------------------------------------------------------------ reads
    def active_rules(self) -> list[dict[str, Any]]:
        return [to_plain(r) for r in self.store.run("feedback/active_override_rules")]

    @staticmethod
    def _normalise(domain: str, field: str = "domain") -> str:
        try:
            name = normalise_domain(domain)
        except ValueError as exc:
            raise InvalidInputError(field, str(exc)) from None
        if not name or "/" in name or ":" in name or " " in name:
            raise InvalidInputError(field, f"{domain!r} is not a domain name (give e.g. example.org)")
        return name.removeprefix("www.")

    def decide(self, domain: str, rules: list[dict[str, Any]] | None = None) -> DomainDecision:
        name = self._normalise(domain)
        policy = self.policy.current()
        rules = self.active_rules() if rules is None else rules
        chosen = choose_rule(name, rules, pattern=lambda r: r["domain_pattern"], updated_at=lambda r: r["updated_at"])
        override = _rule(chosen) if chosen else None
        deny = policy.denylist_match(name)
        state_rows = self.store.run("domains/domain_state", {"domain": name})
        state = to_plain(state_rows[0]) if state_rows else None

        underlying: tuple[str, str, str | None] | None = None  # (code, text, pattern)
        if deny is not None:
            underlying = ("denylist", f"on the denylist of config/domains.yaml ({deny})", deny)
        elif state and state["blocked"]:
            stored = state["domain_block_reason"] or "unknown"
            underlying = (stored if stored in UNBLOCK_RISK else "unknown", state["detail"] or stored, None)

        category = policy.category(name)
        original: str = (state or {}).get("original_domain_category") or policy.original_category(name)
        code: str | None
        risk: str | None
        if override is not None and override.decision == "block":
            allowed, code, risk = False, "manual", "low"
            reason = f"blocked by a human ({override.domain_pattern}): {override.reason}"
            pattern: str | None = override.domain_pattern
        elif override is not None:
            allowed = True
            code = underlying[0] if underlying else None
            risk = UNBLOCK_RISK[code] if code else None
            lifted = f"; it lifts: {underlying[1]}" if underlying else ""
            reason = f"unblocked by a human ({override.domain_pattern}): {override.reason}{lifted}"
            pattern = override.domain_pattern
        elif underlying is not None:
            allowed, code, risk = False, underlying[0], UNBLOCK_RISK[underlying[0]]
            reason, pattern = underlying[1], underlying[2]
        else:
            allowed, code, risk, reason, pattern = True, None, None, "no block applies", None
        shown = category if allowed else "blocked"
        politeness = policy.politeness(name)
        return DomainDecision(
            domain=name,
            allowed=allowed,
            domain_block_reason=code,
            domain_unblock_risk=risk,
            reason=reason,
            matched_pattern=pattern,
            override=override,
            domain_category=shown,
            original_domain_category=original if not allowed else category,
            category_weight=policy.weight(shown),
            qps=politeness.qps,
            max_pages_per_day=politeness.max_pages_per_day,
        )

    def overrides(self, rules: list[dict[str, Any]] | None = None) -> list[DomainOverride]:
        rules = self.active_rules() if rules is None else rules
        return [
            DomainOverride(
                rule_id=r["rule_id"],
                domain_pattern=r["domain_pattern"],
                decision=r["decision"],
                reason=r["reason"],
                updated_at=r["updated_at"],
            )
            for r in rules
        ]

    def blocked_domains(self, rules: list[dict[str, Any]] | None = None) -> list[BlockedDomain]:
        """Every block signal (dynamic blocks, denylist entries, human block rules), each with the override that
        applies to it, if any (decision record 0006)."""
        rules = self.active_rules() if rules is None else rules
        policy = self.policy.current()
        out: list[BlockedDomain] = []

        def override_state(domain: str) -> DomainOverrideState:
            chosen = choose_rule(
                domain, rules, pattern=lambda r: r["domain_pattern"], updated_at=lambda r: r["updated_at"]
            )
            if chosen is None:
                return DomainOverrideState(is_overridden=False)
            return DomainOverrideState(
                is_overridden=chosen["decision"] == "unblock",
                decision=chosen["decision"],
                matched_pattern=chosen["domain_pattern"],
                rule_id=chosen["rule_id"],
                reason=chosen["reason"],
                updated_at=chosen["updated_at"],
            )

        for row in self.store.run("domains/dynamic_blocks"):
            row = to_plain(row)
            code = row["domain_block_reason"] if row["domain_block_reason"] in UNBLOCK_RISK else "unknown"
            out.append(
                BlockedDomain(
                    domain=row["domain"],
                    blocked_at=row["blocked_at"],
                    domain_block_reason=code,
                    domain_unblock_risk=UNBLOCK_RISK[code],
                    reason=row["detail"],
                    cause_id=row["cause_id"],
                    original_domain_category=row["original_domain_category"],
                    restore_via=RESTORE_VIA,
                    override=override_state(row["domain"]),
                )
            )
        for pattern in policy.config.denylist:
            probe = pattern.removeprefix("*.")
            out.append(
                BlockedDomain(
                    domain=pattern,
                    blocked_at=policy.loaded_at.isoformat(timespec="seconds"),
                    domain_block_reason="denylist",
                    domain_unblock_risk="low",
                    reason="on the denylist of config/domains.yaml",
                    cause_id=None,
                    original_domain_category=policy.original_category(probe),
                    restore_via=RESTORE_VIA,
                    override=override_state(pattern if not pattern.startswith("*.") else "x." + probe),
                )
            )
        for rule in rules:
            if rule["decision"] != "block":
                continue
            probe = rule["domain_pattern"].removeprefix("*.")
            out.append(
                BlockedDomain(
                    domain=rule["domain_pattern"],
                    blocked_at=rule["updated_at"],
                    domain_block_reason="manual",
                    domain_unblock_risk="low",
                    reason=rule["reason"],
                    cause_id=rule["rule_id"],
                    original_domain_category=policy.original_category(probe),
                    restore_via="feedback(domain_clear_override) or feedback(domain_unblock)",
                    override=DomainOverrideState(
                        is_overridden=False,
                        decision="block",
                        matched_pattern=rule["domain_pattern"],
                        rule_id=rule["rule_id"],
                        reason=rule["reason"],
                        updated_at=rule["updated_at"],
                    ),
                )
            )
        return out

    def state(self) -> tuple[list[BlockedDomain], list[DomainOverride]]:
        """For get_status: (blocked_domains, domain_overrides), read with one rule query."""
        rules = self.active_rules()
        return self.blocked_domains(rules), self.overrides(rules)

    # ----------------------------------------------------------------- writes
    def block(self, domain: str, reason_code: str, detail: str, cause_id: str | None) -> bool:
        """A dynamic block; returns True when the domain was not blocked before."""
        name = self._normalise(domain)
        row = self.store.run(
            "domains/block_domain",
            {
                "domain": name,
                "category": self.policy.current().original_category(name),
                "reason_code": reason_code,
                "detail": detail,
                "cause_id": cause_id,
            },
        )[0]
        if not row["was_blocked"]:
            log.warning("domain %s blocked: %s (%s)", name, reason_code, detail)
        return not row["was_blocked"]

    def record_dangerous_document(
        self, task_id: str, domain: str, url: str, kinds: list[str], detail: str
    ) -> DangerousPage:
        """A fetched document carried a dangerous pattern: keep the finding (append-only ``SecurityFinding``; the
        domain becomes a rejected source of the task's claims), block the page for every task, and stop the task
        using the domain. Other tasks keep using it until findings on it come from
        ``LYRA_INJECTION_DOMAIN_BLOCK_TASKS`` distinct tasks: then the domain is blocked for every task
        (``dangerous_pattern``). Lyra's pseudo-domain for local files is never skipped or blocked (one hostile file
        must not stop every local file): only the file is blocked."""
        name = self._normalise(domain)
        finding = new_id("sec")
        category = self.policy.current().original_category(name)
        self.store.run(
            "domains/record_security_finding",
            {
                "id": finding,
                "task_id": task_id,
                "domain": name,
                "category": category,
                "url": url,
                "kinds": kinds,
                "detail": detail,
            },
        )
        self.store.run(
            "security/block_page",
            {
                "url": page_key(url),
                "page_url": url,
                "domain": name,
                "kinds": kinds,
                "detail": detail,
                "finding_id": finding,
                "task_id": task_id,
            },
        )
        if name == LOCAL_DOMAIN:
            notice = (
                f"file {url} carried instructions to an AI ({', '.join(kinds)}): not read, and blocked for every task "
                f"({PAGE_RESTORE_VIA} clears it); other local files are still read"
            )
            self.check_rejection_rates([name])
            return DangerousPage(finding, name, url, kinds, notice)
        result = DangerousPage(finding, name, url, kinds, skip_notice(name, url, kinds))
        rows = self.store.run(
            "security/skip_domain_for_task",
            {
                "task_id": task_id,
                "domain": name,
                "category": category,
                "url": url,
                "kinds": kinds,
                "finding_id": finding,
            },
        )
        result.task_skips_domain = bool(rows) and not rows[0]["was_skipped"]
        (seen,) = self.store.run("security/finding_tasks", {"domain": name})
        result.tasks = seen["tasks"]
        threshold = self.settings.injection_domain_block_tasks
        if result.tasks >= threshold:
            why = (
                f"dangerous patterns on pages of {name} met by {result.tasks} tasks "
                f"(LYRA_INJECTION_DOMAIN_BLOCK_TASKS={threshold}), e.g. {', '.join(seen['urls'])}; last: {detail}"
            )
            result.domain_blocked = self.block(name, "dangerous_pattern", why, finding)
            if result.domain_blocked:
                result.notice += f"; {name} is now blocked for every task ({why})"
        self.check_rejection_rates([name])
        return result

    # ------------------------------------------------------------------ pages and task skips
    def page_blocks(self, urls: list[str]) -> dict[str, dict[str, Any]]:
        """The page blocks of ``urls``, keyed by each given URL that is blocked."""
        keys = {url: page_key(url) for url in urls}
        rows = {
            r["url"]: to_plain(r) for r in self.store.run("security/page_blocks", {"urls": sorted(set(keys.values()))})
        }
        return {url: rows[key] for url, key in keys.items() if key in rows}

    @staticmethod
    def page_block_text(url: str, row: dict[str, Any]) -> str:
        kinds = ", ".join(row.get("kinds") or [])
        return (
            f"page {url} is blocked for every task: it carried instructions to an AI ({kinds}) "
            f"(first met {row.get('blocked_at')}); {PAGE_RESTORE_VIA} clears it"
        )

    def page_block_reason(self, url: str) -> str | None:
        """Why ``url`` may not be fetched or read (a page block), or None. The web fetcher asks it for every hop."""
        row = self.page_blocks([url]).get(url)
        return None if row is None else self.page_block_text(url, row)

    def task_skips(self, task_id: str) -> dict[str, dict[str, Any]]:
        """The domains ``task_id`` stopped using for a dangerous page, by domain."""
        return {r["domain"]: to_plain(r) for r in self.store.run("security/task_domain_skips", {"task_id": task_id})}

    def task_skip_reason(self, task_id: str, domain: str) -> str | None:
        """Why ``task_id`` does not use ``domain`` (a page of it carried a dangerous pattern), or None."""
        try:
            name = self._normalise(domain)
        except InvalidInputError:
            return None
        row = self.task_skips(task_id).get(name)
        return None if row is None else skip_notice(name, row["url"] or "?", list(row["kinds"] or []))

    def clear_task_skips(self, task_id: str, pattern: str) -> list[str]:
        """Let ``task_id`` use again the domains it skipped that ``pattern`` covers; returns those domains."""
        names = [name for name in self.task_skips(task_id) if pattern_matches(pattern, name)]
        if not names:
            return []
        rows = self.store.run("security/clear_task_domain_skips", {"task_id": task_id, "domains": names})
        return sorted(rows[0]["domains"]) if rows else []

    def dynamically_blocked(self, domain: str) -> bool:
        """Whether a dynamic block (dangerous_pattern, high_rejection_rate) is kept on ``domain``'s node."""
        rows = self.store.run("domains/domain_state", {"domain": domain})
        return bool(rows) and bool(rows[0]["blocked"])

    def dangerous_pages(self, task_id: str) -> tuple[list[SkippedDomain], list[BlockedPage]]:
        """For get_status: the domains the task skipped, and the pages blocked for every task (newest first)."""
        skipped = [
            SkippedDomain(
                domain=name,
                url=row["url"],
                kinds=list(row["kinds"] or []),
                finding_id=row["finding_id"],
                skipped_at=row["skipped_at"],
                notice=skip_notice(name, row["url"] or "?", list(row["kinds"] or [])),
                restore_via=SKIP_RESTORE_VIA,
            )
            for name, row in self.task_skips(task_id).items()
        ]
        pages = [
            BlockedPage(
                url=row["url"],
                page_url=row["page_url"],
                domain=row["domain"],
                kinds=list(row["kinds"] or []),
                detail=row["detail"],
                finding_id=row["finding_id"],
                task_id=row["task_id"],
                blocked_at=row["blocked_at"],
                findings=row["findings"] or 1,
                restore_via=PAGE_RESTORE_VIA,
            )
            for row in map(to_plain, self.store.run("security/list_page_blocks", {"limit": MAX_BLOCKED_PAGES_SHOWN}))
        ]
        return skipped, pages

    def rejection_rates(self, domains: list[str] | None = None) -> list[dict[str, Any]]:
        return [to_plain(r) for r in self.store.run("domains/rejection_rates", {"domains": domains})]

    def rejection_action(self, domain: str) -> Literal["block", "mark"]:
        """What a combined claim rejection rate above the threshold does to ``domain`` (decision record 0008): domains
        of the categories in :data:`AUTO_BLOCK_CATEGORIES` (the effective category: a user override counts) are blocked
        with ``high_rejection_rate``; any other domain, and Lyra's pseudo-domain for local files (blocking it would
        block every local file), only gets the ``domain_rejection_flagged`` mark — no automatic demotion."""
        if domain == LOCAL_DOMAIN:
            return "mark"
        return "block" if self.policy.current().category(domain) in AUTO_BLOCK_CATEGORIES else "mark"

    def check_rejection_rates(self, domains: list[str]) -> RejectionCheck:
        """Re-check the given domains' combined claim rejection rates. Above the threshold (with enough claims) an
        unverified/low domain is blocked (``high_rejection_rate``); a domain of a higher category is marked
        (``domain_rejection_flagged`` with the rate), never blocked, and the mark goes when the rate falls back.
        Returns the domains newly blocked and newly marked, with a warning for each."""
        threshold = self.settings.high_rejection_rate_threshold
        minimum = self.settings.high_rejection_min_samples
        check = RejectionCheck()
        for row in self.rejection_rates(domains):
            name, rate, claims = row["domain"], row["domain_claim_combined_rejection_rate"], row["claims"]
            high = claims >= minimum and rate > threshold
            # a block needs the manual rate above the threshold: dangerous patterns block a domain only through
            # LYRA_INJECTION_DOMAIN_BLOCK_TASKS (one page met by one task must never block its domain for everyone)
            blockable = claims >= minimum and row["domain_claim_manual_rejection_rate"] > threshold
            detail = (
                f"combined claim rejection rate {rate:.2f} > {threshold} over {claims} claims "
                f"({row['security_rejected_claims']} security, {row['manual_rejected_claims']} manual)"
            )
            if self.rejection_action(name) == "block":
                if row["domain_rejection_flagged"]:  # marked under an earlier category
                    self.store.run(
                        "domains/flag_rejection_rate", {"domain": name, "flagged": False, "rate": None, "claims": None}
                    )
                if blockable and not row["blocked"] and self.block(name, "high_rejection_rate", detail, None):
                    check.blocked.append(name)
                    check.warnings.append(f"high claim rejection rate: blocked {name} ({detail})")
                continue
            stored = (row["domain_rejection_flagged_rate"], row["domain_rejection_flagged_claims"])
            if high == row["domain_rejection_flagged"] and (not high or stored == (rate, claims)):
                continue  # nothing to write
            was = self.store.run(
                "domains/flag_rejection_rate",
                {"domain": name, "flagged": high, "rate": rate if high else None, "claims": claims if high else None},
            )[0]["was_flagged"]
            if high and not was:
                category = self.policy.current().category(name) if name != LOCAL_DOMAIN else LOCAL_DOMAIN
                check.flagged.append(name)
                check.warnings.append(
                    f"high claim rejection rate: marked {name} (domain_rejection_flagged; {detail}); "
                    f"not blocked: a {category} domain is never blocked automatically for its rejection rate"
                )
                log.warning("domain %s marked: %s", name, detail)
        return check
