from .cli import run_console

run_console()
