// mode: read
// Pages counted per domain for one day (the shared daily budget), most first.
// Params: $day (ISO date, UTC)
MATCH (d:DomainDay {day: $day})
RETURN d.domain AS domain, d.pages AS pages, d.refused AS refused
ORDER BY pages DESC, domain
