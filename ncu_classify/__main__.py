"""`python -m ncu_classify`: the same command as `ncu-classify`."""

from .cli.entry import main

if __name__ == "__main__":
    main()
