-- Trading read models, built by the projection "projection.trading" from the commands,
-- executions and trades topics in one transaction per batch (with the change feed below), so a
-- client that sees an event and then reads REST sees the state the event described. Every
-- table is rebuildable from Kafka (tradesvc replay --projection projection.trading); facts are
-- applied only when newer than what a row holds (seq), so redelivery never moves a row back.

-- One row per client operation: an order placement (single or batch item), an order modify or
-- cancel, a position close (a sweep leg included), a position SL/TP change, a sweep.
-- The request columns come from the command event; out_* from the newest attempt's outcome;
-- fills are the sum of the distinct deals whose comment carries the operation's tag. status
-- and the columns after it are derived from those, and are what every reader shows.
CREATE TABLE IF NOT EXISTS rm.operations (
    operation_id        text    PRIMARY KEY,
    login               bigint  NOT NULL,
    tag                 text    NOT NULL,
    -- NULL until the command event itself is projected (an outcome or a deal can come first).
    kind                text,
    api_key_id          bigint,
    client_order_id     text,
    attempt             int     NOT NULL DEFAULT 0,
    requested_at        bigint,
    symbol              text,
    side                text,
    type                text,
    volume              numeric,
    price               numeric,
    stop_limit_price    numeric,
    sl                  numeric,
    tp                  numeric,
    time_in_force       text,
    expiration          bigint,
    comment             text,
    target_order_id     bigint,
    target_position_id  bigint,
    sweep_id            text,
    -- the newest attempt's outcome (ExecutionOutcome_v1)
    out_attempt         int,
    out_status          text,
    out_code            int,
    out_retcode         int,
    out_msg             text,
    out_unanswered      boolean,
    out_order_id        bigint,
    out_deal_id         bigint,
    out_position_id     bigint,
    out_price           numeric,
    out_volume          numeric,
    -- derived
    status              text    NOT NULL DEFAULT 'ACCEPTED',
    code                int,
    retcode             int,
    msg                 text,
    order_id            bigint,
    deal_id             bigint,
    position_id         bigint,
    exec_price          numeric,
    executed_volume     numeric,
    updated_at          bigint  NOT NULL DEFAULT 0,
    version             bigint  NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX IF NOT EXISTS operations_tag ON rm.operations (login, tag);
CREATE INDEX IF NOT EXISTS operations_client ON rm.operations (api_key_id, client_order_id);
CREATE INDEX IF NOT EXISTS operations_order ON rm.operations (order_id) WHERE order_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS operations_sweep ON rm.operations (sweep_id) WHERE sweep_id IS NOT NULL;

-- Orders as the trade server reports them (OrderChanged_v1): pending orders while open, and
-- every order (market orders passing through the book included) once done.
CREATE TABLE IF NOT EXISTS rm.orders (
    order_id          bigint  PRIMARY KEY,
    login             bigint  NOT NULL,
    symbol            text    NOT NULL,
    type              int     NOT NULL,
    state             int     NOT NULL,
    volume_initial    numeric NOT NULL,
    volume_current    numeric NOT NULL,
    price             numeric NOT NULL,
    stop_limit_price  numeric NOT NULL,
    sl                numeric NOT NULL,
    tp                numeric NOT NULL,
    type_time         int     NOT NULL,
    expiration        bigint  NOT NULL,
    comment           text    NOT NULL,
    tag               text,
    position_id       bigint,
    time_setup        bigint  NOT NULL,
    time_done         bigint,
    update_time       bigint  NOT NULL,
    open              boolean NOT NULL,
    seq               bigint  NOT NULL
);
CREATE INDEX IF NOT EXISTS orders_open ON rm.orders (login, order_id) WHERE open;
CREATE INDEX IF NOT EXISTS orders_setup ON rm.orders (login, time_setup);

-- Positions (PositionChanged_v1): open ones, and closed ones kept with open = false.
CREATE TABLE IF NOT EXISTS rm.positions (
    position_id  bigint  PRIMARY KEY,
    login        bigint  NOT NULL,
    symbol       text    NOT NULL,
    direction    int     NOT NULL,
    volume       numeric NOT NULL,
    price_open   numeric NOT NULL,
    sl           numeric NOT NULL,
    tp           numeric NOT NULL,
    profit       numeric NOT NULL,
    swap         numeric NOT NULL,
    comment      text    NOT NULL,
    tag          text,
    time_open    bigint  NOT NULL,
    update_time  bigint  NOT NULL,
    open         boolean NOT NULL,
    seq          bigint  NOT NULL
);
CREATE INDEX IF NOT EXISTS positions_open ON rm.positions (login, position_id) WHERE open;

-- Deals (DealAdded_v1), trading and balance alike: what links fills to operations (by tag) in
-- the same transaction as the operation. Analysts and GET /v1/userTrades read ClickHouse.
CREATE TABLE IF NOT EXISTS rm.deals (
    deal_id      bigint  PRIMARY KEY,
    login        bigint  NOT NULL,
    order_id     bigint  NOT NULL,
    position_id  bigint  NOT NULL,
    symbol       text    NOT NULL,
    action       int     NOT NULL,
    entry        int     NOT NULL,
    reason       int     NOT NULL,
    volume       numeric NOT NULL,
    price        numeric NOT NULL,
    profit       numeric NOT NULL,
    commission   numeric NOT NULL,
    swap         numeric NOT NULL,
    comment      text    NOT NULL,
    tag          text,
    time         bigint  NOT NULL,
    seq          bigint  NOT NULL
);
CREATE INDEX IF NOT EXISTS deals_tag ON rm.deals (login, tag) WHERE tag IS NOT NULL;

-- The change feed: every change a client can see, in commit order, written in the same
-- transaction as the read models it describes. Writers take the advisory lock
-- changefeed_lock (see projections/changefeed.go) before inserting, so seq order is commit
-- order and a reader that tails "seq > last" never skips a row. After each commit the writer
-- sends NOTIFY rm_changes; readers also poll, so a lost notification only delays them.
--   kind DEAL, ORDER_UPDATE, POSITION_UPDATE, ACCOUNT_UPDATE: event is the user-stream frame
--        without C; api_key_id / client_order_id say which key may see C.
--   kind OPERATION: an operation's derived status changed (wakes RESULT waiters); event holds
--        {"status": ...}.
CREATE TABLE IF NOT EXISTS rm.changes (
    seq              bigserial   PRIMARY KEY,
    login            bigint      NOT NULL,
    kind             text        NOT NULL,
    operation_id     text,
    api_key_id       bigint,
    client_order_id  text,
    event            jsonb       NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS changes_created ON rm.changes (created_at);
