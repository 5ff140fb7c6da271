"""The project's own harness: the experiments behind the book's tables, the research probes and the data builders."""
