"""The textbook's machinery: building the chapters, checking their exercises, reading them in a browser."""
