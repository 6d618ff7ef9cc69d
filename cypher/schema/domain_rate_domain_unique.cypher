// mode: schema
CREATE CONSTRAINT domain_rate_domain_unique IF NOT EXISTS FOR (r:DomainRate) REQUIRE r.domain IS UNIQUE
