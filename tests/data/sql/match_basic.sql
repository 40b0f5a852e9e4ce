-- MATCH_RECOGNIZE per symbol: a run of falling prices then a rise, within 10 seconds, from one
-- partition with 1 second of out-of-orderness allowed (CepOperator: rows behind the watermark
-- are dropped; the others wait and reach the pattern in time order when the watermark passes).
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
CREATE TABLE dips (
  sym STRING,
  start_price INT,
  low_price INT,
  end_price INT,
  n_down BIGINT,
  sum_down INT,
  first_ts TIMESTAMP(3),
  last_ts TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = 'dips', 'format' = 'json');
INSERT INTO dips
SELECT * FROM ticks
MATCH_RECOGNIZE (
  PARTITION BY sym
  ORDER BY ts
  MEASURES
    FIRST(A.price) AS start_price,
    LAST(D.price) AS low_price,
    LAST(U.price) AS end_price,
    COUNT(D.price) AS n_down,
    SUM(D.price) AS sum_down,
    FIRST(A.ts) AS first_ts,
    LAST(U.ts) AS last_ts
  ONE ROW PER MATCH
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A D+ U) WITHIN INTERVAL '10' SECOND
  DEFINE
    D AS price < PREV(price),
    U AS price > PREV(price)
);
