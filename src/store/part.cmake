# tessera_store: durable state behind the Store interface; SqliteStore is the embedded default.
tessera_part(store DEPS tessera_core SQLite::SQLite3)
