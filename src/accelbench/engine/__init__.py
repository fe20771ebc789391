"""The engine that measures: the timing loop and stop rule, one configuration in this process
or in an isolated worker with a time limit, sweeps, the largest-batch search, data-parallel
launches."""
