-- The number another change takes; this placeholder keeps the numbering without a gap until
-- that change's own 0023 replaces it.
SELECT 1;
