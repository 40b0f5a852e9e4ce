-- A filesystem source cannot take the watermark: the planner keeps a separate WatermarkAssigner
-- after the scan, which ignores the table's scan.watermark.* options and goes idle only by the
-- session's table.exec.source.idle-timeout.
SET 'table.exec.source.idle-timeout' = '15 s';

CREATE TABLE logs (
  host STRING,
  sent BIGINT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '4' SECOND
) WITH (
  'connector' = 'filesystem',
  'path' = '/data/logs',
  'format' = 'json',
  'scan.watermark.idle-timeout' = '1 min',
  'scan.watermark.emit.strategy' = 'on-event',
  'scan.watermark.alignment.group' = 'logs'
);

CREATE TABLE traffic (
  host STRING,
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  sent BIGINT
) WITH ('connector' = 'filesystem', 'path' = '/data/traffic', 'format' = 'json');

INSERT INTO traffic
SELECT host, window_start, window_end, SUM(sent) AS sent
FROM TABLE(TUMBLE(TABLE logs, DESCRIPTOR(ts), INTERVAL '30' SECOND))
GROUP BY host, window_start, window_end;
