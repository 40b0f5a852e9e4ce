-- MATCH_RECOGNIZE with overlapping conditions: a greedy optional loop (M*) whose rows B also
-- wants, and a greedy {1,2} whose rows E also wants (a greedy loop keeps later variables from a row
-- it can still take). Its seeded rows and their real Flink 2.3.0 run are kept beside it.
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
CREATE TABLE outs (
  sym STRING,
  s_price INT,
  n_m BIGINT,
  n_b BIGINT,
  e_price INT,
  e_ts TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = 'outs', 'format' = 'json');
INSERT INTO outs
SELECT * FROM ticks
MATCH_RECOGNIZE (
  PARTITION BY sym
  ORDER BY ts
  MEASURES
    FIRST(S.price) AS s_price,
    COUNT(M.price) AS n_m,
    COUNT(B.price) AS n_b,
    LAST(E.price) AS e_price,
    LAST(E.ts) AS e_ts
  ONE ROW PER MATCH
  AFTER MATCH SKIP TO NEXT ROW
  PATTERN (S M* B{1,2} E) WITHIN INTERVAL '6' SECOND
  DEFINE
    S AS price >= 2,
    M AS price = PREV(price) OR price > 4,
    B AS price > PREV(price),
    E AS price <= 3
);
