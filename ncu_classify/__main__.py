"""`python -m ncu_classify`: the same command as `ncu-classify`."""

from .cli import main

if __name__ == "__main__":
    main()
