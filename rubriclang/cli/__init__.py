"""The `rbg` command line. Subcommands load lazily (see `main.COMMANDS`)."""
