-- Nothing reads receipts by task (the chain is read in order of `seq`, its primary key): the
-- index cost every decision one more page written, in the decision's own commit.
DROP INDEX receipts_by_task;
