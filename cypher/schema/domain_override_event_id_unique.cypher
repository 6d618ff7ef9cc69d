// mode: schema
CREATE CONSTRAINT domain_override_event_id_unique IF NOT EXISTS FOR (n:DomainOverrideEvent) REQUIRE n.id IS UNIQUE
