// mode: write
// The rejection-rate mark (decision record 0008: categories above low are only marked, never demoted): a
// domain that is not blocked automatically for its rejection rate (category above unverified/low, or Lyra's
// pseudo-domain `local`) is marked while its combined claim rejection rate is above the threshold; the mark is
// cleared when the rate falls back (a claim restored). While marked, the time of the mark is kept and the rate and
// claim count are the latest. Returns whether the domain was marked before. Params: $domain, $flagged, $rate, $claims
MATCH (d:Domain {name: $domain})
WITH d, coalesce(d.domain_rejection_flagged, false) AS was_flagged
SET d.domain_rejection_flagged = $flagged,
    d.domain_rejection_flagged_rate = CASE WHEN $flagged THEN $rate END,
    d.domain_rejection_flagged_claims = CASE WHEN $flagged THEN $claims END,
    d.domain_rejection_flagged_at = CASE
      WHEN $flagged AND was_flagged THEN d.domain_rejection_flagged_at
      WHEN $flagged THEN datetime()
    END
RETURN d.name AS domain, was_flagged
