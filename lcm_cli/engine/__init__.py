"""Operations and the engine: paths, settings, queries, the write store."""
