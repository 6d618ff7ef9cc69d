// mode: schema
CREATE INDEX pair_lease_holder IF NOT EXISTS FOR (l:PairLease) ON (l.holder)
