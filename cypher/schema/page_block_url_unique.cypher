// mode: schema
CREATE CONSTRAINT page_block_url_unique IF NOT EXISTS FOR (n:PageBlock) REQUIRE n.url IS UNIQUE
