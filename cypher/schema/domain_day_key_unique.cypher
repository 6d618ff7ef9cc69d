// mode: schema
CREATE CONSTRAINT domain_day_key_unique IF NOT EXISTS FOR (d:DomainDay) REQUIRE d.key IS UNIQUE
