// mode: schema
CREATE INDEX fragment_seq IF NOT EXISTS FOR (f:Fragment) ON (f.seq)
