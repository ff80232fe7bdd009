"""Peak memory and latency of a plan, and the on-disk cache of measured kernel timings."""
