// mode: schema
CREATE CONSTRAINT security_finding_id_unique IF NOT EXISTS FOR (n:SecurityFinding) REQUIRE n.id IS UNIQUE
