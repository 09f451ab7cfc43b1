-- Correlation tags ('#' and six base-62 digits) come from this sequence, so no two
-- operations share one: a collision would link one operation's deals to another. Each
-- gateway takes a block of 1024 values per nextval (command/tags.go), so a tag costs no round
-- trip on the hot path. 62^6 values (5.7e10); after the last it wraps, by which time the
-- operations of the first tags are long settled.
CREATE SEQUENCE IF NOT EXISTS cmd.tag_seq AS bigint INCREMENT BY 1024 MINVALUE 0 MAXVALUE 56800235583 START WITH 0 CYCLE;
