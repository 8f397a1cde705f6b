"""The SQL both stores share: :class:`~.store.SQLStore` over a :class:`~.dialect.Dialect`, its
feedback, knowledge, undo and inspector halves, and the rows of ``memory_chunks``."""
