"""The paper's claims, measured: its numbers, smoothness, memory, throughput, probes, and readers of the results."""
