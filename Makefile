# Convenience wrappers; the README's commands use dev.py, which needs nothing but Python.
.PHONY: demo test lint bench
demo:
	python3 dev.py demo
test:
	python3 dev.py test
lint:
	python3 dev.py lint
bench:
	python3 dev.py bench
