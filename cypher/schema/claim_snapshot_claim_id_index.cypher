// mode: schema
CREATE INDEX claim_snapshot_claim_id IF NOT EXISTS FOR (s:ClaimSnapshot) ON (s.claim_id)
