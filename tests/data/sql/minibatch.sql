-- Mini-batch on: the planner adds MiniBatchAssigners. Before a window TVF aggregation it batches
-- by the watermark (mode RowTime: a batch closes when the watermark passes); before a regular
-- aggregation, by processing time (mode ProcTime).
SET 'table.exec.mini-batch.enabled' = 'true';
SET 'table.exec.mini-batch.allow-latency' = '2 s';
SET 'table.exec.mini-batch.size' = '100';

CREATE TABLE trades (
  symbol STRING,
  price DOUBLE,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'trades',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE bars (
  symbol STRING,
  bar_end TIMESTAMP(3),
  high DOUBLE
) WITH ('connector' = 'kafka', 'topic' = 'bars', 'format' = 'json');

CREATE TABLE highs (
  symbol STRING,
  high DOUBLE,
  PRIMARY KEY (symbol) NOT ENFORCED
) WITH ('connector' = 'upsert-kafka', 'topic' = 'highs', 'key.format' = 'json', 'value.format' = 'json');

INSERT INTO bars
SELECT symbol, window_end, MAX(price) AS high
FROM TABLE(TUMBLE(TABLE trades, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY symbol, window_start, window_end;

INSERT INTO highs
SELECT symbol, MAX(price) AS high FROM trades GROUP BY symbol;
