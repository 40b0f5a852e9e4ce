-- Where an idle timeout comes from: the session option, a table option, an OPTIONS hint.
SET 'table.exec.source.idle-timeout' = '5 s';

CREATE TABLE sensors_a (
  id STRING,
  v DOUBLE,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '3' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'sensors-a',
  'format' = 'json',
  'scan.watermark.idle-timeout' = '20 s'
);

CREATE TABLE sensors_b (
  id STRING,
  v DOUBLE,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '3' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'sensors-b',
  'format' = 'json'
);

CREATE TABLE sensors_c (
  id STRING,
  v DOUBLE,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '3' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'sensors-c',
  'format' = 'json',
  'scan.watermark.idle-timeout' = '20 s'
);

CREATE TABLE readings (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  n BIGINT
) WITH ('connector' = 'kafka', 'topic' = 'readings', 'format' = 'json');

CREATE TEMPORARY VIEW all_sensors AS
SELECT id, ts FROM sensors_a
UNION ALL
SELECT id, ts FROM sensors_b
UNION ALL
SELECT id, ts FROM sensors_c /*+ OPTIONS('scan.watermark.idle-timeout' = '1 s') */;

INSERT INTO readings
SELECT window_start, window_end, COUNT(*) AS n
FROM TABLE(TUMBLE(TABLE all_sensors, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end;
