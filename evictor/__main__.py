"""``python -m evictor`` runs the ``evict`` command."""

from evictor.cli import main

if __name__ == "__main__":
    main()
