"""The builders of the committed data: the Austen corpus from its Debian package, the two Austen tasks, the polarity download."""
