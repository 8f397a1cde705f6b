"""Drop-in adapters for code written against other memory libraries."""
