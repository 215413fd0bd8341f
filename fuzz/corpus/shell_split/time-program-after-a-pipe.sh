ls | time -o f ls >out
