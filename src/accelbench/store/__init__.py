"""Where results live: the store (an SQLite file, or a PostgreSQL server; schema, migrations) and
the export files that move results between machines. Imports nothing above core, and no torch."""
