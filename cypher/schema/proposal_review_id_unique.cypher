// mode: schema
CREATE CONSTRAINT proposal_review_id_unique IF NOT EXISTS FOR (n:ProposalReview) REQUIRE n.id IS UNIQUE
