// mode: schema
CREATE CONSTRAINT page_doi_unique IF NOT EXISTS FOR (p:Page) REQUIRE p.doi IS UNIQUE
