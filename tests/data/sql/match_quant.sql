-- MATCH_RECOGNIZE per symbol with the modelled quantifiers: a start, an optional repeat (?), a
-- flat run (*, greedy), two or three rises ({2,3}, greedy), then a drop below the second-last
-- rise; SKIP TO NEXT ROW, within 8 seconds, MIN/MAX/COUNT over a variable (CepOperator, as in
-- match_basic). Flink's planner refuses an optional variable after a greedy one.
CREATE TABLE ticks (
  sym STRING,
  price INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'ticks',
  'properties.bootstrap.servers' = 'kafka:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);
CREATE TABLE runs (
  sym STRING,
  s_price INT,
  n_m BIGINT,
  n_b BIGINT,
  min_b INT,
  max_b INT,
  c_price INT,
  e_price INT,
  b_first TIMESTAMP(3),
  e_ts TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = 'runs', 'format' = 'json');
INSERT INTO runs
SELECT * FROM ticks
MATCH_RECOGNIZE (
  PARTITION BY sym
  ORDER BY ts
  MEASURES
    FIRST(S.price) AS s_price,
    COUNT(M.price) AS n_m,
    COUNT(B.price) AS n_b,
    MIN(B.price) AS min_b,
    MAX(B.price) AS max_b,
    LAST(C.price) AS c_price,
    LAST(E.price) AS e_price,
    FIRST(B.ts) AS b_first,
    LAST(E.ts) AS e_ts
  ONE ROW PER MATCH
  AFTER MATCH SKIP TO NEXT ROW
  PATTERN (S C? M* B{2,3} E) WITHIN INTERVAL '8' SECOND
  DEFINE
    S AS price >= 2,
    M AS price = PREV(price),
    B AS price > PREV(price),
    C AS price = PREV(price),
    E AS price < LAST(B.price, 1)
);
