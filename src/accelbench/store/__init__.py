"""Where results live: the SQLite database (schema, migrations) and the export files that move
results between machines. Imports nothing above core, and no torch."""
