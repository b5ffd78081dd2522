"""OPT-Tree Explorer: `python app.py` serves the page on http://127.0.0.1:7860 (see ui/app.py)."""

from ui.app import main

if __name__ == "__main__":
    main()
