"""`python -m ncu_classify.cli`: the spelling scripts used before the package had a face."""

from . import main

if __name__ == "__main__":
    main()
