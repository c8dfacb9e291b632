"""The view: what each open file shows and how it is folded (``state``), and the callbacks,
as plain functions, that turn the page's values into what it shows."""
