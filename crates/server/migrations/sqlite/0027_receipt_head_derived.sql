-- SQLite has one writer, so the receipts' chain needs no head row to lock: its head is the last
-- receipt, read in the appending transaction (src/store/receipts.rs). Keeping the row cost every
-- decision one more page written, in the decision's own commit.
DROP TABLE receipt_head;
