SET 'table.exec.source.idle-timeout' = '7 s';
CREATE TABLE logs (msg STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '4' SECOND) WITH ('connector'='filesystem','path'='/data/logs','format'='csv');
CREATE TABLE o (msg STRING, ts TIMESTAMP(3)) WITH ('connector'='kafka','topic'='o','format'='json');
INSERT INTO o SELECT msg, ts FROM logs /*+ OPTIONS('scan.watermark.idle-timeout'='3 s') */;
