// mode: schema
CREATE CONSTRAINT pair_lease_key_unique IF NOT EXISTS FOR (l:PairLease) REQUIRE l.key IS UNIQUE
