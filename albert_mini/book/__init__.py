"""The textbook's machinery: building the chapters and checking their exercises."""
