"""Domain → category lookup from ``config/domains.yaml`` (exact match, then the longest suffix glob)."""

from __future__ import annotations

from pathlib import Path

import yaml

from lyra.core.errors import ConfigError


class DomainCategories:
    def __init__(self, exact: dict[str, str], suffixes: dict[str, str], default: str, weights: dict[str, float]):
        self.exact = exact
        self.suffixes = suffixes
        self.default = default
        self.weights = weights

    @classmethod
    def load(cls, path: Path) -> DomainCategories:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from None
        weights = {str(k): float(v) for k, v in (data.get("categories") or {}).items()}
        default = str(data.get("default_category", "unverified"))
        exact: dict[str, str] = {}
        suffixes: dict[str, str] = {}
        for index, rule in enumerate(data.get("domains") or []):
            domain = str(rule.get("domain", "")).lower().strip()
            category = str(rule.get("category", ""))
            if category not in weights:
                raise ConfigError(f"{path}: domains[{index}].category {category!r} is not a known category")
            if domain.startswith("*."):
                suffixes[domain[1:]] = category  # ".example.org"
            elif domain and "*" not in domain:
                exact[domain] = category
            else:
                raise ConfigError(f"{path}: domains[{index}].domain {domain!r}: use example.com or *.example.com")
        return cls(exact, suffixes, default, weights)

    def category(self, domain: str) -> str:
        domain = domain.lower().removeprefix("www.")
        if domain in self.exact:
            return self.exact[domain]
        best = ""
        for suffix in self.suffixes:
            if domain.endswith(suffix) and len(suffix) > len(best):
                best = suffix
        return self.suffixes[best] if best else self.default
