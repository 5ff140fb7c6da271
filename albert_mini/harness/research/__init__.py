"""The research harness behind the recipe search and the classroom model: see README.md in this folder."""
